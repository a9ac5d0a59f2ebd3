/*
 * fd_limit.h - living with the process's descriptor limit (fd_limit.c):
 * how many descriptors there are, and one kept in reserve so that a
 * listener at the limit can still refuse a waiting connection instead of
 * being woken for it again and again.
 */
#ifndef SPOA_FD_LIMIT_H
#define SPOA_FD_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Raises the soft RLIMIT_NOFILE towards `wanted` (never above the hard
 * limit, never lowers it). Returns the soft limit in force afterwards. */
uint64_t fd_limit_raise(uint64_t wanted);

/* Opens the reserve descriptor (once; harmless again). */
void fd_reserve_open(void);

/* For a listener whose accept() failed with EMFILE or ENFILE: gives the
 * reserve back to the kernel, takes one waiting connection off listen_fd's
 * queue and closes it, then takes the reserve again. True if a connection
 * was refused that way. */
bool fd_reserve_refuse(int listen_fd);

/* Whether an accept() error means "out of descriptors" (or of the memory
 * to make one): the listener must pause, not retry at once. */
bool fd_limit_hit(int accept_errno);

#endif /* SPOA_FD_LIMIT_H */

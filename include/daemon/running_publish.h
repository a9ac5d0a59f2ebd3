/*
 * running_publish.h - the running agent writes down what a reload leaves
 * as it runs, for --check (running_publish.c; the file is
 * config/running_file.h's).
 */
#ifndef SPOA_DAEMON_RUNNING_PUBLISH_H
#define SPOA_DAEMON_RUNNING_PUBLISH_H

#include "config/config.h"

/* Writes the running file of c (beside its state file; none without one)
 * as this process runs it, in one step. At start, once every listener is
 * open, and after each reload accepted (the TLS it serves may have
 * changed). A failure is logged, never fatal: --check then judges a file
 * as for a start, as it did before the file existed. Blocking (a small
 * file, fsync'ed): the reload reads files on the loop already. */
void daemon_running_publish(const struct config *c);

/* Removes it at a clean exit: no agent runs on it any more. */
void daemon_running_withdraw(const struct config *c);

#endif /* SPOA_DAEMON_RUNNING_PUBLISH_H */

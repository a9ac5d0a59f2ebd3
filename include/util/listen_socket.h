/*
 * listen_socket.h - opening a listening socket (listen_socket.c).
 */
#ifndef SPOA_LISTEN_SOCKET_H
#define SPOA_LISTEN_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Opens a non-blocking, close-on-exec listening socket on spec:
 * "HOST:PORT", "[IPV6]:PORT" or "unix:/path" (util/sockaddr.h). A stale
 * unix socket file nobody answers on is removed first. Returns the fd, or
 * -1 with "listen address 'SPEC': what failed" in err.
 */
int listen_socket_open(const char *spec, bool *is_unix, char *err, size_t err_len);

#endif /* SPOA_LISTEN_SOCKET_H */

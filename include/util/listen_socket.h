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

/* Who may connect to a unix socket is who may write to its file. */
struct listen_socket_owner {
	unsigned mode; /* the file's permission bits, 0..0777 */
	long gid;      /* its group; -1: the process's own */
};

/*
 * listen_socket_open(), and a unix socket's file gets owner's mode and
 * group between bind() and listen(): nobody can connect before they are
 * set (a socket not yet listening refuses every connect). owner NULL, or
 * a TCP spec: as listen_socket_open().
 */
int listen_socket_open_as(const char *spec, const struct listen_socket_owner *owner,
			  bool *is_unix, char *err, size_t err_len);

/* A group as written (a name, or a number) to its id; false with
 * "socket_group 'NAME': no such group" in err. Reads the group database:
 * at start only. */
bool listen_socket_group_id(const char *group, long *gid, char *err, size_t err_len);

#endif /* SPOA_LISTEN_SOCKET_H */

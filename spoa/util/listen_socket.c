/*
 * listen_socket.c - a non-blocking listening socket from an address as
 * operators write it (see listen_socket.h): for SPOP, the admin pages and
 * the agent-check alike.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/listen_socket.h"
#include "util/sockaddr.h"
#include "util/errmsg.h"

/* A stale socket file from a previous run is removed; a live one (another
 * agent answers on it) is left alone and the bind then fails. */
static void remove_stale_unix_socket(const struct sockaddr_un *sun)
{
	struct stat st;
	if (stat(sun->sun_path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return;
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return;
	if (connect(probe, (const struct sockaddr *)sun, sizeof(*sun)) != 0 && errno == ECONNREFUSED)
		unlink(sun->sun_path);
	close(probe);
}

int listen_socket_open(const char *spec, bool *is_unix, char *err, size_t err_len)
{
	struct sockaddr_storage addr;
	socklen_t addr_len;

	if (!sockaddr_parse(spec, "listen address", &addr, &addr_len, err, err_len))
		return -1;
	*is_unix = addr.ss_family == AF_UNIX;
	if (*is_unix)
		remove_stale_unix_socket((const struct sockaddr_un *)&addr);

	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		errmsg_set(err, err_len, "listen address '%s': socket: %s", spec, strerror(errno));
		return -1;
	}
	int one = 1;
	if (!*is_unix)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&addr, addr_len) != 0 || listen(fd, 1024) != 0) {
		errmsg_set(err, err_len, "listen address '%s': %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}


/*
 * listen_socket.c - a non-blocking listening socket from an address as
 * operators write it (see listen_socket.h): for SPOP, the admin pages and
 * the agent-check alike.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
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
	return listen_socket_open_as(spec, NULL, is_unix, err, err_len);
}

/* Sets the socket file's mode and group; false with why in err. */
static bool apply_owner(const char *spec, const struct sockaddr_un *sun,
			const struct listen_socket_owner *owner, char *err, size_t err_len)
{
	if (owner->gid >= 0 && chown(sun->sun_path, (uid_t)-1, (gid_t)owner->gid) != 0) {
		errmsg_set(err, err_len, "listen address '%s': socket_group %ld: %s", spec,
			   owner->gid, strerror(errno));
		return false;
	}
	if (chmod(sun->sun_path, (mode_t)owner->mode) != 0) {
		errmsg_set(err, err_len, "listen address '%s': socket_mode %04o: %s", spec,
			   owner->mode, strerror(errno));
		return false;
	}
	return true;
}

bool listen_socket_group_id(const char *group, long *gid, char *err, size_t err_len)
{
	char *end;
	unsigned long v = strtoul(group, &end, 10);
	if (group[0] >= '0' && group[0] <= '9' && *end == '\0') {
		*gid = (long)v;
		return true;
	}
	errno = 0;
	const struct group *g = getgrnam(group);
	if (!g) {
		errmsg_set(err, err_len, "socket_group '%s': %s", group,
			   errno ? strerror(errno) : "no such group");
		return false;
	}
	*gid = (long)g->gr_gid;
	return true;
}

int listen_socket_open_as(const char *spec, const struct listen_socket_owner *owner,
			  bool *is_unix, char *err, size_t err_len)
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
	if (bind(fd, (struct sockaddr *)&addr, addr_len) != 0) {
		errmsg_set(err, err_len, "listen address '%s': %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	if (*is_unix && owner &&
	    !apply_owner(spec, (const struct sockaddr_un *)&addr, owner, err, err_len)) {
		unlink(((const struct sockaddr_un *)&addr)->sun_path);
		close(fd);
		return -1;
	}
	if (listen(fd, 1024) != 0) {
		errmsg_set(err, err_len, "listen address '%s': %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}


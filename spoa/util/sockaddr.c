/*
 * sockaddr.c - socket addresses as operators write them (see sockaddr.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "util/sockaddr.h"
#include "util/errmsg.h"

static bool parse_port(const char *s, uint16_t *port)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < 1 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

static bool addr_error(char *err, size_t err_len, const char *label, const char *spec,
		       const char *what)
{
	if (label)
		errmsg_set(err, err_len, "%s '%s': %s", label, spec, what);
	else
		errmsg_set(err, err_len, "%s", what);
	return false;
}

bool sockaddr_parse(const char *spec, const char *label, struct sockaddr_storage *addr,
		    socklen_t *addr_len, char *err, size_t err_len)
{
	memset(addr, 0, sizeof(*addr));

	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)addr;
		const char *path = spec + 5;
		if (*path == '\0')
			return addr_error(err, err_len, label, spec, "empty unix socket path");
		if (strlen(path) >= sizeof(sun->sun_path))
			return addr_error(err, err_len, label, spec, "unix socket path too long");
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, path);
		*addr_len = sizeof(*sun);
		return true;
	}

	char host[64];
	const char *colon;
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':')
			return addr_error(err, err_len, label, spec, "expected [IPV6]:PORT");
		if ((size_t)(close - spec - 1) >= sizeof(host))
			return addr_error(err, err_len, label, spec, "address too long");
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			return addr_error(err, err_len, label, spec, "expected HOST:PORT, [IPV6]:PORT or unix:PATH");
		if ((size_t)(colon - spec) >= sizeof(host))
			return addr_error(err, err_len, label, spec, "address too long");
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		/* HAProxy's own spellings for every IPv4 address ("bind *:80",
		 * "bind :80"): a bind line copied from haproxy.cfg means here
		 * what it means there. */
		if (strcmp(host, "*") == 0 || host[0] == '\0')
			strcpy(host, "0.0.0.0");
	}

	uint16_t port;
	if (!parse_port(colon + 1, &port))
		return addr_error(err, err_len, label, spec, "port must be a number from 1 to 65535");

	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*addr_len = sizeof(*sin);
		return true;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*addr_len = sizeof(*sin6);
		return true;
	}
	return addr_error(err, err_len, label, spec, "not a numeric IPv4/IPv6 address or 'localhost'");
}


/*
 * ctl_client.c - `spoa-breaker ctl` (see ctl_client.h). Blocking on
 * purpose: it does one exchange and exits, each step bounded by
 * CTL_TIMEOUT_MS.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/control_parse.h"
#include "daemon/ctl_client.h"

#define CTL_TIMEOUT_MS 10000
#define CTL_DEFAULT_SOCKET "/var/lib/spoa-breaker/control.sock"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: spoa-breaker ctl [--socket PATH] COMMAND...\n"
		"Sends COMMAND to a running agent's control socket (the control key; default\n"
		"%s) and prints its answer.\n\n"
		"Commands:\n%s\n"
		"Exit status: 0 done, 1 the agent refused the command, 2 usage error,\n"
		"3 the agent could not be reached.\n",
		CTL_DEFAULT_SOCKET, control_help_text);
}

static bool wait_for(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;
	do
		n = poll(&p, 1, CTL_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

static int unreachable(const char *path, const char *why)
{
	fprintf(stderr, "spoa-breaker ctl: cannot reach the agent at %s: %s\n", path, why);
	return CTL_EXIT_UNREACHABLE;
}

int ctl_main(int argc, char **argv)
{
	const char *path = CTL_DEFAULT_SOCKET;
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return CTL_EXIT_DONE;
		}
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			path = argv[++i];
			if (strncmp(path, "unix:", 5) == 0)
				path += 5;
		} else if (strcmp(argv[i], "--force") == 0) {
			break; /* a word of the command (hold out ... --force) */
		} else {
			fprintf(stderr, "spoa-breaker ctl: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return CTL_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	char line[CONTROL_LINE_MAX + 2];
	size_t len = 0;
	for (; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (len + n + 2 > sizeof(line)) {
			fprintf(stderr, "spoa-breaker ctl: command longer than %d bytes\n",
				CONTROL_LINE_MAX);
			return CTL_EXIT_USAGE;
		}
		if (len)
			line[len++] = ' ';
		memcpy(line + len, argv[i], n);
		len += n;
	}
	line[len++] = '\n';

	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "spoa-breaker ctl: socket path too long: %s\n", path);
		return CTL_EXIT_USAGE;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return unreachable(path, strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		int e = errno;
		close(fd);
		return unreachable(path, strerror(e));
	}
	size_t sent = 0;
	while (sent < len) {
		if (!wait_for(fd, POLLOUT)) {
			close(fd);
			return unreachable(path, "it does not read");
		}
		ssize_t n = send(fd, line + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return unreachable(path, strerror(e));
		}
		sent += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	char buf[4096];
	bool first = true, refused = false, any = false;
	for (;;) {
		if (!wait_for(fd, POLLIN)) {
			close(fd);
			return unreachable(path, "no answer in time");
		}
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		if (first)
			refused = (size_t)n >= 6 && memcmp(buf, "error:", 6) == 0;
		first = false;
		any = true;
		fwrite(buf, 1, (size_t)n, stdout);
	}
	close(fd);
	fflush(stdout);
	if (!any)
		return unreachable(path, "it closed without answering");
	return refused ? CTL_EXIT_REFUSED : CTL_EXIT_DONE;
}

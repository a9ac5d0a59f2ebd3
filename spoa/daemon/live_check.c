/*
 * live_check.c - `--check` against live HAProxies (see live_check.h).
 * Blocking on purpose: it runs once, before any loop, and each exchange
 * is bounded by LIVE_CHECK_TIMEOUT_MS.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/live_check.h"
#include "link/map_file.h"
#include "link/owner_map.h"
#include "link/retry_map.h"
#include "link/watched_map.h"
#include "link/wiring.h"
#include "util/sockaddr.h"

#define LIVE_CHECK_TIMEOUT_MS 2000
/* `show map` lists every map HAProxy loads, one line each. */
#define LIVE_CHECK_REPLY_MAX (256 * 1024)

static bool wait_for(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;
	do
		n = poll(&p, 1, LIVE_CHECK_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

/* Sends `command` (one line) and reads the reply until HAProxy closes;
 * false with why when it cannot. */
static bool ask(const char *address, const char *command, char *reply, size_t size, size_t *len,
		char *why, size_t why_size)
{
	struct sockaddr_storage addr;
	socklen_t addr_len;
	if (!sockaddr_parse(address, NULL, &addr, &addr_len, why, why_size))
		return false;
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, why_size, "%s", strerror(errno));
		return false;
	}
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&addr, addr_len) != 0 && errno != EINPROGRESS) {
		snprintf(why, why_size, "%s", strerror(errno));
		goto out;
	}
	int soerr = 0;
	socklen_t soerr_len = sizeof(soerr);
	if (!wait_for(fd, POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &soerr_len) != 0 ||
	    soerr != 0) {
		snprintf(why, why_size, "%s", soerr ? strerror(soerr) : "no answer");
		goto out;
	}
	size_t clen = strlen(command);
	if (write(fd, command, clen) != (ssize_t)clen) {
		snprintf(why, why_size, "cannot send: %s", strerror(errno));
		goto out;
	}
	*len = 0;
	for (;;) {
		if (!wait_for(fd, POLLIN)) {
			snprintf(why, why_size, "no answer within %d ms", LIVE_CHECK_TIMEOUT_MS);
			goto out;
		}
		ssize_t n = read(fd, reply + *len, size - 1 - *len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			snprintf(why, why_size, "%s", strerror(errno));
			goto out;
		}
		if (n == 0 || (*len += (size_t)n) == size - 1)
			break;
	}
	reply[*len] = '\0';
	ok = true;
out:
	close(fd);
	return ok;
}

static int check_one(const char *address, FILE *out)
{
	static char reply[LIVE_CHECK_REPLY_MAX];
	char why[256], path[MAP_FILE_PATH_MAX];
	size_t len = 0;

	/* One command a connection: HAProxy closes after it, so the reply
	 * ends at EOF. */
	if (!ask(address, "show cli level\n", reply, sizeof(reply), &len, why, sizeof(why))) {
		fprintf(out, "runtime_api %s: not reachable (%s): not checked\n", address, why);
		return 0;
	}
	enum wiring_level level = wiring_level_parse(reply, len);
	int status = 0;
	if (level == WIRING_LEVEL_ADMIN) {
		fprintf(out, "runtime_api %s: level admin\n", address);
	} else if (level == WIRING_LEVEL_UNKNOWN) {
		fprintf(out, "runtime_api %s: level unknown (`show cli level` answered: %.*s)\n",
			address, (int)strcspn(reply, "\n"), reply);
	} else {
		fprintf(out,
			"runtime_api %s: level %s, not admin: every drain would be refused; add "
			"`level admin` to its `stats socket` line\n",
			address, wiring_level_name(level));
		status = 1;
	}
	if (!ask(address, "show map\n", reply, sizeof(reply), &len, why, sizeof(why))) {
		fprintf(out, "runtime_api %s: show map: %s\n", address, why);
		return status;
	}
	if (owner_map_find(reply, len, path, sizeof(path)))
		fprintf(out, "runtime_api %s: %s loaded\n", address, OWNER_MAP_NAME);
	else
		fprintf(out,
			"runtime_api %s: %s not loaded: add `acl breaker_owned str(),map(%s) -m "
			"found` to one backend\n",
			address, OWNER_MAP_NAME, OWNER_MAP_NAME);
	fprintf(out, "runtime_api %s: %s %s\n", address, RETRY_MAP_NAME,
		map_file_find(reply, len, RETRY_MAP_NAME, path, sizeof(path))
			? "loaded"
			: "not loaded (optional: HAProxy's own 503 gets the fixed Retry-After)");
	fprintf(out, "runtime_api %s: %s\n", address,
		map_file_find(reply, len, WATCHED_MAP_NAME, path, sizeof(path))
			? "steady-state mode (" WATCHED_MAP_NAME " loaded)"
			: "every-response mode");
	return status;
}

int live_check(const struct config *c, FILE *out)
{
	int status = 0;
	/* Not a mistake by itself (every-response mode needs no socket), but
	 * the shipped SPOE file is steady-state mode's: say what it needs. */
	if (c->nb_runtime_api == 0)
		fprintf(out, "no runtime_api: steady-state mode (spoe-breaker-steady.conf, the "
			     "shipped default) cannot work with this agent, as no one would keep "
			     "breaker-watched.map; HAProxy must send every response "
			     "(spoe-breaker.conf)\n");
	for (unsigned i = 0; i < c->nb_runtime_api; i++)
		if (check_one(c->runtime_api[i], out) != 0)
			status = 1;
	return status;
}

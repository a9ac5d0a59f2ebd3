/*
 * live_check.c - `--check` against live HAProxies (see live_check.h).
 * Blocking on purpose: it runs once, before any loop, and each exchange
 * is bounded by LIVE_CHECK_TIMEOUT_MS (a listing that grows with the
 * fleet, read as it arrives, by LIVE_CHECK_STREAM_MS).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hapi/section_names.h"
#include "daemon/live_check.h"
#include "daemon/operator_store.h"
#include "hapi/runtime_api.h"
#include "link/wiring.h"
#include "records/map_file.h"
#include "records/owner_map.h"
#include "records/retry_map.h"
#include "records/watched_map.h"
#include "util/clock.h"
#include "util/sockaddr.h"

#define LIVE_CHECK_TIMEOUT_MS 2000
/* `show map` lists every map HAProxy loads, one line each. */
#define LIVE_CHECK_REPLY_MAX (256 * 1024)
/* A listing of every server: as long as the agent's own looks may take. */
#define LIVE_CHECK_STREAM_MS (LIVE_CHECK_TIMEOUT_MS * RUNTIME_API_STREAM_TIMEOUTS)

static bool wait_for(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;
	do
		n = poll(&p, 1, LIVE_CHECK_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

/* Connects and sends `command` (one line): the socket, or -1 with why. */
static int send_command(const char *address, const char *command, char *why, size_t why_size)
{
	struct sockaddr_storage addr;
	socklen_t addr_len;
	if (!sockaddr_parse(address, NULL, &addr, &addr_len, why, why_size))
		return -1;
	int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, why_size, "%s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, addr_len) != 0 && errno != EINPROGRESS) {
		snprintf(why, why_size, "%s", strerror(errno));
		goto fail;
	}
	int soerr = 0;
	socklen_t soerr_len = sizeof(soerr);
	if (!wait_for(fd, POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &soerr_len) != 0 ||
	    soerr != 0) {
		snprintf(why, why_size, "%s", soerr ? strerror(soerr) : "no answer");
		goto fail;
	}
	size_t clen = strlen(command);
	if (write(fd, command, clen) != (ssize_t)clen) {
		snprintf(why, why_size, "cannot send: %s", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* Sends `command` (one line) and reads the reply until HAProxy closes;
 * false with why when it cannot. */
static bool ask(const char *address, const char *command, char *reply, size_t size, size_t *len,
		char *why, size_t why_size)
{
	int fd = send_command(address, command, why, why_size);
	if (fd < 0)
		return false;
	bool ok = false;
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

/* A reply handed over as it arrives: feed returns how many bytes it used
 * (the rest comes again with the next bytes), at_end once HAProxy closed. */
typedef size_t (*live_check_feed_fn)(void *ctx, const char *buf, size_t len, bool at_end);

/* As ask(), for a reply that grows with the fleet: never held whole, read
 * through a window of RUNTIME_API_STREAM_WINDOW bytes within
 * LIVE_CHECK_STREAM_MS. */
static bool ask_streamed(const char *address, const char *command, live_check_feed_fn feed,
			 void *ctx, char *why, size_t why_size)
{
	static char window[RUNTIME_API_STREAM_WINDOW];
	int fd = send_command(address, command, why, why_size);
	if (fd < 0)
		return false;
	uint64_t deadline = clock_now_ms() + LIVE_CHECK_STREAM_MS;
	size_t kept = 0;
	bool ok = false;
	for (;;) {
		if (clock_now_ms() > deadline || !wait_for(fd, POLLIN)) {
			snprintf(why, why_size, "no whole answer within %d ms", LIVE_CHECK_STREAM_MS);
			break;
		}
		ssize_t n = read(fd, window + kept, sizeof(window) - kept);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			snprintf(why, why_size, "%s", strerror(errno));
			break;
		}
		if (n == 0) {
			feed(ctx, window, kept, true);
			ok = true;
			break;
		}
		kept += (size_t)n;
		size_t used = feed(ctx, window, kept, false);
		memmove(window, window + used, kept - used);
		kept -= used;
		if (kept == sizeof(window)) {
			snprintf(why, why_size, "a line longer than %zu bytes", sizeof(window));
			break;
		}
	}
	close(fd);
	return ok;
}

static size_t feed_backends(void *ctx, const char *buf, size_t len, bool at_end)
{
	return section_backends_stream_feed(ctx, buf, len, at_end);
}

static size_t feed_servers(void *ctx, const char *buf, size_t len, bool at_end)
{
	return runtime_api_servers_state_stream_feed(ctx, buf, len, at_end);
}

struct names_source {
	struct section_names *names;
	unsigned source;
};

static void on_server(void *ctx, const struct runtime_api_server_state *row)
{
	struct names_source *to = ctx;
	section_names_note_server(to->names, to->source, row->be_name.ptr, row->be_name.len,
				  row->srv_name.ptr, row->srv_name.len);
}

/* What HAProxy `source` lists (`show backend`, `show servers state`),
 * noted in names; false, said on out, when it could not be read whole. */
static bool read_names(const char *address, struct section_names *names, unsigned source,
		       FILE *out)
{
	char why[256], command[RUNTIME_API_CMD_MAX];
	struct section_backends_stream backends;
	struct runtime_api_servers_state_stream servers;
	struct names_source to = {names, source};

	section_names_look_start(names, source);
	section_backends_stream_init(&backends, names, source);
	runtime_api_servers_state_stream_init(&servers, on_server, &to);
	if (!ask_streamed(address, "show backend\n", feed_backends, &backends, why, sizeof(why)))
		goto fail;
	if (!section_backends_stream_usable(&backends)) {
		snprintf(why, sizeof(why), "`show backend` answered no list");
		goto fail;
	}
	section_names_backends_end(names, source, true);
	if (!runtime_api_cmd_show_servers_state(command, sizeof(command) - 1, NULL))
		goto fail;
	strcat(command, "\n");
	if (!ask_streamed(address, command, feed_servers, &servers, why, sizeof(why)))
		goto fail;
	if (!runtime_api_servers_state_stream_usable(&servers)) {
		snprintf(why, sizeof(why), "`show servers state`: %s", servers.report.error);
		goto fail;
	}
	section_names_look_end(names, source, true, NULL, NULL);
	return true;
fail:
	fprintf(out, "runtime_api %s: its backends and servers could not be read (%s): the INI "
		     "sections were not checked against it\n",
		address, why);
	return false;
}

struct unlisted_said {
	const struct config *config;
	bool every_haproxy; /* each runtime_api was read */
	FILE *out;
};

static void say_unlisted(void *ctx, const struct section_name *n)
{
	struct unlisted_said *said = ctx;
	char header[SECTION_NAMES_FULL_MAX + 16], hint[SECTION_NAMES_FULL_MAX + 32] = "";
	if (n->near[0] && !n->near_tied)
		snprintf(hint, sizeof(hint), " (did you mean %s?)", n->near);
	if (n->line > 0 && said->config->path)
		fprintf(said->out, "%s:%d: ", said->config->path, n->line);
	else
		fprintf(said->out, "spoa-breaker: ");
	if (n->server[0])
		fprintf(said->out, "warning: [%s]: %s server %s in backend %s%s",
			section_names_header(n, header, sizeof(header)),
			said->every_haproxy ? "no HAProxy lists"
					    : "none of the HAProxies that answered lists",
			n->server, n->backend, hint);
	else
		fprintf(said->out, "warning: [%s]: %s backend %s%s",
			section_names_header(n, header, sizeof(header)),
			said->every_haproxy ? "no HAProxy lists"
					    : "none of the HAProxies that answered lists",
			n->backend, hint);
	/* A warning, not a failure: the name may come with HAProxy's next
	 * reload, and until then the section does no harm but nothing. */
	fprintf(said->out, ": its keys apply to nothing until one does (HAProxy may be reloaded "
			   "to add it later, so the check does not fail)\n");
}

/* Every [backend]/[server] section of c against what the HAProxies list,
 * each one none of them lists said on out. Never fails the check. */
static void check_sections(const struct config *c, FILE *out)
{
	struct section_names names;
	section_names_init(&names, c->link.nb_runtime_api, true);
	for (unsigned i = 0; i < c->nb_overrides; i++)
		if (!section_names_add(&names, c->overrides[i].backend, c->overrides[i].server,
				       c->overrides[i].line)) {
			fprintf(out, "INI sections: not checked against HAProxy: out of memory\n");
			section_names_free(&names);
			return;
		}
	section_names_sort(&names);
	unsigned read = 0;
	for (unsigned i = 0; names.nb && i < names.nb_sources; i++)
		read += read_names(c->link.runtime_api[i], &names, i, out);
	if (names.nb == 0 || read == 0) {
		section_names_free(&names); /* nothing to check, or said why not */
		return;
	}
	struct unlisted_said said = {
		.config = c, .every_haproxy = read == c->link.nb_runtime_api, .out = out};
	unsigned unlisted = 0;
	for (unsigned i = 0; i < names.nb; i++)
		unlisted += !section_names_listed(&names.names[i]);
	section_names_each_unlisted(&names, say_unlisted, &said);
	if (unlisted == 0)
		fprintf(out, "INI sections: each of the %u [backend] and [server] sections names "
			     "what HAProxy lists\n",
			names.nb);
	section_names_free(&names);
}

/* One hold or pause of the operator's record that no HAProxy lists. */
static void say_unheld(void *ctx, const struct section_name *n)
{
	struct unlisted_said *said = ctx;
	const char *where = said->every_haproxy ? "no HAProxy lists"
						: "none of the HAProxies that answered lists";
	if (n->server[0])
		fprintf(said->out,
			"control: warning: the operator's hold on %s/%s: %s server %s in backend "
			"%s: it applies once one does (spoa-breaker ctl unhold %s/%s lifts it)\n",
			n->backend, n->server, where, n->server, n->backend, n->backend, n->server);
	else
		fprintf(said->out,
			"control: warning: the operator's pause of backend %s: %s it: it applies "
			"once one does (spoa-breaker ctl resume %s lifts it)\n",
			n->backend, where, n->backend);
}

/* The operator's record (STATE_FILE.operator, the control socket's holds
 * and pauses) read as the agent would at its start, and each hold or
 * pause naming what no HAProxy lists said: a command typed for a server
 * that has gone since. Never fails the check. */
static void check_operator_record(const struct config *c, FILE *out)
{
	char path[CONFIG_PATH_MAX_LEN + 16], err[512];
	struct operator_hand hand;
	struct section_names names;

	if (!c->state.file[0] || !operator_store_path(c->state.file, path, sizeof(path)))
		return;
	operator_hand_init(&hand);
	if (!operator_store_load(path, &hand, err, sizeof(err))) {
		fprintf(out, "control: the operator's record is unreadable, the agent would start "
			     "without it: %s\n", err);
		return;
	}
	if (hand.nb_holds == 0 && hand.nb_paused == 0) {
		operator_hand_free(&hand);
		return;
	}
	fprintf(out, "control: the operator's record %s: %u holds, %u backends paused%s\n", path,
		hand.nb_holds, hand.nb_paused, hand.released ? ", the agent released" : "");
	section_names_init(&names, c->link.nb_runtime_api, false);
	bool ok = true;
	for (uint32_t i = 0; ok && i < hand.nb_holds; i++)
		ok = section_names_add(&names, hand.holds[i].backend, hand.holds[i].server, 0);
	for (uint32_t i = 0; ok && i < hand.nb_paused; i++)
		ok = section_names_add(&names, hand.paused[i].backend, "", 0);
	operator_hand_free(&hand);
	if (!ok) {
		fprintf(out, "control: holds not checked against HAProxy: out of memory\n");
		section_names_free(&names);
		return;
	}
	section_names_sort(&names);
	unsigned read = 0;
	for (unsigned i = 0; i < names.nb_sources; i++)
		read += read_names(c->link.runtime_api[i], &names, i, out);
	if (read > 0) {
		struct unlisted_said said = {.config = c,
					     .every_haproxy = read == c->link.nb_runtime_api,
					     .out = out};
		section_names_each_unlisted(&names, say_unheld, &said);
	}
	section_names_free(&names);
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
	if (c->link.nb_runtime_api == 0)
		fprintf(out, "no runtime_api: steady-state mode (spoe-breaker-steady.conf, the "
			     "shipped default) cannot work with this agent, as no one would keep "
			     "breaker-watched.map; HAProxy must send every response "
			     "(spoe-breaker.conf)\n");
	for (unsigned i = 0; i < c->link.nb_runtime_api; i++)
		if (check_one(c->link.runtime_api[i], out) != 0)
			status = 1;
	check_sections(c, out);
	check_operator_record(c, out);
	return status;
}

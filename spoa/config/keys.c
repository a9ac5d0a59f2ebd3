/*
 * keys.c - every configuration key, once (see keys.h).
 *
 * To add a key: add its field to struct config (or struct breaker_policy),
 * add a row here, and bump CONFIG_NB_KEYS. The file, the command line,
 * --help, --check and SIGHUP pick it up from the row.
 */
#include <string.h>

#include "spop/spop.h"
#include "spop/observe.h"
#include "admin/admin_http.h"
#include "config/keys.h"

/* A field of struct config / of a policy (with the layer bit it sets). */
#define IN_CONFIG(member)                                                                  \
	.place = CONFIG_IN_CONFIG, .offset = offsetof(struct config, member),              \
	.size = sizeof(((struct config *)0)->member)
#define IN_POLICY(member, bit)                                                             \
	.place = CONFIG_IN_POLICY, .offset = offsetof(struct breaker_policy, member),      \
	.size = sizeof(((struct breaker_policy *)0)->member), .field = (bit)
/* A repeatable address: an array of strings and its count (with
 * CONFIG_KEY_REPEATABLE in .flags). */
#define ADDRESS_LIST(member, count)                                                        \
	.place = CONFIG_IN_CONFIG, .offset = offsetof(struct config, member),              \
	.size = sizeof(((struct config *)0)->member[0]),                                   \
	.count_offset = offsetof(struct config, count),                                    \
	.max_count = sizeof(((struct config *)0)->member) /                                \
		     sizeof(((struct config *)0)->member[0])
#define GIVEN(member) .given_offset = offsetof(struct config, member)

/* Enums are written as 4-byte numbers (values.c): make sure they are. */
_Static_assert(sizeof(enum log_level) == 4 && sizeof(enum log_format) == 4 &&
		       sizeof(enum metrics_names) == 4 && sizeof(enum metrics_detail) == 4 &&
		       sizeof(enum enforce_mode) == 4 &&
		       sizeof(((struct config *)0)->ack_variables) == 4 &&
		       sizeof(enum breaker_half_open_backpressure) == 4 &&
		       sizeof(enum breaker_open_late_success) == 4,
	       "enum fields are 4 bytes");

static const struct config_word log_levels[] = {
	{"error", LOG_LEVEL_ERROR, false},   {"warning", LOG_LEVEL_WARNING, false},
	{"notice", LOG_LEVEL_NOTICE, false}, {"info", LOG_LEVEL_INFO, false},
	{"debug", LOG_LEVEL_DEBUG, false},   {NULL, 0, false},
};

static const struct config_word log_formats[] = {
	{"text", LOG_FORMAT_TEXT, false}, {"json", LOG_FORMAT_JSON, false}, {NULL, 0, false},
};

static const struct config_word metrics_names_words[] = {
	{"promex", METRICS_NAMES_PROMEX, false},
	{"legacy", METRICS_NAMES_LEGACY, false},
	{"both", METRICS_NAMES_BOTH, false},
	{NULL, 0, false},
};

static const struct config_word metrics_details[] = {
	{"server", METRICS_DETAIL_SERVER, false},
	{"backend", METRICS_DETAIL_BACKEND, false},
	{NULL, 0, false},
};

static const struct config_word enforce_modes[] = {
	{"runtime-api", ENFORCE_RUNTIME_API, false},
	{"agent-check", ENFORCE_AGENT_CHECK, false},
	{"none", ENFORCE_NONE, false},
	{"shadow", ENFORCE_NONE, true}, /* an older name of "none", still accepted */
	{NULL, 0, false},
};

/* The names HAProxy's configuration reads, after its var-prefix (observe.h). */
static const struct config_word ack_variable_words[] = {
	{"upstream_status", OBSERVE_VAR_UPSTREAM_STATUS, false},
	{"outcome", OBSERVE_VAR_OUTCOME, false},
	{"state", OBSERVE_VAR_STATE, false},
	{"failures", OBSERVE_VAR_FAILURES, false},
	{"transition", OBSERVE_VAR_TRANSITION, false},
	{"ejection_capped", OBSERVE_VAR_EJECTION_CAPPED, false},
	{"retry_after", OBSERVE_VAR_RETRY_AFTER, false},
	{"all", OBSERVE_VARS_ALL, false},
	/* An answer then only unsets `error`: still an ACK with an action. */
	{"none", 0, false},
	{NULL, 0, false},
};

/* A backend's own enforce: only "none" (observe only) has a meaning of
 * its own; "inherit" is what a backend without the key does. */
static const struct config_word backend_enforce_words[] = {
	{"inherit", 0, false},
	{"none", 1, false},
	{"shadow", 1, true}, /* as [haproxy] enforce accepts it */
	{NULL, 0, false},
};

static const struct config_word half_open_backpressure_words[] = {
	{"close", BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE, false},
	{"ignore", BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE, false},
	{NULL, 0, false},
};

static const struct config_word open_late_success_words[] = {
	{"ignore", BREAKER_OPEN_LATE_SUCCESS_IGNORE, false},
	{"close", BREAKER_OPEN_LATE_SUCCESS_CLOSE, false},
	{NULL, 0, false},
};

const struct config_key config_keys[] = {
	/* ---- [agent]: the process; only a restart changes most of it ---- */
	{
		.name = "listen", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ADDRESS,
		ADDRESS_LIST(listen, nb_listen), .address = CONFIG_ADDRESS_UNIX,
		.flags = CONFIG_KEY_REPEATABLE,
		.option = "listen", .short_option = 'l', .arg = "ADDR",
		.help = "where HAProxy's SPOE connects: HOST:PORT, [IPV6]:PORT or unix:PATH; "
			"repeatable",
		.default_text = AGENT_DEFAULT_LISTEN,
	},
	{
		/* Reloads: widening the list for a new HAProxy must not cut
		 * the connections of the ones already in it. */
		.name = "allow", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ALLOWLIST,
		IN_CONFIG(allow), .flags = CONFIG_KEY_REPEATABLE | CONFIG_KEY_RELOADABLE,
		.option = "allow", .arg = "LIST",
		.help = "who may connect to SPOP (and to the admin pages, unless admin_allow): "
			"addresses and CIDR blocks, IPv4 or IPv6, comma-separated and "
			"repeatable, or any; needed on any listen address but loopback",
		.default_text = "none: loopback and unix listeners only",
	},
	{
		.name = "admin_allow", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ALLOWLIST,
		IN_CONFIG(admin_allow), .flags = CONFIG_KEY_REPEATABLE | CONFIG_KEY_RELOADABLE,
		.option = "admin-allow", .arg = "LIST",
		.help = "who may read /metrics, /state and /healthz, in allow's forms; needed "
			"when admin is not on loopback and allow is not set",
		.default_text = "allow's list",
	},
	{
		.name = "socket_mode", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_MODE,
		IN_CONFIG(socket_mode), .min = 0, .max = 0777,
		.option = "socket-mode", .arg = "MODE",
		.help = "file mode (octal) of the unix sockets listen creates: who may connect "
			"is who may write to it",
	},
	{
		.name = "socket_group", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_NAME,
		IN_CONFIG(socket_group), .option = "socket-group", .arg = "GROUP",
		.help = "group (a name or number) of the unix sockets listen creates, e.g. "
			"HAProxy's, or none: the agent's own",
	},
	{
		/* Reloads: a SIGHUP reads the files again (a renewed
		 * certificate under the same name too); new connections use
		 * them. Turning TLS on or off waits for a restart, as HAProxy's
		 * server line has to change with it (reload.c). */
		.name = "tls_cert", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_PATH,
		IN_CONFIG(tls_cert), .flags = CONFIG_KEY_RELOADABLE,
		.option = "tls-cert", .arg = "PATH",
		.help = "serve TLS on every SPOP listener with this PEM certificate chain (the "
			"agent's first), or none",
		.default_text = "none: plaintext",
	},
	{
		.name = "tls_key", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_PATH,
		IN_CONFIG(tls_key), .flags = CONFIG_KEY_RELOADABLE,
		.option = "tls-key", .arg = "PATH",
		.help = "the PEM private key of tls_cert, without a passphrase",
		.default_text = "in tls_cert's file",
	},
	{
		.name = "tls_ca", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_PATH,
		IN_CONFIG(tls_ca), .flags = CONFIG_KEY_RELOADABLE,
		.option = "tls-ca", .arg = "PATH",
		.help = "require a client certificate signed by a CA of this PEM bundle (HAProxy's "
			"crt on the agent's server line), or none",
		.default_text = "none: no client certificate asked for",
	},
	{
		.name = "max_frame_size", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_UINT,
		IN_CONFIG(agent.max_frame_size), .min = SPOP_MIN_FRAME_SIZE, .max = 1048576,
		.option = "max-frame-size", .arg = "N",
		.help = "largest SPOP frame accepted and offered; HAProxy's own is "
			"tune.bufsize - 4",
	},
	{
		.name = "max_connections", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_UINT,
		IN_CONFIG(agent.max_connections), .min = 1, .max = 1000000,
		.flags = CONFIG_KEY_MARKS_GIVEN, GIVEN(max_connections_set),
		.option = "max-connections", .arg = "N",
		.help = "SPOP connections served at once; a new one beyond them closes an idle "
			"one",
		.default_text = "1024, less when the descriptor limit leaves less room",
	},
	{
		.name = "idle_timeout", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_DURATION,
		IN_CONFIG(agent.idle_timeout_ms), .min = 1000, .max = UINT64_MAX,
		.option = "idle-timeout", .arg = "DURATION",
		.help = "an SPOP connection silent this long after its HELLO is closed; keep it "
			"above HAProxy's own (timeout idle, the agent backend's timeout server)",
	},
	{
		.name = "max_breakers", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_UINT,
		IN_CONFIG(max_breakers), .min = 1, .max = BREAKER_TABLE_MAX_ENTRIES,
		.option = "max-breakers", .arg = "N",
		.help = "servers tracked at once; idle healthy ones are evicted first",
	},
	{
		.name = "log_level", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ENUM,
		IN_CONFIG(log_level), .words = log_levels, .flags = CONFIG_KEY_RELOADABLE,
		.option = "log-level", .short_option = 'L', .arg = "LEVEL",
		.help = "notice logs transitions, info connections too",
	},
	{
		.name = "log_format", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ENUM,
		IN_CONFIG(log_format), .words = log_formats, .flags = CONFIG_KEY_RELOADABLE,
		.option = "log-format", .arg = "FORMAT",
		.help = "text, or json: one object per line (time, level, msg, the event's fields)",
	},
	{
		.name = "metrics_names", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ENUM,
		IN_CONFIG(metrics_names), .words = metrics_names_words,
		.flags = CONFIG_KEY_RELOADABLE, .option = "metrics-names", .arg = "NAMES",
		.help = "/metrics names: promex (HAProxy's exporter's labels), legacy, or both",
	},
	{
		.name = "metrics_detail", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ENUM,
		IN_CONFIG(metrics_detail), .words = metrics_details,
		.flags = CONFIG_KEY_RELOADABLE, .option = "metrics-detail", .arg = "DETAIL",
		.help = "/metrics per server, or per backend only (sums: for very large fleets)",
	},
	{
		.name = "syslog", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_BOOL,
		IN_CONFIG(use_syslog), .option = "syslog",
		.help = "log to syslog (facility daemon) instead of stderr",
	},
	{
		.name = "admin", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ADDRESS,
		IN_CONFIG(admin), .address = CONFIG_ADDRESS_NONE,
		.flags = CONFIG_KEY_MARKS_GIVEN, GIVEN(admin_set),
		.option = "admin", .arg = "ADDR",
		.help = "serve /metrics, /state and /healthz here; one given must open, "
			"the default only warns",
	},
	{
		.name = "state_file", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_PATH,
		IN_CONFIG(state.file), .flags = CONFIG_KEY_MARKS_GIVEN, GIVEN(state.file_set),
		.option = "state-file", .arg = "PATH",
		.help = "where the breakers' state survives a restart (msgpack), or none; one "
			"given must be writable, the default only warns",
	},
	{
		/* Restart only: the socket is the operator's way in, and a
		 * reload that moved it would strand a runbook mid-incident. */
		.name = "control", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_ADDRESS,
		IN_CONFIG(control), .address = CONFIG_ADDRESS_UNIX | CONFIG_ADDRESS_NONE,
		.flags = CONFIG_KEY_MARKS_GIVEN, GIVEN(control_set),
		.option = "control", .arg = "ADDR",
		.help = "the operator's control socket (spoa-breaker ctl, show breakers, hold, "
			"pause, release), or none; one given must open, the default only warns",
		.default_text = "unix:control.sock beside state_file; none without a state_file",
	},
	{
		.name = "control_mode", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_MODE,
		IN_CONFIG(control_mode), .min = 0, .max = 0777,
		.option = "control-mode", .arg = "MODE",
		.help = "file mode (octal) of the control socket: who may connect is who may "
			"write to it",
	},
	{
		.name = "control_group", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_NAME,
		IN_CONFIG(control_group), .option = "control-group", .arg = "GROUP",
		.help = "group (a name or number) of the control socket, or none: the agent's own",
	},
	{
		.name = "state_interval", .sections = CONFIG_SECTION_AGENT, .type = CONFIG_DURATION,
		IN_CONFIG(state.interval_ms), .min = 100, .max = 3600000,
		.flags = CONFIG_KEY_RELOADABLE, .option = "state-interval", .arg = "DURATION",
		.help = "at most one state write per interval; a burst of changes is written "
			"when it ends",
	},
	{
		/* Reloads: the handler reads the bits on each message, so a
		 * SIGHUP can widen the list before HAProxy's configuration
		 * starts reading a new variable, without a restart that would
		 * cut every SPOP connection. */
		.name = "ack_variables", .sections = CONFIG_SECTION_AGENT,
		.type = CONFIG_WORD_SET, IN_CONFIG(ack_variables), .words = ack_variable_words,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "ack-variables", .arg = "LIST",
		.help = "comma-separated: the variables each breaker-observe answer sets, the "
			"fewer the cheaper for HAProxy; error is always sent",
	},

	/* ---- [haproxy]: how decisions reach HAProxy; all of it reloads ---- */
	{
		.name = "enforce", .sections = CONFIG_SECTION_HAPROXY, .type = CONFIG_ENUM,
		IN_CONFIG(link.enforce), .words = enforce_modes,
		.flags = CONFIG_KEY_RELOADABLE | CONFIG_KEY_MARKS_GIVEN, GIVEN(enforce_set),
		.option = "enforce", .arg = "MODE",
		.help = "none (also spelt shadow): decisions are logged, HAProxy is not changed",
		.default_text = "runtime-api with a runtime_api socket, agent-check with an "
				"agent_check listener, none otherwise",
	},
	{
		.name = "runtime_api", .sections = CONFIG_SECTION_HAPROXY, .type = CONFIG_ADDRESS,
		ADDRESS_LIST(link.runtime_api, link.nb_runtime_api), .address = CONFIG_ADDRESS_UNIX,
		.flags = CONFIG_KEY_REPEATABLE | CONFIG_KEY_RELOADABLE,
		.option = "runtime-api", .arg = "ADDR",
		.help = "HAProxy's stats socket (level admin); repeatable, one per HAProxy",
	},
	{
		.name = "agent_check", .sections = CONFIG_SECTION_HAPROXY, .type = CONFIG_ADDRESS,
		IN_CONFIG(link.agent_check), .address = CONFIG_ADDRESS_UNIX,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "agent-check", .arg = "ADDR",
		.help = "answer HAProxy's agent-check here",
	},
	{
		.name = "poll_interval", .sections = CONFIG_SECTION_HAPROXY,
		.type = CONFIG_DURATION, IN_CONFIG(link.poll_ms), .min = 100, .max = UINT64_MAX,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "poll-interval", .arg = "DURATION",
		.help = "how often the agent looks at HAProxy: faults SPOE never sees, "
			"reconciliation",
	},
	{
		.name = "verdict_table", .sections = CONFIG_SECTION_HAPROXY, .type = CONFIG_NAME,
		IN_CONFIG(link.verdict_table), .flags = CONFIG_KEY_RELOADABLE,
		.option = "verdict-table", .arg = "NAME",
		.help = "share breaker verdicts with other HAProxy nodes through this stick "
			"table, which HAProxy's peers replicate (needs node_id), or none",
	},
	{
		.name = "node_id", .sections = CONFIG_SECTION_HAPROXY, .type = CONFIG_UINT,
		IN_CONFIG(link.node_id), .min = 1, .max = UINT32_MAX, .flags = CONFIG_KEY_RELOADABLE,
		.option = "node-id", .arg = "N",
		.help = "this node's id in the verdict table, unique among the nodes; the "
			"lowest keeps a verdict two nodes own",
		.default_text = "none",
	},

	/* ---- [breaker], [backend NAME], [server BACKEND/SERVER]: policies ---- */
	{
		.name = "threshold", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_UINT,
		IN_POLICY(threshold, BREAKER_FIELD_THRESHOLD), .min = 1, .max = 1000000,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "threshold", .arg = "N",
		.help = "consecutive failures that open a breaker",
	},
	{
		.name = "cooldown", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_DURATION,
		IN_POLICY(cooldown_ms, BREAKER_FIELD_COOLDOWN), .min = 1, .max = UINT64_MAX,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "cooldown", .arg = "DURATION",
		.help = "how long a breaker stays open before a probe is let through",
	},
	{
		.name = "half_open_probes", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_UINT, IN_POLICY(half_open_probes, BREAKER_FIELD_HALF_OPEN_PROBES),
		.min = 1, .max = BREAKER_MAX_PROBES, .flags = CONFIG_KEY_RELOADABLE,
		.option = "half-open-probes", .arg = "N",
		.help = "concurrent probes while half-open",
	},
	{
		/* The breaker no longer times probes out; old files still load. */
		.name = "probe_timeout", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_OBSOLETE, .flags = CONFIG_KEY_RELOADABLE,
		.help = "HAProxy's maxconn limits half-open probes and timeout server ends a "
			"hung one",
	},
	{
		.name = "capacity_statuses", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_STATUS_SET, IN_POLICY(capacity, BREAKER_FIELD_CAPACITY_SET),
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "capacity-statuses", .arg = "LIST",
		.help = "\"alive and busy\": never a failure; lists and ranges, e.g. "
			"500-502,504",
	},
	{
		.name = "failure_statuses", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_STATUS_SET, IN_POLICY(failure, BREAKER_FIELD_FAILURE_SET),
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "failure-statuses", .arg = "LIST",
		.help = "statuses that count as failures",
		.default_text = "500-599 minus the capacity and ignore statuses",
	},
	{
		.name = "ignore_statuses", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_STATUS_SET, IN_POLICY(ignore, BREAKER_FIELD_IGNORE_SET),
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "ignore-statuses", .arg = "LIST",
		.help = "statuses that record nothing at all",
	},
	{
		.name = "half_open_backpressure", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_ENUM,
		IN_POLICY(half_open_backpressure, BREAKER_FIELD_HALF_OPEN_BACKPRESSURE),
		.words = half_open_backpressure_words, .flags = CONFIG_KEY_RELOADABLE,
		.option = "half-open-backpressure", .arg = "WORD",
		.help = "what a busy answer does to a half-open breaker: close it, or free "
			"the probe slot and record nothing",
	},
	{
		.name = "open_late_success", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_ENUM, IN_POLICY(open_late_success, BREAKER_FIELD_OPEN_LATE_SUCCESS),
		.words = open_late_success_words, .flags = CONFIG_KEY_RELOADABLE,
		.option = "open-late-success", .arg = "WORD",
		.help = "what a success admitted before the trip does to an open breaker",
	},
	{
		.name = "max_cooldown", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_DURATION,
		IN_POLICY(max_cooldown_ms, BREAKER_FIELD_MAX_COOLDOWN), .min = 1,
		.max = UINT64_MAX, .flags = CONFIG_KEY_RELOADABLE,
		.option = "max-cooldown", .arg = "DURATION",
		.help = "the longest a breaker stays open: each trip in a row doubles the "
			"cooldown up to this; at least the cooldown",
		.default_text = "5m, or the cooldown when longer",
	},
	{
		.name = "healthy_for", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_DURATION,
		IN_POLICY(healthy_for_ms, BREAKER_FIELD_HEALTHY_FOR), .min = 1, .max = UINT64_MAX,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "healthy-for", .arg = "DURATION",
		.help = "closed this long, a breaker forgets its trips in a row: the next trip "
			"gets the plain cooldown",
	},
	{
		.name = "failure_rate_threshold", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_UINT,
		IN_POLICY(failure_rate_threshold, BREAKER_FIELD_FAILURE_RATE_THRESHOLD), .min = 0,
		.max = 100, .flags = CONFIG_KEY_RELOADABLE,
		.option = "failure-rate-threshold", .arg = "PERCENT",
		.help = "also open when this percentage of the last window judged requests "
			"failed (backpressure is neither); 0 turns the rule off",
	},
	{
		.name = "window", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_UINT,
		IN_POLICY(window, BREAKER_FIELD_WINDOW), .min = 1, .max = BREAKER_MAX_WINDOW,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "window", .arg = "N",
		.help = "judged requests the failure rate is taken over",
	},
	{
		.name = "minimum_volume", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_UINT,
		IN_POLICY(minimum_volume, BREAKER_FIELD_MINIMUM_VOLUME), .min = 1,
		.max = BREAKER_MAX_WINDOW, .flags = CONFIG_KEY_RELOADABLE,
		.option = "minimum-volume", .arg = "N",
		.help = "judged requests in the window before the failure rate may open; at "
			"most the window",
		.default_text = "20, or the window when smaller",
	},
	{
		.name = "wedged_after", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_DURATION,
		IN_POLICY(wedged_after_ms, BREAKER_FIELD_WEDGED_AFTER), .min = 0, .max = UINT64_MAX,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "wedged-after", .arg = "DURATION",
		.help = "open a breaker whose server answered only capacity statuses this long "
			"(at least minimum_volume of them) while another server of its backend "
			"succeeded; 0 turns the rule off",
		.default_text = "0 (off)",
	},
	{
		.name = "stalled_after", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_DURATION,
		IN_POLICY(stalled_after_ms, BREAKER_FIELD_STALLED_AFTER), .min = 0,
		.max = UINT64_MAX, .flags = CONFIG_KEY_RELOADABLE,
		.option = "stalled-after", .arg = "DURATION",
		.help = "open a breaker whose server had requests in flight this long with no "
			"response while another server of its backend succeeded (a hung "
			"worker, before timeout server); only for responses with a known "
			"upper bound; 0 turns the rule off",
		.default_text = "0 (off)",
	},
	{
		.name = "stalled_requests", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_UINT,
		IN_POLICY(stalled_requests, BREAKER_FIELD_STALLED_REQUESTS), .min = 0,
		.max = 1000000, .flags = CONFIG_KEY_RELOADABLE,
		.option = "stalled-requests", .arg = "N",
		.help = "open a breaker whose server was sent this many requests since it last "
			"answered, answered none, while its backend's other servers answered "
			"stalled_share of theirs sent after the same moment (a hung worker, "
			"whatever the answer times); 0 turns the rule off",
	},
	{
		.name = "stalled_share", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_UINT,
		IN_POLICY(stalled_share, BREAKER_FIELD_STALLED_SHARE), .min = 1, .max = 100,
		.flags = CONFIG_KEY_RELOADABLE,
		.option = "stalled-share", .arg = "PERCENT",
		.help = "for stalled_requests: the share of their requests the other servers "
			"must have answered",
	},
	{
		.name = "retry_after_max", .sections = CONFIG_SECTIONS_POLICY,
		.type = CONFIG_DURATION,
		IN_POLICY(retry_after_max_ms, BREAKER_FIELD_RETRY_AFTER_MAX), .min = 0,
		.max = BREAKER_RETRY_AFTER_MAX_LIMIT_MS, .flags = CONFIG_KEY_RELOADABLE,
		.option = "retry-after-max", .arg = "DURATION",
		.help = "a worker that answers a capacity status with Retry-After: N gets no new "
			"requests for N s, at most this long (within the ejection cap, never the "
			"last serving server); 0 ignores the header",
	},
	/* Per backend: a share of a backend's servers means nothing for one
	 * server, so a [server] section refuses them (--check names where they
	 * belong). drain_last_server is named for what it allows, off by
	 * default: on the command line a boolean is a flag, which can only
	 * turn a key on. */
	{
		.name = "max_ejection_percent",
		.sections = CONFIG_SECTION_BREAKER | CONFIG_SECTION_BACKEND, .type = CONFIG_UINT,
		IN_POLICY(max_ejection_percent, BREAKER_FIELD_MAX_EJECTION_PERCENT), .min = 0,
		.max = 100, .flags = CONFIG_KEY_RELOADABLE,
		.option = "max-ejection-percent", .arg = "PERCENT",
		.help = "at most this share of a backend's servers out of rotation at once "
			"(rounded down); an open breaker beyond it is not drained (ejection_capped)",
	},
	{
		.name = "drain_last_server",
		.sections = CONFIG_SECTION_BREAKER | CONFIG_SECTION_BACKEND, .type = CONFIG_BOOL,
		IN_POLICY(drain_last_server, BREAKER_FIELD_DRAIN_LAST_SERVER),
		.flags = CONFIG_KEY_RELOADABLE, .option = "drain-last-server",
		.help = "let the breakers drain a backend's last serving server too (off: "
			"never, whatever max_ejection_percent allows)",
	},
	/* Per backend, as HAProxy's retry-on is: what HAProxy may retry there
	 * decides how a retry is read. Off by default, as the shipped
	 * haproxy.cfg retries conn-failure and capacity statuses only. */
	{
		.name = "retried_timeouts",
		.sections = CONFIG_SECTION_BREAKER | CONFIG_SECTION_BACKEND, .type = CONFIG_BOOL,
		IN_POLICY(retried_timeouts, BREAKER_FIELD_RETRIED_TIMEOUTS),
		.flags = CONFIG_KEY_RELOADABLE, .option = "retried-timeouts",
		.help = "the backend's retry-on lists response-timeout (or "
			"all-retryable-errors): a request a worker held unanswered across a look "
			"and then retried elsewhere is no sign of life (off: every retry of a "
			"capacity status is backpressure, however late the status)",
	},
	/* At every level: an operator who knows a server's capacity pins it
	 * (its own maxconn stays). Named for what it turns off, as learning
	 * is on by default: on the command line a boolean is a flag. */
	{
		.name = "pin_maxconn", .sections = CONFIG_SECTIONS_POLICY, .type = CONFIG_BOOL,
		IN_POLICY(pin_maxconn, BREAKER_FIELD_PIN_MAXCONN),
		.flags = CONFIG_KEY_RELOADABLE, .option = "pin-maxconn",
		.help = "leave the servers' own maxconn alone (off: each server's maxconn is its "
			"worker's capacity, learnt from its capacity statuses, and HAProxy queues "
			"what is beyond it)",
	},
	/* Per backend, in its own section only, as HAProxy's retry-on and
	 * timeouts are: what a backend's clients get when their requests are
	 * ended is the backend's. On by default, so no command-line flag (a
	 * flag could only turn it on): `release_stalled = false` in a
	 * [backend NAME] section leaves them to HAProxy's `timeout server`. */
	{
		.name = "release_stalled", .sections = CONFIG_SECTION_BACKEND, .type = CONFIG_BOOL,
		IN_POLICY(release_stalled, BREAKER_FIELD_RELEASE_STALLED),
		.flags = CONFIG_KEY_RELOADABLE,
		.help = "a breaker opened as stalled (a hung worker) ends the requests its server "
			"holds, with the drain (`shutdown sessions server`): their clients get an "
			"error at once instead of at timeout server",
	},
	/* Per backend, in its own section only: a backend left out of the
	 * breakers on purpose. No command-line flag: a flag could only turn
	 * it on, and every backend is guarded unless its section says not. */
	{
		.name = "guarded", .sections = CONFIG_SECTION_BACKEND, .type = CONFIG_BOOL,
		IN_POLICY(guarded, BREAKER_FIELD_GUARDED), .flags = CONFIG_KEY_RELOADABLE,
		.help = "false: a backend HAProxy sends no SPOP message for on purpose; the agent "
			"keeps no breaker for its servers and never drains them",
	},
	/* Per backend, in its own section only, after [haproxy]'s enforce
	 * (config_key_find() finds that one; the file reader the one of the
	 * section it reads). */
	{
		.name = "enforce", .sections = CONFIG_SECTION_BACKEND, .type = CONFIG_ENUM,
		IN_POLICY(observe_only, BREAKER_FIELD_OBSERVE_ONLY), .words = backend_enforce_words,
		.flags = CONFIG_KEY_RELOADABLE,
		.help = "none: the backend's breakers judge and log, and the agent changes "
			"nothing in HAProxy for its servers (what it had set there is lifted): "
			"the control socket's pause, kept in the file",
	},
};

/* A row added without CONFIG_NB_KEYS, or the count raised without its
 * row, would otherwise leave a zeroed key or none: the build stops. */
_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) == CONFIG_NB_KEYS,
	       "CONFIG_NB_KEYS must count the rows of config_keys");

const struct config_key *config_key_find(const char *name)
{
	for (size_t i = 0; i < CONFIG_NB_KEYS; i++)
		if (strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	return NULL;
}

const struct config_key *config_key_find_in(const char *name, unsigned section)
{
	for (size_t i = 0; i < CONFIG_NB_KEYS; i++)
		if (strcmp(config_keys[i].name, name) == 0 && (config_keys[i].sections & section))
			return &config_keys[i];
	return config_key_find(name);
}

const char *config_section_name(enum config_section section)
{
	switch (section) {
	case CONFIG_SECTION_AGENT:
		return "agent";
	case CONFIG_SECTION_HAPROXY:
		return "haproxy";
	case CONFIG_SECTION_BREAKER:
		return "breaker";
	case CONFIG_SECTION_BACKEND:
		return "backend NAME";
	case CONFIG_SECTION_SERVER:
		return "server BACKEND/SERVER";
	}
	return "?";
}

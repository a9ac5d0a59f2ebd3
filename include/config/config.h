/*
 * config.h - the agent's configuration: what it holds, where it comes from
 * (defaults, then the INI file given by -f, then the command line), and
 * what a reload may change.
 *
 *   [agent]                  listen (repeatable), allow, admin_allow,
 *                            socket_mode, socket_group, tls_cert, tls_key,
 *                            tls_ca, max_frame_size,
 *                            max_connections, idle_timeout, max_breakers,
 *                            log_level, log_format, syslog, ack_variables,
 *                            metrics_names, metrics_detail,
 *                            admin (HOST:PORT of /metrics, /state, /healthz;
 *                            none to disable)
 *   [haproxy]                enforce (runtime-api|agent-check|none),
 *                            runtime_api (repeatable: one per HAProxy),
 *                            agent_check, poll_interval
 *   [breaker]                the global breaker policy
 *   [backend NAME]           overrides for one backend
 *   [server BACKEND/SERVER]  overrides for one server
 *
 * Policy keys: threshold, cooldown, half_open_probes, capacity_statuses,
 * failure_statuses, ignore_statuses, half_open_backpressure (close|ignore),
 * open_late_success (ignore|close), max_cooldown, healthy_for,
 * failure_rate_threshold (percent, 0 off), window, minimum_volume,
 * wedged_after (0 off). A status set given at a level replaces
 * the inherited one (never merged). Durations take a unit (ms, s, m); a
 * bare number is milliseconds, as in HAProxy.
 *
 * Every key, its type, limits, option and whether SIGHUP applies it is one
 * row of the key table (keys.h, spoa/config/keys.c).
 */
#ifndef SPOA_CONFIG_H
#define SPOA_CONFIG_H

#include <stdio.h>

#include "admin/metrics_style.h"
#include "core/breaker.h"
#include "link/link_settings.h"
#include "spop/agent_settings.h"
#include "state/state_settings.h"
#include "util/cidr.h"
#include "util/log.h"
#include "util/names.h"

#define CONFIG_LISTEN_MAX_LEN 128
#define CONFIG_PATH_MAX_LEN 256
#define CONFIG_DEFAULT_MAX_BREAKERS 10000
/* Owner and group: an HAProxy in the socket's group may connect, nobody else. */
#define CONFIG_DEFAULT_SOCKET_MODE 0660
#define CONFIG_GROUP_MAX_LEN 64

/* The line each policy key of a section was last set at, by the bit of its
 * BREAKER_FIELD_ (CONFIG_FROM_ARGS: an option): a problem one key makes is
 * said at that key's line, not at its section's. */
#define CONFIG_FIELD_LINES 32

struct config_override {
	char backend[NAME_MAX_LEN + 1];
	char server[NAME_MAX_LEN + 1]; /* empty for a backend-wide override */
	int line;                      /* of its section header, for messages */
	int field_lines[CONFIG_FIELD_LINES];
	struct breaker_policy_layer layer;
};

struct config {
	const char *path; /* the -f file (borrowed from argv), or NULL */
	char listen[AGENT_MAX_LISTENERS][CONFIG_LISTEN_MAX_LEN];
	unsigned nb_listen; /* 0: the default address */
	/* Who may connect (util/cidr.h): to SPOP, and to the admin pages
	 * (empty: allow's list). Empty on a listener that is not loopback
	 * is refused, at start and at a reload: see config_check_exposure(). */
	struct cidr_list allow;
	struct cidr_list admin_allow;
	/* The unix sockets `listen` creates: their file mode and group
	 * (empty: the agent's own). */
	unsigned socket_mode;
	char socket_group[CONFIG_GROUP_MAX_LEN];
	/* TLS on the SPOP listeners (spop/tls.h); empty tls_cert: plaintext.
	 * Empty tls_key: in tls_cert's file; empty tls_ca: no client
	 * certificate asked for. */
	char tls_cert[CONFIG_PATH_MAX_LEN];
	char tls_key[CONFIG_PATH_MAX_LEN];
	char tls_ca[CONFIG_PATH_MAX_LEN];
	struct agent_settings agent;
	bool max_connections_set; /* given: kept even above what the descriptor limit allows */
	enum log_level log_level;
	enum log_format log_format; /* text, or one JSON object per line */
	enum metrics_names metrics_names;   /* /metrics: promex, legacy or both */
	enum metrics_detail metrics_detail; /* /metrics: per server, or per backend only */
	bool use_syslog;
	uint32_t max_breakers;
	unsigned ack_variables; /* enum observe_var bits: what breaker-observe answers set */
	struct breaker_policy_layer global;
	int global_line; /* of the file's [breaker] header, for messages; 0: none */
	int global_field_lines[CONFIG_FIELD_LINES]; /* as an override's */
	/* How decisions reach HAProxy (the link's settings). enforce_set:
	 * link.enforce given explicitly; when not, runtime-api if a socket
	 * is given, agent-check if a listener is, none otherwise (decisions
	 * logged, HAProxy not changed). */
	struct link_settings link;
	bool enforce_set;
	/* The admin HTTP listener; empty: none. admin_set: given explicitly
	 * (then failing to open it is fatal; the default only warns). */
	char admin[CONFIG_LISTEN_MAX_LEN];
	bool admin_set;
	/* The state snapshot (state/state_store.c). */
	struct state_settings state;
	/* The operator's control socket (daemon/control.h): "unix:PATH", ""
	 * for none. control_set: given explicitly (then failing to open it is
	 * fatal); when not, control.sock beside the state file, which only
	 * warns. Its file's mode and group, as socket_mode's. */
	char control[CONFIG_LISTEN_MAX_LEN];
	bool control_set;
	unsigned control_mode;
	char control_group[CONFIG_GROUP_MAX_LEN];
	struct config_override *overrides; /* owned: config_free() */
	unsigned nb_overrides;
	unsigned cap_overrides;
	/* Every effective policy, resolved once by config_from_args() from
	 * global and overrides (owned; the daemon moves it into the breaker
	 * table, which then owns it). */
	struct breaker_policies policies;
	/* --check found the configuration valid: main then asks each
	 * runtime_api what its configuration lacks (daemon/live_check.c). */
	bool checked;
};

/* The allowlist the admin pages use: admin_allow, else allow. */
static inline const struct cidr_list *config_admin_allow(const struct config *c)
{
	return c->admin_allow.n || c->admin_allow.any ? &c->admin_allow : &c->allow;
}

/* The embedded defaults: what the agent runs with when given no file. */
void config_defaults(struct config *c);
/* Releases what c owns (the overrides); c is then empty. Harmless twice. */
void config_free(struct config *c);

/*
 * The whole configuration from a command line: the defaults, then the file
 * given by -f, then the options, which override the file (a repeatable
 * option replaces the file's list). Then the whole is checked: addresses,
 * the enforcement channels, every policy as it will resolve.
 *
 * Returns -1 when the agent should run with *c. Otherwise the exit status:
 * 0 after --help, --version or a valid --check (their text goes to `out`),
 * 1 for a configuration that is refused, 2 for a bad command line. Every
 * problem goes to `errors`: "FILE:LINE: what is wrong" for the file,
 * "spoa-breaker: --option 'value': expected ..." for the command line;
 * warnings ("FILE:LINE: warning: ...") too, even when it returns -1.
 *
 * Callable again on the same argv (SIGHUP): getopt starts over. c is
 * overwritten without being freed first; release it with config_free()
 * after any return. c->path points into argv.
 */
int config_from_args(struct config *c, int argc, char **argv, FILE *out, FILE *errors);

/*
 * For a reload: calls fn (when not NULL) with the name of each key that
 * only a restart applies ("listen", "max_connections", ...) whose value
 * differs between the running configuration and the next one, in table
 * order. Returns how many differ.
 */
unsigned config_restart_only_changes(const struct config *running, const struct config *next,
				     void (*fn)(void *ctx, const char *key), void *ctx);

/* True if any [haproxy] key differs (enforce as settled, runtime_api,
 * agent_check, poll_interval): the enforcement links must be rebuilt. */
bool config_haproxy_changed(const struct config *a, const struct config *b);

/* For a reload: every key only a restart applies takes its running value
 * in next (what runs keeps describing what runs), by the key table. */
void config_keep_restart_only(struct config *next, const struct config *running);

/*
 * Who may connect, checked on a whole configuration: each listen,
 * agent_check or admin address other hosts can reach (TCP, not loopback)
 * with no allowlist for it (allow; admin_allow or allow for admin) is
 * refused, one line to errors each, at the line of origins that set the
 * key ("spoa-breaker: " when origins is NULL or it was not set in the
 * file). Returns the number of refusals. config_from_args() runs it on
 * every start and --check; a reload on what will run after it.
 */
struct config_origins;
int config_check_exposure(const struct config *c, const struct config_origins *origins,
			  FILE *errors);

/*
 * For a reload: checks what would run after it, not the new file alone.
 * A key only a restart applies (listen, admin, ...) keeps its running
 * value, so the new file's allow and admin_allow are checked against the
 * running listeners (config_check_exposure); and while TLS runs with
 * client certificates (running tls_ca) and stays on, tls_ca may change
 * but not go away. next is as loaded (its TLS keys as given, or already
 * set back to the running ones when TLS was turned on or off: either
 * gives the same answer); neither is changed. Writes one line per
 * problem to errors; returns how many. 0: the reload may go on.
 */
int config_check_reload(const struct config *running, const struct config *next,
			FILE *errors);

/* Why a reload refuses what config_check_reload() found: said by the
 * reload and by --check alike. */
#define CONFIG_RELOAD_EXPOSED                                                        \
	"listen and admin stay as they run until a restart, and the new file would " \
	"leave a running listener open to every address or without client "          \
	"certificates"

/*
 * For --check: judges next as a reload of the agent running on its state
 * file would (config_check_reload), from the file that agent writes
 * (running_file.h). Says each problem as the reload logs it, then that a
 * reload would be refused, and returns how many; also warns, as the reload
 * does, of each key it would leave as it runs. 0 when no agent runs there:
 * no file (nothing said), one that cannot be read or parsed, or one left
 * by a process that is gone (one warning says which); next is then
 * checked as for a start, as it always was.
 */
int config_check_running(const struct config *next, FILE *errors);

/*
 * Resolves every policy into c->policies through breaker_policies_build(),
 * the core's one resolver: the global one, each backend's over it, each
 * server's over its backend's. Writes each problem to errors at the line
 * of the section that creates it ("FILE:LINE: [backend be]: max_cooldown
 * of ..."), or after "spoa-breaker: " when it has no line in the file;
 * two status sets that overlap are said once, at the line of the key that
 * made them overlap (the more specific of the two, else the later), not
 * at every section that inherits them. Returns the number of problems
 * (c->policies is then empty).
 */
int config_resolve_policies(struct config *c, FILE *errors);

#endif /* SPOA_CONFIG_H */

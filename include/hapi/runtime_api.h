/*
 * runtime_api.h - HAProxy's Runtime API ("stats socket ... level admin"): the
 * commands we send, the replies we read, and the client that carries them.
 *
 * Three layers, in spoa/hapi/:
 *   cmd.c           pure command builders; a name HAProxy would not accept
 *                   (see names.h) never becomes a command
 *   the reply parsers, pure, over (buf, len), not NUL-terminated, robust to
 *                   garbage, one reply a file: stat.c (`show stat` CSV),
 *                   servers_state.c, info.c, and text.c (what they share,
 *                   text.h, and the splitter of a multi-command reply)
 *   client.c        the asynchronous client on the caller's libev loop: a
 *                   bounded queue, batches of commands on one line, timeouts,
 *                   backoff; the loop never blocks on HAProxy
 *
 * What HAProxy answers (measured on 2.6.12, 3.0.11 and 3.2.26; the parser
 * tests pin the captures):
 *   - Non-interactive mode: we write one line, HAProxy answers and closes.
 *   - "a; b; c\n" runs the three commands in order; each output ends with an
 *     empty line, and a failing command does not stop the rest:
 *       success of set server / set maxconn   "\n"        (empty output)
 *       "No such server." / "No such backend." "No such server.\n\n"
 *     so results are matched to commands by position.
 *   - An output that lacks its terminator shifts every later position. 2.6
 *     does this for `set maxconn server B/S abc` ("...garbage\n" only); 3.2
 *     for a line longer than tune.bufsize ("The command line is too big...\n"
 *     instead of any output). The splitter notices the count is wrong; the
 *     client then fails the whole batch rather than guess.
 *   - An empty command (";;" or a blank line) answers with the whole help
 *     text, which is why the client refuses empty commands.
 */
#ifndef SPOA_HAPI_RUNTIME_API_H
#define SPOA_HAPI_RUNTIME_API_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A slice of a reply: not NUL-terminated, valid while the reply is. */
struct runtime_api_str {
	const char *ptr;
	size_t len;
};

/* ------------------------------------------------------------------------
 * Commands (cmd.c)
 * ------------------------------------------------------------------------ */

/* Room for the longest command built here (two names of NAME_MAX_LEN). */
#define RUNTIME_API_CMD_MAX 320

/* For every command builder: n is what snprintf() returned into buf.
 * True if the command fit; otherwise buf is left empty (when size > 0) and
 * false returned, so a command cut short is never sent. */
bool runtime_api_cmd_fits(char *buf, size_t size, int n);
/* Leaves buf empty (when size > 0) and returns false: a refused command. */
bool runtime_api_cmd_refuse(char *buf, size_t size);

/*
 * "set server B/S state STATE", STATE one of "ready", "drain", "maint".
 * Writes one command, NUL-terminated, without a newline, and returns true.
 * Returns false, leaving buf an empty string (when size > 0), if a name is
 * NULL or not name_is_valid(), if STATE is anything else, or if the command
 * does not fit in size bytes.
 */
bool runtime_api_cmd_set_state(char *buf, size_t size, const char *backend, const char *server,
			 const char *state);

/* "set maxconn server B/S N"; 0 means unlimited. Same contract as above. */
bool runtime_api_cmd_set_maxconn(char *buf, size_t size, const char *backend, const char *server,
			   unsigned maxconn);

/* "shutdown sessions server B/S": HAProxy ends every request the server
 * holds at once (what a hung worker's clients would otherwise wait out
 * until `timeout server`). Same contract as above. */
bool runtime_api_cmd_shutdown_sessions(char *buf, size_t size, const char *backend,
				       const char *server);

/* "show servers state B", or "show servers state" for every backend when
 * backend is NULL. Same contract as above. */
bool runtime_api_cmd_show_servers_state(char *buf, size_t size, const char *backend);

/* A map path fit for a command: letters, digits and "/._-" only. */
bool map_path_is_safe(const char *s, size_t len);

/* "show map PATH", PATH as `show map` listed it (map_file.h); false (buf
 * "") when the path is not map_path_is_safe() or does not fit. */
bool runtime_api_cmd_show_map(char *buf, size_t size, const char *path);

/*
 * The records HAProxy keeps for the agent (haproxy_record.h): a KEY is one
 * valid name, or two joined by one '/' or '@' ("workers/w1", "w1@workers",
 * "workers"); a map VALUE is letters, digits and ",=._" ("drain,maxconn=50",
 * "1796080000"); a table's DATA is "data.NAME NUMBER" pairs (letters,
 * digits, '.', '_' and single spaces). Same contract as above: false, buf
 * "", for anything else or no room.
 */
/* "add map PATH KEY VALUE" */
bool runtime_api_cmd_add_map(char *buf, size_t size, const char *path, const char *key,
			     const char *value);
/* "set map PATH KEY VALUE" */
bool runtime_api_cmd_set_map(char *buf, size_t size, const char *path, const char *key,
			     const char *value);
/* "del map PATH KEY" */
bool runtime_api_cmd_del_map(char *buf, size_t size, const char *path, const char *key);
/* "show table NAME" */
bool runtime_api_cmd_show_table(char *buf, size_t size, const char *table);
/* "set table NAME key KEY DATA" */
bool runtime_api_cmd_set_table(char *buf, size_t size, const char *table, const char *key,
			       const char *data);

/* ------------------------------------------------------------------------
 * Replies (text.c, stat.c, servers_state.c, info.c)
 * ------------------------------------------------------------------------ */

/*
 * What a parser made of a reply. rows counts the callbacks made; malformed
 * counts lines skipped (wrong number of fields, a number that is not one,
 * a line cut short). error says why the reply was refused when the parser
 * returns false; otherwise it describes the first skipped line, with its
 * line number, or is "" when there was none.
 */
struct runtime_api_parse_report {
	unsigned rows;
	unsigned malformed;
	char error[160];
};

/*
 * Splits the reply to a line of n commands into their outputs: out[i] is
 * the output of command i without the empty line that ends it (so a `set`
 * that succeeded has len 0, and "No such server." keeps its own newline).
 * *found is the number of complete outputs. Returns true only if the reply
 * holds exactly n terminated outputs and nothing after them; on false, the
 * first *found entries of out are still meaningful, the rest are not.
 */
bool runtime_api_split_reply(const char *buf, size_t len, struct runtime_api_str *out, size_t n, size_t *found);

/* One server row of `show stat`. Counters are 0 when the field is empty. */
struct runtime_api_stat_row {
	struct runtime_api_str pxname;
	struct runtime_api_str svname;
	struct runtime_api_str status; /* "UP", "DOWN", "DRAIN", "MAINT", "no check", "UP 1/2", ... */
	struct runtime_api_str mode;   /* the proxy's mode: "http", "tcp"; empty if not reported */
	int64_t slim;		 /* the server's maxconn; -1 when empty (unlimited) */
	uint64_t econ;		 /* connection errors */
	uint64_t eresp;		 /* response errors (includes srv_abrt) */
	uint64_t wretr;		 /* connection retries */
	uint64_t wredis;	 /* redispatches away from this server */
	uint64_t srv_abrt;	 /* transfers aborted by the server */
	uint64_t cli_abrt;	 /* transfers aborted by the client */
	uint64_t hrsp_5xx;	 /* 5xx answered by the server itself */
	uint64_t weight;
	uint64_t iid; /* proxy id */
	uint64_t sid; /* server id within the proxy */
	uint64_t scur; /* current sessions: requests in flight on the server */
	/* The worker's own answers by class (optional columns, 0 when
	 * absent); 429 is among the 4xx. */
	uint64_t hrsp_1xx, hrsp_2xx, hrsp_3xx, hrsp_4xx;
	/* Requests that left HAProxy for the server, one per attempt
	 * (optional column, 0 when absent): what the stalled rule counts as
	 * sent (stall_watch.c). */
	uint64_t stot;
	/* The server's "ADDRESS:PORT" (optional column): empty for a
	 * server-template slot DNS has not filled. has_addr: the reply has
	 * the column, so an empty one means "no address". */
	struct runtime_api_str addr;
	bool has_addr;
};

typedef void (*runtime_api_stat_fn)(void *ctx, const struct runtime_api_stat_row *row);

/*
 * Parses a `show stat` CSV reply (plain or `show stat -1 4 -1`, with or
 * without the terminating empty line) and calls fn for every server row;
 * FRONTEND, BACKEND and listener rows are skipped. Columns are found by
 * name in the "# pxname,svname,..." header, so the column order and the
 * columns added from 2.6 to 3.2 do not matter; quoted fields are handled.
 * Returns false with report->error set, and calls fn for nothing, when
 * there is no header or it lacks one of the columns above (the reply is an
 * error message, or HAProxy changed). A malformed row is skipped and
 * counted. report may be NULL.
 */
bool runtime_api_parse_stat(const char *buf, size_t len, runtime_api_stat_fn fn, void *ctx,
		      struct runtime_api_parse_report *report);

/*
 * The same parser, fed a reply as it arrives, so a `show stat` of tens of
 * thousands of servers is never held whole nor parsed in one go:
 *
 *   runtime_api_stat_stream_init(&s, fn, ctx);
 *   each time bytes arrive: used = runtime_api_stat_stream_feed(&s, buf, len, false);
 *     (buf is what the last feed left unused followed by the new bytes;
 *      rows are called back for every complete record, and `used` says
 *      where the first incomplete one starts - keep the rest for later)
 *   at the end of the reply: runtime_api_stat_stream_feed(&s, rest, n, true);
 *   runtime_api_stat_stream_usable(&s), s.report: as runtime_api_parse_stat.
 *
 * Any split of a reply gives the same rows and report as the whole
 * (test_runtime_api_parse, fuzz_runtime_api). A refused reply is known at
 * its first two bytes and consumes everything after. Fields are private.
 */
#define RUNTIME_API_STAT_COLS 23
struct runtime_api_stat_columns {
	size_t nb_fields;
	struct {
		size_t index;
		unsigned col;
	} want[RUNTIME_API_STAT_COLS]; /* by increasing field index */
	unsigned nb_want;
	bool has_type;
	bool has_addr;
};

struct runtime_api_stat_stream {
	runtime_api_stat_fn fn;
	void *ctx;
	struct runtime_api_parse_report report;
	struct runtime_api_stat_columns columns;
	unsigned lineno;
	bool header_read;
	bool refused; /* no usable header: report.error says why */
	bool ended;   /* a record was cut short by the end */
};

void runtime_api_stat_stream_init(struct runtime_api_stat_stream *s, runtime_api_stat_fn fn, void *ctx);
size_t runtime_api_stat_stream_feed(struct runtime_api_stat_stream *s, const char *buf, size_t len,
				    bool at_end);
bool runtime_api_stat_stream_usable(const struct runtime_api_stat_stream *s);

/*
 * srv_admin_state bits (HAProxy's enum srv_admin, include/haproxy/server-t.h,
 * the same from 2.6 to 3.2).
 */
#define RUNTIME_API_ADMF_FMAINT 0x01 /* forced into maintenance (`state maint`) */
#define RUNTIME_API_ADMF_IMAINT 0x02 /* maintenance inherited from a tracked server */
#define RUNTIME_API_ADMF_CMAINT 0x04 /* maintenance from the configuration (`disabled`) */
#define RUNTIME_API_ADMF_FDRAIN 0x08 /* forced into drain (`state drain`) */
#define RUNTIME_API_ADMF_IDRAIN 0x10 /* drain inherited from a tracked server */
#define RUNTIME_API_ADMF_RMAINT 0x20 /* maintenance after a DNS resolution failure */
#define RUNTIME_API_ADMF_HMAINT 0x40 /* FQDN set from the stats socket */
/* HAProxy's own masks: "in maintenance" and "draining". */
#define RUNTIME_API_ADMF_MAINT (RUNTIME_API_ADMF_FMAINT | RUNTIME_API_ADMF_IMAINT | RUNTIME_API_ADMF_RMAINT)
#define RUNTIME_API_ADMF_DRAIN (RUNTIME_API_ADMF_FDRAIN | RUNTIME_API_ADMF_IDRAIN)

/* srv_op_state values. */
#define RUNTIME_API_SRV_STOPPED  0
#define RUNTIME_API_SRV_STARTING 1
#define RUNTIME_API_SRV_RUNNING  2
#define RUNTIME_API_SRV_STOPPING 3

/* One row of `show servers state`. */
struct runtime_api_server_state {
	uint64_t be_id;
	struct runtime_api_str be_name;
	uint64_t srv_id;
	struct runtime_api_str srv_name;
	unsigned op_state;    /* RUNTIME_API_SRV_* */
	unsigned admin_state; /* RUNTIME_API_ADMF_* bits */
	unsigned uweight;     /* current (user) weight */
	unsigned iweight;     /* initial weight from the configuration */
	/* Where the server points now (optional columns, empty when absent):
	 * srv_addr is "-" for a server-template slot DNS has not filled. What
	 * `set server ... addr`, DNS and ingress controllers change. */
	struct runtime_api_str addr;
	struct runtime_api_str port;
};

typedef void (*runtime_api_server_state_fn)(void *ctx, const struct runtime_api_server_state *row);

/*
 * Parses `show servers state [B]`: the format version line ("1"), the
 * "# be_id be_name ..." header (columns found by name), then one row per
 * server, fields separated by single spaces (an empty field is possible).
 * Returns false with report->error set, calling fn for nothing, on another
 * version, a missing header or a missing column (an error message such as
 * "Can't find backend." lands here). report may be NULL.
 */
bool runtime_api_parse_servers_state(const char *buf, size_t len, runtime_api_server_state_fn fn, void *ctx,
			       struct runtime_api_parse_report *report);

/* The same, fed as the reply arrives: complete lines are parsed, the
 * rest is left unused for the next feed. Same use as the stat stream. */
#define RUNTIME_API_SERVERS_STATE_COLS 10
struct runtime_api_servers_state_stream {
	runtime_api_server_state_fn fn;
	void *ctx;
	struct runtime_api_parse_report report;
	long index_of[RUNTIME_API_SERVERS_STATE_COLS];
	size_t nb_fields;
	unsigned lineno;
	bool header_read;
	bool refused;
	bool ended;
};

void runtime_api_servers_state_stream_init(struct runtime_api_servers_state_stream *s,
					   runtime_api_server_state_fn fn, void *ctx);
size_t runtime_api_servers_state_stream_feed(struct runtime_api_servers_state_stream *s,
					     const char *buf, size_t len, bool at_end);
bool runtime_api_servers_state_stream_usable(const struct runtime_api_servers_state_stream *s);

struct runtime_api_info {
	uint64_t pid;
	uint64_t uptime_sec;
	uint64_t process_num;	 /* 0 when absent */
	uint64_t start_time_sec; /* 0 when absent */
	char version[64];	 /* "" when absent; cut if longer */
};

/*
 * Parses `show info` ("Key: value" lines). A new HAProxy process (restart
 * or reload) shows as a new pid or start_time_sec. Returns false with
 * report->error set when Pid or Uptime_sec is missing or not a number.
 * report may be NULL.
 */
bool runtime_api_parse_info(const char *buf, size_t len, struct runtime_api_info *info,
		      struct runtime_api_parse_report *report);

/* ------------------------------------------------------------------------
 * The client (client.c)
 * ------------------------------------------------------------------------ */

/* The longest line sent: kept well under HAProxy's default tune.bufsize
 * (16384), beyond which 3.2 refuses the whole line. A batch stops growing
 * before it; a longer single command is refused by runtime_api_submit. */
#define RUNTIME_API_MAX_LINE 8192

enum runtime_api_result {
	RUNTIME_API_OK,     /* HAProxy answered; the reply is the command's output,
		       * which may be an error message ("No such server.") */
	RUNTIME_API_FAILED, /* no answer: could not connect, connection error, timeout,
		       * reply could not be split by command, or the client was
		       * freed; the reply is a short reason for a log line */
};

/*
 * Called exactly once per submitted command, always from the loop, never
 * from inside runtime_api_submit. reply[len] is '\0'; the reply lives only for
 * the call. On RUNTIME_API_OK, a `set` command succeeded iff len == 0. A
 * callback may call runtime_api_submit, but must not free the client.
 */
typedef void (*runtime_api_reply_fn)(void *ctx, enum runtime_api_result result, const char *reply, size_t len);

struct runtime_api_settings {
	unsigned max_queue; /* commands waiting or in flight; more are refused */
	unsigned max_batch; /* commands per line */
	double timeout;	    /* seconds for connect + write + whole reply; also
			     * the longest a command waits while HAProxy is down */
	double backoff_min; /* seconds before the first retry after a failure */
	double backoff_max; /* doubling stops here; back to min on success */
	size_t max_reply;   /* bytes of one reply; more fails the batch */
};

#define RUNTIME_API_DEFAULT_MAX_QUEUE	  256
#define RUNTIME_API_DEFAULT_MAX_BATCH	  32
#define RUNTIME_API_DEFAULT_TIMEOUT	  2.0
#define RUNTIME_API_DEFAULT_BACKOFF_MIN 0.1
#define RUNTIME_API_DEFAULT_BACKOFF_MAX 5.0
#define RUNTIME_API_DEFAULT_MAX_REPLY	  (4u << 20)

/* Counters, read by the metrics endpoint. */
struct runtime_api_stats {
	uint64_t commands_ok;	   /* answered by HAProxy (whatever the answer) */
	uint64_t commands_failed;  /* RUNTIME_API_FAILED callbacks */
	uint64_t dropped;	   /* refused by runtime_api_submit: queue full */
	uint64_t connects;	   /* connection attempts */
	uint64_t connect_failures; /* attempts refused or failed before connecting */
	uint64_t timeouts;	   /* exchanges that ran out of time */
};

struct runtime_api_client;

void runtime_api_settings_default(struct runtime_api_settings *s);

/*
 * A client for the Runtime API at address: "unix:/path", "HOST:PORT" (IPv4
 * or "localhost") or "[IPV6]:PORT". settings NULL means the defaults. Does
 * not connect: the first command does. Returns NULL with a message in err
 * on a bad address or bad settings, or when out of memory. The client owns
 * its queue and buffers; runtime_api_client_free releases them.
 */
struct runtime_api_client *runtime_api_client_new(struct ev_loop *loop, const char *address,
				      const struct runtime_api_settings *settings, char *err,
				      size_t err_size);

/*
 * Closes any connection and calls every pending callback with RUNTIME_API_FAILED
 * ("client freed"), in order, from inside this call; runtime_api_submit returns
 * false meanwhile. Then frees the client. NULL is a no-op.
 */
void runtime_api_client_free(struct runtime_api_client *c);

/*
 * Queues command (copied) for the next batch. The command must be one
 * Runtime API command: not blank, at most RUNTIME_API_MAX_LINE - 1 bytes, and
 * without ';', '\', '\r' or '\n' (a separator, an escaped separator, an
 * end of line: each would shift every reply after it). Commands about the
 * session itself must not be sent either: after `prompt` HAProxy waits for
 * another line (measured: the exchange times out), after `quit` it answers
 * nothing more (the batch cannot be split).
 * Returns false, and fn is never called, if the command is refused (logged
 * as an error: it is a bug in the caller), the queue holds max_queue
 * commands (counted in dropped), or the client is being freed. On true, fn
 * is called exactly once, later, from the loop.
 *
 * Order: callbacks come in submission order. Commands submitted while a
 * batch is in flight go in the next batch. Each command is sent at most
 * once; if its batch fails, it fails (after a timeout or a cut reply, it
 * may still have been applied). While HAProxy is unreachable, the client
 * waits out an exponential backoff between attempts, and commands stay
 * queued for the next attempt; but one that has waited `timeout` without
 * being sent fails then, so callers learn of an outage within `timeout`
 * (twice that if it was queued behind an attempt), not after a backoff of
 * up to backoff_max.
 */
bool runtime_api_submit(struct runtime_api_client *c, const char *command, runtime_api_reply_fn fn, void *ctx);

/*
 * Hands the reply to stream as it arrives instead of whole: for replies
 * too large to hold (`show stat` of a large fleet). The command goes alone
 * in its exchange. Each time bytes arrive, stream(ctx, buf, len, false)
 * gets what it left unused last time followed by them, and returns how
 * many it used (complete records; the rest is kept, up to
 * RUNTIME_API_STREAM_WINDOW bytes); when HAProxy closes, stream(...,
 * true) gets the rest, and then fn is called: RUNTIME_API_OK with an empty
 * reply if the output ended with its empty line, RUNTIME_API_FAILED
 * otherwise - possibly after stream saw part of the reply, which the
 * caller must then not trust as whole. max_reply does not apply; the
 * timeout bounds a silence, and the whole reply may take up to
 * RUNTIME_API_STREAM_TIMEOUTS times it. Otherwise as runtime_api_submit.
 */
typedef size_t (*runtime_api_stream_fn)(void *ctx, const char *buf, size_t len, bool at_end);
#define RUNTIME_API_STREAM_WINDOW   (64u << 10)
#define RUNTIME_API_STREAM_TIMEOUTS 16
bool runtime_api_submit_streamed(struct runtime_api_client *c, const char *command,
				 runtime_api_stream_fn stream, runtime_api_reply_fn fn, void *ctx);

/*
 * fn(ctx) is called each time an exchange begins, before its line goes
 * out, from the loop. Exchanges are one at a time, so a caller that counts
 * what its other connections finished knows, in a callback of this
 * exchange, what finished before HAProxy read it. NULL: no call.
 */
typedef void (*runtime_api_exchange_fn)(void *ctx);
void runtime_api_client_on_exchange(struct runtime_api_client *c, runtime_api_exchange_fn fn,
				    void *ctx);

const struct runtime_api_stats *runtime_api_client_stats(const struct runtime_api_client *c);
const char *runtime_api_client_address(const struct runtime_api_client *c);
/* Commands queued or in flight. */
unsigned runtime_api_client_pending(const struct runtime_api_client *c);
/* False from a failure to reach HAProxy until the next successful exchange. */
bool runtime_api_client_reachable(const struct runtime_api_client *c);

#endif /* SPOA_HAPI_RUNTIME_API_H */

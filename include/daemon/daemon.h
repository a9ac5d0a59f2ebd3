/*
 * daemon.h - the running agent: every part wired together, the signals,
 * the reload, and the teardown, in one place (daemon.c). main.c only reads
 * the configuration and hands it here.
 */
#ifndef SPOA_DAEMON_H
#define SPOA_DAEMON_H

#include <stdio.h>

#include "admin/admin_http.h"
#include "breakers/bus.h"
#include "core/operator_hand.h"
#include "config/config.h"
#include "daemon/loop_watch.h"
#include "daemon/steady_watch.h"
#include "link/enforcer.h"
#include "spop/agent.h"
#include "spop/dispatch.h"
#include "spop/observe.h"
#include "state/state_store.h"

/* Reads the configuration again for a reload: returns -1 with *c usable,
 * anything else when it was refused (every problem written to errors). */
typedef int (*daemon_load_fn)(struct config *c, FILE *errors, void *ctx);

struct daemon {
	struct ev_loop *loop;
	struct config config; /* what runs (restart-only keys: as started) */
	const char *config_path; /* NULL: no file, nothing to reload */
	daemon_load_fn load;
	void *load_ctx;
	struct breakers breakers;
	/* The breaker-observe message's context: what an answer sets, its
	 * counters (observe_route.c routes the message). */
	struct observe_ctx observe;
	struct enforcer *enforcer;
	struct state_store *state;
	bool ran; /* the loop ran: what it knows is worth a last snapshot */
	struct dispatch dispatch;
	struct agent agent;
	struct admin_http *admin; /* NULL: none */
	/* Who may read the admin pages: admin_allow, else allow (the admin
	 * listener borrows it; a reload rewrites it in place). */
	struct cidr_list admin_allow;
	/* The operator's word (core/operator_hand.h), its file (STATE_FILE
	 * .operator, "" for none) and the control socket (NULL: none). */
	struct operator_hand hand;
	char operator_path[CONFIG_PATH_MAX_LEN + 16];
	struct control *control;
	uint64_t control_done, control_refused; /* commands, for /metrics */
	struct loop_watch loop_watch;
	struct steady_watch steady_watch;
	ev_signal sigterm, sigint, sighup;
};

/* Runs the agent on *c (moved in: the daemon frees it) until TERM or INT.
 * Returns the exit status. */
int daemon_run(struct config *c, const char *config_path, daemon_load_fn load, void *load_ctx);

/* The route of every breaker record (observe_route.c), by name: the bus's
 * listeners, then the HAProxy link of the moment (d->enforcer).
 * daemon_route_records(): the breaker-observe message handled on that
 * route (the dispatch initialised with it), and the breakers' timer
 * publishing on it; false when the handler could not be registered.
 * daemon_publish(): one record published on it (the operator's hand). */
bool daemon_route_records(struct daemon *d);
void daemon_publish(struct daemon *d, struct breaker_table_entry *e,
		    const struct breaker_event *ev, const struct breaker_cause *cause);

/* SIGHUP's work (reload.c): read the configuration again and apply it
 * whole, or keep the running one whole. */
void daemon_reload(struct daemon *d);

/* Serves c's TLS files (tls_cert, tls_key, tls_ca) on the SPOP listeners
 * from the next connection on, or plaintext when c names none. False,
 * logged, with what was served before still served, when they cannot be
 * loaded. */
bool daemon_load_tls(struct daemon *d, const struct config *c);

/* Has the current HAProxy link tell the agent when held ACKs may go
 * (reload.c): at start, and again after a reload replaced it. */
void daemon_link_acks(struct daemon *d);

/* The admin pages (admin_pages.c): /metrics, /state, /healthz from the
 * running parts. ctx is the daemon. */
bool daemon_render_admin_page(void *ctx, enum admin_page page, struct admin_cursor *cursor,
			      struct strbuf *out);

/* The control socket and the operator's record (control_exec.c).
 * daemon_open_control(): loads the record, subscribes to the breakers,
 * opens the socket (one given must open, the default only warns); false
 * when the agent must not start. daemon_control_apply(): every breaker in
 * line with the record, and the HAProxy link told of a release: after
 * the snapshot is restored, and after a reload replaced the link. */
bool daemon_open_control(struct daemon *d);
void daemon_control_apply(struct daemon *d);
void daemon_close_control(struct daemon *d);
void daemon_control_exec(void *ctx, const char *line, size_t len, long uid, struct strbuf *out);
struct breaker_subscriber control_subscriber(struct daemon *d);

#endif /* SPOA_DAEMON_H */

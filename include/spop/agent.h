/*
 * agent.h - the SPOP agent on its event loop: listeners, connections, and
 * the counters they keep.
 *
 * One libev loop, one thread. The agent owns its listeners and connections;
 * a connection owns its buffers (allocated once, with the connection, so the
 * NOTIFY path allocates nothing). Every quantity a peer could grow is
 * bounded: frame size (settings.max_frame_size), connections
 * (settings.max_connections), output per connection (settings.out_buffer),
 * and how long a connection may stay silent (settings.idle_timeout_ms).
 *
 * When the table is full, or the process is out of descriptors, an idle
 * connection makes room for the new one (conn_evict_longest_idle()): the
 * oldest of those that never sent a NOTIFY, else the one whose last NOTIFY
 * is oldest. A HAProxy that sends NOTIFYs keeps its connections, its health
 * checks (new connections) always get in, and a peer opening connections
 * without using them only ever pushes out its own.
 */
#ifndef SPOA_AGENT_H
#define SPOA_AGENT_H

#include <ev.h>
#include <sys/socket.h>
#include <stdint.h>

#include "spop/agent_settings.h"
#include "spop/dispatch.h"
#include "util/cidr.h"
#include "util/histogram.h"
#include "spop/spop-t.h"

/* Counters, read by the metrics endpoint. Status codes above 13 count as 99. */
#define AGENT_STATUS_SLOTS 15
struct agent_stats {
	uint64_t connections_accepted;
	uint64_t connections_refused; /* out of descriptors with none to shed */
	uint64_t connections_not_allowed; /* from an address the allowlist does not name */
	uint64_t connections_evicted; /* the longest-idle, to make room */
	uint64_t connections_idle;    /* closed after idle_timeout_ms of silence */
	uint64_t healthchecks;
	uint64_t hellos;
	uint64_t notifies;
	uint64_t acks_held; /* ACKs that waited for their ticket */
	uint64_t haproxy_disconnects;
	uint64_t tls_handshakes;         /* completed, over TLS listeners */
	uint64_t tls_handshake_failures; /* no certificate, a refused one, not TLS at all */
	uint64_t disconnects_sent[AGENT_STATUS_SLOTS]; /* by SPOP status code */
	struct histogram notify_time; /* one NOTIFY frame: the mean over a read's frames (conn.c) */
};

struct conn;
struct listener;
struct tls_context;

/*
 * The ACK hold (steady-state mode: the HAProxy link holds the ACK of a
 * response that made its server watched until the `add map` has landed;
 * link/ack_hold.h). The dispatch hands each NOTIFY's ticket back with its
 * answer (dispatch_notify()); a ticket above acks_settled makes the ACK,
 * and those after it on the same connection, stay queued (HAProxy matches
 * ACKs to streams by id; keeping them in order keeps the output one
 * buffer) until agent_release_held() moves acks_settled past it. No
 * HAProxy link: no ticket, no hold.
 */
struct agent {
	struct ev_loop *loop;
	struct agent_settings settings;
	struct dispatch *dispatch;
	struct agent_stats stats;
	/* Every open connection, in one of two lists, the most recent first:
	 * `fresh` have sent no NOTIFY yet (by arrival), `used` have (by their
	 * last NOTIFY). */
	struct conn_list {
		struct conn *head, *tail;
	} fresh, used;
	unsigned nb_conns;
	struct listener *listeners[AGENT_MAX_LISTENERS];
	unsigned nb_listeners;
	bool stopping;
	ev_timer shutdown_timer;
	/* Who may connect over TCP (borrowed: the configuration's, which a
	 * reload rewrites in place). NULL or empty: anyone, which the
	 * configuration only allows on loopback. */
	const struct cidr_list *allow;
	/* TLS on every SPOP listener (spop/tls.h), owned; NULL: plaintext.
	 * Replaced on reload: new connections use the new one. */
	struct tls_context *tls;
	unsigned nb_held;      /* connections whose output waits for its ticket */
	uint64_t acks_settled; /* every ticket up to this one has passed */
	ev_timer release_timer; /* releases them from the loop, never from the link's call */
};

void agent_init(struct agent *a, struct ev_loop *loop, const struct agent_settings *s,
		struct dispatch *d);

/*
 * Opens a listener on `spec`: "HOST:PORT" (IPv4 or "localhost"),
 * "[IPV6]:PORT", or "unix:/path" (its file gets owner's mode and group).
 * Returns false with a message in err.
 */
struct listen_socket_owner;
bool agent_listen(struct agent *a, const char *spec, const struct listen_socket_owner *owner,
		  char *err, size_t err_len);

/*
 * Graceful stop: close the listeners, send AGENT-DISCONNECT (status 0) on
 * every established connection, and break the loop once they are all
 * closed, or after settings.shutdown_timeout.
 */
void agent_stop(struct agent *a);

/* Every ticket up to `settled` has passed (it never goes back: a lower
 * value is ignored): held ACKs whose wait is over go out, from the loop's
 * next turn. Safe from inside any callback. */
void agent_release_held(struct agent *a, uint64_t settled);

/* Serves TLS with t (taken over; NULL: plaintext) to the connections
 * accepted from now on; those open keep the session they have. */
void agent_set_tls(struct agent *a, struct tls_context *t);

/* Frees what is left (listeners, connections) without any goodbye. */
void agent_destroy(struct agent *a);

/* --- for conn.c and listener.c (spop/conn.h, spop/listener.h) --- */
void agent_count_disconnect(struct agent *a, enum spop_status status);
void agent_conn_closed(struct agent *a);
static inline bool agent_conn_may_send(const struct agent *a, uint64_t ticket)
{
	return ticket <= a->acks_settled;
}

#endif /* SPOA_AGENT_H */

/*
 * sim_traffic.c - the workers behind the servers, and the traffic sent to
 * them as HAProxy sends it: least connections among the servers that
 * serve (up, neither drained nor in maintenance), within each one's
 * maxconn, the rest queued for `timeout queue`; a refused connection
 * redispatched to another server, a capacity status retried on another
 * worker when the backend's retry-on says so; every counter `show stat`
 * reports moved as HAProxy 2.6 to 3.2 move them (faults.c says how), and
 * each worker's final answer observed over SPOP. Traffic is open-loop (a
 * backend's rate), or closed-loop: clients that each wait for their
 * answer, whatever it is, and think 200 ms on average before the next.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_loop.h"

/* ---- the requests in flight, a heap by (due, seq) ---- */

static bool earlier(const struct sim_req *a, const struct sim_req *b)
{
	return a->due_us < b->due_us || (a->due_us == b->due_us && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct sim_req r)
{
	if (s->heap_len == s->heap_cap) {
		s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 1024;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	r.seq = ++s->req_seq;
	unsigned i = s->heap_len++;
	while (i > 0) {
		unsigned parent = (i - 1) / 2;
		if (!earlier(&r, &s->heap[parent]))
			break;
		s->heap[i] = s->heap[parent];
		i = parent;
	}
	s->heap[i] = r;
}

static struct sim_req heap_pop(struct sim *s)
{
	struct sim_req top = s->heap[0];
	struct sim_req last = s->heap[--s->heap_len];
	unsigned i = 0;
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i;
		const struct sim_req *best = &last;
		if (l < s->heap_len && earlier(&s->heap[l], best)) {
			m = l;
			best = &s->heap[l];
		}
		if (r < s->heap_len && earlier(&s->heap[r], best))
			m = r;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->heap_len > 0)
		s->heap[i] = last;
	return top;
}

/* The heap again after keys moved (requests ended early). */
static void heap_rebuild(struct sim *s)
{
	struct sim_req *items = s->heap;
	unsigned n = s->heap_len;
	s->heap = NULL;
	s->heap_len = s->heap_cap = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t seq = items[i].seq;
		heap_push(s, items[i]);
		s->heap[s->heap_len - 1].seq = seq; /* not re-numbered: ties keep their order */
	}
	free(items);
}

void sim_traffic_free(struct sim *s)
{
	free(s->heap);
	s->heap = NULL;
	s->heap_len = s->heap_cap = 0;
}

/* ---- the workers ---- */

void sim_worker_become(struct sim *s, struct sim_server *sv, const uint32_t a[6])
{
	struct sim_worker *w = &sv->w;
	w->kind = a[0] < SIM_WORKER_KINDS ? (enum sim_worker_kind)a[0] : WORKER_HEALTHY;
	w->capacity = a[1] ? a[1] : 1;
	w->slow_refusals = a[2] != 0;
	w->retry_after = a[3];
	w->status = a[4] ? a[4] : 503;
	w->fail_percent = a[5];
	w->generation++;
	w->kind_since_us = sim_now_us();
	w->inflight_older = w->inflight;
	w->clean_since_us = w->inflight ? 0 : sim_now_us();
	w->clean_read_us = 0;
	w->answered_us = w->answered_read_us = 0;
	w->stalled_trips = 0;
	(void)s;
}

/* ---- routing ---- */

static bool has_room(const struct sim_server *sv)
{
	return sv->maxconn == 0 || sv->scur < sv->maxconn;
}

/* The server least connected among those serving with room, `not`
 * excepted; NULL when none. *eligible: whether any serves at all. */
static struct sim_server *pick(struct sim *s, struct sim_backend *b, const struct sim_server *not,
			       bool *eligible)
{
	struct sim_server *best = NULL;
	unsigned start = (unsigned)sim_rng_below(&s->traffic_rng, b->nb);
	*eligible = false;
	for (unsigned k = 0; k < b->nb; k++) {
		struct sim_server *sv = &b->srv[(start + k) % b->nb];
		if (sv == not || !sim_server_serving(sv))
			continue;
		*eligible = true;
		if (has_room(sv) && (!best || sv->scur < best->scur))
			best = sv;
	}
	return best;
}

static uint8_t index_of(const struct sim_backend *b, const struct sim_server *sv)
{
	return (uint8_t)(sv - b->srv);
}

/* HAProxy's `retries 3`: a request's connection attempts. */
#define SIM_CONNECT_TRIES 4

/* The request reaches sv: what its worker makes of it. `tries`: the
 * connection attempts it has left. */
/* A closed-loop client got its answer, or HAProxy's: it thinks, then
 * sends its next request. */
static void client_done(struct sim *s, struct sim_backend *b, int16_t client)
{
	if (client < 0)
		return;
	struct sim_req next = {.be = (uint8_t)(b - s->be), .client = client, .think = true};
	next.due_us = sim_now_us() + 1 + (uint64_t)sim_rng_exp(&s->traffic_rng, 200.0 * SIM_MS);
	heap_push(s, next);
}

static void send_to(struct sim *s, struct sim_backend *b, struct sim_server *sv, uint8_t retries,
		    unsigned tries, int16_t client)
{
	struct sim_worker *w = &sv->w;
	struct sim_rng *rng = &s->traffic_rng;
	struct sim_req r = {.be = (uint8_t)(b - s->be), .srv = index_of(b, sv),
			    .retries = retries, .generation = w->generation,
			    .epoch = sv->kill_epoch, .client = client};
	bool eligible;

	sv->stot++;
	if (w->kind == WORKER_CRASHED) {
		/* Refused: `option redispatch` tries another server, and
		 * only the failed one's wredis moves; with none left, econ. */
		struct sim_server *other = tries > 1 ? pick(s, b, sv, &eligible) : NULL;
		if (other) {
			sv->wredis++;
			send_to(s, b, other, retries, tries - 1, client);
		} else {
			sv->econ++;
			client_done(s, b, client);
		}
		return;
	}
	sv->scur++;
	w->inflight++;
	uint64_t now = sim_now_us();
	switch (w->kind) {
	case WORKER_HUNG:
		r.timeout = true;
		r.due_us = now + SIM_TIMEOUT_SERVER_S * SIM_S;
		break;
	case WORKER_SLOW:
		r.status = 200;
		r.due_us = now + sim_rng_range(rng, 2 * SIM_S, 8 * SIM_S);
		break;
	case WORKER_FAILING:
		r.status = sim_rng_below(rng, 100) < w->fail_percent ? 500 : 200;
		r.due_us = now + sim_rng_range(rng, 10 * SIM_MS, 100 * SIM_MS);
		break;
	case WORKER_BUSY:
	case WORKER_REFUSING:
		if (w->kind == WORKER_REFUSING || w->inflight > w->capacity) {
			r.status = (uint16_t)w->status;
			r.retry_after = w->retry_after;
			r.due_us = now + (w->slow_refusals ? sim_rng_range(rng, SIM_S, 3 * SIM_S)
							    : sim_rng_range(rng, SIM_MS, 5 * SIM_MS));
		} else {
			r.status = 200;
			r.due_us = now + sim_rng_range(rng, 50 * SIM_MS, 300 * SIM_MS);
		}
		break;
	default:
		r.status = 200;
		r.due_us = now + sim_rng_range(rng, 20 * SIM_MS, 200 * SIM_MS);
		break;
	}
	heap_push(s, r);
}

/* A request arrives (or leaves the queue): a server, the queue, or
 * HAProxy's own 503. Returns false when it had to wait. */
static bool route(struct sim *s, struct sim_backend *b, int16_t client)
{
	bool eligible;
	struct sim_server *sv = pick(s, b, NULL, &eligible);
	s->requests++;
	if (sv) {
		send_to(s, b, sv, s->schedule->retry_on ? 1 : 0, SIM_CONNECT_TRIES, client);
		return true;
	}
	if (eligible && b->q_len < SIM_MAX_QUEUE) {
		unsigned at = (b->q_head + b->q_len++) % SIM_MAX_QUEUE;
		b->queue[at] = sim_now_us();
		b->queue_client[at] = client;
		return false;
	}
	client_done(s, b, client); /* HAProxy's 503: no server, or the queue is full */
	return true;
}

/* A slot freed in b: the queue's oldest request that has not timed out
 * takes it. */
static void dequeue(struct sim *s, struct sim_backend *b)
{
	while (b->q_len > 0) {
		uint64_t since = b->queue[b->q_head];
		int16_t client = b->queue_client[b->q_head];
		if (since + SIM_TIMEOUT_QUEUE_S * SIM_S < sim_now_us()) {
			b->q_head = (b->q_head + 1) % SIM_MAX_QUEUE;
			b->q_len--;
			client_done(s, b, client); /* HAProxy's 503 after timeout queue */
			continue;
		}
		bool eligible;
		struct sim_server *sv = pick(s, b, NULL, &eligible);
		if (!sv)
			return;
		b->q_head = (b->q_head + 1) % SIM_MAX_QUEUE;
		b->q_len--;
		send_to(s, b, sv, s->schedule->retry_on ? 1 : 0, SIM_CONNECT_TRIES, client);
	}
}

/* ---- the end of a request ---- */

static void leave(struct sim *s, struct sim_server *sv, const struct sim_req *r)
{
	struct sim_worker *w = &sv->w;
	(void)s;
	sv->scur--;
	w->inflight--;
	if (r->generation != w->generation && w->inflight_older > 0 &&
	    --w->inflight_older == 0)
		w->clean_since_us = sim_now_us();
}

/* What HAProxy counts of the requests `shutdown sessions server` ends is
 * not simulated: they leave, and count nothing (an assumption). */
void sim_traffic_kill_sessions(struct sim *s, struct sim_backend *b, struct sim_server *sv)
{
	/* Their clients learn it now: their requests end at once. */
	bool moved = false;
	for (unsigned i = 0; i < s->heap_len; i++) {
		struct sim_req *r = &s->heap[i];
		if (!r->think && &s->be[r->be] == b && r->srv == index_of(b, sv) &&
		    r->epoch == sv->kill_epoch) {
			r->due_us = sim_now_us();
			moved = true;
		}
	}
	if (moved)
		heap_rebuild(s);
	sv->kill_epoch++;
	sv->scur = 0;
	sv->w.inflight = 0;
	if (sv->w.inflight_older > 0) {
		sv->w.inflight_older = 0;
		sv->w.clean_since_us = sim_now_us();
	}
	dequeue(s, b);
}

static void complete(struct sim *s, const struct sim_req *r)
{
	struct sim_backend *b = &s->be[r->be];
	struct sim_server *sv = &b->srv[r->srv];
	bool eligible;

	if (r->think) {
		route(s, b, r->client);
		return;
	}
	if (r->epoch != sv->kill_epoch) {
		client_done(s, b, r->client); /* ended by `shutdown sessions server` */
		return;
	}
	leave(s, sv, r);
	if (r->timeout) {
		sv->eresp++; /* timeout server: HAProxy's 504, nothing over SPOP */
		client_done(s, b, r->client);
	} else if (sv->w.kind == WORKER_CRASHED && r->generation != sv->w.generation) {
		sv->eresp++; /* the worker died holding it: closed before its head */
		client_done(s, b, r->client);
	} else {
		struct sim_server *other = NULL;
		if (r->generation == sv->w.generation && sv->w.answered_us == 0)
			sv->w.answered_us = sim_now_us();
		/* The shipped retry-on lists 503 and 429; 529 is no status
		 * HAProxy can retry on (design.md, "Sets replace"). */
		if ((r->status == 503 || r->status == 429) && r->retries > 0)
			other = pick(s, b, sv, &eligible);
		if (other) {
			/* retry-on 503/429 with option redispatch: the busy
			 * worker's wretr and wredis move, nothing else; SPOE
			 * sees only the final answer. */
			sv->wretr++;
			sv->wredis++;
			send_to(s, b, other, (uint8_t)(r->retries - 1), SIM_CONNECT_TRIES, r->client);
		} else {
			unsigned cls = r->status / 100;
			if (cls >= 1 && cls <= 5)
				sv->hrsp[cls - 1]++;
			if (cls == 2)
				sv->w.successes++;
			if (sim_haproxy_notifies(s, b, sv, r->status)) {
				sv->observed_us = sim_now_us();
				sim_agent_observe(s, b, sv, r->status, r->retry_after);
			}
			client_done(s, b, r->client);
		}
	}
	dequeue(s, b);
}

/* ---- the loop's side ---- */

static void schedule_arrival(struct sim *s, struct sim_backend *b)
{
	if (b->clients > 0) {
		/* Closed loop: the clients start within half a second, and
		 * from then on each request follows the last one's end. */
		if (!b->clients_started)
			for (unsigned c = 0; c < b->clients; c++) {
				struct sim_req first = {.be = (uint8_t)(b - s->be),
							.client = (int16_t)c, .think = true};
				first.due_us = sim_now_us() + 1 +
					       sim_rng_below(&s->traffic_rng, 500 * SIM_MS);
				heap_push(s, first);
			}
		b->clients_started = true;
		b->next_arrival_us = UINT64_MAX;
		return;
	}
	b->next_arrival_us =
		b->rate > 0 ? sim_now_us() + 1 + (uint64_t)sim_rng_exp(&s->traffic_rng, 1e6 / b->rate)
			    : UINT64_MAX;
}

uint64_t sim_traffic_next_due(struct sim *s)
{
	for (unsigned i = 0; i < s->nb_be; i++)
		if (s->be[i].next_arrival_us == 0)
			schedule_arrival(s, &s->be[i]);
	uint64_t next = s->heap_len ? s->heap[0].due_us : UINT64_MAX;
	for (unsigned i = 0; i < s->nb_be; i++)
		if (s->be[i].next_arrival_us < next)
			next = s->be[i].next_arrival_us;
	return next;
}

void sim_traffic_run_due(struct sim *s)
{
	uint64_t now = sim_now_us();
	for (;;) {
		bool any = false;
		if (s->heap_len && s->heap[0].due_us <= now) {
			struct sim_req r = heap_pop(s);
			complete(s, &r);
			any = true;
		}
		for (unsigned i = 0; i < s->nb_be; i++) {
			struct sim_backend *b = &s->be[i];
			if (b->next_arrival_us <= now) {
				route(s, b, -1);
				schedule_arrival(s, b);
				any = true;
			}
		}
		if (!any)
			return;
	}
}

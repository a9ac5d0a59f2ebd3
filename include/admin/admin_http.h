/*
 * admin_http.h - the admin HTTP listener (libmicrohttpd) on the agent's
 * event loop: /metrics, /state, /healthz.
 *
 * No extra thread: libmicrohttpd runs in external-polling mode with its
 * epoll fd watched by an ev_io and its timeout by an ev_timer. This file
 * only does the I/O; what each page says comes from a render callback
 * (main.c gathers the numbers, metrics.c and state_json.c write them).
 * Bounded: at most ADMIN_HTTP_MAX_CONNECTIONS clients, at most
 * ADMIN_HTTP_PER_IP_CONNECTIONS of them from one address, each idle for at
 * most ADMIN_HTTP_TIMEOUT_S seconds and given ADMIN_HTTP_REQUEST_TIMEOUT_S
 * for a whole request and its answer, however slowly it trickles in.
 */
#ifndef SPOA_ADMIN_HTTP_H
#define SPOA_ADMIN_HTTP_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cidr.h"
#include "util/strbuf.h"

/* Loopback by default: the numbers are for the operator, not the world. */
#define ADMIN_HTTP_DEFAULT_ADDR "127.0.0.1:9786"
#define ADMIN_HTTP_MAX_CONNECTIONS 32
#define ADMIN_HTTP_PER_IP_CONNECTIONS 8
#define ADMIN_HTTP_TIMEOUT_S 10
#define ADMIN_HTTP_REQUEST_TIMEOUT_S 5

enum admin_page {
	ADMIN_PAGE_METRICS, /* /metrics: Prometheus text */
	ADMIN_PAGE_STATE,   /* /state: JSON */
	ADMIN_PAGE_HEALTHZ, /* /healthz: "ok\n" */
};

/* Where a page's rendering stands between two slices: zeroed before the
 * first; the renderer keeps its positions in it and sets done with the
 * last slice. */
struct admin_cursor {
	unsigned step;
	uint32_t family;
	uint32_t index;
	uint32_t written;
	uint32_t variant; /* what the first call chose for the whole page, kept for its slices */
	bool done;
};

/* Appends the next slice of the page to out. The first call writes what
 * must be read at once (all but what grows with the fleet); each later one
 * a bounded slice, so that a scrape of 100,000 servers never holds the
 * loop. False when it could not be rendered: a 500 before anything was
 * sent, a cut connection after. */
typedef bool (*admin_render_fn)(void *ctx, enum admin_page page, struct admin_cursor *cursor,
				struct strbuf *out);

struct admin_http;

/*
 * Listens on spec ("HOST:PORT" or "[IPV6]:PORT"; unix sockets are refused)
 * and serves GET and HEAD; any other method gets 405, any other path 404.
 * A client whose address allow does not name is closed at accept (allow
 * is borrowed, read at each accept; NULL or empty: anyone). NULL with err
 * set on failure.
 */
struct admin_http *admin_http_open(struct ev_loop *loop, const char *spec,
				   const struct cidr_list *allow, admin_render_fn render,
				   void *ctx, char *err, size_t err_size);

/* Clients closed at accept because allow does not name them (0 for NULL). */
uint64_t admin_http_not_allowed(const struct admin_http *h);

/* Closes the listener and every client. NULL is a no-op. */
void admin_http_close(struct admin_http *h);

#endif /* SPOA_ADMIN_HTTP_H */

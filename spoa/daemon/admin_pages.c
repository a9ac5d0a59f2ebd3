/*
 * admin_pages.c - the admin pages, assembled from the running parts: the
 * renderers (admin/metrics.c, admin/state_json.c) are pure and read only
 * what is gathered here, for one render.
 */
#include <time.h>

#include "admin/metrics.h"
#include "admin/state_json.h"
#include "daemon/daemon.h"
#include "hapi/runtime_api.h"
#include "util/clock.h"
#include "util/log.h"

/* Table entries looked at per slice of a page: about 20 KB with short
 * names (the widest family, worker_requests_total, has six samples per
 * server: five outcomes over SPOP and the successes HAProxy's counters
 * add, about 105 bytes each; twice that with metrics_names = both), half a millisecond of work; admin_http
 * bounds the slices per loop turn. */
#define PAGE_SLICE_ENTRIES 32

static uint64_t wall_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The per-server part of a page, a slice at a time, from the table alone:
 * the table outlives any scrape, whatever a reload swaps meanwhile. */
static bool render_slice(struct daemon *d, enum admin_page page, struct admin_cursor *c,
			 struct strbuf *out)
{
	if (page == ADMIN_PAGE_METRICS) {
		struct metrics_cursor mc = {.family = c->family,
					    .index = c->index,
					    .names = c->variant & 0xff,
					    .detail = c->variant >> 8};
		const struct metrics_view v = {
			.table = &d->breakers.table,
			.capped = enforcer_ejection_capped(d->enforcer),
			.maxconn_learnt = enforcer_maxconn_learnt(d->enforcer),
		};
		c->done = metrics_render_servers(&v, &mc, out, PAGE_SLICE_ENTRIES);
		c->family = mc.family;
		c->index = mc.index;
	} else {
		struct state_json_cursor sc = {.index = c->index, .written = c->written};
		c->done = state_json_render_breakers(&d->breakers.table,
						     enforcer_ejection_capped(d->enforcer),
						     enforcer_maxconn_learnt(d->enforcer),
						     clock_now_ms(), &sc, out, PAGE_SLICE_ENTRIES);
		c->index = sc.index;
		c->written = sc.written;
	}
	return !out->failed;
}

bool daemon_render_admin_page(void *ctx, enum admin_page page, struct admin_cursor *cursor,
			      struct strbuf *out)
{
	struct daemon *d = ctx;

	if (page == ADMIN_PAGE_HEALTHZ) {
		strbuf_puts(out, "ok\n");
		cursor->done = true;
		return !out->failed;
	}
	if (cursor->step++ > 0)
		return render_slice(d, page, cursor, out);
	struct metrics_source s = {
		.table = &d->breakers.table,
		.capped = enforcer_ejection_capped(d->enforcer),
		.maxconn_learnt = enforcer_maxconn_learnt(d->enforcer),
		.names = d->config.metrics_names,
		.detail = d->config.metrics_detail,
		.agent = &d->agent.stats,
		.connections_open = d->agent.nb_conns,
		.admin_not_allowed = admin_http_not_allowed(d->admin),
		.agent_check_not_allowed = enforcer_agent_check_not_allowed(d->enforcer),
		.observations_refused = d->observe.refused,
		.unknown_messages = d->dispatch.unknown_messages,
		.steady_messages = d->observe.steady_messages,
		.retry_after_dates = d->observe.retry_after_dates,
		.retry_after_invalid = d->observe.retry_after_invalid,
		.steady_support = d->steady_watch.now,
		.log_lines_dropped = log_lines_dropped(),
		.log_lines_suppressed = log_lines_suppressed(),
		.enforce_mode = enforcer_mode(d->enforcer),
		.enforce = enforcer_stats(d->enforcer),
		.state = d->state ? state_store_stats(d->state) : NULL,
		.loop_busy = &d->loop_watch.busy,
		.loop_busy_max_ns = d->loop_watch.max_ns,
		.version = SPOA_VERSION,
		.hand = &d->hand,
		.control_done = d->control_done,
		.control_refused = d->control_refused,
		.now_ms = clock_now_ms(),
		/* The wall clock: what a timestamp on the page is read against. */
		.now_unix_ms = wall_ms(),
	};
	/* The names and detail of this scrape, for its slices. */
	cursor->variant = (uint32_t)s.names | (uint32_t)s.detail << 8;
	unsigned n = enforcer_runtime_api_count(d->enforcer);
	for (unsigned i = 0; i < n && i < ENFORCE_MAX_HAPROXY; i++) {
		const struct runtime_api_client *h = enforcer_runtime_api(d->enforcer, i);
		struct metrics_runtime_api *r = &s.runtime_api[s.nb_runtime_api++];
		*r = (struct metrics_runtime_api){
			.address = runtime_api_client_address(h),
			.stats = enforcer_runtime_api_stats(d->enforcer, i),
			.reachable = enforcer_runtime_api_reachable(d->enforcer, i),
		};
		r->backends = enforcer_backends(d->enforcer, i, &r->nb_backends);
		r->wiring = enforcer_wiring(d->enforcer, i);
	}
	s.sections = enforcer_sections(d->enforcer);
	/* The head, from everything the daemon holds now, then the first
	 * slice in the same answer. */
	bool ok = page == ADMIN_PAGE_METRICS ? metrics_render_head(&s, out)
					     : state_json_render_head(&s, out);
	return ok && render_slice(d, page, cursor, out);
}

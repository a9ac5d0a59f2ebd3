/*
 * admin_pages.c - the admin pages, assembled from the running parts: the
 * renderers (admin/metrics.c, admin/state_json.c) are pure and read only
 * what is gathered here, for one render.
 */
#include "admin/metrics.h"
#include "admin/state_json.h"
#include "daemon/daemon.h"
#include "link/runtime_api.h"
#include "util/clock.h"
#include "util/log.h"

bool daemon_render_admin_page(void *ctx, enum admin_page page, struct strbuf *out)
{
	struct daemon *d = ctx;
	struct metrics_source s = {
		.table = &d->breakers.table,
		.agent = &d->agent.stats,
		.connections_open = d->agent.nb_conns,
		.observations_refused = d->breakers.observe.refused,
		.unknown_messages = d->dispatch.unknown_messages,
		.log_lines_dropped = log_lines_dropped(),
		.log_lines_suppressed = log_lines_suppressed(),
		.enforce_mode = enforcer_mode(d->enforcer),
		.enforce = enforcer_stats(d->enforcer),
		.state = d->state ? state_store_stats(d->state) : NULL,
		.loop_busy = &d->loop_watch.busy,
		.loop_busy_max_ns = d->loop_watch.max_ns,
		.version = SPOA_VERSION,
		.now_ms = clock_now_ms(),
	};
	unsigned n = enforcer_runtime_api_count(d->enforcer);
	for (unsigned i = 0; i < n && i < ENFORCE_MAX_HAPROXY; i++) {
		const struct runtime_api_client *h = enforcer_runtime_api(d->enforcer, i);
		s.runtime_api[s.nb_runtime_api++] = (struct metrics_runtime_api){
			.address = runtime_api_client_address(h),
			.stats = runtime_api_client_stats(h),
			.reachable = runtime_api_client_reachable(h),
		};
	}
	switch (page) {
	case ADMIN_PAGE_METRICS:
		return metrics_render(&s, out);
	case ADMIN_PAGE_STATE:
		return state_json_render(&s, out);
	case ADMIN_PAGE_HEALTHZ:
		strbuf_puts(out, "ok\n");
		return !out->failed;
	}
	return false;
}

/*
 * metrics_style.h - how /metrics names and groups what it shows: the two
 * knobs of the exposition (metrics_names, metrics_detail), apart from the
 * renderer so that the configuration can hold them without it.
 */
#ifndef SPOA_METRICS_STYLE_H
#define SPOA_METRICS_STYLE_H

/* The names and labels of the per-server and per-backend families.
 * promex: HAProxy's own exporter's (`proxy` and `server` labels, a
 * breaker's state as a `state` label, no stutter); legacy: the names of
 * earlier builds, kept for one release so that dashboards and rules
 * can move at their own pace; both: each family twice, under both. */
enum metrics_names {
	METRICS_NAMES_PROMEX,
	METRICS_NAMES_LEGACY,
	METRICS_NAMES_BOTH,
};

/* server: every per-server family; backend: no per-server sample, their
 * sums per backend instead (what a fleet of 100,000 servers can afford). */
enum metrics_detail {
	METRICS_DETAIL_SERVER,
	METRICS_DETAIL_BACKEND,
};

#endif /* SPOA_METRICS_STYLE_H */

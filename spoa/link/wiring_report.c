/*
 * wiring_report.c - what a look says of the wiring: backends whose traffic
 * no SPOP message names, named in the log (wiring.h keeps the tally).
 */
#include "link/link_internal.h"
#include "util/log.h"

#define WIRING_GRACE_LOOKS 20
#define WIRING_GRACE_MIN_MS 2000
/* Backends named in the log at one look; the rest are counted. */
#define WIRING_SAID_PER_LOOK 5

struct unwired_said {
	struct haproxy_link *link;
	unsigned said, more;
};

/* Whether any breaker was ever named over SPOP: if none was, the whole
 * SPOE link is missing, not one frontend's line. */
static bool spop_ever_spoke(const struct enforcer *e)
{
	for (uint32_t i = 0; i < e->capacity; i++)
		if (e->last_spop_ms[i] != 0)
			return true;
	return false;
}

static void on_unwired(void *ctx, const char *backend, uint64_t responses)
{
	struct unwired_said *said = ctx;
	struct haproxy_link *link = said->link;
	if (said->said >= WIRING_SAID_PER_LOOK) {
		said->more++;
		return;
	}
	said->said++;
	if (!spop_ever_spoke(link->owner))
		log_warning("HAProxy %s served %llu responses of backend %s and no SPOP message "
			    "has come at all: check that its frontends have `filter spoe engine "
			    "breaker config spoe-breaker.conf` and that the SPOE configuration's "
			    "use-backend reaches this agent's listen address (docs/wiring.md)",
			    runtime_api_client_address(link->client), (unsigned long long)responses,
			    backend);
	else
		log_warning("HAProxy %s served %llu responses of backend %s that no SPOP message "
			    "named: its failures are not judged. Add `filter spoe engine breaker "
			    "config spoe-breaker.conf` to the frontend routing to it (or check the "
			    "breaker-observe message's condition), or set `guarded = false` in "
			    "[backend %s] to leave it out on purpose (docs/wiring.md)",
			    runtime_api_client_address(link->client), (unsigned long long)responses,
			    backend, backend);
}

/* The end of a look that read `show stat`: backends carrying traffic no
 * SPOP message names are reported (wiring.h). */
void link_report_unwired(struct haproxy_link *link)
{
	/* Twenty looks, and never under 2 s: an agent just started is named
	 * as soon as HAProxy's check has marked it up. */
	uint64_t grace_ms = (uint64_t)(link->owner->poll_interval * 1000.0) * WIRING_GRACE_LOOKS;
	if (grace_ms < WIRING_GRACE_MIN_MS)
		grace_ms = WIRING_GRACE_MIN_MS;
	struct unwired_said said = {.link = link};
	wiring_end_look(&link->wiring, link->look.id, link->look.ms, grace_ms, link->look.restarted,
			on_unwired, &said);
	if (said.more > 0)
		log_warning("HAProxy %s: %u more backends carry traffic no SPOP message names "
			    "(listed in /state)",
			    runtime_api_client_address(link->client), said.more);
}

/*
 * ack_hold.c - hold points for ACKs waiting on an `add map` (see ack_hold.h).
 */
#include <string.h>

#include "link/ack_hold.h"

static uint64_t *point_targets(struct ack_hold *h, uint64_t id)
{
	return h->targets[id % ACK_HOLD_POINTS];
}

uint64_t ack_hold_point(struct ack_hold *h, const uint64_t *queued, unsigned nb_links)
{
	if (nb_links > ENFORCE_MAX_HAPROXY)
		nb_links = ENFORCE_MAX_HAPROXY;
	/* Full: the newest point takes the new targets (see ack_hold.h). */
	if (h->issued - h->settled < ACK_HOLD_POINTS)
		h->issued++;
	uint64_t *t = point_targets(h, h->issued);
	memset(t, 0, sizeof(h->targets[0]));
	memcpy(t, queued, nb_links * sizeof(*queued));
	return h->issued;
}

static bool point_landed(const uint64_t *targets, const uint64_t *done, unsigned nb_links)
{
	for (unsigned i = 0; i < nb_links; i++)
		if (done[i] < targets[i])
			return false;
	return true;
}

bool ack_hold_settle(struct ack_hold *h, const uint64_t *done, unsigned nb_links)
{
	uint64_t before = h->settled;

	if (nb_links > ENFORCE_MAX_HAPROXY)
		nb_links = ENFORCE_MAX_HAPROXY;
	while (h->settled < h->issued &&
	       point_landed(point_targets(h, h->settled + 1), done, nb_links))
		h->settled++;
	return h->settled != before;
}

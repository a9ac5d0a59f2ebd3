/*
 * ejection.c - the backend's ejection cap (see ejection.h). Pure.
 */
#include "link/ejection.h"

uint32_t ejection_max_out(const struct breaker_policy *policy, uint32_t listed)
{
	/* Rounded down: the percentage is a ceiling the operator wrote, and
	 * rounding up would take out more than it says (50 % of 3 is 1, not
	 * 2; of 1 it is 0). A backend of one server is thus never drained
	 * below 100 %, which drain_last_server = false refuses anyway. */
	return (uint32_t)((uint64_t)listed * policy->max_ejection_percent / 100);
}

/* Room under the cap, with or without the last serving server. */
static uint32_t room_for(const struct breaker_policy *policy, const struct ejection_count *count,
			 bool last_server_too)
{
	/* Every server out of rotation counts, not only the agent's drains:
	 * the cap protects the capacity left, and a server down by health
	 * check or drained by an operator is capacity gone all the same.
	 * Counting only our own drains would let the agent take half a
	 * backend whose other half is already down. */
	uint32_t max_out = ejection_max_out(policy, count->listed);
	uint32_t room = max_out > count->out ? max_out - count->out : 0;
	uint32_t serving = count->listed > count->out ? count->listed - count->out : 0;

	if (!last_server_too) {
		uint32_t spare = serving > 0 ? serving - 1 : 0;
		if (room > spare)
			room = spare;
	} else if (room > serving) {
		room = serving;
	}
	return room;
}

uint32_t ejection_room(const struct breaker_policy *policy, const struct ejection_count *count)
{
	return room_for(policy, count, policy->drain_last_server);
}

uint32_t ejection_rest_room(const struct breaker_policy *policy, const struct ejection_count *count)
{
	return room_for(policy, count, false);
}

bool ejection_may_rest(const struct breaker_policy *policy, const struct ejection_count *count,
		       uint32_t waited_longer)
{
	return waited_longer < room_for(policy, count, false);
}

bool ejection_may_drain(const struct breaker_policy *policy, const struct ejection_count *count,
			uint32_t waited_longer)
{
	return waited_longer < ejection_room(policy, count);
}

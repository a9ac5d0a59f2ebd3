/*
 * backend_counts.c - each backend's counts as the looks make them: servers
 * listed, out of rotation, drained by the agent, held back by the cap.
 * Kept in two slots by look parity (the last complete look's, the one under
 * way), so that a drain or a lift between looks moves both, and a decision
 * is made on the newest count there is. The ejection cap (ejection_cap.c)
 * and the records (records.c) read them; nothing here decides.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"

/* Out of rotation for a reason that is not the agent's drain. */
static bool out_otherwise(const struct enforce_entry *en)
{
	return en->seen.down || en->seen.maint || (en->seen.drained && !en->mem.drained_by_us);
}

bool link_entry_out(const struct enforce_entry *en)
{
	return out_otherwise(en) || en->mem.drained_by_us;
}

/* The entry's backend count in look slot `slot`, or NULL when that look
 * did not list it. */
struct ejection_backend *link_group_in_slot(struct haproxy_link *link,
					    const struct enforce_entry *en, int slot)
{
	struct ejection_groups *g = &link->counts.slot[slot];
	if (g->look_id == 0 || en->group_look[slot] != g->look_id || en->group_index[slot] >= g->nb)
		return NULL;
	return &g->groups[en->group_index[slot]];
}

/* Moves one of the entry's backend counters by one, up or down, in both
 * looks' counts. */
void link_count_move(struct haproxy_link *link, const struct enforce_entry *en, size_t field_offset,
		     bool up)
{
	for (int slot = 0; slot < 2; slot++) {
		struct ejection_backend *g = link_group_in_slot(link, en, slot);
		if (!g)
			continue;
		uint32_t *field = (uint32_t *)((char *)g + field_offset);
		if (up)
			(*field)++;
		else if (*field > 0)
			(*field)--;
	}
}

/* The count a decision is made on: the last complete look's, else the
 * one under way (a server new since then). */
struct ejection_backend *link_group_of(struct haproxy_link *link, const struct enforce_entry *en)
{
	struct ejection_backend *g = NULL;
	if (link->counts.current >= 0)
		g = link_group_in_slot(link, en, link->counts.current);
	if (!g && link->look.under_way)
		g = link_group_in_slot(link, en, (int)(link->look.id & 1));
	return g;
}

/* A drain added or lifted, a server going out or back: both looks'
 * counts follow. */
void link_count_change(struct haproxy_link *link, const struct enforce_entry *en, bool was_out,
		       bool was_drained)
{
	bool is_out = link_entry_out(en);
	if (is_out != was_out)
		link_count_move(link, en, offsetof(struct ejection_backend, count.out), is_out);
	if (en->mem.drained_by_us != was_drained)
		link_count_move(link, en, offsetof(struct ejection_backend, drained_by_agent),
			   en->mem.drained_by_us);
}

/* The look's count of the row's backend, started when the backend id
 * changes; NULL when out of memory (the cap then waits for a later look). */
struct ejection_backend *link_count_row_backend(struct haproxy_link *link,
						const struct runtime_api_server_state *row,
						uint32_t *index)
{
	uint64_t be_id = row->be_id;
	struct ejection_groups *g = &link->counts.slot[link->look.id & 1];
	if (g->look_id != link->look.id) {
		g->look_id = link->look.id;
		g->nb = 0;
	}
	if (g->nb == 0 || g->groups[g->nb - 1].be_id != be_id) {
		if (g->nb == g->allocated) {
			uint32_t want = g->allocated ? 2 * g->allocated : 64;
			struct ejection_backend *grown = realloc(g->groups, want * sizeof(*grown));
			if (!grown)
				return NULL;
			g->groups = grown;
			g->allocated = want;
		}
		struct ejection_backend *b = &g->groups[g->nb++];
		*b = (struct ejection_backend){.be_id = be_id, .retry_at_s = RETRY_AT_NONE};
		size_t len = row->be_name.len < BREAKER_NAME_MAX ? row->be_name.len : BREAKER_NAME_MAX;
		memcpy(b->name, row->be_name.ptr, len);
		b->name[len] = '\0';
	}
	*index = g->nb - 1;
	return &g->groups[g->nb - 1];
}

/*
 * index_list.c - a growable list of table indices (see index_list.h).
 */
#include <stdlib.h>

#include "util/index_list.h"

bool index_list_push(struct index_list *l, uint32_t index)
{
	if (l->nb == l->allocated) {
		uint32_t want = l->allocated ? 2 * l->allocated : 16;
		uint32_t *grown = realloc(l->at, want * sizeof(*grown));
		if (!grown)
			return false;
		l->at = grown;
		l->allocated = want;
	}
	l->at[l->nb++] = index;
	return true;
}

void index_list_free(struct index_list *l)
{
	free(l->at);
	*l = (struct index_list){0};
}

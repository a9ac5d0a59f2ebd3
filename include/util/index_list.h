/*
 * index_list.h - a growable list of table indices, doubling from 16: the
 * servers of one backend as a look reads its rows, the servers whose drain
 * the ejection cap holds back. Zeroed, it is an empty list.
 */
#ifndef SPOA_INDEX_LIST_H
#define SPOA_INDEX_LIST_H

#include <stdbool.h>
#include <stdint.h>

struct index_list {
	uint32_t *at;
	uint32_t nb, allocated;
};

/* Appends index; false, the list unchanged, when it could not grow. */
bool index_list_push(struct index_list *l, uint32_t index);

/* Frees what the list holds; it is empty again. */
void index_list_free(struct index_list *l);

#endif /* SPOA_INDEX_LIST_H */

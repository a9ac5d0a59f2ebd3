/*
 * operator_store.h - the operator's word on disk (operator_store.c): the
 * holds, pauses and release of core/operator_hand.h, in a text file beside
 * the state file (STATE_FILE.operator), so that a restart keeps them. Apart
 * from the snapshot on purpose: the snapshot is the breakers' and may be
 * refused (too old, another format) or dropped; what an operator said
 * during an incident must not go with it. Written whole, atomically, at
 * each change (a command is rare; a write is a few hundred bytes).
 */
#ifndef SPOA_OPERATOR_STORE_H
#define SPOA_OPERATOR_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/operator_hand.h"

/* STATE_FILE.operator into out; false when it does not fit. */
bool operator_store_path(const char *state_file, char *out, size_t size);
/* Reads path into *h. A missing file is an empty record (true, *h
 * untouched); one that cannot be read or parsed: false, *h untouched,
 * what and where in err. Never follows a symlink, never blocks on a FIFO. */
bool operator_store_load(const char *path, struct operator_hand *h, char *err, size_t err_size);
/* Writes *h to path (a temporary file renamed over it); false with err. */
bool operator_store_save(const char *path, const struct operator_hand *h, char *err,
			 size_t err_size);

#endif /* SPOA_OPERATOR_STORE_H */

/*
 * dispatch.h - answering a NOTIFY: from each message's name to the handler
 * that knows what to do with it, and from the handlers' variables to an ACK.
 *
 * This is the seam between the protocol engine and the breaker: the engine
 * knows frames, the handlers know messages, neither knows the other's
 * internals. Everything here is pure (no I/O): it reads a NOTIFY payload and
 * writes an ACK frame into a caller-owned writer.
 */
#ifndef SPOA_DISPATCH_H
#define SPOA_DISPATCH_H

#include <string.h>

#include "spop/spop.h"

#define DISPATCH_MAX_HANDLERS 8

/* What a handler writes to: set-var actions of the ACK under construction.
 * Variable names are sent without HAProxy's var-prefix (HAProxy adds it),
 * always in the transaction scope. */
struct dispatch_reply {
	struct spop_writer *w;
	unsigned nb_actions;
	uint64_t now_ms; /* the caller's monotonic clock, read once per batch of frames */
	/* 0, or the ticket the ACK must wait for (the highest a handler
	 * set; tickets settle in order): see dispatch_notify(). */
	uint64_t ack_ticket;
};

typedef void (*dispatch_handler_fn)(void *ctx, const struct spop_message *msg,
				    struct dispatch_reply *reply);

struct dispatch_handler {
	struct spop_slice name; /* points at the registered C string */
	dispatch_handler_fn fn;
	void *ctx;
};

struct dispatch {
	struct dispatch_handler handlers[DISPATCH_MAX_HANDLERS];
	unsigned nb_handlers;
	uint64_t unknown_messages; /* messages no handler claimed */
};

void dispatch_init(struct dispatch *d);
/* Registers fn for messages called `name` (kept by pointer: use a string
 * that outlives the dispatch). False when the table is full. */
bool dispatch_register(struct dispatch *d, const char *name, dispatch_handler_fn fn, void *ctx);

/*
 * Appends to w the ACK answering a NOTIFY frame: every message goes to its
 * handler; a message nobody handles is ignored. The ACK always carries at
 * least one action (HAProxy 3.1 waits out `timeout processing` on an empty
 * one): when the handlers set nothing, it unsets the `error` variable. If
 * the handlers' answer does not fit in max_frame_size, the ACK carries only
 * error="ack_too_big". Returns false, and writes nothing, when the payload
 * is not a valid list of messages (*why says what was wrong) or when not
 * even that minimal ACK fits in w. now_ms is handed to the handlers as the
 * time of the NOTIFY (CLOCK_MONOTONIC in milliseconds). *ack_ticket gets
 * what the handlers said the ACK waits for: 0 (send it at once) or a
 * ticket of the HAProxy link's ACK hold (link/ack_hold.h) that the
 * connection holds the ACK with (spop/conn.c); it is set whatever the
 * return, as a handler may have acted before a later message was found
 * malformed.
 */
bool dispatch_notify(struct dispatch *d, const struct spop_frame *notify, struct spop_writer *w,
		     uint32_t max_frame_size, uint64_t now_ms, const char **why,
		     uint64_t *ack_ticket);

/* Appends a txn-scoped set-var of name (name_len bytes, no NUL needed). */
void dispatch_put_string(struct dispatch_reply *r, const char *name, size_t name_len,
			 const char *value, size_t value_len);
void dispatch_put_int(struct dispatch_reply *r, const char *name, size_t name_len, int64_t value);

/* The same for C strings. Inline, so that the length of a literal name is
 * counted by the compiler, not on every ACK. */
static inline void dispatch_set_string(struct dispatch_reply *r, const char *name,
				       const char *value)
{
	dispatch_put_string(r, name, strlen(name), value, strlen(value));
}

static inline void dispatch_set_int(struct dispatch_reply *r, const char *name, int64_t value)
{
	dispatch_put_int(r, name, strlen(name), value);
}

#endif /* SPOA_DISPATCH_H */

/*
 * dispatch.c - route NOTIFY messages to handlers and build the ACK.
 */
#include <string.h>

#include "spop/dispatch.h"

static const char ERROR_VAR[] = "error";

void dispatch_init(struct dispatch *d)
{
	memset(d, 0, sizeof(*d));
}

bool dispatch_register(struct dispatch *d, const char *name, dispatch_handler_fn fn, void *ctx)
{
	if (d->nb_handlers == DISPATCH_MAX_HANDLERS)
		return false;
	struct dispatch_handler *h = &d->handlers[d->nb_handlers++];
	h->name.ptr = (const uint8_t *)name;
	h->name.len = strlen(name);
	h->fn = fn;
	h->ctx = ctx;
	return true;
}

/* A handful of handlers at most: a linear scan beats any index. */
static const struct dispatch_handler *find_handler(const struct dispatch *d, struct spop_slice name)
{
	for (unsigned i = 0; i < d->nb_handlers; i++) {
		const struct dispatch_handler *h = &d->handlers[i];
		if (h->name.len == name.len && memcmp(h->name.ptr, name.ptr, name.len) == 0)
			return h;
	}
	return NULL;
}

static bool put_error_only_ack(const struct spop_frame *notify, struct spop_writer *w,
			       uint32_t max_frame_size, const char *error)
{
	struct spop_data value = spop_data_string(error, strlen(error));
	size_t mark = spop_frame_begin(w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, notify->stream_id,
				       notify->frame_id);
	spop_put_set_var(w, SPOP_SCOPE_TXN, ERROR_VAR, sizeof(ERROR_VAR) - 1, &value);
	return spop_frame_end(w, mark, max_frame_size);
}

/* The ACK of one NOTIFY into reply->w (see dispatch_notify()). */
static bool answer(struct dispatch *d, const struct spop_frame *notify,
		   struct dispatch_reply *reply, uint32_t max_frame_size, const char **why)
{
	struct spop_writer *w = reply->w;
	const uint8_t *p = notify->payload.ptr;
	size_t left = notify->payload.len;

	size_t mark = spop_frame_begin(w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, notify->stream_id,
				       notify->frame_id);
	while (left > 0) {
		struct spop_message msg;
		ssize_t n = spop_message_decode(p, left, &msg);
		if (n < 0) {
			w->len = mark; /* drop the half-built ACK */
			w->overflow = false;
			*why = "malformed message in NOTIFY";
			return false;
		}
		p += n;
		left -= (size_t)n;

		const struct dispatch_handler *h = find_handler(d, msg.name);
		if (h)
			h->fn(h->ctx, &msg, reply);
		else
			d->unknown_messages++;
	}
	if (reply->nb_actions == 0)
		spop_put_unset_var(w, SPOP_SCOPE_TXN, ERROR_VAR, sizeof(ERROR_VAR) - 1);
	if (spop_frame_end(w, mark, max_frame_size))
		return true;

	if (put_error_only_ack(notify, w, max_frame_size, "ack_too_big"))
		return true;
	*why = "no room for an ACK";
	return false;
}

bool dispatch_notify(struct dispatch *d, const struct spop_frame *notify, struct spop_writer *w,
		     uint32_t max_frame_size, uint64_t now_ms, const char **why,
		     uint64_t *ack_ticket)
{
	struct dispatch_reply reply = {.w = w, .nb_actions = 0, .now_ms = now_ms, .ack_ticket = 0};
	bool ok = answer(d, notify, &reply, max_frame_size, why);

	*ack_ticket = reply.ack_ticket;
	return ok;
}

void dispatch_put_string(struct dispatch_reply *r, const char *name, size_t name_len,
			 const char *value, size_t value_len)
{
	/* Built in place (see dispatch_put_int()). */
	struct spop_data v = {.type = SPOP_DATA_STRING,
			      .u.bytes = {.ptr = (const uint8_t *)value, .len = value_len}};
	spop_put_set_var(r->w, SPOP_SCOPE_TXN, name, name_len, &v);
	r->nb_actions++;
}

void dispatch_put_int(struct dispatch_reply *r, const char *name, size_t name_len, int64_t value)
{
	/* Built in place, not copied from spop_data_sint()'s return value:
	 * GCC assembled that copy with an 8-byte load over two smaller
	 * stores, which store forwarding cannot serve (dispatch_put_int was
	 * 5-7 % of the agent in the profile of table 1). */
	struct spop_data v = {.type = SPOP_DATA_INT64, .u.sint = value};
	spop_put_set_var(r->w, SPOP_SCOPE_TXN, name, name_len, &v);
	r->nb_actions++;
}

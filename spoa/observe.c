/*
 * observe.c - handler of the `breaker-observe` message (see observe.h).
 */
#include "observe.h"

static const struct spop_data *find_arg(const struct spop_message *msg, const char *name)
{
	for (unsigned i = 0; i < msg->nb_stored; i++)
		if (spop_slice_eq(msg->args[i].name, name))
			return &msg->args[i].value;
	return NULL;
}

void observe_handle(void *ctx, const struct spop_message *msg, struct dispatch_reply *reply)
{
	(void)ctx;
	const struct spop_data *status_arg = find_arg(msg, "status");
	int64_t status;

	if (!status_arg) {
		dispatch_set_string(reply, "error", "missing argument: status");
		return;
	}
	/* A NULL is what HAProxy sends when the sample does not exist. */
	if (!spop_data_to_int64(status_arg, &status) || status < 100 || status > 599) {
		dispatch_set_string(reply, "error", "argument status is not an HTTP status");
		return;
	}
	dispatch_set_int(reply, "upstream_status", status);
}

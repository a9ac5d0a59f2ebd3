/*
 * observe.h - the `breaker-observe` SPOE message: one upstream response.
 *
 * Arguments (by name; unknown extra arguments are ignored):
 *   be      STRING  the backend (be_name)
 *   srv     STRING  the server (srv_name)
 *   status  INT     the worker's HTTP status (status)
 * Variables returned (txn scope, HAProxy adds the var-prefix):
 *   upstream_status  INT     the status seen
 *   error            STRING  set only when an argument is missing or mistyped
 */
#ifndef SPOA_OBSERVE_H
#define SPOA_OBSERVE_H

#include "dispatch.h"

#define OBSERVE_MESSAGE_NAME "breaker-observe"

void observe_handle(void *ctx, const struct spop_message *msg, struct dispatch_reply *reply);

#endif /* SPOA_OBSERVE_H */

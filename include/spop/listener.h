/*
 * listener.h - the SPOP listening sockets (listener.c): TCP, IPv6 or unix,
 * non-blocking, each handing what it accepts to conn_accept().
 */
#ifndef SPOA_LISTENER_H
#define SPOA_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

#include "spop/agent.h"

/* Stops and frees one listener of a (a unix socket's file is removed). */
void listener_close(struct agent *a, struct listener *l);

#endif /* SPOA_LISTENER_H */

/*
 * owner_map-t.h - what the agent changed in HAProxy for one server, and
 * the ownership map's record of it (owner_map.h turns one into the other).
 * Types only: the link keeps an enforce_memory per HAProxy and server
 * (link/enforce-t.h), the state snapshot saves it, and owner_map.c reads
 * and writes the record without knowing the link.
 */
#ifndef SPOA_RECORDS_OWNER_MAP_T_H
#define SPOA_RECORDS_OWNER_MAP_T_H

#include <stdbool.h>
#include <stdint.h>

/* What the agent has changed in HAProxy for one server. */
struct enforce_memory {
	bool drained_by_us;  /* our `state drain` is in place (or on its way) */
	bool maxconn_by_us;  /* our `set maxconn` is in place (or on its way) */
	bool own_maxconn_known;
	uint32_t own_maxconn; /* the server's maxconn before we changed it; 0 = unlimited */
};

/* What HAProxy's ownership map (owner_map.h) says, or will say once our
 * commands land, about one server. */
struct owner_record {
	bool present;    /* the map has the server */
	bool drained;    /* the agent drained it */
	bool limited;    /* the agent limited its maxconn ... */
	uint32_t own_maxconn; /* ... whose own value is this (0 = unlimited) */
};

#endif /* SPOA_RECORDS_OWNER_MAP_T_H */

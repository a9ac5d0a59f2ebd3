/*
 * link_settings.h - what the configuration sets of the HAProxy link
 * (enforcer.h): how decisions reach HAProxy, the Runtime API sockets, the
 * agent-check listener, the look's interval and peers mode. Held in
 * struct config as `link` and handed to enforcer_new(), so that the link
 * does not depend on the configuration that fills it.
 */
#ifndef SPOA_LINK_SETTINGS_H
#define SPOA_LINK_SETTINGS_H

#include <stdint.h>

/* How decisions reach HAProxy (the configuration's `enforce`). */
enum enforce_mode {
	ENFORCE_NONE,        /* none: compute and report, change nothing */
	ENFORCE_RUNTIME_API, /* commands on HAProxy's stats socket */
	ENFORCE_AGENT_CHECK, /* answers to HAProxy's agent-check */
};

/* HAProxy instances (one Runtime API socket each) one agent can drive. */
#define ENFORCE_MAX_HAPROXY 8
/* A runtime_api or agent_check address: "unix:PATH", "HOST:PORT". */
#define LINK_ADDRESS_MAX_LEN 128
/* A stick table's name, as HAProxy's `show table` gives it. */
#define LINK_VERDICT_TABLE_MAX_LEN 64
#define LINK_DEFAULT_POLL_MS 500

struct link_settings {
	enum enforce_mode enforce;
	char runtime_api[ENFORCE_MAX_HAPROXY][LINK_ADDRESS_MAX_LEN];
	unsigned nb_runtime_api;
	char agent_check[LINK_ADDRESS_MAX_LEN]; /* empty: none */
	uint64_t poll_ms;                       /* between two looks */
	/* Peers mode (records/verdicts.h): the stick table HAProxy's peers
	 * replicate between nodes ("": off), and this node's id in it. */
	char verdict_table[LINK_VERDICT_TABLE_MAX_LEN];
	uint32_t node_id;
};

#endif /* SPOA_LINK_SETTINGS_H */

/*
 * agent_settings.h - what the configuration sets of the SPOP agent
 * (agent.h): limits and timeouts, without the event loop's types, so that
 * the configuration does not depend on the agent that runs it.
 */
#ifndef SPOA_AGENT_SETTINGS_H
#define SPOA_AGENT_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#define AGENT_DEFAULT_LISTEN "127.0.0.1:12345"
#define AGENT_DEFAULT_MAX_FRAME_SIZE 16380 /* HAProxy's own: tune.bufsize - 4 */
#define AGENT_DEFAULT_MAX_CONNECTIONS 1024 /* lowered at start to fit the descriptor limit */
/* Longer than HAProxy's own idle timeouts (`timeout idle` 30s in the shipped
 * SPOE file, `timeout server` 1m on the agent's backend): HAProxy, which
 * knows nothing is in flight, is the one that normally closes. */
#define AGENT_DEFAULT_IDLE_TIMEOUT_MS 120000
#define AGENT_MAX_LISTENERS 8

struct agent_settings {
	uint32_t max_frame_size;   /* the most we accept and offer */
	unsigned max_connections;  /* beyond this, the longest-idle one is closed */
	uint64_t idle_timeout_ms;  /* after the HELLO, silence this long closes */
	size_t out_buffer;         /* bytes of ACKs queued per connection */
	double hello_timeout;      /* seconds a new connection may take to say HELLO */
	double close_timeout;      /* seconds a closing connection may linger */
	double shutdown_timeout;   /* seconds SIGTERM waits for peers before exiting */
};

/* The defaults above (agent.c). */
void agent_settings_default(struct agent_settings *s);

#endif /* SPOA_AGENT_SETTINGS_H */

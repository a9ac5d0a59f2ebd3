/*
 * steady_support.h - whether steady-state mode can work as HAProxy runs it
 * (steady_support.c, pure).
 *
 * An HAProxy in steady-state mode (spoe-breaker-steady.conf, the shipped
 * default) notifies a success only for a server listed in its watched map,
 * and only the agent, over that HAProxy's Runtime API, keeps the map. With
 * no one keeping it, a failing server's later successes never reach its
 * breaker: its failure streak only grows, and failures far apart add up to
 * a trip. The agent cannot see that in the breakers; it can see that such
 * messages come (they carry `mode=str(steady)`) while no HAProxy link has
 * the map loaded. That is a wiring mistake, said loudly and listed until
 * it is put right: give the agent `runtime_api`, or have HAProxy send every
 * response (spoe-breaker.conf).
 */
#ifndef SPOA_LINK_STEADY_SUPPORT_H
#define SPOA_LINK_STEADY_SUPPORT_H
#include <stdbool.h>
#include <stdint.h>

enum steady_support {
	STEADY_SUPPORT_UNUSED,  /* no steady-state message has come */
	STEADY_SUPPORT_KEPT,    /* an HAProxy link has the watched map loaded */
	STEADY_SUPPORT_PENDING, /* a reachable link has not read `show map` yet */
	STEADY_SUPPORT_UNKEPT,  /* messages come, and no link keeps the map */
};

/* What the HAProxy links know, at this moment. */
struct steady_links {
	unsigned links;    /* runtime_api sockets configured */
	unsigned pending;  /* reachable, `show map` not read yet */
	unsigned watching; /* their last `show map` lists breaker-watched.map */
};

/*
 * The judgement. One link with the map is enough: with several HAProxies
 * the agent cannot tell which one sent a message (SPOP does not say), so a
 * second HAProxy in steady-state mode without a Runtime API of its own is
 * not seen here (docs/haproxy.md says so).
 */
enum steady_support steady_support_judge(uint64_t steady_messages, struct steady_links links);

/* "unused", "kept", "pending", "unkept". */
const char *steady_support_name(enum steady_support s);

#endif /* SPOA_LINK_STEADY_SUPPORT_H */

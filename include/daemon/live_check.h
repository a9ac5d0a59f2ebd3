/*
 * live_check.h - `--check` against the HAProxies the configuration names
 * (live_check.c): what each one's configuration lacks for the agent, asked
 * of its Runtime API once, with a short timeout.
 */
#ifndef SPOA_LIVE_CHECK_H
#define SPOA_LIVE_CHECK_H
#include <stdio.h>

#include "config/config.h"

/*
 * For each runtime_api of c: its level (`show cli level`) and the agent's
 * maps (`show map`), one line each on out. An HAProxy that cannot be
 * reached is said and does not fail the check (it may not be running
 * yet); one whose Runtime API is below level admin does: the agent could
 * drain nothing. Returns 0, or 1 when an HAProxy refuses the agent.
 */
int live_check(const struct config *c, FILE *out);

#endif /* SPOA_LIVE_CHECK_H */

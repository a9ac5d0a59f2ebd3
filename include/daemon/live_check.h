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
 * drain nothing. Then each [backend]/[server] section of the file that
 * names what none of them lists (`show backend`, `show servers state`;
 * hapi/section_names.h), one warning line each at its header's line,
 * with the name it likely meant when one is an obvious slip; a warning
 * only, as HAProxy may be reloaded to add the name. Returns 0, or 1 when
 * an HAProxy refuses the agent.
 */
int live_check(const struct config *c, FILE *out);

#endif /* SPOA_LIVE_CHECK_H */

# shellcheck shell=bash
# past_agent_timeouts COMMAND...: runs COMMAND, which prints a response's
# headers, until the response is not one the agent timed out on, 10 times
# at most, and prints the last headers. The shipped SPOE file gives the
# agent 100 ms (`timeout processing`) and 500 ms for the HELLO of a new
# connection; on a loaded machine a request may go on without the agent's
# answer, marked x-breaker-agent-error: 1 (SPOE's "timeout"), as HAProxy
# means it to. Any other answer, a wrong one included, ends the loop.
# Sourced by the e2e helpers and the packaging suites.
past_agent_timeouts() {
	local h
	for _ in $(seq 10); do
		h=$("$@")
		grep -qix 'x-breaker-agent-error: 1' <<<"$h" || break
	done
	printf '%s\n' "$h"
}

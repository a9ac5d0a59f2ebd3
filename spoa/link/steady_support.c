/*
 * steady_support.c - whether steady-state mode can work (steady_support.h).
 */
#include "link/steady_support.h"

enum steady_support steady_support_judge(uint64_t steady_messages, struct steady_links links)
{
	if (steady_messages == 0)
		return STEADY_SUPPORT_UNUSED;
	if (links.watching > 0)
		return STEADY_SUPPORT_KEPT;
	/* An agent just started reads `show map` at its first look: messages
	 * may come before, and are not a mistake yet. An unreachable link
	 * keeps nothing, so it does not count as pending. */
	if (links.pending > 0)
		return STEADY_SUPPORT_PENDING;
	return STEADY_SUPPORT_UNKEPT;
}

const char *steady_support_name(enum steady_support s)
{
	switch (s) {
	case STEADY_SUPPORT_UNUSED: return "unused";
	case STEADY_SUPPORT_KEPT: return "kept";
	case STEADY_SUPPORT_PENDING: return "pending";
	case STEADY_SUPPORT_UNKEPT: return "unkept";
	}
	return "unknown";
}

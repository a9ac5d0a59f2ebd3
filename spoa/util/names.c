/*
 * names.c - validation of HAProxy proxy and server names (see names.h).
 */
#include "util/names.h"

bool name_is_valid(const char *name, size_t len)
{
	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '-' || c == '_' || c == '.' || c == ':';
		if (!ok)
			return false;
	}
	return true;
}

/*
 * names.c - validation of HAProxy proxy and server names (see names.h).
 */
#include "util/names.h"

/* The characters HAProxy allows, as a table: every NOTIFY checks two
 * names, and a lookup per byte beats a chain of range tests. */
static const bool name_char_ok[256] = {
	['a' ... 'z'] = true, ['A' ... 'Z'] = true, ['0' ... '9'] = true,
	['-'] = true, ['_'] = true, ['.'] = true, [':'] = true,
};

bool name_is_valid(const char *name, size_t len)
{
	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char_ok[(unsigned char)name[i]])
			return false;
	return true;
}

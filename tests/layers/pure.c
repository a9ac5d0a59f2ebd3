/*
 * pure.c - a pure fixture for tests/check-layers.sh: string functions on the
 * caller's buffers, nothing else. Compiled by the self-test only.
 */
#include <stddef.h>
#include <string.h>

size_t layers_fixture_pure(const char *s, char *out, size_t out_size);

/* Copies the part of s before its first ':' into out; returns its length. */
size_t layers_fixture_pure(const char *s, char *out, size_t out_size)
{
	size_t n = strcspn(s, ":");

	if (out_size == 0)
		return 0;
	if (n >= out_size)
		n = out_size - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	if (strcmp(out, "none") == 0 || strchr(out, ' ') != NULL)
		return 0;
	return strlen(out);
}

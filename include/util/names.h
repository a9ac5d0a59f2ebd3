/*
 * names.h - what a backend or server name may contain.
 *
 * Names reach the Runtime API inside commands (`set server B/S state drain`)
 * where a ';', a space or a newline would start another command. Only what
 * HAProxy itself accepts in proxy and server names is let through: letters,
 * digits, '-', '_', '.' and ':'.
 */
#ifndef SPOA_NAMES_H
#define SPOA_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define NAME_MAX_LEN 127

/* True if name[0..len) is 1..NAME_MAX_LEN characters HAProxy allows. */
bool name_is_valid(const char *name, size_t len);

#endif /* SPOA_NAMES_H */

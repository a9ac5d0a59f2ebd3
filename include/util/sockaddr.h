/*
 * sockaddr.h - socket addresses as operators write them, for listeners and
 * for the Runtime API alike: "HOST:PORT" (numeric IPv4 or "localhost"),
 * "*:PORT" or ":PORT" (every IPv4 address, as HAProxy spells it),
 * "[IPV6]:PORT", or "unix:/path". Numeric only: a name lookup would block
 * the event loop.
 */
#ifndef SPOA_SOCKADDR_H
#define SPOA_SOCKADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Parses spec into *addr (pure). On error returns false with
 * "LABEL 'SPEC': what is wrong" in err, LABEL naming the setting; with a
 * NULL label, only "what is wrong" (the caller names setting and value). */
bool sockaddr_parse(const char *spec, const char *label, struct sockaddr_storage *addr,
		    socklen_t *addr_len, char *err, size_t err_len);

#endif /* SPOA_SOCKADDR_H */

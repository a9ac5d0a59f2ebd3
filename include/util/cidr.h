/*
 * cidr.h - who may connect: allowlists of addresses and CIDR blocks, IPv4
 * and IPv6, as operators write them (cidr.c, pure).
 *
 * "10.0.0.0/8, 192.168.1.7, fd00::/8, ::1" or the one word "any". IPv4 is
 * kept in its IPv4-mapped IPv6 form (::ffff:a.b.c.d, the prefix plus 96),
 * so an IPv4 entry also matches a peer that reaches an IPv6 socket with an
 * IPv4-mapped address. Each entry belongs to one family: an IPv4 entry, or
 * one written ::ffff:a.b.c.d/96..128, matches IPv4 peers (plain or mapped)
 * only; any other IPv6 entry matches IPv6 peers only, so "::/0" or
 * "::/80" does not let every IPv4 client in through the mapped range.
 * Numeric only: a name would need a lookup, and the answer can change
 * under the list.
 */
#ifndef SPOA_CIDR_H
#define SPOA_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define CIDR_LIST_MAX 32       /* entries in one list */
#define CIDR_TEXT_MAX 50       /* "ffff:...:ffff/128", as written */

struct cidr {
	uint8_t addr[16]; /* IPv6, or IPv4-mapped; the bits past the prefix are zero */
	uint8_t prefix;   /* 0..128, over the 16 bytes */
	bool v4;          /* matches IPv4 peers (plain or mapped), else IPv6 ones */
	char text[CIDR_TEXT_MAX]; /* as written, for messages and --check */
};

/* An empty list (n == 0, !any) is "not set": the caller decides what
 * that means (config/exposure.c refuses it on a non-loopback listener). */
struct cidr_list {
	struct cidr entries[CIDR_LIST_MAX];
	unsigned n;
	bool any; /* "any": every address, said on purpose */
};

/* One entry: an address, or ADDRESS/PREFIX. False with what is wrong in err
 * ("'10.0.0.0/33': an IPv4 prefix is 0..32"). */
bool cidr_parse(const char *text, struct cidr *out, char *err, size_t err_size);

/* Appends a comma-separated list of entries, or "any", to l: all of it or,
 * false with what is wrong in err, nothing. "any" mixed with entries is
 * refused (one of them would mean nothing). */
bool cidr_list_add(struct cidr_list *l, const char *text, char *err, size_t err_size);

/* Whether an AF_INET or AF_INET6 peer address is in l (any: always). An
 * IPv4-mapped AF_INET6 peer is an IPv4 one. Other families (unix) never
 * match: their sockets are guarded by their file mode, not by an address. */
bool cidr_list_allows(const struct cidr_list *l, const struct sockaddr *peer);

/* "any", "none" (empty) or the entries as written, joined by ", ".
 * snprintf-like (size > 0). */
size_t cidr_list_format(const struct cidr_list *l, char *buf, size_t size);

/* Whether a listening address only loopback reaches: 127.0.0.0/8, ::1,
 * ::ffff:127.0.0.0/104. The wildcard (0.0.0.0, ::) is not loopback. */
bool cidr_sockaddr_is_loopback(const struct sockaddr *addr);

#endif /* SPOA_CIDR_H */

/*
 * cidr.c - allowlists of addresses and CIDR blocks (see cidr.h). Pure: no
 * I/O, only inet_pton for the text.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cidr.h"
#include "util/errmsg.h"

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void map_v4(const void *in4, uint8_t out[16])
{
	memcpy(out, v4_mapped_prefix, sizeof(v4_mapped_prefix));
	memcpy(out + 12, in4, 4);
}

static bool is_v4_mapped(const uint8_t addr[16])
{
	return memcmp(addr, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

/* Clears the bits past the prefix. */
static void mask(uint8_t addr[16], unsigned prefix)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned bits = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
		addr[i] &= (uint8_t)(0xff00u >> bits);
	}
}

static bool in_prefix(const uint8_t a[16], const uint8_t net[16], unsigned prefix)
{
	uint8_t masked[16];
	memcpy(masked, a, 16);
	mask(masked, prefix);
	return memcmp(masked, net, 16) == 0;
}

static bool parse_prefix(const char *s, unsigned max, unsigned *out)
{
	if (!isdigit((unsigned char)s[0]) || strlen(s) > 3)
		return false; /* strtoul would take "-1", " 8" and "+8" */
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end != '\0' || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

bool cidr_parse(const char *text, struct cidr *out, char *err, size_t err_size)
{
	char addr[CIDR_TEXT_MAX];
	size_t len = strlen(text);

	if (len == 0) {
		errmsg_set(err, err_size, "an empty entry: expected an address or ADDRESS/PREFIX");
		return false;
	}
	if (len >= sizeof(addr)) {
		errmsg_set(err, err_size, "'%.20s...': too long for an address", text);
		return false;
	}
	memcpy(addr, text, len + 1);
	char *slash = strchr(addr, '/');
	if (slash)
		*slash = '\0';

	struct cidr c = {{0}, 0, false, ""};
	unsigned prefix;
	struct in_addr in4;
	struct in6_addr in6;
	if (inet_pton(AF_INET, addr, &in4) == 1) {
		if (slash && !parse_prefix(slash + 1, 32, &prefix)) {
			errmsg_set(err, err_size, "'%s': an IPv4 prefix is 0..32", text);
			return false;
		}
		map_v4(&in4, c.addr);
		c.prefix = (uint8_t)(96 + (slash ? prefix : 32));
		c.v4 = true;
	} else if (inet_pton(AF_INET6, addr, &in6) == 1) {
		if (slash && !parse_prefix(slash + 1, 128, &prefix)) {
			errmsg_set(err, err_size, "'%s': an IPv6 prefix is 0..128", text);
			return false;
		}
		memcpy(c.addr, &in6, 16);
		c.prefix = (uint8_t)(slash ? prefix : 128);
		/* ::ffff:a.b.c.d/96 and longer names IPv4 addresses on purpose;
		 * a shorter prefix only covers the mapped range by accident. */
		c.v4 = c.prefix >= 96 && is_v4_mapped(c.addr);
	} else {
		errmsg_set(err, err_size,
			   "'%s': expected a numeric IPv4 or IPv6 address, with /PREFIX or "
			   "without",
			   text);
		return false;
	}
	/* 10.1.2.3/8 is taken as 10.0.0.0/8: what the operator meant. */
	mask(c.addr, c.prefix);
	memcpy(c.text, text, len + 1);
	*out = c;
	return true;
}

bool cidr_list_add(struct cidr_list *l, const char *text, char *err, size_t err_size)
{
	struct cidr_list next = *l;
	const char *p = text;

	do {
		p += strspn(p, " \t");
		size_t len = strcspn(p, ",");
		size_t word = len;
		while (word > 0 && (p[word - 1] == ' ' || p[word - 1] == '\t'))
			word--;
		char entry[CIDR_TEXT_MAX + 1];
		if (word == 3 && memcmp(p, "any", 3) == 0) {
			next.any = true;
		} else if (word >= sizeof(entry)) {
			errmsg_set(err, err_size, "'%.20s...': too long for an address", p);
			return false;
		} else if (next.n == CIDR_LIST_MAX) {
			errmsg_set(err, err_size, "at most %d entries", CIDR_LIST_MAX);
			return false;
		} else {
			memcpy(entry, p, word);
			entry[word] = '\0';
			if (!cidr_parse(entry, &next.entries[next.n], err, err_size))
				return false;
			next.n++;
		}
		p += len;
	} while (*p++ == ',');
	if (next.any && next.n > 0) {
		errmsg_set(err, err_size,
			   "'any' with addresses: either every address (any) or the ones named");
		return false;
	}
	*l = next;
	return true;
}

/* The peer's address as 16 bytes (IPv4 mapped); false for other families. */
static bool peer_bytes(const struct sockaddr *peer, uint8_t out[16])
{
	if (peer->sa_family == AF_INET) {
		map_v4(&((const struct sockaddr_in *)(const void *)peer)->sin_addr, out);
		return true;
	}
	if (peer->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr, 16);
		return true;
	}
	return false;
}

bool cidr_list_allows(const struct cidr_list *l, const struct sockaddr *peer)
{
	uint8_t a[16];
	if (!peer_bytes(peer, a))
		return false;
	if (l->any)
		return true;
	/* A dual-stack socket's IPv4 client arrives mapped: still IPv4. */
	bool v4 = is_v4_mapped(a);
	for (unsigned i = 0; i < l->n; i++)
		if (l->entries[i].v4 == v4 &&
		    in_prefix(a, l->entries[i].addr, l->entries[i].prefix))
			return true;
	return false;
}

size_t cidr_list_format(const struct cidr_list *l, char *buf, size_t size)
{
	if (l->any)
		return (size_t)snprintf(buf, size, "any");
	if (l->n == 0)
		return (size_t)snprintf(buf, size, "none");
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < l->n; i++)
		n += (size_t)snprintf(buf + (n < size ? n : size - 1), n < size ? size - n : 1,
				      "%s%s", i ? ", " : "", l->entries[i].text);
	return n;
}

bool cidr_sockaddr_is_loopback(const struct sockaddr *addr)
{
	static const uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t v4_loopback_net[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127};
	uint8_t a[16];
	if (!peer_bytes(addr, a))
		return false;
	return memcmp(a, v6_loopback, 16) == 0 || in_prefix(a, v4_loopback_net, 104);
}

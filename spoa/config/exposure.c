/*
 * exposure.c - who may connect, checked on a whole configuration (see
 * exposure.h): a listener other hosts can reach needs an allowlist
 * (config_check_exposure, at every start, --check and reload), and the
 * warnings about what is reached from elsewhere or let in wider than
 * written (a remote runtime_api, allowlist entries with host bits).
 */
#include <arpa/inet.h>
#include <string.h>

#include "config/exposure.h"
#include "config/report.h"
#include "util/cidr.h"
#include "util/sockaddr.h"

/* Whether an address (HOST:PORT, [IPV6]:PORT, unix:PATH) is reached from
 * elsewhere than this host: TCP on anything but loopback. */
static bool reachable_from_elsewhere(const char *spec)
{
	struct sockaddr_storage addr;
	socklen_t len;
	char why[256];
	if (!sockaddr_parse(spec, NULL, &addr, &len, why, sizeof(why)))
		return false; /* the key's own check said why */
	return addr.ss_family != AF_UNIX && !cidr_sockaddr_is_loopback((struct sockaddr *)&addr);
}

static bool allowlist_set(const struct cidr_list *l)
{
	return l->any || l->n > 0;
}

/* An allowlist given, even one its own line refused ("allow
 * '10.1.0.0/33': ..."): that line is the problem, and saying that nothing
 * says who may connect would send the reader after a key that is there. */
static bool allowlist_given(const struct config *c, const struct config_origins *origins,
			    const char *key)
{
	const struct config_key *k = config_key_find(key);
	const struct cidr_list *l = (const struct cidr_list *)(const void *)((const char *)c +
									    k->offset);
	return allowlist_set(l) || config_origin_of(origins, k) != 0;
}

/* One listener other hosts can reach with no allowlist: said at the line
 * that sets it, naming the key that would let it through. */
static void refuse_exposed(const struct config *c, const struct config_origins *origins,
			   const struct config_key *key, const char *spec, const char *verb,
			   const char *allow_keys, const char *any_key, const char *peers,
			   FILE *errors)
{
	char what[256];
	int at = config_origin_of(origins, key);
	config_spell(what, sizeof(what), key, spec, at, 0, c);
	config_report_at(errors, c, at);
	fprintf(errors,
		"%s is not a loopback address and nothing says who may %s: set %s to the "
		"addresses or CIDR blocks of the %s (or %s = any, on purpose)\n",
		what, verb, allow_keys, peers, any_key);
}

/*
 * SPOP has no authentication: whoever connects may open breakers. A
 * listener other hosts can reach needs an allowlist, even if only "any"
 * said on purpose; loopback and unix sockets (guarded by their file mode)
 * need none. The admin pages the same, by admin_allow or allow.
 */
int config_check_exposure(const struct config *c, const struct config_origins *origins,
			  FILE *errors)
{
	const struct config_key *listen = config_key_find("listen");
	const struct config_key *admin = config_key_find("admin");
	int problems = 0;

	bool allow = allowlist_given(c, origins, "allow");
	bool admin_allow = allow || allowlist_given(c, origins, "admin_allow");

	for (unsigned i = 0; i < c->nb_listen && !allow; i++) {
		if (!reachable_from_elsewhere(c->listen[i]))
			continue;
		refuse_exposed(c, origins, listen, c->listen[i], "connect", "allow", "allow",
			       "HAProxies", errors);
		problems++;
	}
	/* The agent-check answers tell every server's state: HAProxy's alone
	 * to read, by the same list as SPOP. */
	const struct config_key *agent_check = config_key_find("agent_check");
	if (c->link.agent_check[0] && !allow && reachable_from_elsewhere(c->link.agent_check)) {
		refuse_exposed(c, origins, agent_check, c->link.agent_check, "connect", "allow", "allow",
			       "HAProxies", errors);
		problems++;
	}
	if (c->admin[0] && !admin_allow && reachable_from_elsewhere(c->admin)) {
		refuse_exposed(c, origins, admin, c->admin, "read it", "admin_allow (or allow)",
			       "admin_allow", "scrapers", errors);
		problems++;
	}
	return problems;
}

/* A TCP runtime_api elsewhere than loopback is the operator's choice, but
 * the socket it reaches can drain every server: a warning. */
void config_warn_remote_runtime_api(const struct config *c,
				    const struct config_origins *origins, FILE *errors)
{
	const struct config_key *runtime_api = config_key_find("runtime_api");
	char what[256];

	for (unsigned i = 0; i < c->link.nb_runtime_api; i++) {
		if (!reachable_from_elsewhere(c->link.runtime_api[i]))
			continue;
		int at = config_origin_of(origins, runtime_api);
		config_spell(what, sizeof(what), runtime_api, c->link.runtime_api[i], at, 0, c);
		config_report_at(errors, c, at);
		fprintf(errors,
			"warning: %s is not on loopback: whoever reaches that stats socket can "
			"drain every server; prefer a unix socket with mode, group and level "
			"(docs/security.md)\n",
			what);
	}
}

/*
 * An entry with bits set past its prefix (10.1.0.1/16) is taken as its
 * network (10.1.0.0/16, util/cidr.c), as HAProxy's ACLs take it. A
 * warning, not a refusal: the prefix says how wide the operator meant it
 * (`ip addr` prints an interface's address so), and a file that loaded
 * yesterday must not stop a reload today. But the list is who may open
 * breakers, so the network it lets in is said, for a /16 meant as /32.
 */
void config_warn_host_bits(const struct config *c, const struct config_origins *origins,
			   const char *key, FILE *errors)
{
	const struct config_key *k = config_key_find(key);
	const struct cidr_list *l = (const struct cidr_list *)(const void *)((const char *)c +
									    k->offset);
	for (unsigned i = 0; i < l->n; i++) {
		const struct cidr *e = &l->entries[i];
		char written[CIDR_TEXT_MAX], network[INET6_ADDRSTRLEN];
		unsigned char bytes[16];
		snprintf(written, sizeof(written), "%s", e->text);
		char *slash = strchr(written, '/');
		if (!slash)
			continue;
		*slash = '\0';
		bool v4 = inet_pton(AF_INET, written, bytes) == 1;
		if (!v4 && inet_pton(AF_INET6, written, bytes) != 1)
			continue;
		const uint8_t *masked = v4 ? e->addr + 12 : e->addr;
		if (memcmp(bytes, masked, v4 ? 4 : 16) == 0)
			continue;
		inet_ntop(v4 ? AF_INET : AF_INET6, masked, network, sizeof(network));
		int at = config_origin_of(origins, k);
		config_report_at(errors, c, at);
		fprintf(errors,
			"warning: %s%s entry '%s' has bits set past its /%s: it lets in the whole "
			"network %s/%s; write that, or %s alone for the one address\n",
			at == CONFIG_FROM_ARGS ? "--" : "", at == CONFIG_FROM_ARGS ? k->option : key,
			e->text, slash + 1, network, slash + 1, written);
	}
}

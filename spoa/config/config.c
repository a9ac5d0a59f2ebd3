/*
 * config.c - the configuration as a whole: its defaults, the order its
 * sources are read in (config_from_args), and the checks no single key
 * can make (the enforcement channels; the policies are policies.c's).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "spop/observe.h"
#include "admin/admin_http.h"
#include "config/sources.h"
#include "spop/tls.h"
#include "util/cidr.h"
#include "util/sockaddr.h"

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	agent_settings_default(&c->agent);
	c->log_level = LOG_LEVEL_NOTICE;
	c->max_breakers = CONFIG_DEFAULT_MAX_BREAKERS;
	c->ack_variables = OBSERVE_VARS_ALL; /* what every answer carried before the key */
	snprintf(c->state.file, sizeof(c->state.file), "%s", STATE_DEFAULT_FILE);
	c->state.interval_ms = STATE_DEFAULT_INTERVAL_MS;
	c->link.poll_ms = LINK_DEFAULT_POLL_MS;
	c->socket_mode = CONFIG_DEFAULT_SOCKET_MODE;
	c->control_mode = CONFIG_DEFAULT_SOCKET_MODE;
	snprintf(c->admin, sizeof(c->admin), "%s", ADMIN_HTTP_DEFAULT_ADDR);
}

void config_free(struct config *c)
{
	free(c->overrides);
	c->overrides = NULL;
	breaker_policies_free(&c->policies);
	c->nb_overrides = c->cap_overrides = 0;
}

/* ---- enforcement: runtime_api, agent_check and enforce together ---- */

/* Starts a message at where a key was set: "PATH:LINE: " or "spoa-breaker: ". */
static void report_at(FILE *errors, const struct config *c, int origin)
{
	if (origin > 0)
		fprintf(errors, "%s:%d: ", c->path, origin);
	else
		fprintf(errors, CONFIG_PROGRAM ": ");
}

/* A key as the user wrote it ("enforce = runtime-api", "--enforce
 * runtime-api", "runtime_api"). For the other side of a conflict
 * (culprit_origin: where the side reported was set; 0 for that side
 * itself) also where it was: "runtime_api at line 3" in the same file,
 * "runtime_api at FILE:3" seen from the command line. */
static void spell(char *buf, size_t size, const struct config_key *k, const char *value,
		  int origin, int culprit_origin, const struct config *c)
{
	size_t n;
	if (origin == CONFIG_FROM_ARGS)
		n = (size_t)snprintf(buf, size, "--%s%s%s", k->option, value ? " " : "",
				     value ? value : "");
	else
		n = (size_t)snprintf(buf, size, "%s%s%s", k->name, value ? " = " : "",
				     value ? value : "");
	if (origin > 0 && culprit_origin > 0 && n < size)
		snprintf(buf + n, size - n, " at line %d", origin);
	else if (origin > 0 && culprit_origin != 0 && n < size)
		snprintf(buf + n, size - n, " at %s:%d", c->path, origin);
}

/* Of two places, the one read last: the command line comes after the file. */
static bool read_after(int a, int b)
{
	if (a == CONFIG_FROM_ARGS || b == CONFIG_FROM_ARGS)
		return a == CONFIG_FROM_ARGS && b != CONFIG_FROM_ARGS;
	return a > b;
}

/* Peers mode needs to know who this node is (a verdict names its owner)
 * and an HAProxy to read and write the table through. */
static int check_verdicts(const struct config *c, const struct config_origins *origins,
			  FILE *errors)
{
	const struct config_key *table = config_key_find("verdict_table");
	int at_table = origins->line[config_key_index(table)];
	char what[256];

	if (!c->link.verdict_table[0])
		return 0;
	spell(what, sizeof(what), table, c->link.verdict_table, at_table, 0, c);
	if (c->link.node_id == 0) {
		report_at(errors, c, at_table);
		fprintf(errors, "%s needs a node_id, unique among the HAProxy nodes\n", what);
		return 1;
	}
	if (c->link.nb_runtime_api == 0) {
		report_at(errors, c, at_table);
		fprintf(errors, "%s needs a runtime_api socket\n", what);
		return 1;
	}
	return 0;
}

/*
 * Settles the enforcement mode (see struct config) and checks that the
 * channels agree: runtime-api needs a socket; agent-check needs a listener;
 * runtime-api and an agent-check listener together are refused, because
 * an agent-check "ready" undoes a Runtime API drain within one
 * agent-inter. In agent-check mode a runtime_api socket is only read.
 * A problem is reported where the key that makes it was set, naming the
 * other one. Returns the number of problems.
 */
static int check_enforcement(struct config *c, const struct config_origins *origins,
			     FILE *errors)
{
	const struct config_key *enforce = config_key_find("enforce");
	const struct config_key *runtime_api = config_key_find("runtime_api");
	const struct config_key *agent_check = config_key_find("agent_check");
	int at_enforce = origins->line[config_key_index(enforce)];
	int at_runtime_api = origins->line[config_key_index(runtime_api)];
	int at_agent_check = origins->line[config_key_index(agent_check)];
	char what[256], other[256];

	if (!c->enforce_set)
		c->link.enforce = c->link.nb_runtime_api   ? ENFORCE_RUNTIME_API
				  : c->link.agent_check[0] ? ENFORCE_AGENT_CHECK
							   : ENFORCE_NONE;
	if (c->link.enforce == ENFORCE_RUNTIME_API && c->link.nb_runtime_api == 0) {
		spell(what, sizeof(what), enforce, "runtime-api", at_enforce, 0, c);
		report_at(errors, c, at_enforce);
		fprintf(errors, "%s needs a runtime_api socket\n", what);
		return 1;
	}
	if (c->link.enforce == ENFORCE_AGENT_CHECK && !c->link.agent_check[0]) {
		spell(what, sizeof(what), enforce, "agent-check", at_enforce, 0, c);
		report_at(errors, c, at_enforce);
		fprintf(errors, "%s needs an agent_check listen address\n", what);
		return 1;
	}
	if (c->link.enforce == ENFORCE_RUNTIME_API && c->link.agent_check[0]) {
		/* Runtime-api comes from enforce when given, else from the socket. */
		const struct config_key *mode_key = c->enforce_set ? enforce : runtime_api;
		const char *mode_value = c->enforce_set ? "runtime-api" : NULL;
		int at_mode = c->enforce_set ? at_enforce : at_runtime_api;
		const struct config_key *culprit = agent_check, *cause = mode_key;
		const char *culprit_value = NULL, *cause_value = mode_value;
		int at_culprit = at_agent_check, at_cause = at_mode;
		if (read_after(at_mode, at_agent_check)) {
			culprit = mode_key, culprit_value = mode_value, at_culprit = at_mode;
			cause = agent_check, cause_value = NULL, at_cause = at_agent_check;
		}
		spell(what, sizeof(what), culprit, culprit_value, at_culprit, 0, c);
		spell(other, sizeof(other), cause, cause_value, at_cause, at_culprit, c);
		report_at(errors, c, at_culprit);
		fprintf(errors,
			"%s cannot be combined with %s: runtime-api enforcement and an "
			"agent_check listener conflict, as an agent-check \"ready\" undoes a "
			"Runtime API drain\n",
			what, other);
		return 1;
	}
	return 0;
}

/* ---- who may connect: allow, admin_allow ---- */

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

/* Where key was set, when the caller knows (origins may be NULL: a
 * reload checks values that no single file line set). */
static int origin_of(const struct config_origins *origins, const struct config_key *key)
{
	return origins ? origins->line[config_key_index(key)] : 0;
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
	return allowlist_set(l) || origin_of(origins, k) != 0;
}

/* One listener other hosts can reach with no allowlist: said at the line
 * that sets it, naming the key that would let it through. */
static void refuse_exposed(const struct config *c, const struct config_origins *origins,
			   const struct config_key *key, const char *spec, const char *verb,
			   const char *allow_keys, const char *any_key, const char *peers,
			   FILE *errors)
{
	char what[256];
	int at = origin_of(origins, key);
	spell(what, sizeof(what), key, spec, at, 0, c);
	report_at(errors, c, at);
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
static void warn_remote_runtime_api(const struct config *c,
				    const struct config_origins *origins, FILE *errors)
{
	const struct config_key *runtime_api = config_key_find("runtime_api");
	char what[256];

	for (unsigned i = 0; i < c->link.nb_runtime_api; i++) {
		if (!reachable_from_elsewhere(c->link.runtime_api[i]))
			continue;
		int at = origin_of(origins, runtime_api);
		spell(what, sizeof(what), runtime_api, c->link.runtime_api[i], at, 0, c);
		report_at(errors, c, at);
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
static void warn_host_bits(const struct config *c, const struct config_origins *origins,
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
		int at = origin_of(origins, k);
		report_at(errors, c, at);
		fprintf(errors,
			"warning: %s%s entry '%s' has bits set past its /%s: it lets in the whole "
			"network %s/%s; write that, or %s alone for the one address\n",
			at == CONFIG_FROM_ARGS ? "--" : "", at == CONFIG_FROM_ARGS ? k->option : key,
			e->text, slash + 1, network, slash + 1, written);
	}
}

/* What --check says of the enforcement it settled on (check_enforcement),
 * one line: the mode, and the HAProxies it reaches them through. */
static void say_enforcement(const struct config *c, FILE *out)
{
	switch (c->link.enforce) {
	case ENFORCE_RUNTIME_API:
		fprintf(out, "enforce: runtime-api (HAProxy ");
		for (unsigned i = 0; i < c->link.nb_runtime_api; i++)
			fprintf(out, "%s%s", i ? ", " : "", c->link.runtime_api[i]);
		fprintf(out, ")\n");
		break;
	case ENFORCE_AGENT_CHECK:
		fprintf(out, "enforce: agent-check (HAProxy's agent-check asks %s%s)\n",
			c->link.agent_check, c->link.nb_runtime_api ? "; runtime_api only read" : "");
		break;
	case ENFORCE_NONE:
		fprintf(out, "enforce: none (%sdecisions are logged, HAProxy is not changed)\n",
			c->enforce_set ? "" : "no runtime_api or agent_check: ");
		break;
	}
}

/* ---- TLS: the files are read now, so --check and a reload see them ---- */

/*
 * tls_key and tls_ca mean nothing without tls_cert. With it, the files
 * are loaded as the listener will load them (tls_context_new(), then
 * dropped): a missing or unreadable file, one with no certificate or key
 * in it, a key that is not the certificate's, is said at the line of the
 * key that names it. Returns the number of problems.
 */
/* The control socket is a unix socket: its file's mode and group are the
 * whole of its access control, which a TCP port would not have. */
static int check_control(const struct config *c, const struct config_origins *origins,
			 FILE *errors)
{
	const struct config_key *k = config_key_find("control");
	char what[256];
	if (!c->control[0] || strncmp(c->control, "unix:", 5) == 0)
		return 0;
	int at = origin_of(origins, k);
	spell(what, sizeof(what), k, c->control, at, 0, c);
	report_at(errors, c, at);
	fprintf(errors, "%s: a unix socket only (unix:PATH): its file's mode and group say who "
			"may hold, pause or release the breakers\n",
		what);
	return 1;
}

static int check_tls(const struct config *c, const struct config_origins *origins,
		     FILE *errors)
{
	const char *names[] = {"tls_cert", "tls_key", "tls_ca"};
	const char *values[] = {c->tls_cert, c->tls_key, c->tls_ca};
	char what[256], err[512];

	if (!c->tls_cert[0]) {
		for (unsigned i = 1; i < 3; i++) {
			if (!values[i][0])
				continue;
			const struct config_key *k = config_key_find(names[i]);
			int at = origins->line[config_key_index(k)];
			spell(what, sizeof(what), k, values[i], at, 0, c);
			report_at(errors, c, at);
			fprintf(errors, "%s needs tls_cert: the agent's own certificate\n", what);
			return 1;
		}
		return 0;
	}
	struct tls_context *t = tls_context_new(c->tls_cert, c->tls_key, c->tls_ca, err,
						sizeof(err));
	if (t) {
		tls_context_free(t);
		return 0;
	}
	/* The message starts with the key whose file is wrong. */
	int at = origins->line[config_key_index(config_key_find("tls_cert"))];
	for (unsigned i = 1; i < 3; i++)
		if (strncmp(err, names[i], strlen(names[i])) == 0 && err[strlen(names[i])] == ' ')
			at = origins->line[config_key_index(config_key_find(names[i]))];
	report_at(errors, c, at);
	fprintf(errors, "%s\n", err);
	return 1;
}

/* ---- the order of the sources ---- */

int config_from_args(struct config *c, int argc, char **argv, FILE *out, FILE *errors)
{
	struct config_args args = {0};
	struct config_origins origins = {{0}};

	config_defaults(c);
	int bad_command_line = config_args_scan(argc, argv, &args, errors);
	if (args.help) {
		config_usage(out);
		return 0;
	}
	if (args.version) {
		/* SPOA_REVISION: the git revision the Makefile saw, "" outside git. */
		if (SPOA_REVISION[0] != '\0')
			fprintf(out, CONFIG_PROGRAM " %s (git %s)\n", SPOA_VERSION, SPOA_REVISION);
		else
			fprintf(out, CONFIG_PROGRAM " %s\n", SPOA_VERSION);
		return 0;
	}
	if (bad_command_line) {
		fprintf(errors, CONFIG_PROGRAM ": see " CONFIG_PROGRAM " --help\n");
		return 2;
	}

	c->path = args.path;
	int problems = c->path ? config_ini_load(c, c->path, &origins, errors) : 0;
	if (config_args_apply(c, argc, argv, &origins, errors) > 0)
		return 2;
	/* With a policy option, the global policy is no longer the file's
	 * alone: a problem with it is not the [breaker] line's to carry. */
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		if (config_keys[i].place == CONFIG_IN_POLICY &&
		    origins.line[i] == CONFIG_FROM_ARGS) {
			c->global_line = 0;
			if (config_keys[i].field)
				c->global_field_lines[__builtin_ctz(config_keys[i].field)] =
					CONFIG_FROM_ARGS;
		}
	}
	if (c->nb_listen == 0)
		snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s",
			 AGENT_DEFAULT_LISTEN);

	/* Even after other problems: what did parse may still conflict. */
	problems += check_enforcement(c, &origins, errors);
	problems += check_verdicts(c, &origins, errors);
	problems += config_check_exposure(c, &origins, errors);
	warn_remote_runtime_api(c, &origins, errors);
	warn_host_bits(c, &origins, "allow", errors);
	warn_host_bits(c, &origins, "admin_allow", errors);
	problems += check_tls(c, &origins, errors);
	problems += check_control(c, &origins, errors);
	problems += config_resolve_policies(c, errors);
	if (problems > 0) {
		if (c->path)
			fprintf(errors, CONFIG_PROGRAM ": %s: configuration refused\n", c->path);
		else
			fprintf(errors, CONFIG_PROGRAM ": configuration refused\n");
		return 1;
	}
	/* Valid for a start; a reload of the agent running on it may still
	 * refuse it, and `systemctl reload` runs this first. */
	if (args.check && config_check_running(c, errors) > 0)
		return 1;
	if (args.check) {
		fprintf(out, "%s: configuration valid\n", c->path ? c->path : "(defaults)");
		say_enforcement(c, out);
		c->checked = true;
		return 0;
	}
	return -1;
}

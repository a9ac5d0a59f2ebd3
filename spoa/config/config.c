/*
 * config.c - the configuration as a whole: the order its sources are read
 * in (config_from_args), and the checks no single key can make (the
 * enforcement channels; who may connect is exposure.c's, the policies are
 * policies.c's). The defaults are defaults.c's.
 */
#include <string.h>

#include "config/exposure.h"
#include "config/report.h"
#include "config/sources.h"
#include "spop/tls.h"

/* ---- enforcement: runtime_api, agent_check and enforce together ---- */

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
	config_spell(what, sizeof(what), table, c->link.verdict_table, at_table, 0, c);
	if (c->link.node_id == 0) {
		config_report_at(errors, c, at_table);
		fprintf(errors, "%s needs a node_id, unique among the HAProxy nodes\n", what);
		return 1;
	}
	if (c->link.nb_runtime_api == 0) {
		config_report_at(errors, c, at_table);
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
		config_spell(what, sizeof(what), enforce, "runtime-api", at_enforce, 0, c);
		config_report_at(errors, c, at_enforce);
		fprintf(errors, "%s needs a runtime_api socket\n", what);
		return 1;
	}
	if (c->link.enforce == ENFORCE_AGENT_CHECK && !c->link.agent_check[0]) {
		config_spell(what, sizeof(what), enforce, "agent-check", at_enforce, 0, c);
		config_report_at(errors, c, at_enforce);
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
		config_spell(what, sizeof(what), culprit, culprit_value, at_culprit, 0, c);
		config_spell(other, sizeof(other), cause, cause_value, at_cause, at_culprit, c);
		config_report_at(errors, c, at_culprit);
		fprintf(errors,
			"%s cannot be combined with %s: runtime-api enforcement and an "
			"agent_check listener conflict, as an agent-check \"ready\" undoes a "
			"Runtime API drain\n",
			what, other);
		return 1;
	}
	return 0;
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

/* The control socket is a unix socket: its file's mode and group are the
 * whole of its access control, which a TCP port would not have. */
static int check_control(const struct config *c, const struct config_origins *origins,
			 FILE *errors)
{
	const struct config_key *k = config_key_find("control");
	char what[256];
	if (!c->control[0] || strncmp(c->control, "unix:", 5) == 0)
		return 0;
	int at = config_origin_of(origins, k);
	config_spell(what, sizeof(what), k, c->control, at, 0, c);
	config_report_at(errors, c, at);
	fprintf(errors, "%s: a unix socket only (unix:PATH): its file's mode and group say who "
			"may hold, pause or release the breakers\n",
		what);
	return 1;
}

/* ---- TLS: the files are read now, so --check and a reload see them ---- */

/*
 * tls_key and tls_ca mean nothing without tls_cert. With it, the files
 * are loaded as the listener will load them (tls_context_new(), then
 * dropped): a missing or unreadable file, one with no certificate or key
 * in it, a key that is not the certificate's, is said at the line of the
 * key that names it. Returns the number of problems.
 */
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
			config_spell(what, sizeof(what), k, values[i], at, 0, c);
			config_report_at(errors, c, at);
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
	config_report_at(errors, c, at);
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
	config_warn_remote_runtime_api(c, &origins, errors);
	config_warn_host_bits(c, &origins, "allow", errors);
	config_warn_host_bits(c, &origins, "admin_allow", errors);
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

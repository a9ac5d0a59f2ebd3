/*
 * reload.c - SIGHUP: read the configuration again and apply every key a
 * running agent can change, or none of them.
 *
 * Everything new is built aside first (the configuration with its
 * resolved policies, the HAProxy link when [haproxy] changed); only when every step has
 * succeeded is it swapped in. A step that fails leaves the running
 * configuration whole, and says why. Breakers keep their state; only their
 * policies change. Keys only a restart can change are named in a warning.
 * A reload never leaves a running listener with nobody named to let in,
 * nor drops client certificates: those are refused as a start would be.
 *
 * The agent's held ACKs wait on the HAProxy link of the moment, which a
 * reload may replace: daemon_link_acks() is here, and start() (daemon.c)
 * calls it for the first link.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/running_publish.h"
#include "spop/tls.h"
#include "util/log.h"

/* The key table (config/keys.c) decides what needs a restart. */
static void warn_restart_only(void *ctx, const char *key)
{
	(void)ctx;
	log_warning("reload: %s changed; it takes effect at the next restart", key);
}

static void refuse(struct config *fresh, const char *why)
{
	log_error("reload refused: %s; the running configuration stays in effect", why);
	config_free(fresh);
}

/* Logs each line of a report (then freed) after "reload: ": problems as
 * errors, warnings as warnings. */
static void log_report(char *report, bool problems)
{
	for (char *line = report ? strtok(report, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		if (problems)
			log_error("reload: %s", line);
		else
			log_warning("reload: %s", line);
	}
	free(report);
}

/* The HAProxy link of the moment tells the agent when ACK tickets pass:
 * a reload may replace it (the new one's settled ticket lets every
 * earlier ticket pass). */
static void acks_released(void *ctx, uint64_t settled)
{
	struct daemon *d = ctx;
	agent_release_held(&d->agent, settled);
}

void daemon_link_acks(struct daemon *d)
{
	enforcer_on_ack_release(d->enforcer, acks_released, d);
	agent_release_held(&d->agent, enforcer_ack_settled(d->enforcer));
}

void daemon_reload(struct daemon *d)
{
	struct config fresh;
	char err[512];

	if (!d->config_path) {
		log_notice("SIGHUP: running without a configuration file (-f), nothing to reload");
		return;
	}
	log_notice("SIGHUP: reloading %s", d->config_path);

	/* 1. The file and the command line, checked whole, policies resolved. */
	char *report = NULL;
	size_t report_len = 0;
	FILE *errors = open_memstream(&report, &report_len);
	int status = errors ? d->load(&fresh, errors, d->load_ctx) : 1;
	if (errors)
		fclose(errors);
	/* Refused: each line is a problem. Accepted: each is a warning. */
	log_report(report, status >= 0);
	if (status >= 0) {
		log_error("reload refused: the running configuration stays in effect");
		return;
	}

	/* 2. Who may connect, on what will run: the new file passed the
	 * check a start makes, but on its own listen and admin, which a
	 * reload does not open. The running ones stay, and the new allow
	 * lists and TLS files must still guard them. Refused whole rather
	 * than the old lists kept: a reload applies the file, or none of it.
	 * (--check says the same ahead of the signal, from the file the agent
	 * writes: config_check_running.) */
	report = NULL;
	errors = open_memstream(&report, &report_len);
	/* No memory to check with: refused, never let through unchecked. */
	int exposed = errors ? config_check_reload(&d->config, &fresh, errors) : 1;
	if (errors)
		fclose(errors);
	log_report(report, true);
	if (exposed > 0) {
		refuse(&fresh, CONFIG_RELOAD_EXPOSED);
		return;
	}

	/* 3. TLS: the files again, even under the same names (a renewed
	 * certificate). Turning it on or off would refuse every HAProxy whose
	 * server line still says otherwise: that waits for a restart. */
	bool tls_running = d->config.tls_cert[0] != '\0', tls_next = fresh.tls_cert[0] != '\0';
	if (tls_running != tls_next) {
		log_warning("reload: tls_cert %s; it takes effect at the next restart",
			    tls_next ? "set" : "removed");
		memcpy(fresh.tls_cert, d->config.tls_cert, sizeof(fresh.tls_cert));
		memcpy(fresh.tls_key, d->config.tls_key, sizeof(fresh.tls_key));
		memcpy(fresh.tls_ca, d->config.tls_ca, sizeof(fresh.tls_ca));
	}
	struct tls_context *tls = NULL;
	if (fresh.tls_cert[0]) {
		tls = tls_context_new(fresh.tls_cert, fresh.tls_key, fresh.tls_ca, err, sizeof(err));
		if (!tls) {
			refuse(&fresh, err);
			return;
		}
	}

	/* 4. The HAProxy link, when [haproxy] changed. An agent-check
	 * listener cannot be opened twice on one address, so in that mode a
	 * change waits for a restart. */
	struct enforcer *enforcer = NULL;
	if (config_haproxy_changed(&d->config, &fresh)) {
		if (d->config.link.enforce == ENFORCE_AGENT_CHECK && fresh.link.enforce == ENFORCE_AGENT_CHECK &&
		    strcmp(d->config.link.agent_check, fresh.link.agent_check) == 0) {
			log_warning("reload: [haproxy] changes with the agent-check listener on %s "
				    "take effect at the next restart", fresh.link.agent_check);
			fresh.link.enforce = d->config.link.enforce;
			fresh.link.poll_ms = d->config.link.poll_ms;
			memcpy(fresh.link.runtime_api, d->config.link.runtime_api, sizeof(fresh.link.runtime_api));
			fresh.link.nb_runtime_api = d->config.link.nb_runtime_api;
		} else {
			enforcer = enforcer_new(d->loop, &fresh.link, &d->breakers, d->enforcer, err,
						sizeof(err));
			if (!enforcer) {
				tls_context_free(tls);
				refuse(&fresh, err);
				return;
			}
		}
	}

	/* Every step succeeded: swap it all in. */
	if (tls) {
		agent_set_tls(&d->agent, tls); /* open connections keep their sessions */
		log_notice("reload: new SPOP connections use the TLS files read now (%s)",
			   fresh.tls_cert);
	}
	breaker_table_use_policies(&d->breakers.table, &fresh.policies);
	/* Deadlines follow the policy (cooldown, max_cooldown, healthy_for):
	 * one that came earlier must not wait for the timer set before. */
	breakers_rearm(&d->breakers);
	state_store_set_interval(d->state, fresh.state.interval_ms);
	/* Read on the next message: HAProxy may already use what was added. */
	d->observe.ack_vars = fresh.ack_variables;
	d->observe.words_confirm_words = fresh.link.enforce != ENFORCE_RUNTIME_API;
	if (enforcer) {
		enforcer_free(d->enforcer);
		d->enforcer = enforcer;
		enforcer_agent_check_allow(enforcer, &d->config.allow); /* d->config: fresh, below */
		daemon_link_acks(d);
		/* The operator's release holds across the new link. */
		enforcer_set_released(enforcer, d->hand.released);
	}
	config_restart_only_changes(&d->config, &fresh, warn_restart_only, NULL);
	config_keep_restart_only(&fresh, &d->config);
	log_init(fresh.log_level, fresh.use_syslog, "spoa-breaker");
	log_set_format(fresh.log_format);
	config_free(&d->config);
	d->config = fresh;
	d->admin_allow = *config_admin_allow(&d->config);
	daemon_running_publish(&d->config); /* the TLS files it serves may have changed */
	log_notice("configuration reloaded");
}

/*
 * defaults.c - the configuration's embedded defaults (config_defaults),
 * what every source starts from, and config_free, which releases what a
 * configuration owns (see config.h).
 */
#include <stdlib.h>
#include <string.h>

#include "spop/observe.h"
#include "admin/admin_http.h"
#include "config/config.h"

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

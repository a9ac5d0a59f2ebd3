/*
 * usage.c - --help, generated from the key table: the options that are no
 * key, then every key with an option, grouped by the section it belongs
 * to, each with its default as config_defaults() has it.
 */
#include <string.h>

#include "config/sources.h"

#define HELP_COLUMN 30 /* where descriptions start */
#define HELP_WIDTH 79

/* Writes text word by word from column `at` (the cursor is there), lines
 * wrapped at HELP_WIDTH and continued at HELP_COLUMN. */
static void wrap(FILE *out, const char *text, int at)
{
	int col = at;
	for (const char *p = text; *p;) {
		while (*p == ' ')
			p++;
		int len = (int)strcspn(p, " ");
		if (len == 0)
			break;
		if (col > HELP_COLUMN && col + 1 + len > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_COLUMN, "");
			col = HELP_COLUMN;
		} else if (col > HELP_COLUMN) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", len, p);
		col += len;
		p += len;
	}
	fputc('\n', out);
}

/* One option: its names on the left, the description wrapped on the right
 * (from the next line when the names are too wide). */
static void option_line(FILE *out, char short_option, const char *name, const char *arg,
			const char *description)
{
	int col;
	if (short_option)
		col = fprintf(out, "  -%c, --%s%s%s", short_option, name, arg ? " " : "",
			      arg ? arg : "");
	else
		col = fprintf(out, "      --%s%s%s", name, arg ? " " : "", arg ? arg : "");
	if (col >= HELP_COLUMN - 1) {
		fputc('\n', out);
		col = 0;
	}
	fprintf(out, "%*s", HELP_COLUMN - col, "");
	wrap(out, description, HELP_COLUMN);
}

static void key_line(FILE *out, const struct config_key *k, const struct config *defaults,
		     const struct breaker_policy *policy_defaults)
{
	char value[512], words[256] = "", description[1024];

	if (k->default_text) {
		snprintf(value, sizeof(value), "%s", k->default_text);
	} else {
		config_key_format(k, defaults, policy_defaults, value, sizeof(value));
		if (k->type == CONFIG_BOOL) /* a flag on the command line */
			snprintf(value, sizeof(value), "%s",
				 strcmp(value, "true") == 0 ? "on" : "off");
	}
	if (k->type == CONFIG_ENUM || k->type == CONFIG_WORD_SET)
		config_words_format(k->words, words, sizeof(words));
	snprintf(description, sizeof(description), "%s%s%s (default %s%s)", words,
		 words[0] ? "; " : "", k->help, value,
		 (k->flags & CONFIG_KEY_RELOADABLE) ? "" : "; changes need a restart");
	option_line(out, k->short_option, k->option, k->arg, description);
}

static void section(FILE *out, unsigned section_bit, const char *title,
		    const struct config *defaults, const struct breaker_policy *policy_defaults)
{
	fprintf(out, "\n%s\n", title);
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (k->option && (k->sections & section_bit))
			key_line(out, k, defaults, policy_defaults);
	}
}

void config_usage(FILE *out)
{
	struct config defaults;
	struct breaker_policy policy_defaults;

	config_defaults(&defaults);
	breaker_policy_defaults(&policy_defaults);

	fprintf(out, "Usage: " CONFIG_PROGRAM " [-f FILE] [--check] [OPTIONS]\n"
		     "A backpressure-aware circuit breaker for HAProxy, as an SPOE agent.\n\n");
	option_line(out, 'f', "config", "FILE",
		    "read settings from an INI file (every key: docs/configuration.md); the "
		    "options below override it");
	option_line(out, 0, "check", NULL,
		    "check the configuration, report every problem as FILE:LINE: ..., and exit "
		    "(0 valid, 1 not)");
	option_line(out, 'h', "help", NULL, "show this help and exit");
	option_line(out, 'V', "version", NULL, "show the version and exit");
	fprintf(out, "\nEvery key of the file's [agent], [haproxy] and [breaker] sections is an\n"
		     "option too: key_name becomes --key-name. Durations take ms, s or m (a bare\n"
		     "number is milliseconds); status lists are like 429,500-502 or none.\n");

	section(out, CONFIG_SECTION_AGENT, "[agent] the process", &defaults, &policy_defaults);
	section(out, CONFIG_SECTION_HAPROXY, "[haproxy] how decisions reach HAProxy", &defaults,
		&policy_defaults);
	section(out, CONFIG_SECTION_BREAKER,
		"[breaker] the global policy ([backend NAME] and [server BACKEND/SERVER]\n"
		"sections of the file override it per backend and per server)",
		&defaults, &policy_defaults);

	fprintf(out, "\nSignals: TERM or INT stop gracefully (AGENT-DISCONNECT to HAProxy, exit 0);\n"
		     "HUP reads the file and the options again: breakers keep their state, and\n"
		     "what only a restart applies is logged and left as it runs.\n");
	config_free(&defaults);
}

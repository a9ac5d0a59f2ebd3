/*
 * ini.c - read the agent's INI file (libinih) through the key table, and
 * report every bad line.
 *
 * libinih reports only the first bad line and no line numbers to handlers,
 * so the file is fed to it through our own line reader, which counts lines,
 * refuses malformed ones itself (reporting each), and strips leading blanks
 * so an indented key is a key, never the continuation of the previous value.
 * The reader knows sections; what a key means is the table's business.
 */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/sources.h"

#define SECTION_INVALID 0u /* none yet, or already reported: its keys are skipped */

struct parser {
	struct config *config;
	const char *path;
	FILE *in;
	FILE *errors;
	int line;
	int nb_errors;
	char section_text[256];
	enum config_section section; /* or SECTION_INVALID */
	bool in_any_section;
	struct breaker_policy_layer *layer; /* the section's policy layer, if any */
	/* The line each key was set at in the current section, for duplicates:
	 * origins->line for the singleton sections, one row of override_lines
	 * for an override (a section given twice shares its row). */
	int *seen;
	int *field_lines; /* the policy section's (config.h), else NULL */
	struct config_origins *origins;
	int (*override_lines)[CONFIG_NB_KEYS]; /* parallel to config->overrides */
	unsigned cap_override_lines;
};

/* Writes "PATH:LINE: message" and counts it. Returns false, so that a
 * checker can `return report(...)`. */
static bool report(struct parser *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool report(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(p->errors, "%s:%d: ", p->path, line);
	va_start(ap, fmt);
	vfprintf(p->errors, fmt, ap);
	va_end(ap);
	fputc('\n', p->errors);
	p->nb_errors++;
	return false;
}

/* ---- sections ---- */

/* The override of (backend, server), added if new; its index, or -1 after
 * reporting why not. */
static int find_or_add_override(struct parser *p, const char *backend, const char *server)
{
	struct config *c = p->config;
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		struct config_override *o = &c->overrides[i];
		if (strcmp(o->backend, backend) == 0 && strcmp(o->server, server) == 0)
			return (int)i;
	}
	if (c->nb_overrides == BREAKER_TABLE_MAX_OVERRIDES) {
		report(p, p->line, "too many [backend]/[server] sections (at most %d)",
		       BREAKER_TABLE_MAX_OVERRIDES);
		return -1;
	}
	if (c->nb_overrides == c->cap_overrides) {
		unsigned cap = c->cap_overrides ? 2 * c->cap_overrides : 8;
		struct config_override *grown = realloc(c->overrides, cap * sizeof(*grown));
		if (!grown) {
			report(p, p->line, "out of memory");
			return -1;
		}
		c->overrides = grown;
		c->cap_overrides = cap;
	}
	if (c->nb_overrides == p->cap_override_lines) {
		unsigned cap = c->cap_overrides;
		int(*grown)[CONFIG_NB_KEYS] = realloc(p->override_lines, cap * sizeof(*grown));
		if (!grown) {
			report(p, p->line, "out of memory");
			return -1;
		}
		p->override_lines = grown;
		p->cap_override_lines = cap;
	}
	unsigned i = c->nb_overrides++;
	struct config_override *o = &c->overrides[i];
	memset(o, 0, sizeof(*o));
	snprintf(o->backend, sizeof(o->backend), "%s", backend);
	snprintf(o->server, sizeof(o->server), "%s", server);
	o->line = p->line;
	memset(p->override_lines[i], 0, sizeof(p->override_lines[i]));
	return (int)i;
}

static bool check_name(struct parser *p, const char *what, const char *name)
{
	if (name_is_valid(name, strlen(name)))
		return true;
	report(p, p->line,
	       "[%s]: %s name '%s' is not a valid HAProxy name (1-%d of letters, digits, '-', '_', '.', ':')",
	       p->section_text, what, name, NAME_MAX_LEN);
	return false;
}

static void enter_override(struct parser *p, enum config_section section, const char *backend,
			   const char *server)
{
	int i = find_or_add_override(p, backend, server);
	if (i < 0)
		return;
	p->section = section;
	p->layer = &p->config->overrides[i].layer;
	p->field_lines = p->config->overrides[i].field_lines;
	p->seen = p->override_lines[i];
}

/* Called when the section changes: decide what its keys apply to. */
static void enter_section(struct parser *p, const char *section)
{
	snprintf(p->section_text, sizeof(p->section_text), "%s", section);
	p->in_any_section = true;
	p->layer = NULL;
	p->field_lines = NULL;
	p->seen = p->origins->line;
	p->section = SECTION_INVALID;

	if (strcmp(section, "agent") == 0) {
		p->section = CONFIG_SECTION_AGENT;
		return;
	}
	if (strcmp(section, "haproxy") == 0) {
		p->section = CONFIG_SECTION_HAPROXY;
		return;
	}
	if (strcmp(section, "breaker") == 0) {
		p->section = CONFIG_SECTION_BREAKER;
		p->layer = &p->config->global;
		p->field_lines = p->config->global_field_lines;
		if (!p->config->global_line)
			p->config->global_line = p->line;
		return;
	}
	if (strncmp(section, "backend ", 8) == 0) {
		const char *name = section + 8;
		while (*name == ' ')
			name++;
		if (check_name(p, "backend", name))
			enter_override(p, CONFIG_SECTION_BACKEND, name, "");
		return;
	}
	if (strncmp(section, "server ", 7) == 0) {
		const char *name = section + 7;
		while (*name == ' ')
			name++;
		const char *slash = strchr(name, '/');
		char backend[NAME_MAX_LEN + 2];
		if (!slash || (size_t)(slash - name) > NAME_MAX_LEN) {
			report(p, p->line, "[%s]: expected [server BACKEND/SERVER]", section);
			return;
		}
		memcpy(backend, name, (size_t)(slash - name));
		backend[slash - name] = '\0';
		if (check_name(p, "backend", backend) && check_name(p, "server", slash + 1))
			enter_override(p, CONFIG_SECTION_SERVER, backend, slash + 1);
		return;
	}
	report(p, p->line, "unknown section [%s] (expected agent, haproxy, breaker, backend NAME or server BACKEND/SERVER)",
	       section);
}

/* ---- keys ---- */

/* "[agent]", "[haproxy]", "[breaker], [backend NAME] or [server BACKEND/SERVER]". */
static void format_sections(unsigned sections, char *buf, size_t size)
{
	size_t n = 0;
	unsigned total = (unsigned)__builtin_popcount(sections), shown = 0;
	buf[0] = '\0';
	for (unsigned bit = 1; bit <= CONFIG_SECTION_SERVER; bit <<= 1) {
		if (!(sections & bit))
			continue;
		const char *sep = shown == 0 ? "" : shown + 1 == total ? " or " : ", ";
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s[%s]", sep,
					      config_section_name((enum config_section)bit));
		shown++;
	}
}

static void on_key_line(struct parser *p, const char *name, const char *value)
{
	const struct config_key *k = config_key_find_in(name, p->section);
	if (!k || !(k->sections & p->section)) {
		if (!k) {
			report(p, p->line, "[%s]: unknown key '%s'", p->section_text, name);
		} else {
			char where[128];
			unsigned sections = 0; /* of every key of the name (enforce has two) */
			for (size_t i = 0; i < CONFIG_NB_KEYS; i++)
				if (strcmp(config_keys[i].name, name) == 0)
					sections |= config_keys[i].sections;
			format_sections(sections, where, sizeof(where));
			report(p, p->line, "[%s]: unknown key '%s' (it belongs in %s)",
			       p->section_text, name, where);
		}
		return;
	}
	if (k->type == CONFIG_OBSOLETE) {
		/* A warning, not an error: files written for an older agent
		 * keep loading, and the operator learns why the key went. */
		fprintf(p->errors, "%s:%d: warning: %s is no longer used: %s\n", p->path, p->line,
			k->name, k->help);
		return;
	}
	int *seen = &p->seen[config_key_index(k)];
	if (!(k->flags & CONFIG_KEY_REPEATABLE) && *seen > 0)
		report(p, p->line, "%s already set at line %d", k->name, *seen);
	else if (*seen == 0)
		*seen = p->line;
	/* Even a duplicate is checked: each problem of the line gets told. */
	char err[512];
	if (!config_key_set(k, p->config, p->layer, value, err, sizeof(err)))
		report(p, p->line, "%s '%s': %s", k->name, value, err);
	else if (k->place == CONFIG_IN_POLICY && k->field && p->field_lines)
		p->field_lines[__builtin_ctz(k->field)] = p->line; /* the value in force */
}

/* libinih's handler. The section is the one read_line() entered (libinih
 * truncates long section names, so its own copy is not used). */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	(void)section;

	if (!p->in_any_section)
		report(p, p->line, "'%s' outside any section", name);
	else if (p->section != SECTION_INVALID)
		on_key_line(p, name, value);
	/* else: the section itself was reported */
	return 1; /* keep going: every problem gets reported */
}

/*
 * libinih's line source. Counts lines, strips leading blanks, and checks
 * the shape of each line: a line it would refuse is reported here, with its
 * number, and handed on as an empty line.
 */
static char *read_line(char *buf, int size, void *stream)
{
	struct parser *p = stream;
	char raw[1024];

	if (!fgets(raw, sizeof(raw), p->in))
		return NULL;
	p->line++;
	size_t len = strlen(raw);
	if (len == sizeof(raw) - 1 && raw[len - 1] != '\n') {
		report(p, p->line, "line longer than %zu characters", sizeof(raw) - 2);
		int ch;
		while ((ch = fgetc(p->in)) != EOF && ch != '\n')
			;
		snprintf(buf, (size_t)size, "\n");
		return buf;
	}
	const char *s = raw;
	while (*s == ' ' || *s == '\t')
		s++;
	char first = *s;
	bool blank = first == '\0' || first == '\n' || first == '\r';
	bool comment = first == ';' || first == '#';

	if (!blank && !comment) {
		if (strlen(s) + 3 > (size_t)size) {
			report(p, p->line, "line longer than %d characters", size - 3);
			s = "\n";
		} else if (first == '[') {
			const char *close = strchr(s, ']');
			if (!close) {
				report(p, p->line, "section header without ']'");
				s = "\n";
			} else {
				/* libinih does not tell handlers about empty
				 * sections: resolve the name here. */
				char name[256];
				size_t n = (size_t)(close - s - 1);
				snprintf(name, sizeof(name), "%.*s", (int)n, s + 1);
				enter_section(p, name);
			}
		} else if (!strchr(s, '=') && !strchr(s, ':')) {
			report(p, p->line, "expected 'key = value', got '%.*s'", (int)strcspn(s, "\r\n"), s);
			s = "\n";
		} else if (!p->in_any_section) {
			report(p, p->line, "'%.*s' outside any section", (int)strcspn(s, "\r\n"), s);
			s = "\n";
		}
	}
	snprintf(buf, (size_t)size, "%s", s);
	return buf;
}

/* Opens path for reading; NULL after reporting why not. fopen() takes a
 * directory on Linux and reads nothing from it, which would make an empty
 * configuration out of a mistyped path: refuse it by name. */
static FILE *open_file(const char *path, FILE *errors)
{
	FILE *in = fopen(path, "r");
	if (!in) {
		fprintf(errors, "%s: cannot open: %s\n", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(in), &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(errors, "%s: is a directory, not a configuration file\n", path);
		fclose(in);
		return NULL;
	}
	return in;
}

int config_ini_load(struct config *c, const char *path, struct config_origins *origins,
		    FILE *errors)
{
	struct parser p = {
		.config = c,
		.path = path,
		.errors = errors,
		.section = SECTION_INVALID,
		.origins = origins,
		.seen = origins->line,
	};

	p.in = open_file(path, errors);
	if (!p.in)
		return 1;
	/* An indented line is a key of its own, never a continuation. */
	ini_allow_multiline = false;
	int rc = ini_parse_stream(read_line, &p, on_key, &p);
	if (ferror(p.in)) {
		fprintf(errors, "%s: cannot read: %s\n", path, strerror(errno));
		p.nb_errors++;
	}
	fclose(p.in);
	free(p.override_lines);
	if (rc == -2) {
		fprintf(errors, "%s: out of memory while parsing\n", path);
		return p.nb_errors + 1;
	}
	return p.nb_errors;
}

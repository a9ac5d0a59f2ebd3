/*
 * config.c - read the agent's INI file (libinih) and check every line.
 *
 * libinih reports only the first bad line and no line numbers to handlers,
 * so the file is fed to it through our own line reader, which counts lines,
 * refuses malformed ones itself (reporting each), and strips leading blanks
 * so an indented key is a key, never the continuation of the previous value.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_http.h"
#include "config/config.h"
#include "util/sockaddr.h"

enum section_kind {
	SECTION_NONE,
	SECTION_AGENT,
	SECTION_BREAKER,
	SECTION_BACKEND,
	SECTION_SERVER,
	SECTION_HAPROXY,
	SECTION_INVALID, /* already reported; its keys are skipped */
};

struct parser {
	struct config *config;
	const char *path;
	FILE *in;
	FILE *errors;
	int line;
	int nb_errors;
	char section_text[256];
	enum section_kind section;
	struct breaker_policy_layer *layer; /* the section's policy layer, if any */
	int global_line;
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

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	agent_settings_default(&c->agent);
	c->log_level = LOG_LEVEL_NOTICE;
	c->max_breakers = CONFIG_DEFAULT_MAX_BREAKERS;
	c->poll_ms = CONFIG_DEFAULT_POLL_MS;
	snprintf(c->admin, sizeof(c->admin), "%s", ADMIN_HTTP_DEFAULT_ADDR);
}

bool config_set_admin(struct config *c, const char *value, char *err, size_t err_size)
{
	struct sockaddr_storage addr;
	socklen_t len;

	if (value[0] == '\0' || strcmp(value, "none") == 0) {
		c->admin[0] = '\0';
		c->admin_set = true;
		return true;
	}
	if (!sockaddr_parse(value, "admin address", &addr, &len, err, err_size))
		return false;
	if (addr.ss_family == AF_UNIX || strlen(value) >= sizeof(c->admin)) {
		snprintf(err, err_size, "admin address '%s': expected HOST:PORT, [IPV6]:PORT or none",
			 value);
		return false;
	}
	snprintf(c->admin, sizeof(c->admin), "%s", value);
	c->admin_set = true;
	return true;
}

void config_free(struct config *c)
{
	free(c->overrides);
	c->overrides = NULL;
	c->nb_overrides = c->cap_overrides = 0;
}

/* ---- values ---- */

static bool parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool config_parse_duration_ms(const char *text, uint64_t *out_ms)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno)
		return false;
	uint64_t scale;
	if (*end == '\0' || strcmp(end, "ms") == 0)
		scale = 1;
	else if (strcmp(end, "s") == 0)
		scale = 1000;
	else if (strcmp(end, "m") == 0)
		scale = 60000;
	else
		return false;
	if (v > UINT64_MAX / scale)
		return false;
	*out_ms = v * scale;
	return true;
}

static bool parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(text, yes[i]) == 0)
			return *out = true, true;
		if (strcmp(text, no[i]) == 0)
			return *out = false, true;
	}
	return false;
}

/* ---- sections ---- */

static struct config_override *find_or_add_override(struct parser *p, const char *backend,
						    const char *server)
{
	struct config *c = p->config;
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		struct config_override *o = &c->overrides[i];
		if (strcmp(o->backend, backend) == 0 && strcmp(o->server, server) == 0)
			return o;
	}
	if (c->nb_overrides == BREAKER_TABLE_MAX_OVERRIDES) {
		report(p, p->line, "too many [backend]/[server] sections (at most %d)",
		       BREAKER_TABLE_MAX_OVERRIDES);
		return NULL;
	}
	if (c->nb_overrides == c->cap_overrides) {
		unsigned cap = c->cap_overrides ? 2 * c->cap_overrides : 8;
		struct config_override *grown = realloc(c->overrides, cap * sizeof(*grown));
		if (!grown) {
			report(p, p->line, "out of memory");
			return NULL;
		}
		c->overrides = grown;
		c->cap_overrides = cap;
	}
	struct config_override *o = &c->overrides[c->nb_overrides++];
	memset(o, 0, sizeof(*o));
	snprintf(o->backend, sizeof(o->backend), "%s", backend);
	snprintf(o->server, sizeof(o->server), "%s", server);
	o->line = p->line;
	return o;
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

/* Called when the section changes: decide what its keys apply to. */
static void enter_section(struct parser *p, const char *section)
{
	snprintf(p->section_text, sizeof(p->section_text), "%s", section);
	p->layer = NULL;
	p->section = SECTION_INVALID;

	if (strcmp(section, "agent") == 0) {
		p->section = SECTION_AGENT;
		return;
	}
	if (strcmp(section, "haproxy") == 0) {
		p->section = SECTION_HAPROXY;
		return;
	}
	if (strcmp(section, "breaker") == 0) {
		p->section = SECTION_BREAKER;
		p->layer = &p->config->global;
		p->global_line = p->line;
		return;
	}
	if (strncmp(section, "backend ", 8) == 0) {
		const char *name = section + 8;
		while (*name == ' ')
			name++;
		if (!check_name(p, "backend", name))
			return;
		struct config_override *o = find_or_add_override(p, name, "");
		if (o) {
			p->section = SECTION_BACKEND;
			p->layer = &o->layer;
		}
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
		if (!check_name(p, "backend", backend) || !check_name(p, "server", slash + 1))
			return;
		struct config_override *o = find_or_add_override(p, backend, slash + 1);
		if (o) {
			p->section = SECTION_SERVER;
			p->layer = &o->layer;
		}
		return;
	}
	report(p, p->line, "unknown section [%s] (expected agent, haproxy, breaker, backend NAME or server BACKEND/SERVER)",
	       section);
}

/* ---- keys ---- */

static bool set_status_set(struct parser *p, struct status_set *set, unsigned field,
			   const char *name, const char *value)
{
	char err[256];
	if (!status_set_parse(set, value, err, sizeof(err)))
		return report(p, p->line, "%s: %s", name, err);
	p->layer->fields |= field;
	return true;
}

static bool policy_key(struct parser *p, const char *name, const char *value)
{
	struct breaker_policy *v = &p->layer->values;
	uint64_t n;

	if (strcmp(name, "threshold") == 0) {
		if (!parse_u64(value, 1, 1000000, &n))
			return report(p, p->line, "threshold '%s': expected a number of consecutive failures, 1..1000000", value);
		v->threshold = (uint32_t)n;
		p->layer->fields |= BREAKER_FIELD_THRESHOLD;
	} else if (strcmp(name, "cooldown") == 0) {
		if (!config_parse_duration_ms(value, &n) || n == 0)
			return report(p, p->line, "cooldown '%s': expected a duration above 0 such as 30s or 500ms", value);
		v->cooldown_ms = n;
		p->layer->fields |= BREAKER_FIELD_COOLDOWN;
	} else if (strcmp(name, "half_open_probes") == 0) {
		if (!parse_u64(value, 1, BREAKER_MAX_PROBES, &n))
			return report(p, p->line, "half_open_probes '%s': expected 1..%d", value, BREAKER_MAX_PROBES);
		v->half_open_probes = (uint32_t)n;
		p->layer->fields |= BREAKER_FIELD_HALF_OPEN_PROBES;
	} else if (strcmp(name, "probe_timeout") == 0) {
		fprintf(p->errors, "%s:%d: warning: probe_timeout is no longer used: HAProxy's maxconn "
			"limits half-open probes and timeout server ends a hung one\n", p->path, p->line);
	} else if (strcmp(name, "capacity_statuses") == 0) {
		return set_status_set(p, &v->capacity, BREAKER_FIELD_CAPACITY_SET, name, value);
	} else if (strcmp(name, "failure_statuses") == 0) {
		return set_status_set(p, &v->failure, BREAKER_FIELD_FAILURE_SET, name, value);
	} else if (strcmp(name, "ignore_statuses") == 0) {
		return set_status_set(p, &v->ignore, BREAKER_FIELD_IGNORE_SET, name, value);
	} else if (strcmp(name, "half_open_backpressure") == 0) {
		if (strcmp(value, "close") == 0)
			v->half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
		else if (strcmp(value, "ignore") == 0)
			v->half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE;
		else
			return report(p, p->line, "half_open_backpressure '%s': expected close or ignore", value);
		p->layer->fields |= BREAKER_FIELD_HALF_OPEN_BACKPRESSURE;
	} else if (strcmp(name, "open_late_success") == 0) {
		if (strcmp(value, "ignore") == 0)
			v->open_late_success = BREAKER_OPEN_LATE_SUCCESS_IGNORE;
		else if (strcmp(value, "close") == 0)
			v->open_late_success = BREAKER_OPEN_LATE_SUCCESS_CLOSE;
		else
			return report(p, p->line, "open_late_success '%s': expected ignore or close", value);
		p->layer->fields |= BREAKER_FIELD_OPEN_LATE_SUCCESS;
	} else {
		return report(p, p->line, "[%s]: unknown key '%s'", p->section_text, name);
	}
	return true;
}

static bool agent_key(struct parser *p, const char *name, const char *value)
{
	struct config *c = p->config;
	uint64_t n;

	if (strcmp(name, "listen") == 0) {
		struct sockaddr_storage addr;
		socklen_t len;
		char err[256];
		if (!sockaddr_parse(value, "listen address", &addr, &len, err, sizeof(err)))
			return report(p, p->line, "%s", err);
		if (c->nb_listen == AGENT_MAX_LISTENERS)
			return report(p, p->line, "listen: at most %d addresses", AGENT_MAX_LISTENERS);
		snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s", value);
	} else if (strcmp(name, "max_frame_size") == 0) {
		if (!parse_u64(value, SPOP_MIN_FRAME_SIZE, 1048576, &n))
			return report(p, p->line, "max_frame_size '%s': expected 256..1048576", value);
		c->agent.max_frame_size = (uint32_t)n;
	} else if (strcmp(name, "max_connections") == 0) {
		if (!parse_u64(value, 1, 1000000, &n))
			return report(p, p->line, "max_connections '%s': expected 1..1000000", value);
		c->agent.max_connections = (unsigned)n;
	} else if (strcmp(name, "max_breakers") == 0) {
		if (!parse_u64(value, 1, BREAKER_TABLE_MAX_ENTRIES, &n))
			return report(p, p->line, "max_breakers '%s': expected 1..%u", value, BREAKER_TABLE_MAX_ENTRIES);
		c->max_breakers = (uint32_t)n;
	} else if (strcmp(name, "log_level") == 0) {
		if (!log_level_parse(value, &c->log_level))
			return report(p, p->line, "log_level '%s': expected error, warning, notice, info or debug", value);
	} else if (strcmp(name, "syslog") == 0) {
		if (!parse_bool(value, &c->use_syslog))
			return report(p, p->line, "syslog '%s': expected true or false", value);
	} else if (strcmp(name, "admin") == 0) {
		char err[256];
		if (!config_set_admin(c, value, err, sizeof(err)))
			return report(p, p->line, "%s", err);
	} else {
		return report(p, p->line, "[agent]: unknown key '%s'", name);
	}
	return true;
}

/* libinih's handler. The section is the one read_line() entered (libinih
 * truncates long section names, so its own copy is not used). */
static bool haproxy_key(struct parser *p, const char *name, const char *value)
{
	struct config *c = p->config;
	struct sockaddr_storage addr;
	socklen_t len;
	char err[256];
	uint64_t ms;

	if (strcmp(name, "enforce") == 0) {
		if (!enforce_mode_parse(value, &c->enforce))
			return report(p, p->line, "enforce '%s': expected runtime-api, agent-check or none", value);
		c->enforce_set = true;
	} else if (strcmp(name, "runtime_api") == 0) {
		if (!sockaddr_parse(value, "runtime_api", &addr, &len, err, sizeof(err)))
			return report(p, p->line, "%s", err);
		if (c->nb_runtime_api == CONFIG_MAX_RUNTIME_APIS)
			return report(p, p->line, "runtime_api: at most %d sockets", CONFIG_MAX_RUNTIME_APIS);
		snprintf(c->runtime_api[c->nb_runtime_api++], CONFIG_LISTEN_MAX_LEN, "%s", value);
	} else if (strcmp(name, "agent_check") == 0) {
		if (!sockaddr_parse(value, "agent_check", &addr, &len, err, sizeof(err)))
			return report(p, p->line, "%s", err);
		snprintf(c->agent_check, sizeof(c->agent_check), "%s", value);
	} else if (strcmp(name, "poll_interval") == 0) {
		if (!config_parse_duration_ms(value, &ms) || ms < 100)
			return report(p, p->line, "poll_interval '%s': expected a duration of at least 100ms", value);
		c->poll_ms = ms;
	} else {
		return report(p, p->line, "[haproxy]: unknown key '%s'", name);
	}
	return true;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	(void)section;

	switch (p->section) {
	case SECTION_NONE:
		report(p, p->line, "'%s' outside any section", name);
		break;
	case SECTION_AGENT:
		agent_key(p, name, value);
		break;
	case SECTION_HAPROXY:
		haproxy_key(p, name, value);
		break;
	case SECTION_BREAKER:
	case SECTION_BACKEND:
	case SECTION_SERVER:
		if (value[0] == '\0')
			report(p, p->line, "%s: empty value", name);
		else
			policy_key(p, name, value);
		break;
	case SECTION_INVALID:
		break; /* the section itself was reported */
	}
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
		} else if (p->section == SECTION_NONE) {
			report(p, p->line, "'%.*s' outside any section", (int)strcspn(s, "\r\n"), s);
			s = "\n";
		}
	}
	snprintf(buf, (size_t)size, "%s", s);
	return buf;
}

/* Resolves one level the way the table will, reporting at its section. */
static void check_policy(struct parser *p, int line, const char *label,
			 const struct breaker_policy_layer *const *layers, size_t nb_layers)
{
	struct breaker_policy effective;
	char err[512];
	if (!breaker_policy_resolve(&effective, layers, nb_layers, err, sizeof(err)))
		report(p, line, "[%s]: %s", label, err);
}

static void check_policies(struct parser *p)
{
	struct config *c = p->config;
	const struct breaker_policy_layer *layers[3] = {&c->global, NULL, NULL};
	char label[2 * NAME_MAX_LEN + 16];

	check_policy(p, p->global_line, "breaker", layers, 1);
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		const struct config_override *o = &c->overrides[i];
		layers[1] = NULL;
		if (o->server[0]) {
			for (unsigned j = 0; j < c->nb_overrides; j++)
				if (!c->overrides[j].server[0] &&
				    strcmp(c->overrides[j].backend, o->backend) == 0)
					layers[1] = &c->overrides[j].layer;
			snprintf(label, sizeof(label), "server %s/%s", o->backend, o->server);
		} else {
			layers[1] = &o->layer;
			snprintf(label, sizeof(label), "backend %s", o->backend);
		}
		layers[2] = o->server[0] ? &o->layer : NULL;
		check_policy(p, o->line, label, layers, 3);
	}
}

int config_load(struct config *c, const char *path, FILE *errors)
{
	struct parser p = {.config = c, .path = path, .errors = errors, .section = SECTION_NONE};

	p.in = fopen(path, "r");
	if (!p.in) {
		fprintf(errors, "%s: cannot open: %s\n", path, strerror(errno));
		return 1;
	}
	/* An indented line is a key of its own, never a continuation. */
	ini_allow_multiline = false;
	int rc = ini_parse_stream(read_line, &p, on_key, &p);
	fclose(p.in);
	if (rc == -2) {
		fprintf(errors, "%s: out of memory while parsing\n", path);
		return p.nb_errors + 1;
	}
	/* Even after other errors: a section that parsed may still overlap. */
	check_policies(&p);
	char err[256];
	if (!config_finish_enforcement(c, err, sizeof(err)))
		report(&p, p.line, "[haproxy]: %s", err);
	return p.nb_errors;
}

bool config_finish_enforcement(struct config *c, char *err, size_t err_size)
{
	if (!c->enforce_set)
		c->enforce = c->nb_runtime_api ? ENFORCE_RUNTIME_API
			     : c->agent_check[0] ? ENFORCE_AGENT_CHECK
						 : ENFORCE_NONE;
	if (c->enforce == ENFORCE_RUNTIME_API && c->nb_runtime_api == 0) {
		snprintf(err, err_size, "enforce = runtime-api needs a runtime_api socket");
		return false;
	}
	if (c->enforce == ENFORCE_RUNTIME_API && c->agent_check[0]) {
		snprintf(err, err_size,
			 "runtime-api enforcement and an agent_check listener cannot be combined: "
			 "an agent-check \"ready\" undoes a Runtime API drain");
		return false;
	}
	if (c->enforce == ENFORCE_AGENT_CHECK && !c->agent_check[0]) {
		snprintf(err, err_size, "enforce = agent-check needs an agent_check listen address");
		return false;
	}
	return true;
}

/* Collects the first problem building the policies reports. */
static void first_problem(void *ctx, int override, const char *message)
{
	char *err = ctx;
	(void)override;
	if (!err[0])
		snprintf(err, 512, "%s", message);
}

bool config_build_policies(const struct config *c, struct breaker_policies *out, char *err,
			   size_t err_size)
{
	char first[512] = "";
	struct breaker_policy_override *list = calloc(c->nb_overrides + 1, sizeof(*list));
	if (!list) {
		snprintf(err, err_size, "out of memory");
		return false;
	}
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		snprintf(list[i].backend, sizeof(list[i].backend), "%s", c->overrides[i].backend);
		snprintf(list[i].server, sizeof(list[i].server), "%s", c->overrides[i].server);
		list[i].layer = c->overrides[i].layer;
	}
	bool ok = breaker_policies_build(out, &c->global, list, c->nb_overrides, first_problem, first);
	free(list);
	if (!ok)
		snprintf(err, err_size, "%s", first);
	return ok;
}

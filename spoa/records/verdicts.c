/*
 * verdicts.c - reading and writing the shared verdict table, and what a
 * node does with another's verdict (see verdicts.h).
 *
 * `show table NAME` (2.6, 3.0 and 3.2 alike; 3.x adds shard=N):
 *     # table: breaker_verdicts, type: string, size:102400, used:1
 *     0x55d1c2a0b358: key=workers/w1 use=0 exp=4810 gpt0=1 gpc0=1796080000 gpc1=2
 * The data columns come in HAProxy's own order, not the `store` order, so
 * each line is read as name=value pairs. An error is one sentence with no
 * header ("No such table.", "Unknown command" ...).
 */
#include <stdio.h>
#include <string.h>

#include "records/map_file.h"
#include "records/verdicts.h"
#include "util/names.h"

static const char TABLE_HEADER[] = "# table: ";

/* One name=value field of an entry line; false at the line's end. */
static bool next_field(const char **p, const char *end, struct runtime_api_str *name,
		       struct runtime_api_str *value)
{
	const char *s = *p;
	while (s < end && *s == ' ')
		s++;
	if (s >= end)
		return false;
	const char *f = s;
	while (s < end && *s != ' ')
		s++;
	*p = s;
	const char *eq = memchr(f, '=', (size_t)(s - f));
	if (!eq) {
		*name = (struct runtime_api_str){f, (size_t)(s - f)};
		*value = (struct runtime_api_str){s, 0};
		return true;
	}
	*name = (struct runtime_api_str){f, (size_t)(eq - f)};
	*value = (struct runtime_api_str){eq + 1, (size_t)(s - eq - 1)};
	return true;
}

static bool str_is(struct runtime_api_str s, const char *literal)
{
	return s.len == strlen(literal) && memcmp(s.ptr, literal, s.len) == 0;
}

/* A decimal of at most 10 digits (the columns are 32-bit). */
static bool parse_u32(struct runtime_api_str s, uint64_t *out)
{
	uint64_t v = 0;
	if (s.len == 0 || s.len > 10)
		return false;
	for (size_t i = 0; i < s.len; i++) {
		if (s.ptr[i] < '0' || s.ptr[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s.ptr[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = v;
	return true;
}

/* "0xADDR: key=B/S ... gpt0=.. gpc0=.. gpc1=.." into v. */
static bool parse_entry(const char *line, size_t len, struct verdict *v)
{
	const char *p = line, *end = line + len;
	struct runtime_api_str name, value, key = {NULL, 0};
	uint64_t state = UINT64_MAX, deadline = 0, node = 0;

	if (len < 3 || line[0] != '0' || line[1] != 'x')
		return false;
	/* The address, with its colon. */
	if (!next_field(&p, end, &name, &value) || name.ptr[name.len - 1] != ':')
		return false;
	while (next_field(&p, end, &name, &value)) {
		if (str_is(name, "key"))
			key = value;
		else if (str_is(name, "gpt0") && !parse_u32(value, &state))
			return false;
		else if (str_is(name, "gpc0") && !parse_u32(value, &deadline))
			return false;
		else if (str_is(name, "gpc1") && !parse_u32(value, &node))
			return false;
	}
	if (!key.ptr || state > VERDICT_HALF_OPEN)
		return false;
	/* Names have no '/': the first one splits. An escaped key (a '\')
	 * holds something no valid name does, and fails the name check. */
	const char *slash = memchr(key.ptr, '/', key.len);
	if (!slash)
		return false;
	v->backend = (struct runtime_api_str){key.ptr, (size_t)(slash - key.ptr)};
	v->server = (struct runtime_api_str){slash + 1, key.len - v->backend.len - 1};
	if (!name_is_valid(v->backend.ptr, v->backend.len) ||
	    !name_is_valid(v->server.ptr, v->server.len))
		return false;
	v->state = (enum verdict_state)state;
	v->deadline_s = deadline;
	v->node = (uint32_t)node;
	return true;
}

bool verdicts_parse(const char *reply, size_t len, verdict_fn fn, void *ctx, unsigned *skipped)
{
	size_t header = sizeof(TABLE_HEADER) - 1;
	unsigned bad = 0;

	/* An empty reply is a table with nothing in it only after a header;
	 * HAProxy always sends one, so no header is an error. */
	if (len < header || memcmp(reply, TABLE_HEADER, header) != 0)
		return false;
	const char *p = reply, *end = reply + len;
	struct runtime_api_str line;
	while (map_reply_next_line(&p, end, &line)) {
		struct verdict v;
		if (line.len == 0 || line.ptr[0] == '#')
			continue;
		if (parse_entry(line.ptr, line.len, &v))
			fn(ctx, &v);
		else
			bad++;
	}
	if (skipped)
		*skipped = bad;
	return true;
}

const struct haproxy_record_ops verdict_table_ops = {
	.name = VERDICT_TABLE_DEFAULT,
	.kind = HAPROXY_RECORD_TABLE,
	.key = RECORD_KEY_SLASH,
	.key_max = VERDICT_KEY_MAX,
	.missing = "its verdicts are neither shared nor read until it has; load "
		   "breaker-peers.cfg with a second -f (docs/haproxy.md)",
	.missing_level = LOG_LEVEL_WARNING,
	.found = "verdicts shared again",
};

const char *verdicts_value(char *buf, size_t size, enum verdict_state state, uint64_t deadline_s,
			   uint32_t node)
{
	/* gpc0 is 32 bits: a deadline past 2106 would wrap. */
	if (deadline_s > UINT32_MAX)
		deadline_s = UINT32_MAX;
	snprintf(buf, size, "data.gpt0 %u data.gpc0 %llu data.gpc1 %u", (unsigned)state,
		 (unsigned long long)deadline_s, node);
	return buf;
}

bool verdicts_cmd_set(char *buf, size_t size, const char *table, const char *backend,
		      const char *server, enum verdict_state state, uint64_t deadline_s,
		      uint32_t node)
{
	char value[VERDICT_VALUE_MAX];
	return server &&
	       haproxy_record_cmd(buf, size, &verdict_table_ops, table, backend, server, NULL,
				  verdicts_value(value, sizeof(value), state, deadline_s, node));
}

enum verdict_state verdicts_state_of(const struct breaker *b)
{
	switch (b->state) {
	case BREAKER_OPEN: return VERDICT_OPEN;
	case BREAKER_HALF_OPEN: return VERDICT_HALF_OPEN;
	case BREAKER_CLOSED: break;
	}
	return VERDICT_CLOSED;
}

enum verdict_action verdicts_decide(const struct verdict *v, const struct breaker *b,
				    uint32_t node, uint64_t now_ms)
{
	/* Our own entry read back: what we publish comes from our breaker. */
	if (v->node == node)
		return VERDICT_IGNORE;
	if (v->state == VERDICT_CLOSED) {
		/* Only what a verdict put there is undone: evidence of our
		 * own stands. */
		bool held = b->state == BREAKER_OPEN && (b->peer_adopted || b->peer_hold_ms > 0);
		return held ? VERDICT_RELEASE : VERDICT_IGNORE;
	}
	/* Two owners: the lower node_id keeps the verdict, so that both
	 * nodes rewriting it cannot swap it for ever (verdicts.h). */
	if (breaker_owns_verdict(b, now_ms) && node < v->node)
		return VERDICT_IGNORE;
	return VERDICT_HOLD;
}

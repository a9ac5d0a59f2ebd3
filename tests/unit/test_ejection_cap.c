/*
 * test_ejection_cap.c - the ejection cap as it runs (ejection_cap.c), as
 * tables: a backend's servers (which breakers are open, since when; which
 * are out already), converged one after the other in table order as a look
 * converges them -> which are drained and which the cap holds back; then
 * room freed, and who takes it.
 *
 * A converged server the cap lets through is drained the way converge.c
 * does it: the drain is taken as in place, and the backend's counts follow
 * (link_count_change).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "core/breaker.h"
#include "core/policy.h"
#include "link/link_internal.h"

#define MAX_SERVERS 12
#define T0 1000000

/* One server, by letter:
 *   .  serving, its breaker closed
 *   w  serving, its breaker open: wants a drain
 *   D  drained by the agent, its breaker still open
 *   d  down by health check, breaker closed
 *   m  in maintenance, breaker closed: not the backend's capacity, so
 *      neither listed nor out (a controller's parked slot, a `disabled`
 *      line, an operator's maintenance)
 *   x  down by health check, its breaker open too
 *   h  serving, its breaker half-open: wants its probes' limit, which
 *      takes the backend's capacity as a drain does
 * The digit after a letter is when its breaker opened (lower: waited
 * longer); without one, its position. */
struct row {
	const char *name;
	const char *servers;
	uint32_t percent;
	bool drain_last_server;
	/* After one pass: one char per server, 1 drained (or limited to its
	 * probes), 0 held back, - not wanting a drain. */
	const char *after;
	/* Then the first drained server's breaker closes (its drain lifted)
	 * and a second pass runs: the same letters again (NULL: not run). */
	const char *after_release;
};

static const struct row rows[] = {
	/* The defaults: 50 %, never the last serving server. */
	{"3 of 4 failing: 2 drained, the third capped", "w1 w2 w3 .", 50, false, "110-",
	 "-11-"},
	{"4 of 4 failing: still 2", "w1 w2 w3 w4", 50, false, "1100", "-110"},
	{"1 of 1 failing: never drained (0 % of 1 server, and it is the last)", "w1", 50,
	 false, "0", NULL},
	{"1 of 1 at 100 %: the last server is kept all the same", "w1", 100, false, "0", NULL},
	{"1 of 1 at 100 % with drain_last_server: drained", "w1", 100, true, "1", NULL},
	{"50 % of 3 rounds down to 1", "w1 w2 .", 50, false, "10-", "-1-"},
	{"50 % of 2 is 1", "w1 w2", 50, false, "10", "-1"},
	{"0 % drains nothing", "w1 . . .", 0, false, "0---", NULL},
	{"100 % of 4 keeps the last serving server", "w1 w2 w3 w4", 100, false, "1110",
	 "-111"},
	{"100 % with drain_last_server drains all", "w1 w2 w3 w4", 100, true, "1111", NULL},
	/* Drains in place. */
	{"a drain in place stays, and uses up the room", "D1 w2 w3 .", 50, false, "110-",
	 "-11-"},
	{"drains in place beyond the cap are not lifted", "D1 D2 D3 w4", 50, false, "1110",
	 "-110"},
	/* Room freed: the one that waited longest takes it, not the first
	 * in table order. */
	{"the longest waiting takes the room freed", "w1 w5 w4 w3", 50, false, "1100",
	 "-101"},
	/* Servers out for other reasons count against the cap. */
	{"a server down by health check uses up room", "d w1 w2 .", 50, false, "-10-", NULL},
	{"one in maintenance is not capacity: 50 % of the 3 others", "m w1 w2 .", 50, false,
	 "-10-", NULL},
	{"two in maintenance, the last serving server failing: kept", "m m w1", 50, false,
	 "--0", NULL},
	{"a controller's parked slots do not close the cap: 3 pods of 10 slots", "m m m m m m m w1 . .",
	 50, false, "-------1--", NULL},
	{"half-open on the last serving server: kept in full rotation", "m m h1", 50, false,
	 "--0", NULL},
	{"half-open with room: limited to its probes", "h1 . .", 50, false, "1--", NULL},
	{"half-open, open breakers took the room: kept in full rotation", "w1 w2 h3 . .", 50,
	 false, "110--", NULL},
	{"two down of 4: no room left at 50 %", "d d w1 .", 50, false, "--0-", NULL},
	{"an open breaker on a down server: left to its state, it serves nothing",
	 "x1 w2 . .", 50, false, "11--", NULL},
	{"everything else down: the last serving server is kept", "d d d w1", 100, false,
	 "---0", NULL},
	{"10 servers at 50 %: 5", "w1 w2 w3 w4 w5 w6 w7 . . .", 50, false, "1111100---",
	 "-111110---"},
};

struct fixture {
	struct ev_loop *loop;
	struct enforcer e;
	struct breaker_table table;
	struct breaker_policy policy;
	struct ejection_backend backend;
	struct breaker_table_entry *entries[MAX_SERVERS];
	char letters[MAX_SERVERS];
	size_t n;
};

static struct haproxy_link *link_of(struct fixture *f)
{
	return &f->e.links[0];
}

static struct enforce_entry *en_of(struct fixture *f, size_t i)
{
	return &link_of(f)->entries[breaker_table_index(&f->table, f->entries[i])];
}

static void setup(struct fixture *f, const struct row *r)
{
	char err[256];
	memset(f, 0, sizeof(*f));
	breaker_policy_defaults(&f->policy);
	f->policy.max_ejection_percent = r->percent;
	f->policy.drain_last_server = r->drain_last_server;
	if (!breaker_table_init(&f->table, 64, err, sizeof(err)))
		fail_msg("table: %s", err);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(f->loop);

	struct enforcer *e = &f->e;
	e->mode = ENFORCE_RUNTIME_API;
	e->table = &f->table;
	e->nb_links = 1;
	struct haproxy_link *link = link_of(f);
	link->owner = e;
	struct runtime_api_settings settings = {
		.max_queue = 16, .max_batch = 4, .timeout = 1, .backoff_min = 0.1,
		.backoff_max = 1, .max_reply = 4096,
	};
	/* Never connected: the cap sends nothing, it names the HAProxy in
	 * its log lines. */
	link->client = runtime_api_client_new(f->loop, "unix:/nonexistent/haproxy.sock",
					      &settings, err, sizeof(err));
	assert_non_null(link->client);
	link->entries = calloc(64, sizeof(*link->entries));
	e->ejection_capped = calloc(64, sizeof(*e->ejection_capped));
	assert_non_null(link->entries);
	assert_non_null(e->ejection_capped);
	/* One complete look, which listed the backend. */
	link->look.id = 1;
	link->counts.current = 1;
	link->counts.slot[1] = (struct ejection_groups){.groups = &f->backend, .nb = 1, .allocated = 1,
						   .look_id = 1};
	f->backend.be_id = 7;
	f->backend.has_breakers = true;

	for (const char *p = r->servers; *p; p++) {
		if (*p == ' ')
			continue;
		assert_true(f->n < MAX_SERVERS);
		size_t i = f->n++;
		char name[8];
		snprintf(name, sizeof(name), "w%zu", i);
		enum breaker_table_status st;
		struct breaker_table_entry *entry =
		    breaker_table_get(&f->table, "be", 2, name, strlen(name), T0, &st);
		assert_non_null(entry);
		entry->breaker.policy = &f->policy;
		f->entries[i] = entry;
		f->letters[i] = *p;
		uint64_t since = T0 + 100 + i;
		if (p[1] >= '0' && p[1] <= '9')
			since = T0 + (uint64_t)(*++p - '0');
		struct enforce_entry *en = en_of(f, i);
		en->seen.known = true;
		en->be_id = 7;
		en->group_look[1] = 1;
		en->group_index[1] = 0;
		switch (f->letters[i]) {
		case '.': break;
		case 'w': entry->breaker.state = BREAKER_OPEN; break;
		case 'D':
			entry->breaker.state = BREAKER_OPEN;
			en->seen.drained = true;
			en->mem.drained_by_us = true;
			f->backend.drained_by_agent++;
			break;
		case 'd': en->seen.down = true; break;
		case 'm': en->seen.maint = true; break;
		case 'h': entry->breaker.state = BREAKER_HALF_OPEN; break;
		case 'x':
			entry->breaker.state = BREAKER_OPEN;
			en->seen.down = true;
			break;
		default: fail_msg("bad server letter '%c'", f->letters[i]);
		}
		entry->breaker.state_since_ms = since;
		if (f->letters[i] == 'm') {
			en->group_look[1] = 0; /* as looks.c: not counted */
			continue;
		}
		f->backend.count.listed++;
		f->backend.count.out += link_entry_out(en);
	}
}

static void teardown(struct fixture *f)
{
	struct haproxy_link *link = link_of(f);
	runtime_api_client_free(link->client);
	free(link->entries);
	index_list_free(&link->capped);
	free(f->e.ejection_capped);
	breaker_table_free(&f->table);
	ev_loop_destroy(f->loop);
}

/* One pass of convergence in table order: a server the cap lets through
 * and that wants a drain gets it. */
static void converge_all(struct fixture *f)
{
	struct haproxy_link *link = link_of(f);
	for (size_t i = 0; i < f->n; i++) {
		struct breaker_table_entry *entry = f->entries[i];
		struct enforce_entry *en = en_of(f, i);
		if (link_cap_holds_back(link, entry, en))
			continue;
		if (entry->breaker.state == BREAKER_HALF_OPEN && !en->seen.maint) {
			en->mem.maxconn_by_us = true; /* serving still: no count moves */
			continue;
		}
		if (entry->breaker.state != BREAKER_OPEN || en->mem.drained_by_us ||
		    en->seen.down || en->seen.maint)
			continue;
		bool was_out = link_entry_out(en), was_drained = en->mem.drained_by_us;
		en->mem.drained_by_us = true;
		en->seen.drained = true;
		link_count_change(link, en, was_out, was_drained);
	}
}

/* The first drained server's breaker closes and its drain is lifted. */
static void release_first(struct fixture *f)
{
	struct haproxy_link *link = link_of(f);
	for (size_t i = 0; i < f->n; i++) {
		struct enforce_entry *en = en_of(f, i);
		if (!en->mem.drained_by_us)
			continue;
		bool was_out = link_entry_out(en), was_drained = en->mem.drained_by_us;
		f->entries[i]->breaker.state = BREAKER_CLOSED;
		en->mem.drained_by_us = false;
		en->seen.drained = false;
		link_count_change(link, en, was_out, was_drained);
		return;
	}
	fail_msg("nothing drained to release");
}

static void describe(struct fixture *f, char *out)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct breaker_table_entry *entry = f->entries[i];
		const struct enforce_entry *en = en_of(f, i);
		if (entry->breaker.state == BREAKER_CLOSED)
			out[i] = '-';
		else if (en->ejection_capped)
			out[i] = '0';
		else
			out[i] = '1';
		/* Held back here is what the link tells the ACK and the pages. */
		assert_int_equal(f->e.ejection_capped[breaker_table_index(&f->table, entry)],
				 en->ejection_capped);
	}
	out[f->n] = '\0';
}

static void test_table(void **state)
{
	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct fixture f;
		char got[MAX_SERVERS + 1];
		setup(&f, &rows[r]);
		converge_all(&f);
		describe(&f, got);
		if (strcmp(got, rows[r].after) != 0)
			fail_msg("%s: %s -> %s, expected %s", rows[r].name, rows[r].servers, got,
				 rows[r].after);
		/* The counts followed every drain. */
		uint32_t out = 0, drained = 0, capped = 0;
		for (size_t i = 0; i < f.n; i++) {
			if (f.letters[i] != 'm') /* not counted at all */
				out += link_entry_out(en_of(&f, i));
			drained += en_of(&f, i)->mem.drained_by_us;
			capped += en_of(&f, i)->ejection_capped;
		}
		assert_int_equal(f.backend.count.out, out);
		assert_int_equal(f.backend.drained_by_agent, drained);
		assert_int_equal(f.backend.capped, capped);
		assert_int_equal(f.e.stats.ejections_held_back, capped);
		if (rows[r].after_release) {
			release_first(&f);
			converge_all(&f);
			describe(&f, got);
			if (strcmp(got, rows[r].after_release) != 0)
				fail_msg("%s, room freed: %s -> %s, expected %s", rows[r].name,
					 rows[r].servers, got, rows[r].after_release);
		}
		teardown(&f);
	}
}

/* A server no complete look has counted yet waits for one. */
static void test_no_count_holds_back(void **state)
{
	(void)state;
	struct fixture f;
	static const struct row r = {"", "w1 .", 100, true, "", NULL};
	setup(&f, &r);
	en_of(&f, 0)->group_look[1] = 0; /* not in the look */
	assert_true(link_cap_holds_back(link_of(&f), f.entries[0], en_of(&f, 0)));
	/* Counted by the look under way: decided on it. */
	struct haproxy_link *link = link_of(&f);
	link->look.under_way = true;
	link->look.id = 2;
	link->counts.slot[0] = (struct ejection_groups){.groups = &f.backend, .nb = 1, .allocated = 1,
						   .look_id = 2};
	en_of(&f, 0)->group_look[0] = 2;
	en_of(&f, 0)->group_index[0] = 0;
	assert_false(link_cap_holds_back(link, f.entries[0], en_of(&f, 0)));
	assert_false(f.e.ejection_capped[breaker_table_index(&f.table, f.entries[0])]);
	assert_int_equal(f.e.stats.ejections_released, 1);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_no_count_holds_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

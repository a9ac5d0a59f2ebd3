/*
 * test_records.c - the link's side of the records HAProxy keeps for the
 * agent (records.c): the three maps found in `show map` or said missing,
 * once; each record read at a look, and what the read changes; a read
 * that a command to the record went out after is not believed; the `add
 * map`, `set map`, `del map` and `set table` commands the link queues, and
 * none for a name that could carry another command; a reply that is not
 * the record's leaves what the link knew.
 *
 * HAProxy is scripted. The link's two Runtime API clients are real but
 * never connect (their loop never runs), so what the link submits waits
 * in their queues, in order; the test reads each command there and
 * answers it with what HAProxy 2.6 prints, the way the client hands each
 * output of a reply to its callback (runtime_api_answer_oldest, from the
 * client's own hapi/client-t.h).
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

#include "hapi/client-t.h"
#include "link/link_internal.h"
#include "records/verdicts.h"
#include "records/watched_map.h"
#include "util/clock.h"
#include "log_capture.h"

#define ADDRESS "unix:/nonexistent/haproxy.sock"
#define TABLE_SIZE 64
#define T0 1000000
/* The log line of every record said found or missing names the HAProxy. */
#define HAPROXY "HAProxy " ADDRESS

#define OWNER_PATH "/etc/haproxy/breaker-owned.map"

/* `show map` on HAProxy 2.6: the shipped haproxy.cfg (the ownership map
 * by its full path, the retry map relative to default-path) with the
 * steady-state SPOE file, beside a map of the operator's. */
static const char listing_all[] =
	"# id (file) description\n"
	"1 (/etc/haproxy/router-conditions.map) pattern loaded from file "
	"'/etc/haproxy/router-conditions.map' used by map at file '/etc/haproxy/haproxy.cfg' "
	"line 90. curr_ver=0 next_ver=0 entry_cnt=12\n"
	"3 (breaker-retry-at.map) pattern loaded from file 'breaker-retry-at.map' used by map at "
	"file '/etc/haproxy/haproxy.cfg' line 64. curr_ver=0 next_ver=0 entry_cnt=0\n"
	"7 (" OWNER_PATH ") pattern loaded from file '" OWNER_PATH "' used by map at file "
	"'/etc/haproxy/haproxy.cfg' line 82. curr_ver=0 next_ver=0 entry_cnt=0\n"
	"11 (breaker-watched.map) pattern loaded from file 'breaker-watched.map' used by map at "
	"file '/etc/haproxy/spoe-breaker-steady.conf' line 31. curr_ver=0 next_ver=0 "
	"entry_cnt=0\n";

/* The same HAProxy with only the ownership map. */
static const char listing_owner[] =
	"# id (file) description\n"
	"7 (" OWNER_PATH ") pattern loaded from file '" OWNER_PATH "' used by map at file "
	"'/etc/haproxy/haproxy.cfg' line 82. curr_ver=0 next_ver=0 entry_cnt=0\n";

/* A configuration that loads none of the agent's maps. */
static const char listing_none[] =
	"# id (file) description\n"
	"1 (/etc/haproxy/router-conditions.map) pattern loaded from file "
	"'/etc/haproxy/router-conditions.map' used by map at file '/etc/haproxy/haproxy.cfg' "
	"line 90. curr_ver=0 next_ver=0 entry_cnt=12\n";

/* What HAProxy answers `show map FILE` for a file it does not load. */
static const char unknown_map[] = "Unknown map identifier. Please use #<id> or <file>.\n";

static const char empty_table[] =
	"# table: breaker_verdicts, type: string, size:102400, used:0\n";

struct fixture {
	struct ev_loop *loop;
	struct enforcer e;
	struct breaker_table table;
	struct ejection_backend backends[8];
	char log[1 << 16];
};

static struct haproxy_link *link_of(struct fixture *f)
{
	return &f->e.links[0];
}

/* The server's breaker, made by setup(). */
static struct breaker_table_entry *entry_of(struct fixture *f, const char *backend,
					    const char *server)
{
	struct breaker_table_entry *entry =
		breaker_table_find(&f->table, backend, strlen(backend), server, strlen(server));
	assert_non_null(entry);
	return entry;
}

static struct enforce_entry *en_of(struct fixture *f, const char *backend, const char *server)
{
	return &link_of(f)->entries[breaker_table_index(&f->table, entry_of(f, backend, server))];
}

/* The link as enforcer_new() makes it for one HAProxy (lifecycle.c), in
 * Runtime API mode, peers mode off; breakers for be/s1 and be/s2. */
static int setup(void **state)
{
	char err[256];
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	if (!breaker_table_init(&f->table, TABLE_SIZE, err, sizeof(err)))
		fail_msg("table: %s", err);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(f->loop);

	struct enforcer *e = &f->e;
	e->loop = f->loop;
	e->mode = ENFORCE_RUNTIME_API;
	e->table = &f->table;
	e->end_round_next = SWEEP_NONE;
	e->node_id = 1;
	e->nb_links = 1;
	struct haproxy_link *link = link_of(f);
	link->owner = e;
	link->look.reconcile_next = SWEEP_NONE;
	link->counts.current = -1;
	link->watched_map = link->records[RECORD_WATCHED].where;
	link->entries = calloc(TABLE_SIZE, sizeof(*link->entries));
	assert_non_null(link->entries);
	struct runtime_api_settings settings;
	runtime_api_settings_default(&settings);
	settings.max_queue = 8; /* a queue the test can fill */
	link->client = runtime_api_client_new(f->loop, ADDRESS, &settings, err, sizeof(err));
	link->cmd.client =
		runtime_api_client_new(f->loop, ADDRESS, &settings, err, sizeof(err));
	assert_non_null(link->client);
	assert_non_null(link->cmd.client);

	static const char *const servers[] = {"s1", "s2"};
	for (size_t i = 0; i < sizeof(servers) / sizeof(servers[0]); i++) {
		enum breaker_table_status st;
		const char *name = servers[i];
		struct breaker_table_entry *entry =
			breaker_table_get(&f->table, "be", 2, name, strlen(name), T0, &st);
		assert_non_null(entry);
		assert_true(breaker_table_index(&f->table, entry) < TABLE_SIZE);
	}
	log_capture_drain(f->log, sizeof(f->log)); /* what earlier tests left */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	/* What is still queued is failed as the clients go, as in
	 * enforcer_free(). */
	f->e.freeing = true;
	runtime_api_client_free(link->client);
	runtime_api_client_free(link->cmd.client);
	free(link->entries);
	free(link->retry_have);
	free(link->orphans);
	wiring_free(&link->wiring);
	breaker_table_free(&f->table);
	ev_loop_destroy(f->loop);
	free(f);
	return 0;
}

/* ---- HAProxy, scripted ---- */

/* The i-th command the client holds (0: the oldest), or NULL. */
static const char *queued(const struct runtime_api_client *c, unsigned i)
{
	return i < runtime_api_client_pending(c) ? runtime_api_queue_at(c, i)->command : NULL;
}

/* HAProxy answers the oldest command the client holds, which must be
 * `command`, with `reply`. */
static void answer(struct runtime_api_client *c, const char *command, const char *reply)
{
	const char *oldest = queued(c, 0);
	if (!oldest)
		fail_msg("HAProxy was to be sent '%s': nothing is queued", command);
	assert_string_equal(oldest, command);
	runtime_api_answer_oldest(c, RUNTIME_API_OK, reply, strlen(reply));
}

/* The next command to a record went out as `command`; HAProxy did it. */
static void expect_sent(struct fixture *f, const char *command)
{
	answer(link_of(f)->cmd.client, command, "");
}

static void expect_nothing_sent(struct fixture *f)
{
	const char *next = queued(link_of(f)->cmd.client, 0);
	if (next)
		fail_msg("nothing was to be sent, yet '%s' is queued", next);
}

/* link_record_send() for a command of the test's. */
static bool sends(struct haproxy_link *link, enum haproxy_record_id id, const char *backend,
		  const char *server, const char *have, const char *want)
{
	static const struct link_record_why why = {"test", false, LOG_LEVEL_NOTICE};
	return link_record_send(link, id, backend, server, have, want, &why);
}

/* `show map`, as a look asks it, answered with `listing`. */
static void list_maps(struct fixture *f, const char *listing)
{
	struct haproxy_link *link = link_of(f);
	assert_true(runtime_api_submit(link->client, "show map", link_on_map_list, link));
	answer(link->client, "show map", listing);
}

/* A look queued as looks.c queues one: numbered, after the commands done
 * so far; the records' reads in its order (the maps, then the table). */
static void start_look(struct fixture *f)
{
	struct haproxy_link *link = link_of(f);
	link->look.id++;
	link->look.queued_after = link->cmd.done;
	assert_true(link_records_look(link, HAPROXY_RECORD_MAP, link_record_readers));
	assert_true(link_records_look(link, HAPROXY_RECORD_TABLE, link_record_readers));
}

/* A look of the three maps listing_all names, each answered so. */
static void look_at_maps(struct fixture *f, const char *owner, const char *retry,
			 const char *watched)
{
	struct haproxy_link *link = link_of(f);
	start_look(f);
	answer(link->client, "show map " OWNER_PATH, owner);
	answer(link->client, "show map breaker-retry-at.map", retry);
	answer(link->client, "show map breaker-watched.map", watched);
	assert_null(queued(link->client, 0));
}

/* What was logged since the last call. */
static const char *logged(struct fixture *f)
{
	log_capture_drain(f->log, sizeof(f->log));
	return f->log;
}

static void expect_logged_once(struct fixture *f, const char *line)
{
	const char *log = logged(f);
	if (log_capture_count(log, line) != 1)
		fail_msg("expected once in the log: '%s'; the log:\n%s", line, log);
}

/* ---- found in `show map`, or missing ---- */

static void test_listing_finds_the_maps(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);

	link->maps_search = true;
	list_maps(f, listing_all);
	assert_string_equal(link->records[RECORD_OWNER].where, OWNER_PATH);
	assert_string_equal(link->records[RECORD_RETRY].where, "breaker-retry-at.map");
	assert_string_equal(link->records[RECORD_WATCHED].where, "breaker-watched.map");
	assert_string_equal(link->watched_map, "breaker-watched.map");
	assert_false(link->maps_search);
	assert_true(link->wiring.maps_known);
	assert_true(link->wiring.owner_map && link->wiring.retry_map && link->wiring.watched_map);
	/* Found is not known: each is read before anything is written. */
	for (int id = 0; id < HAPROXY_RECORDS; id++)
		assert_false(link->records[id].known);
	/* Only the watched map's arrival is news: it changes what HAProxy
	 * notifies. */
	expect_logged_once(f, "[notice] " HAPROXY " loads breaker-watched.map: steady-state mode");
	assert_null(strstr(f->log, "breaker-owned.map"));
	assert_null(strstr(f->log, "breaker-retry-at.map"));

	/* Listed again where they were: nothing to say. */
	list_maps(f, listing_all);
	assert_null(strstr(logged(f), "loads"));

	/* A `show map` that got no answer changes nothing. */
	link->maps_search = true;
	assert_true(runtime_api_submit(link->client, "show map", link_on_map_list, link));
	runtime_api_answer_oldest(link->client, RUNTIME_API_FAILED, "timeout", 7);
	assert_true(link->maps_search);
	assert_string_equal(link->records[RECORD_OWNER].where, OWNER_PATH);

	/* A look reads each, by the path HAProxy lists it under; with peers
	 * mode off, no table. */
	start_look(f);
	assert_string_equal(queued(link->client, 0), "show map " OWNER_PATH);
	assert_string_equal(queued(link->client, 1), "show map breaker-retry-at.map");
	assert_string_equal(queued(link->client, 2), "show map breaker-watched.map");
	assert_null(queued(link->client, 3));
	for (int id = 0; id < HAPROXY_RECORDS; id++)
		assert_false(link->records[id].read);
}

static void test_missing_maps_are_said_once(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);

	list_maps(f, listing_none);
	const char *log = logged(f);
	/* Each with what its absence costs, at its level; the watched map
	 * is optional (every-response mode), its absence normal. */
	assert_int_equal(log_capture_count(log, "[notice] " HAPROXY " loads no breaker-owned.map: "
						"without a state snapshot, a restarted agent "
						"cannot tell its drains from an operator's"),
			 1);
	assert_int_equal(log_capture_count(log, "[info] " HAPROXY " loads no breaker-retry-at.map: "
						"its own 503 gets the configuration's fixed "
						"Retry-After"),
			 1);
	assert_null(strstr(log, "breaker-watched.map"));
	assert_true(link->wiring.maps_known);
	assert_false(link->wiring.owner_map || link->wiring.retry_map || link->wiring.watched_map);
	/* Nothing to read, nothing to write to. */
	start_look(f);
	assert_null(queued(link->client, 0));

	/* Still missing: not said again. */
	list_maps(f, listing_none);
	list_maps(f, listing_none);
	assert_null(strstr(logged(f), "loads"));

	/* The ownership map comes (nothing to say of it), and goes: its
	 * absence is news again, once; the retry map's is not. */
	list_maps(f, listing_owner);
	assert_string_equal(link->records[RECORD_OWNER].where, OWNER_PATH);
	assert_true(link->wiring.owner_map);
	assert_null(strstr(logged(f), "breaker-owned.map"));
	list_maps(f, listing_none);
	list_maps(f, listing_none);
	expect_logged_once(f, HAPROXY " loads no breaker-owned.map: ");
	assert_null(strstr(f->log, "breaker-retry-at.map"));
	assert_string_equal(link->records[RECORD_OWNER].where, "");
	assert_false(link->wiring.owner_map);

	/* The watched map gone: HAProxy is back to notifying every
	 * response, said once. */
	list_maps(f, listing_all);
	logged(f);
	list_maps(f, listing_none);
	list_maps(f, listing_none);
	expect_logged_once(f, "[notice] " HAPROXY " no longer loads breaker-watched.map: "
			      "every-response mode");
	assert_string_equal(link->watched_map, "");
}

/* A map listed under a path a command could not carry is never named in
 * one: the agent keeps it as absent, and says why at every search. */
static void test_unsafe_path_is_never_named(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	static const char hostile[] =
		"# id (file) description\n"
		"5 (/srv/x;shutdown/breaker-owned.map) pattern loaded from file "
		"'/srv/x;shutdown/breaker-owned.map' used by map at file "
		"'/etc/haproxy/haproxy.cfg' line 82. curr_ver=0 next_ver=0 entry_cnt=0\n";
	static const char said[] = "[error] " HAPROXY " loads breaker-owned.map under a path with "
				   "characters other than letters, digits and /._- : the agent "
				   "cannot keep it; rename it";

	list_maps(f, hostile);
	expect_logged_once(f, said);
	assert_string_equal(link->records[RECORD_OWNER].where, "");
	assert_false(link->wiring.owner_map);
	list_maps(f, hostile);
	expect_logged_once(f, said);

	start_look(f);
	assert_null(queued(link->client, 0));
	link->records[RECORD_OWNER].known = true; /* even so */
	en_of(f, "be", "s1")->mem.drained_by_us = true;
	link_record_ownership(link, entry_of(f, "be", "s1"), en_of(f, "be", "s1"));
	expect_nothing_sent(f);
}

/* ---- the ownership record ---- */

/* What HAProxy's map records of the agent's own is taken back. */
static void test_owner_read_is_taken_back(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);

	list_maps(f, listing_all);
	logged(f);
	look_at_maps(f,
		     "0x55d0c1a0e0 be/s1 drain\n"
		     "0x55d0c1a100 be/s2 maxconn=50\n"
		     "0x55d0c1a120 other/s9 drain\n", /* no breaker: nothing to take */
		     "", "");
	assert_true(link->records[RECORD_OWNER].read && link->records[RECORD_OWNER].known);
	struct enforce_entry *s1 = en_of(f, "be", "s1"), *s2 = en_of(f, "be", "s2");
	assert_int_equal(s1->owner_in_look, link->look.id);
	assert_true(s1->owner.present && s1->owner.drained && !s1->owner.limited);
	assert_true(s1->mem.drained_by_us);
	assert_true(s2->owner.present && s2->owner.limited && !s2->owner.drained);
	assert_true(s2->mem.maxconn_by_us && s2->mem.own_maxconn_known);
	assert_int_equal(s2->mem.own_maxconn, 50);
	const char *log = logged(f);
	assert_int_equal(log_capture_count(log, HAPROXY " records that the agent drained be/s1: "
						"taken back as its own"),
			 1);
	assert_int_equal(log_capture_count(log, "the agent limited be/s2"), 1);
	assert_null(strstr(log, "other/s9"));

	/* Read again: nothing new. */
	look_at_maps(f, "0x55d0c1a0e0 be/s1 drain\n0x55d0c1a100 be/s2 maxconn=50\n", "", "");
	assert_null(strstr(logged(f), "taken back"));
	assert_int_equal(s1->owner_in_look, link->look.id);
	expect_nothing_sent(f);
}

/* A read of a look queued before the agent's own command to the server
 * was done shows the map before it: not believed, until a later look. */
static void test_owner_read_older_than_its_command_is_not_believed(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct enforce_entry *s1 = en_of(f, "be", "s1");

	list_maps(f, listing_all);
	look_at_maps(f, "", "", "");
	s1->mem.drained_by_us = true;
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	assert_string_equal(queued(link->cmd.client, 0),
			    "add map " OWNER_PATH " be/s1 drain");
	assert_int_equal(s1->last_command, link->cmd.sent);

	/* The `add map` still in flight: the look says what was there. */
	look_at_maps(f, "0x55d0c1a0e0 be/s1 maxconn=50\n", "", "");
	assert_int_equal(s1->owner_in_look, link->look.id); /* listed all the same */
	assert_true(s1->owner.drained && !s1->owner.limited);
	assert_false(s1->mem.maxconn_by_us);

	/* Done; a look queued after it is believed. */
	expect_sent(f, "add map " OWNER_PATH " be/s1 drain");
	look_at_maps(f, "0x55d0c1a0e0 be/s1 maxconn=50\n", "", "");
	assert_true(s1->owner.limited && !s1->owner.drained);
	assert_true(s1->mem.maxconn_by_us);
}

/* The map follows what the agent did: added, set, deleted; never before
 * it was read, never under enforce none. */
static void test_owner_commands(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct enforce_entry *s1 = en_of(f, "be", "s1");

	list_maps(f, listing_all);
	s1->mem.drained_by_us = true;
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	expect_nothing_sent(f); /* found, not read yet */

	look_at_maps(f, "", "", "");
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	expect_sent(f, "add map " OWNER_PATH " be/s1 drain");
	assert_true(s1->owner.present && s1->owner.drained);
	assert_int_equal(s1->last_command, link->cmd.sent);
	assert_int_equal(link->records[RECORD_OWNER].last_command, link->cmd.sent);

	s1->mem = (struct enforce_memory){.maxconn_by_us = true, .own_maxconn_known = true,
					  .own_maxconn = 50};
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	expect_sent(f, "set map " OWNER_PATH " be/s1 maxconn=50");
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	expect_nothing_sent(f); /* the map has it */

	link_record_forget_owner(link, entry_of(f, "be", "s1"), s1);
	expect_sent(f, "del map " OWNER_PATH " be/s1");

	/* Enforce none changes nothing in HAProxy, so there is nothing to
	 * record: not even a command it would have sent. */
	link->owner->mode = ENFORCE_NONE;
	logged(f);
	en_of(f, "be", "s2")->mem.drained_by_us = true;
	link_record_ownership(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"));
	link_record_forget_owner(link, entry_of(f, "be", "s1"), s1);
	expect_nothing_sent(f);
	assert_false(en_of(f, "be", "s2")->owner.present);
	assert_null(strstr(logged(f), "breaker-owned.map"));
}

/* ---- the watched servers ---- */

static void test_watched_read_and_kept(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);

	entry_of(f, "be", "s2")->breaker.state = BREAKER_OPEN; /* dirty */
	list_maps(f, listing_all);
	look_at_maps(f, "", "",
		     "0x55d0c1a0 s1@be 1\n"
		     "0x55d0c1b0 s9@be 1\n"); /* no breaker: nothing to watch */
	assert_true(link->records[RECORD_WATCHED].read);
	assert_int_equal(en_of(f, "be", "s1")->watched.in_look, link->look.id);
	assert_int_not_equal(en_of(f, "be", "s2")->watched.in_look, link->look.id);
	expect_sent(f, "del map breaker-watched.map s9@be");

	/* The look converged: listed and clean goes, dirty and not listed
	 * comes. */
	assert_false(link_sync_watched(link, entry_of(f, "be", "s1"), en_of(f, "be", "s1"), true));
	expect_sent(f, "del map breaker-watched.map s1@be");
	assert_true(link_sync_watched(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"), true));
	expect_sent(f, "add map breaker-watched.map s2@be 1");
	assert_true(en_of(f, "be", "s2")->watched.have);
	/* A transition between looks, from what the agent sent. */
	assert_false(link_sync_watched(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"), false));
	expect_nothing_sent(f);
	link_record_forget_watched(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"));
	expect_sent(f, "del map breaker-watched.map s2@be");
	assert_false(en_of(f, "be", "s2")->watched.have);

	/* Enforce none keeps it all the same: it changes no server, and
	 * keeps the breakers' view right. */
	link->owner->mode = ENFORCE_NONE;
	assert_true(link_sync_watched(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"), false));
	expect_sent(f, "add map breaker-watched.map s2@be 1");

	/* Without the map (every-response mode), nothing to keep. */
	list_maps(f, listing_owner);
	link_record_forget_watched(link, entry_of(f, "be", "s2"), en_of(f, "be", "s2"));
	expect_nothing_sent(f);
}

static void test_watched_read_older_than_a_command_is_not_believed(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct enforce_entry *s2 = en_of(f, "be", "s2");

	entry_of(f, "be", "s2")->breaker.state = BREAKER_OPEN;
	list_maps(f, listing_all);
	look_at_maps(f, "", "", "");
	assert_true(link_sync_watched(link, entry_of(f, "be", "s2"), s2, true));
	assert_string_equal(queued(link->cmd.client, 0),
			    "add map breaker-watched.map s2@be 1");

	/* The `add map` in flight: the look, queued before it, may show the
	 * map from before it or after. s2 not listed, s9 listed without a
	 * breaker: neither is acted on while a command to the map is on its
	 * way. */
	look_at_maps(f, "", "", "0x55d0c1b0 s9@be 1\n");
	assert_false(link_sync_watched(link, entry_of(f, "be", "s2"), s2, true));
	assert_true(s2->watched.have);
	assert_null(queued(link->cmd.client, 1));

	/* Done: a look queued after it is believed. */
	expect_sent(f, "add map breaker-watched.map s2@be 1");
	look_at_maps(f, "", "", "0x55d0c1b0 s9@be 1\n");
	expect_sent(f, "del map breaker-watched.map s9@be");
	assert_true(link_sync_watched(link, entry_of(f, "be", "s2"), s2, true));
	expect_sent(f, "add map breaker-watched.map s2@be 1"); /* HAProxy lost it */
}

/* ---- the retry moments ---- */

/* The look counted these backends, with these moments. */
static void count_backends(struct fixture *f, const char *const *names, const int64_t *at,
			   uint32_t n)
{
	struct haproxy_link *link = link_of(f);
	assert_true(n <= sizeof(f->backends) / sizeof(f->backends[0]));
	for (uint32_t i = 0; i < n; i++) {
		f->backends[i] = (struct ejection_backend){.be_id = i + 1, .retry_at_s = at[i]};
		snprintf(f->backends[i].name, sizeof(f->backends[i].name), "%s", names[i]);
	}
	link->counts.current = (int)(link->look.id & 1);
	link->counts.slot[link->counts.current] = (struct ejection_groups){
		.groups = f->backends, .nb = n, .allocated = n, .look_id = link->look.id};
}

static void test_retry_read_and_kept(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	static const char *const names[] = {"be", "api", "db", "dup", "web"};
	static const int64_t at[] = {1800000000, 1700000000, RETRY_AT_NONE, 1700000009,
				     1700000001};

	list_maps(f, listing_all);
	look_at_maps(f, "",
		     "0x1 be 1700000000\n"
		     "0x2 db 1700000000\n"
		     "0x3 gone 1700000000\n"
		     "0x4 dup 1700000000\n"
		     "0x5 dup 1700000005\n"
		     "0x6 web 1700000000\n",
		     "");
	assert_true(link->records[RECORD_RETRY].read);
	assert_int_equal(link->nb_retry_have, 5);
	count_backends(f, names, at, 5);
	link_sync_retry_map(link);
	expect_sent(f, "set map breaker-retry-at.map be 1800000000");
	expect_sent(f, "add map breaker-retry-at.map api 1700000000");
	expect_sent(f, "del map breaker-retry-at.map db");
	/* Listed twice: both go, one comes back. */
	expect_sent(f, "del map breaker-retry-at.map dup");
	expect_sent(f, "add map breaker-retry-at.map dup 1700000009");
	/* web: within a second of HAProxy's, left alone. A backend this
	 * HAProxy no longer lists: its entry goes. */
	expect_sent(f, "del map breaker-retry-at.map gone");
	expect_nothing_sent(f);

	/* Under enforce none, nothing, not even a command it would have
	 * sent: no breaker drains a server there, HAProxy's own 503 is none
	 * of theirs. */
	look_at_maps(f, "", "", "");
	count_backends(f, names, at, 1);
	link->owner->mode = ENFORCE_NONE;
	logged(f);
	link_sync_retry_map(link);
	expect_nothing_sent(f);
	assert_null(strstr(logged(f), "breaker-retry-at.map"));
}

/* An open breaker's moment goes into its backend's, the earliest kept. */
static void test_retry_moment_noted(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	static const char *const names[] = {"be"};
	static const int64_t none[] = {RETRY_AT_NONE};
	struct enforce_entry *s1 = en_of(f, "be", "s1");

	link->look.id = 1;
	count_backends(f, names, none, 1);
	s1->group_look[link->counts.current] = link->look.id;
	s1->group_index[link->counts.current] = 0;
	link_note_retry_at(link, entry_of(f, "be", "s1"), s1);
	assert_int_equal(f->backends[0].retry_at_s, RETRY_AT_NONE); /* closed: none */

	struct breaker *b = &entry_of(f, "be", "s1")->breaker;
	b->state = BREAKER_OPEN;
	b->state_since_ms = clock_now_ms();
	link_note_retry_at(link, entry_of(f, "be", "s1"), s1);
	assert_int_not_equal(f->backends[0].retry_at_s, RETRY_AT_NONE);
	f->backends[0].retry_at_s = 1; /* an earlier one */
	link_note_retry_at(link, entry_of(f, "be", "s1"), s1);
	assert_int_equal(f->backends[0].retry_at_s, 1);
}

static void test_retry_read_older_than_a_command_is_not_believed(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	static const char *const names[] = {"be"};
	static const int64_t at[] = {1800000000};

	list_maps(f, listing_all);
	look_at_maps(f, "", "", "");
	count_backends(f, names, at, 1);
	link_sync_retry_map(link);
	assert_string_equal(queued(link->cmd.client, 0),
			    "add map breaker-retry-at.map be 1800000000");

	/* The `add map` in flight: the look's empty map is the map before
	 * it, and would add it again. */
	look_at_maps(f, "", "", "");
	count_backends(f, names, at, 1);
	link_sync_retry_map(link);
	assert_null(queued(link->cmd.client, 1));

	/* Done: read after it, the map has it. */
	expect_sent(f, "add map breaker-retry-at.map be 1800000000");
	look_at_maps(f, "", "0x1 be 1800000000\n", "");
	count_backends(f, names, at, 1);
	link_sync_retry_map(link);
	expect_nothing_sent(f);
	/* A reloaded HAProxy's empty map: filled again. */
	look_at_maps(f, "", "", "");
	count_backends(f, names, at, 1);
	link_sync_retry_map(link);
	expect_sent(f, "add map breaker-retry-at.map be 1800000000");
}

/* ---- the verdict table ---- */

static void test_verdict_table_missing_said_once(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct haproxy_record *table = &link->records[RECORD_VERDICTS];
	static const char said[] = "[warning] " HAPROXY " has no stick table breaker_verdicts "
				   "(No such table): its verdicts are neither shared nor read "
				   "until it has";
	static const char back[] = "[notice] " HAPROXY " has stick table breaker_verdicts: "
				   "verdicts shared again";

	/* Peers mode: the table is the configuration's. */
	snprintf(f->e.verdict_table, sizeof(f->e.verdict_table), "%s", VERDICT_TABLE_DEFAULT);
	snprintf(table->where, sizeof(table->where), "%s", VERDICT_TABLE_DEFAULT);
	logged(f);

	/* There from the start: nothing to say. */
	start_look(f);
	answer(link->client, "show table breaker_verdicts", empty_table);
	assert_true(table->read && table->known && link->wiring.verdict_table);
	assert_null(strstr(logged(f), "stick table"));

	start_look(f);
	answer(link->client, "show table breaker_verdicts", "No such table\n");
	expect_logged_once(f, said);
	assert_false(table->read || table->known || link->wiring.verdict_table);
	start_look(f);
	answer(link->client, "show table breaker_verdicts", "No such table\n");
	assert_null(strstr(logged(f), "stick table"));

	start_look(f);
	answer(link->client, "show table breaker_verdicts", empty_table);
	expect_logged_once(f, back);
	assert_true(table->known && link->wiring.verdict_table);
	start_look(f);
	answer(link->client, "show table breaker_verdicts", empty_table);
	assert_null(strstr(logged(f), "stick table"));

	/* Set, never added or deleted: peers do not replicate deletes. */
	char value[VERDICT_VALUE_MAX];
	assert_true(sends(link, RECORD_VERDICTS, "be", "s1", NULL,
			  verdicts_value(value, sizeof(value), VERDICT_OPEN, 1800000000, 1)));
	expect_sent(f, "set table breaker_verdicts key be/s1 data.gpt0 1 data.gpc0 1800000000 "
		       "data.gpc1 1");
	assert_int_equal(table->last_command, link->cmd.sent);
}

/* ---- names that could carry a command ---- */

static void test_hostile_names_reach_no_command(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	static const char *const hostile[] = {"be;shutdown sessions server be/s1", "be/x", "s1@be",
					      "a b", "a\nb", "a\\b", ""};
	static const char *const want[HAPROXY_RECORDS] = {
		[RECORD_OWNER] = "drain",
		[RECORD_RETRY] = "1800000000",
		[RECORD_WATCHED] = "1",
		[RECORD_VERDICTS] = "data.gpt0 1 data.gpc0 1800000000 data.gpc1 1",
	};
	static const char *const sent[HAPROXY_RECORDS] = {
		[RECORD_OWNER] = "add map " OWNER_PATH " be/s1 drain",
		[RECORD_RETRY] = "add map breaker-retry-at.map be 1800000000",
		[RECORD_WATCHED] = "add map breaker-watched.map s1@be 1",
		[RECORD_VERDICTS] = ("set table breaker_verdicts key be/s1 data.gpt0 1 "
				     "data.gpc0 1800000000 data.gpc1 1"),
	};

	list_maps(f, listing_all);
	/* Read from HAProxy: a key that is no server's makes no `del map`. */
	look_at_maps(f, "", "", "0x55d0c1a0 s1;shutdown@be 1\n0x55d0c1b0 s1@be/x 1\n");
	expect_nothing_sent(f);

	snprintf(link->records[RECORD_VERDICTS].where, sizeof(link->records[0].where), "%s",
		 VERDICT_TABLE_DEFAULT);
	logged(f);
	for (enum haproxy_record_id id = 0; id < HAPROXY_RECORDS; id++) {
		const char *server = id == RECORD_RETRY ? NULL : "s1";
		/* The well-named one goes out, as the others would. */
		assert_true(sends(link, id, "be", server, NULL, want[id]));
		expect_sent(f, sent[id]);
		uint64_t commands = link->cmd.sent;
		for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
			/* Added, or deleted. */
			assert_false(sends(link, id, hostile[i], server, NULL, want[id]));
			assert_false(sends(link, id, hostile[i], server, want[id], NULL));
			if (server)
				assert_false(sends(link, id, "be", hostile[i], NULL, want[id]));
		}
		expect_nothing_sent(f);
		assert_int_equal(link->cmd.sent, commands);
		assert_int_equal(link->records[id].last_command, commands);
	}
	/* Not built at all: the client had nothing to refuse. */
	assert_null(strstr(logged(f), "refusing command"));
}

/* A command the queue has no room for was not sent: nothing records it
 * as sent, so that the next convergence tries again. */
static void test_command_not_queued_is_not_counted(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct enforce_entry *s1 = en_of(f, "be", "s1");

	list_maps(f, listing_all);
	look_at_maps(f, "", "", "");
	while (runtime_api_client_pending(link->cmd.client) < 8)
		assert_true(sends(link, RECORD_RETRY, "be", NULL, NULL, "1"));
	uint64_t commands = link->cmd.sent;
	s1->mem.drained_by_us = true;
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	assert_int_equal(link->cmd.sent, commands);
	assert_false(s1->owner.present);
	assert_int_equal(s1->last_command, 0);
	assert_int_equal(link->records[RECORD_OWNER].last_command, 0);
}

/* ---- replies that are not the record ---- */

static void test_unreadable_replies_keep_what_was_known(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);
	struct enforce_entry *s1 = en_of(f, "be", "s1");

	list_maps(f, listing_all);
	look_at_maps(f, "0x55d0c1a0e0 be/s1 drain\n", "0x1 be 1800000000\n0x2 api 1700000000\n",
		     "0x55d0c1a0 s1@be 1\n");
	struct retry_map_entry *retry_have = link->retry_have;
	assert_int_equal(link->nb_retry_have, 2);
	logged(f);

	/* The maps renamed under the agent (a reload with another
	 * configuration): what the link knew stays, nothing is written
	 * until they are found and read again. */
	look_at_maps(f, unknown_map, unknown_map, unknown_map);
	assert_true(link->maps_search);
	for (int id = 0; id < RECORD_VERDICTS; id++) { /* the three maps */
		assert_false(link->records[id].known);
		assert_false(link->records[id].read);
	}
	assert_string_equal(link->records[RECORD_OWNER].where, OWNER_PATH);
	assert_true(s1->owner.present && s1->owner.drained && s1->mem.drained_by_us);
	assert_ptr_equal(link->retry_have, retry_have);
	assert_int_equal(link->nb_retry_have, 2);
	s1->mem = (struct enforce_memory){0};
	link_record_ownership(link, entry_of(f, "be", "s1"), s1);
	assert_false(link_sync_watched(link, entry_of(f, "be", "s1"), s1, true));
	static const char *const names[] = {"be"};
	static const int64_t none[] = {RETRY_AT_NONE};
	count_backends(f, names, none, 1);
	link_sync_retry_map(link);
	expect_nothing_sent(f);

	/* What the search then finds is said: here, that they are gone. */
	list_maps(f, listing_none);
	expect_logged_once(f, HAPROXY " loads no breaker-owned.map");
	assert_false(link->maps_search);
}

/* Lines that are not entries are skipped, counted, and cost the rest
 * nothing. */
static void test_bad_lines_are_skipped(void **state)
{
	struct fixture *f = *state;
	struct haproxy_link *link = link_of(f);

	log_init(LOG_LEVEL_DEBUG, false, "test");
	list_maps(f, listing_all);
	logged(f);
	look_at_maps(f,
		     "0x55d0c1a0e0 be/s1 drain\n"
		     "0x55d0c1a100 be;x/s2 drain\n"
		     "0x55d0c1a120 noslash drain\n",
		     "0x1 be 1800000000\n0x2 be x\n", "0x55d0c1a0 s1@be 1\n0x55d0c1b0 s1-be 1\n");
	log_init(LOG_LEVEL_INFO, false, "test");
	assert_true(en_of(f, "be", "s1")->owner.drained);
	assert_int_equal(link->nb_retry_have, 1);
	assert_int_equal(en_of(f, "be", "s1")->watched.in_look, link->look.id);
	assert_true(link->records[RECORD_OWNER].known && link->records[RECORD_RETRY].known &&
		    link->records[RECORD_WATCHED].known);
	const char *log = logged(f);
	assert_int_equal(log_capture_count(log, HAPROXY ": 2 line(s) of breaker-owned.map skipped"),
			 1);
	assert_int_equal(log_capture_count(log, HAPROXY ": 1 line(s) of breaker-retry-at.map "
						"skipped"),
			 1);
	assert_int_equal(log_capture_count(log, HAPROXY ": 1 line(s) of breaker-watched.map "
						"skipped"),
			 1);
}

static int group_setup(void **state)
{
	(void)state;
	return log_capture_start(LOG_LEVEL_INFO) ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		TEST(test_listing_finds_the_maps),
		TEST(test_missing_maps_are_said_once),
		TEST(test_unsafe_path_is_never_named),
		TEST(test_owner_read_is_taken_back),
		TEST(test_owner_read_older_than_its_command_is_not_believed),
		TEST(test_owner_commands),
		TEST(test_watched_read_and_kept),
		TEST(test_watched_read_older_than_a_command_is_not_believed),
		TEST(test_retry_read_and_kept),
		TEST(test_retry_moment_noted),
		TEST(test_retry_read_older_than_a_command_is_not_believed),
		TEST(test_verdict_table_missing_said_once),
		TEST(test_hostile_names_reach_no_command),
		TEST(test_command_not_queued_is_not_counted),
		TEST(test_unreadable_replies_keep_what_was_known),
		TEST(test_bad_lines_are_skipped),
#undef TEST
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}

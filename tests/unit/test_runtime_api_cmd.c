/*
 * test_runtime_api_cmd.c - Runtime API commands (the servers' and the
 * records' HAProxy keeps for the agent): what each builder writes for
 * valid names, and that a name which could inject a command (';', a space,
 * a newline, anything HAProxy does not allow in a name) never produces one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "expect_command.h"

#include "hapi/runtime_api.h"
#include "util/names.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char name_127[NAME_MAX_LEN + 1];
static char name_128[NAME_MAX_LEN + 2];

static int setup_names(void **state)
{
	memset(name_127, 'a', NAME_MAX_LEN);
	name_127[NAME_MAX_LEN] = '\0';
	memset(name_128, 'b', NAME_MAX_LEN + 1);
	name_128[NAME_MAX_LEN + 1] = '\0';
	return 0;
}

/* (backend, server, state) -> command. */
static const struct {
	const char *backend, *server, *state, *command;
} valid_states[] = {
	{"be_app", "w1", "drain", "set server be_app/w1 state drain"},
	{"be_app", "w1", "ready", "set server be_app/w1 state ready"},
	{"be_app", "w1", "maint", "set server be_app/w1 state maint"},
	{"Be-1.x:y", "srv_2-b.c:8080", "drain", "set server Be-1.x:y/srv_2-b.c:8080 state drain"},
	{"0", "9", "ready", "set server 0/9 state ready"},
};

static void test_set_state_valid(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(valid_states); i++) {
		char buf[RUNTIME_API_CMD_MAX];
		assert_true(runtime_api_cmd_set_state(buf, sizeof(buf), valid_states[i].backend,
						valid_states[i].server, valid_states[i].state));
		assert_string_equal(buf, valid_states[i].command);
	}
}

/* Names that must never reach HAProxy, and why. */
static const struct {
	const char *name;
	const char *why;
} invalid_names[] = {
	{"w1;shutdown sessions server be_app/w2", "';' starts another command"},
	{"w1;", "';' starts another command"},
	{"w1 state maint", "a space adds arguments"},
	{" w1", "a space adds arguments"},
	{"w1\nshow info", "a newline ends the line"},
	{"w1\n", "a newline ends the line"},
	{"w1\r", "a carriage return"},
	{"w1\t", "a tab separates arguments too"},
	{"w1#x", "'#' is not allowed in a name"},
	{"w1/x", "'/' would change which server"},
	{"w1\\", "'\\' escapes the separator after it"},
	{"w\"1\"", "quotes"},
	{"w1\x7f", "DEL"},
	{"w\xc3\xa9", "UTF-8 is not allowed in a name"},
	{"", "an empty name"},
	{NULL, "no name"},
};

static void test_set_state_refuses_names(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(invalid_names); i++) {
		const char *bad = invalid_names[i].name;
		char buf[RUNTIME_API_CMD_MAX];

		memset(buf, 'X', sizeof(buf));
		if (runtime_api_cmd_set_state(buf, sizeof(buf), "be_app", bad, "drain"))
			fail_msg("server name accepted (%s): '%s'", invalid_names[i].why, buf);
		assert_string_equal(buf, "");
		memset(buf, 'X', sizeof(buf));
		if (runtime_api_cmd_set_state(buf, sizeof(buf), bad, "w1", "drain"))
			fail_msg("backend name accepted (%s): '%s'", invalid_names[i].why, buf);
		assert_string_equal(buf, "");
	}
}

/* One past NAME_MAX_LEN is refused; NAME_MAX_LEN itself fits the buffer. */
static void test_name_lengths(void **state)
{
	char buf[RUNTIME_API_CMD_MAX];

	assert_true(runtime_api_cmd_set_maxconn(buf, sizeof(buf), name_127, name_127, 4294967295u));
	assert_int_equal(strlen(buf), strlen("set maxconn server / 4294967295") + 2 * NAME_MAX_LEN);
	assert_true(runtime_api_cmd_set_state(buf, sizeof(buf), name_127, name_127, "maint"));
	assert_false(runtime_api_cmd_set_state(buf, sizeof(buf), name_128, "w1", "drain"));
	assert_string_equal(buf, "");
	assert_false(runtime_api_cmd_set_maxconn(buf, sizeof(buf), "be", name_128, 1));
	assert_string_equal(buf, "");
}

/* Every byte outside HAProxy's name alphabet, in either name, in either
 * builder, is refused. */
static void test_every_forbidden_byte(void **state)
{
	for (int b = 1; b < 256; b++) {
		char name[4] = {'w', (char)b, '1', '\0'};
		bool allowed = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
			       (b >= '0' && b <= '9') || b == '-' || b == '_' || b == '.' || b == ':';
		char buf[RUNTIME_API_CMD_MAX];

		assert_int_equal(runtime_api_cmd_set_state(buf, sizeof(buf), "be", name, "drain"), allowed);
		assert_int_equal(runtime_api_cmd_set_state(buf, sizeof(buf), name, "w", "drain"), allowed);
		assert_int_equal(runtime_api_cmd_set_maxconn(buf, sizeof(buf), "be", name, 1), allowed);
		assert_int_equal(runtime_api_cmd_set_maxconn(buf, sizeof(buf), name, "w", 1), allowed);
		assert_int_equal(runtime_api_cmd_show_servers_state(buf, sizeof(buf), name), allowed);
		assert_int_equal(runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), "be", name), allowed);
		assert_int_equal(runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), name, "w"), allowed);
		if (!allowed)
			assert_string_equal(buf, "");
		else
			assert_null(strpbrk(buf, ";\n\r"));
	}
}

static void test_set_state_refuses_states(void **state)
{
	static const char *const bad_states[] = {
		"up", "DRAIN", "drain;show info", "drain ", "", "stopping", NULL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad_states); i++) {
		char buf[RUNTIME_API_CMD_MAX];
		memset(buf, 'X', sizeof(buf));
		assert_false(runtime_api_cmd_set_state(buf, sizeof(buf), "be_app", "w1", bad_states[i]));
		assert_string_equal(buf, "");
	}
}

/* (backend, server, maxconn) -> command; 0 is unlimited. */
static const struct {
	const char *backend, *server;
	unsigned maxconn;
	const char *command;
} valid_maxconns[] = {
	{"be_app", "w1", 1, "set maxconn server be_app/w1 1"},
	{"be_app", "w1", 0, "set maxconn server be_app/w1 0"},
	{"be_app", "w2", 4294967295u, "set maxconn server be_app/w2 4294967295"},
};

static void test_set_maxconn(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(valid_maxconns); i++) {
		char buf[RUNTIME_API_CMD_MAX];
		assert_true(runtime_api_cmd_set_maxconn(buf, sizeof(buf), valid_maxconns[i].backend,
						  valid_maxconns[i].server, valid_maxconns[i].maxconn));
		assert_string_equal(buf, valid_maxconns[i].command);
	}
	for (size_t i = 0; i < ARRAY_SIZE(invalid_names); i++) {
		char buf[RUNTIME_API_CMD_MAX];
		memset(buf, 'X', sizeof(buf));
		assert_false(runtime_api_cmd_set_maxconn(buf, sizeof(buf), "be_app", invalid_names[i].name, 1));
		assert_string_equal(buf, "");
		memset(buf, 'X', sizeof(buf));
		assert_false(runtime_api_cmd_set_maxconn(buf, sizeof(buf), invalid_names[i].name, "w1", 1));
		assert_string_equal(buf, "");
	}
}

/* `shutdown sessions server` ends every request a server holds: a name
 * that smuggled a second command, or named another server, would end
 * someone else's, so none of the hostile names makes one. */
static void test_shutdown_sessions(void **state)
{
	char buf[RUNTIME_API_CMD_MAX];

	assert_true(runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), "be_app", "w1"));
	assert_string_equal(buf, "shutdown sessions server be_app/w1");
	assert_true(runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), name_127, name_127));
	assert_int_equal(strlen(buf), strlen("shutdown sessions server /") + 2 * NAME_MAX_LEN);
	assert_false(runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), "be", name_128));
	assert_string_equal(buf, "");
	for (size_t i = 0; i < ARRAY_SIZE(invalid_names); i++) {
		memset(buf, 'X', sizeof(buf));
		if (runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), "be_app", invalid_names[i].name))
			fail_msg("server name accepted (%s): '%s'", invalid_names[i].why, buf);
		assert_string_equal(buf, "");
		memset(buf, 'X', sizeof(buf));
		if (runtime_api_cmd_shutdown_sessions(buf, sizeof(buf), invalid_names[i].name, "w1"))
			fail_msg("backend name accepted (%s): '%s'", invalid_names[i].why, buf);
		assert_string_equal(buf, "");
	}
	/* Cut short, it would be another command: not written at all. */
	memset(buf, 'X', sizeof(buf));
	assert_false(runtime_api_cmd_shutdown_sessions(buf, strlen("shutdown sessions server be/w1"),
						       "be", "w1"));
	assert_string_equal(buf, "");
}

static void test_show_servers_state(void **state)
{
	char buf[RUNTIME_API_CMD_MAX];

	assert_true(runtime_api_cmd_show_servers_state(buf, sizeof(buf), NULL));
	assert_string_equal(buf, "show servers state");
	assert_true(runtime_api_cmd_show_servers_state(buf, sizeof(buf), "be_app"));
	assert_string_equal(buf, "show servers state be_app");
	for (size_t i = 0; i + 1 < ARRAY_SIZE(invalid_names); i++) { /* NULL means "all" */
		memset(buf, 'X', sizeof(buf));
		assert_false(runtime_api_cmd_show_servers_state(buf, sizeof(buf), invalid_names[i].name));
		assert_string_equal(buf, "");
	}
}

/* A command that does not fit is not cut: a cut command is another one
 * ("set maxconn server be/w1 10" cut to "... 1"). */
static void test_buffer_too_small(void **state)
{
	const char *command = "set maxconn server be/w1 10";
	size_t need = strlen(command) + 1;
	char buf[64];

	assert_true(runtime_api_cmd_set_maxconn(buf, need, "be", "w1", 10));
	assert_string_equal(buf, command);
	memset(buf, 'X', sizeof(buf));
	assert_false(runtime_api_cmd_set_maxconn(buf, need - 1, "be", "w1", 10));
	assert_string_equal(buf, "");
	memset(buf, 'X', sizeof(buf));
	assert_false(runtime_api_cmd_set_state(buf, 10, "be", "w1", "drain"));
	assert_string_equal(buf, "");
	memset(buf, 'X', sizeof(buf));
	assert_false(runtime_api_cmd_set_state(buf, 0, "be", "w1", "drain"));
	assert_int_equal(buf[0], 'X'); /* size 0: not a byte written */
}

/* `show map FILE` carries a path fit for a command, or nothing. */
static void test_show_map(void **state)
{
	(void)state;
	char buf[64];
	assert_true(runtime_api_cmd_show_map(buf, sizeof(buf), "/etc/haproxy/breaker-owned.map"));
	assert_string_equal(buf, "show map /etc/haproxy/breaker-owned.map");
	static const char *const refused[] = {"", "a map", "x;show info", "m\nshutdown", NULL};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_false(runtime_api_cmd_show_map(buf, sizeof(buf), refused[i]));
		assert_string_equal(buf, "");
	}
	char small[12];
	assert_false(runtime_api_cmd_show_map(small, sizeof(small), "breaker-owned.map"));
	assert_string_equal(small, "");
}

/* The records' writes: (builder, path or table, key, value) -> command. */
enum record_builder { ADD_MAP, SET_MAP, DEL_MAP, SET_TABLE };

static bool build(enum record_builder b, char *buf, size_t size, const char *where,
		  const char *key, const char *value)
{
	switch (b) {
	case ADD_MAP: return runtime_api_cmd_add_map(buf, size, where, key, value);
	case SET_MAP: return runtime_api_cmd_set_map(buf, size, where, key, value);
	case DEL_MAP: return runtime_api_cmd_del_map(buf, size, where, key);
	case SET_TABLE: return runtime_api_cmd_set_table(buf, size, where, key, value);
	}
	return false;
}

static const struct {
	enum record_builder builder;
	const char *where, *key, *value, *command; /* command NULL: refused */
} record_writes[] = {
	{ADD_MAP, "breaker-owned.map", "workers/w1", "drain", "add map breaker-owned.map workers/w1 drain"},
	{SET_MAP, "/etc/haproxy/breaker-owned.map", "workers/w1", "drain,maxconn=50",
	 "set map /etc/haproxy/breaker-owned.map workers/w1 drain,maxconn=50"},
	{DEL_MAP, "breaker-watched.map", "w3@workers", NULL, "del map breaker-watched.map w3@workers"},
	{ADD_MAP, "breaker-watched.map", "w3@workers", "1", "add map breaker-watched.map w3@workers 1"},
	{SET_MAP, "breaker-retry-at.map", "workers", "1796062829",
	 "set map breaker-retry-at.map workers 1796062829"},
	{SET_TABLE, "breaker_verdicts", "workers/w1", "data.gpt0 1 data.gpc0 17 data.gpc1 2",
	 "set table breaker_verdicts key workers/w1 data.gpt0 1 data.gpc0 17 data.gpc1 2"},
	/* Keys: one or two names, one separator. */
	{ADD_MAP, "m.map", "a/b/c", "1", NULL},
	{ADD_MAP, "m.map", "a@b/c", "1", NULL},
	{ADD_MAP, "m.map", "/w1", "1", NULL},
	{ADD_MAP, "m.map", "workers/", "1", NULL},
	{DEL_MAP, "m.map", "w1; shutdown", NULL, NULL},
	{DEL_MAP, "m.map", "w1\nshow info", NULL, NULL},
	{DEL_MAP, "m.map", "", NULL, NULL},
	{DEL_MAP, "m.map", NULL, NULL, NULL},
	/* Paths: a plain path only. */
	{ADD_MAP, "a map", "w", "1", NULL},
	{DEL_MAP, "x;show info", "w", NULL, NULL},
	{DEL_MAP, "", "w", NULL, NULL},
	{SET_MAP, NULL, "w", "1", NULL},
	/* Values: nothing that ends a command or starts another. */
	{ADD_MAP, "m.map", "w", "1 2", NULL},
	{ADD_MAP, "m.map", "w", "1;show info", NULL},
	{SET_MAP, "m.map", "w", "", NULL},
	{SET_MAP, "m.map", "w", NULL, NULL},
	/* A table's name is a name; its data single-spaced words. */
	{SET_TABLE, "a;b", "w", "data.gpt0 1", NULL},
	{SET_TABLE, "t", "w", "data.gpt0  1", NULL},
	{SET_TABLE, "t", "w", " data.gpt0 1", NULL},
	{SET_TABLE, "t", "w", "data.gpt0 1 ", NULL},
	{SET_TABLE, "t", "w", "data.gpt0 1\nshutdown", NULL},
	{SET_TABLE, "t", "w", NULL, NULL},
};

static void test_record_writes(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(record_writes); i++) {
		char buf[RUNTIME_API_CMD_MAX] = "left over";
		bool built = build(record_writes[i].builder, buf, sizeof(buf), record_writes[i].where,
				   record_writes[i].key, record_writes[i].value);
		expect_command(built, buf, record_writes[i].command);
	}
	/* No room: nothing half-written. */
	char small[20];
	assert_false(runtime_api_cmd_add_map(small, sizeof(small), "breaker-owned.map",
					     "workers/w1", "drain"));
	assert_string_equal(small, "");
}

/* Every byte outside the names' alphabet, in either name of a key, is
 * refused by every record builder. */
static void test_record_keys_forbidden_bytes(void **state)
{
	(void)state;
	for (int b = 1; b < 256; b++) {
		char bad[4] = {'w', (char)b, '1', '\0'};
		bool allowed = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
			       (b >= '0' && b <= '9') || b == '-' || b == '_' || b == '.' || b == ':' ||
			       b == '/' || b == '@';
		char key[16], buf[RUNTIME_API_CMD_MAX];
		snprintf(key, sizeof(key), "be/%s", bad);
		/* A second separator is refused too. */
		bool ok = allowed && b != '/' && b != '@';
		assert_int_equal(runtime_api_cmd_add_map(buf, sizeof(buf), "m.map", key, "1"), ok);
		assert_int_equal(runtime_api_cmd_del_map(buf, sizeof(buf), "m.map", key), ok);
		assert_int_equal(runtime_api_cmd_set_table(buf, sizeof(buf), "t", key, "data.gpt0 1"), ok);
		assert_int_equal(runtime_api_cmd_del_map(buf, sizeof(buf), "m.map", bad), allowed);
		assert_int_equal(runtime_api_cmd_show_table(buf, sizeof(buf), bad),
				 allowed && b != '/' && b != '@');
	}
}

static void test_show_table(void **state)
{
	(void)state;
	char buf[64];
	assert_true(runtime_api_cmd_show_table(buf, sizeof(buf), "breaker_verdicts"));
	assert_string_equal(buf, "show table breaker_verdicts");
	assert_false(runtime_api_cmd_show_table(buf, sizeof(buf), NULL));
	assert_false(runtime_api_cmd_show_table(buf, sizeof(buf), "a b"));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_show_map),
		cmocka_unit_test(test_set_state_valid),
		cmocka_unit_test(test_set_state_refuses_names),
		cmocka_unit_test(test_name_lengths),
		cmocka_unit_test(test_every_forbidden_byte),
		cmocka_unit_test(test_set_state_refuses_states),
		cmocka_unit_test(test_set_maxconn),
		cmocka_unit_test(test_show_servers_state),
		cmocka_unit_test(test_shutdown_sessions),
		cmocka_unit_test(test_buffer_too_small),
		cmocka_unit_test(test_record_writes),
		cmocka_unit_test(test_record_keys_forbidden_bytes),
		cmocka_unit_test(test_show_table),
	};
	return cmocka_run_group_tests(tests, setup_names, NULL);
}

/*
 * sim_main.c - `make sim`: schedules drawn from consecutive seeds, each
 * run against the agent's real code in the simulated world, until the
 * count or the CPU budget is reached; a failing one shrunk and printed as
 * a case to replay. Then the figures, and one TAP line per invariant.
 *
 *   SIM_SEED=N        the first seed (1)
 *   SIM_SCHEDULES=N   how many schedules (0: as many as SIM_SECONDS allows)
 *   SIM_SECONDS=N     the CPU budget, seconds (40; 0: none)
 *   SIM_LENGTH=N      each schedule's simulated seconds (300)
 *   SIM_CASE=TEXT     replay one case (a line `sim1 seed=...`, or @FILE)
 *   SIM_BREAK=NAME    plant a misbehaviour (see --self-test)
 *   SIM_VERBOSE=1     each event as it happens, the commands HAProxy runs, the
 *                     agent's log; 2: the looks' commands too
 *   SIM_KEEP_GOING=1  on past a failing schedule
 *   sim --self-test   each planted misbehaviour is caught, by the right
 *                     invariant, and a caught case shrinks and replays
 *   sim --print       the case SIM_SEED and SIM_LENGTH draw, unrun
 *   sim --cases DIR   replay every case file of DIR (NAME.case: cases kept as tests)
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"
#include "sim.h"

static const char *const break_names[SIM_BREAKS] = {
	[BREAK_NONE] = "none",
	[BREAK_BUSY_AS_FAILURE] = "busy-as-failure",
	[BREAK_PROBE_AS_FAILURE] = "probe-as-failure",
	[BREAK_LIFT_OPERATOR] = "lift-operator",
	[BREAK_IGNORE_READY] = "ignore-ready",
	[BREAK_CAP_OFF] = "cap-off",
	[BREAK_SNAPSHOT_TRIPS] = "snapshot-trips",
	[BREAK_FORGET_HOLD] = "forget-hold",
	[BREAK_KEEP_MAP_ENTRY] = "keep-map-entry",
	[BREAK_PEER_UNSEEN] = "peer-unseen",
	[BREAK_PEER_STALE] = "peer-stale",
	[BREAK_VERDICT_LOST] = "verdict-lost",
};

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 10) : fallback;
}

static enum sim_break break_named(const char *name)
{
	for (int b = 0; b < SIM_BREAKS; b++)
		if (name && strcmp(name, break_names[b]) == 0)
			return (enum sim_break)b;
	return SIM_BREAKS;
}

static void print_figures(const struct sim_figures *f, unsigned schedules, double cpu)
{
	double hours = (double)f->simulated_ms / 3.6e6;
	if (cpu <= 0)
		cpu = 1e-9;
	printf("# %u schedules, %" PRIu64 " steps, %.2f simulated hours, %" PRIu64
	       " requests, %" PRIu64 " SPOP observations, %" PRIu64 " Runtime API commands, %" PRIu64
	       " looks, in %.2f CPU-seconds\n",
	       schedules, f->steps, hours, f->requests, f->observations, f->commands, f->looks, cpu);
	printf("# agent commands that raced an operator's change they could not have seen: %" PRIu64
	       "\n", f->races);
	printf("# per CPU-second: %.2f schedules, %.0f steps, %.2f simulated hours\n",
	       schedules / cpu, (double)f->steps / cpu, hours / cpu);
}

/* Shrinks a failing schedule and prints it as a case. */
static void report_failure(struct sim_schedule *sc, enum sim_break brk,
			   const struct sim_violation *v)
{
	unsigned runs = 0;
	unsigned events = sc->nb_events;
	printf("# FAILED: seed %" PRIu64 ": %s at %.3f s: %s\n", sc->seed,
	       sim_invariant_name(v->inv), (double)v->at_ms / 1000, v->what);
	sim_shrink(sc, brk, v->inv, v->at_ms, &runs);
	struct sim_violation again;
	sim_run(sc, brk, &again, NULL, false);
	printf("# shrunk in %u runs from %u events to %u, %.1f s: %s at %.3f s: %s\n", runs, events,
	       sc->nb_events, (double)sc->duration_ms / 1000, sim_invariant_name(again.inv),
	       (double)again.at_ms / 1000, again.what);
	printf("# replay: make sim SIM_CASE='");
	fflush(stdout);
	char line[16384];
	FILE *mem = fmemopen(line, sizeof(line), "w");
	if (mem) {
		sim_schedule_print(sc, mem);
		fclose(mem);
		line[strcspn(line, "\n")] = '\0';
		printf("%s'%s%s\n", line, brk ? " SIM_BREAK=" : "", brk ? break_names[brk] : "");
	}
}

/* The TAP lines, one per invariant; failures[i]: the schedules that
 * broke invariant i. */
static int report_invariants(const struct sim_figures *f, const unsigned *failures)
{
	int failed = 0;
	printf("1..%d\n", SIM_INVARIANTS);
	for (int i = 0; i < SIM_INVARIANTS; i++) {
		printf("%sok %d - %s: %" PRIu64 " checks", failures[i] ? "not " : "", i + 1,
		       sim_invariant_name((enum sim_invariant)i), f->checks[i]);
		if (failures[i])
			printf(", broken in %u schedule%s", failures[i], failures[i] == 1 ? "" : "s");
		printf("\n");
		failed += failures[i] != 0;
	}
	return failed ? 1 : 0;
}

/* A case file's schedule: its first line that is not a comment (#). */
static const char *skip_comments(const char *text)
{
	while (*text == '#')
		text = strchr(text, '\n') ? strchr(text, '\n') + 1 : text + strlen(text);
	return text;
}

static int run_case(const char *text, enum sim_break brk, int verbose)
{
	struct sim_schedule sc;
	char err[256], buf[65536];
	if (text[0] == '@') {
		FILE *in = fopen(text + 1, "r");
		size_t n = in ? fread(buf, 1, sizeof(buf) - 1, in) : 0;
		if (in)
			fclose(in);
		buf[n] = '\0';
		text = skip_comments(buf);
	}
	if (!sim_schedule_parse(&sc, text, err, sizeof(err))) {
		fprintf(stderr, "sim: SIM_CASE: %s\n", err);
		return 2;
	}
	struct sim_figures f = {0};
	struct sim_violation v;
	unsigned failures[SIM_INVARIANTS] = {0};
	double cpu = cpu_seconds();
	bool ok = sim_run(&sc, brk, &v, &f, verbose);
	if (!ok) {
		printf("# FAILED: seed %" PRIu64 ": %s at %.3f s: %s\n", sc.seed,
		       sim_invariant_name(v.inv), (double)v.at_ms / 1000, v.what);
		failures[v.inv]++;
	}
	print_figures(&f, 1, cpu_seconds() - cpu);
	return report_invariants(&f, failures);
}

static int run_seeds(enum sim_break brk, int verbose)
{
	uint64_t seed = env_u64("SIM_SEED", 1);
	uint64_t count = env_u64("SIM_SCHEDULES", 0);
	double budget = (double)env_u64("SIM_SECONDS", 40);
	uint64_t length_ms = env_u64("SIM_LENGTH", 300) * 1000;
	bool keep_going = env_u64("SIM_KEEP_GOING", 0) != 0;
	struct sim_figures f = {0};
	struct sim_violation v = {0};
	unsigned done = 0, failures[SIM_INVARIANTS] = {0};
	double cpu = cpu_seconds();

	if (count == 0 && budget == 0)
		count = 1;
	for (; count == 0 || done < count; done++) {
		if (budget > 0 && cpu_seconds() - cpu >= budget)
			break;
		struct sim_schedule sc;
		sim_schedule_generate(&sc, seed + done, length_ms);
		if (sim_run(&sc, brk, &v, &f, verbose))
			continue;
		/* SIM_KEEP_GOING: every failing seed counted, the first of
		 * each invariant shrunk (the shrinking's runs are not in the
		 * figures). */
		if (failures[v.inv]++ == 0) {
			double shrink_start = cpu_seconds();
			report_failure(&sc, brk, &v);
			cpu += cpu_seconds() - shrink_start;
		}
		else
			printf("# FAILED: seed %" PRIu64 ": %s at %.3f s: %s\n", sc.seed,
			       sim_invariant_name(v.inv), (double)v.at_ms / 1000, v.what);
		if (!keep_going) {
			done++;
			break;
		}
	}
	printf("# seeds %" PRIu64 " to %" PRIu64 ", %" PRIu64 " simulated seconds each\n", seed,
	       seed + done - 1, length_ms / 1000);
	print_figures(&f, done, cpu_seconds() - cpu);
	return report_invariants(&f, failures);
}

/* The invariant a case's "# expect: NAME" line says it breaks (a defect
 * known and not fixed yet), SIM_INVARIANTS when it has none. */
static enum sim_invariant expected_failure(const char *text)
{
	const char *at = strstr(text, "# expect: ");
	if (!at)
		return SIM_INVARIANTS;
	at += strlen("# expect: ");
	for (int i = 0; i < SIM_INVARIANTS; i++) {
		const char *name = sim_invariant_name((enum sim_invariant)i);
		size_t len = strlen(name);
		if (strncmp(at, name, len) == 0 && (at[len] == '\n' || at[len] == '\0'))
			return (enum sim_invariant)i;
	}
	return SIM_INVARIANTS;
}

/* Replays every DIR/NAME.case: a case kept as a test must pass; one that
 * says "# expect: INVARIANT" (a defect found and not fixed yet) must
 * still break that invariant - once fixed, it fails here until it moves
 * among the cases that pass. */
static int run_cases(const char *dir)
{
	DIR *d = opendir(dir);
	int failed = 0, n = 0;
	if (!d) {
		fprintf(stderr, "sim: %s: no such directory\n", dir);
		return 2;
	}
	struct dirent *de;
	char names[256][256];
	int nb = 0;
	while ((de = readdir(d)) && nb < 256) {
		size_t len = strlen(de->d_name);
		if (len > 5 && strcmp(de->d_name + len - 5, ".case") == 0)
			snprintf(names[nb++], sizeof(names[0]), "%s", de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nb, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	printf("1..%d\n", nb);
	for (int i = 0; i < nb; i++) {
		char path[4096], text[65536], err[256];
		snprintf(path, sizeof(path), "%.3800s/%.255s", dir, names[i]);
		FILE *in = fopen(path, "r");
		size_t len = in ? fread(text, 1, sizeof(text) - 1, in) : 0;
		if (in)
			fclose(in);
		text[len] = '\0';
		enum sim_invariant expect = expected_failure(text);
		struct sim_schedule sc;
		struct sim_violation v = {0};
		bool parsed = sim_schedule_parse(&sc, skip_comments(text), err, sizeof(err));
		bool passed = parsed && sim_run(&sc, BREAK_NONE, &v, NULL, false);
		bool ok = expect == SIM_INVARIANTS ? passed : parsed && !passed && v.inv == expect;
		printf("%sok %d - case %s: ", ok ? "" : "not ", ++n, names[i]);
		if (!parsed)
			printf("unreadable: %s\n", err);
		else if (expect == SIM_INVARIANTS)
			printf("%s%s%s%s\n", passed ? "passes" : "broke ",
			       passed ? "" : sim_invariant_name(v.inv), passed ? "" : ": ",
			       passed ? "" : v.what);
		else if (ok)
			printf("the known defect still breaks %s (%s)\n", sim_invariant_name(expect), v.what);
		else
			printf("expected to break %s, %s%s: fixed? keep it as a passing case\n",
			       sim_invariant_name(expect), passed ? "passes" : "broke ",
			       passed ? "" : sim_invariant_name(v.inv));
		failed += !ok;
	}
	return failed ? 1 : 0;
}

/* Each planted misbehaviour, a world where it shows, and the invariant
 * that must catch it. */
static const struct self_test {
	enum sim_break brk;
	enum sim_invariant expect;
	const char *schedule;
} self_tests[] = {
	{BREAK_BUSY_AS_FAILURE, INV_BUSY_NEVER_CHARGED,
	 "sim1 seed=7 duration_ms=60000 policy=3,5000,50,0,0,0 backends=3/0/90/0 "
	 "events=1000:worker:0:0:1,2,0,0,503,0"},
	{BREAK_PROBE_AS_FAILURE, INV_CAPACITY_PROBE_CLOSES,
	 "sim1 seed=7 duration_ms=60000 policy=3,5000,50,0,0,0 backends=3/0/90/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100;4000:worker:0:0:2,1,0,0,503,0"},
	{BREAK_LIFT_OPERATOR, INV_OPERATOR_HAND_KEPT,
	 "sim1 seed=7 duration_ms=60000 policy=3,5000,50,0,0,1 backends=3/0/60/0 "
	 "events=2000:op-drain:0:1:0,0,0,0,0,0"},
	{BREAK_IGNORE_READY, INV_HAPROXY_FOLLOWS_BREAKERS,
	 "sim1 seed=7 duration_ms=60000 policy=3,5000,50,0,0,1 backends=3/0/60/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100;4000:worker:0:0:0,0,0,0,0,0"},
	{BREAK_CAP_OFF, INV_EJECTION_CAP,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1 backends=3/0/60/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100;1000:worker:0:1:3,0,0,0,0,100;"
	 "1000:worker:0:2:3,0,0,0,0,100"},
	{BREAK_SNAPSHOT_TRIPS, INV_SNAPSHOT_KEEPS,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1 backends=3/0/60/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100;6000:agent-restart-snapshot:0:0:0,0,0,0,0,0"},
	{BREAK_FORGET_HOLD, INV_OPERATOR_HOLD_KEPT,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1 backends=3/0/60/0 "
	 "events=3000:hold-in:0:0:0,0,0,0,0,0;4000:worker:0:0:3,0,0,0,0,100"},
	{BREAK_FORGET_HOLD, INV_OPERATOR_HOLD_KEPT,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1 backends=3/0/60/0 "
	 "events=3000:hold-out:0:0:0,0,0,0,0,0"},
	/* A failing worker drained, its server deleted: the agent's entry
	 * in the ownership map must go with it. */
	{BREAK_KEEP_MAP_ENTRY, INV_DELETED_FORGOTTEN,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1 backends=3/0/60/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100;8000:del-server:0:0:1,0,0,0,0,0"},
	/* Another node opens a healthy server: this node must hold it. */
	{BREAK_PEER_UNSEEN, INV_HAPROXY_FOLLOWS_BREAKERS,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1,peers backends=3/0/60/0 "
	 "events=3000:peer-open:0:1:1,0,0,0,0,0;20000:peer-close:0:1:0,0,0,0,0,0"},
	/* ... and let go once it is closed. */
	{BREAK_PEER_STALE, INV_PEER_VERDICTS_KEPT,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1,peers backends=3/0/60/0 "
	 "events=3000:peer-open:0:1:1,0,0,0,0,0;20000:peer-close:0:1:0,0,0,0,0,0"},
	/* This node's own breaker opens: its verdict must be in the table. */
	{BREAK_VERDICT_LOST, INV_PEER_VERDICTS_KEPT,
	 "sim1 seed=7 duration_ms=60000 policy=3,20000,50,0,0,1,peers backends=3/0/60/0 "
	 "events=1000:worker:0:0:3,0,0,0,0,100"},
};

static int by_event_time(const void *a, const void *b)
{
	const struct sim_event *x = a, *y = b;
	return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

static int self_test(void)
{
	int failed = 0, n = 0;
	size_t nb = sizeof(self_tests) / sizeof(self_tests[0]);
	printf("1..%zu\n", nb + 2);
	for (size_t i = 0; i < nb; i++) {
		const struct self_test *t = &self_tests[i];
		struct sim_schedule sc;
		struct sim_violation v;
		char err[256];
		if (!sim_schedule_parse(&sc, t->schedule, err, sizeof(err))) {
			printf("not ok %d - %s: the schedule: %s\n", ++n, break_names[t->brk], err);
			failed++;
			continue;
		}
		/* Without the plant the same world is clean: what is caught
		 * is the plant. */
		bool clean = sim_run(&sc, BREAK_NONE, &v, NULL, false);
		enum sim_invariant clean_inv = v.inv;
		bool broke = !sim_run(&sc, t->brk, &v, NULL, false);
		bool caught = broke && v.inv == t->expect;
		printf("%sok %d - %s is caught by %s (%s%s%s), and the world without it is clean%s%s\n",
		       clean && caught ? "" : "not ", ++n, break_names[t->brk],
		       sim_invariant_name(t->expect), !broke ? "not caught" : caught ? "" : "caught by ",
		       broke && !caught ? sim_invariant_name(v.inv) : "", broke ? v.what : "",
		       clean ? "" : ": it broke ", clean ? "" : sim_invariant_name(clean_inv));
		failed += !(clean && caught);
		if (i == 0) {
			/* The shrinker: the caught case padded with events that
			 * do not matter, shrunk back, still failing. */
			struct sim_schedule padded = sc;
			struct sim_schedule noise;
			sim_schedule_generate(&noise, 99, sc.duration_ms);
			for (unsigned k = 0; k < noise.nb_events && padded.nb_events < 8; k++) {
				struct sim_event ev = noise.events[k];
				/* Elsewhere in the world: another backend's traffic,
				 * the Runtime API slow for a moment. */
				ev.kind = k % 2 ? EV_RATE : EV_API_DOWN;
				ev.be = 1 % sc.nb_backends;
				ev.a[0] = k % 2 ? 40 : 300;
				padded.events[padded.nb_events++] = ev;
			}
			qsort(padded.events, padded.nb_events, sizeof(padded.events[0]), by_event_time);
			struct sim_violation pv;
			unsigned runs = 0;
			bool padded_fails = !sim_run(&padded, t->brk, &pv, NULL, false) &&
					    pv.inv == t->expect;
			unsigned before = padded.nb_events;
			if (padded_fails)
				sim_shrink(&padded, t->brk, t->expect, pv.at_ms, &runs);
			bool replays = padded_fails && !sim_run(&padded, t->brk, &pv, NULL, false) &&
				       pv.inv == t->expect;
			bool shorter = padded.nb_events < before && padded.duration_ms < sc.duration_ms;
			printf("%sok %d - the shrinker: %u events to %u, %.1f s, in %u runs, still %s\n",
			       replays && shorter ? "" : "not ", ++n, before, padded.nb_events,
			       (double)padded.duration_ms / 1000, runs,
			       replays ? "failing" : "NOT failing");
			failed += !(replays && shorter);
		}
	}
	/* A case printed reads back as the same schedule. */
	struct sim_schedule a, b;
	char text[16384], err[256];
	sim_schedule_generate(&a, 12345, 600000);
	FILE *mem = fmemopen(text, sizeof(text), "w");
	sim_schedule_print(&a, mem);
	fclose(mem);
	bool same = sim_schedule_parse(&b, text, err, sizeof(err)) && memcmp(&a, &b, sizeof(a)) == 0;
	printf("%sok %d - a printed case parses back to the same schedule\n", same ? "" : "not ", ++n);
	failed += !same;
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	int verbose = (int)env_u64("SIM_VERBOSE", 0);
	log_init(verbose ? LOG_LEVEL_NOTICE : LOG_LEVEL_ERROR, false, "sim");
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc > 1 && strcmp(argv[1], "--self-test") == 0)
		return self_test();
	if (argc > 2 && strcmp(argv[1], "--cases") == 0)
		return run_cases(argv[2]);
	if (argc > 1 && strcmp(argv[1], "--print") == 0) {
		struct sim_schedule sc;
		sim_schedule_generate(&sc, env_u64("SIM_SEED", 1), env_u64("SIM_LENGTH", 300) * 1000);
		sim_schedule_print(&sc, stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: sim [--self-test | --cases DIR | --print] (knobs: SIM_SEED, "
				"SIM_SCHEDULES, SIM_SECONDS, SIM_LENGTH, SIM_CASE, SIM_BREAK, "
				"SIM_VERBOSE)\n");
		return 2;
	}
	const char *brk_name = getenv("SIM_BREAK");
	enum sim_break brk = brk_name && *brk_name ? break_named(brk_name) : BREAK_NONE;
	if (brk == SIM_BREAKS) {
		fprintf(stderr, "sim: SIM_BREAK=%s: expected one of", brk_name);
		for (int b = 0; b < SIM_BREAKS; b++)
			fprintf(stderr, " %s", break_names[b]);
		fprintf(stderr, "\n");
		return 2;
	}
	const char *one = getenv("SIM_CASE");
	if (one && *one)
		return run_case(one, brk, verbose);
	return run_seeds(brk, verbose);
}

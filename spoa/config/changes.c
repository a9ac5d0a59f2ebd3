/*
 * changes.c - what a reload may change, decided by the key table: a key
 * without CONFIG_KEY_RELOADABLE takes effect at the next restart, and the
 * [haproxy] keys tell whether the links to HAProxy must be rebuilt. And
 * what a reload must not do: leave a running listener open to everyone, or
 * let it stop asking for client certificates -- judged by the reload
 * itself, and by --check against the running agent's file (running_file.h).
 *
 * Values are compared as the file would spell them (config_key_format is
 * canonical), so every type compares the same way.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "config/keys.h"
#include "config/running_file.h"
#include "config/sources.h"

/* Enough for the longest value of a key kept in struct config (policy
 * keys all reload): a full list of addresses and their separators. A
 * truncated text could hide a difference, hence the checks. */
#define VALUE_MAX 4096
_Static_assert(AGENT_MAX_LISTENERS * (CONFIG_LISTEN_MAX_LEN + 2) < VALUE_MAX,
	       "listen addresses fit a formatted value");
_Static_assert(ENFORCE_MAX_HAPROXY * (CONFIG_LISTEN_MAX_LEN + 2) < VALUE_MAX,
	       "runtime_api sockets fit a formatted value");

static bool key_differs(const struct config_key *k, const struct config *a,
			const struct config *b)
{
	char va[VALUE_MAX], vb[VALUE_MAX];
	config_key_format(k, a, &a->global.values, va, sizeof(va));
	config_key_format(k, b, &b->global.values, vb, sizeof(vb));
	return strcmp(va, vb) != 0;
}

unsigned config_restart_only_changes(const struct config *running, const struct config *next,
				     void (*fn)(void *ctx, const char *key), void *ctx)
{
	unsigned changed = 0;
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if ((k->flags & CONFIG_KEY_RELOADABLE) || k->place != CONFIG_IN_CONFIG ||
		    !key_differs(k, running, next))
			continue;
		changed++;
		if (fn)
			fn(ctx, k->name);
	}
	return changed;
}

void config_keep_restart_only(struct config *next, const struct config *running)
{
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if ((k->flags & CONFIG_KEY_RELOADABLE) || k->place != CONFIG_IN_CONFIG)
			continue;
		size_t size = k->size;
		if (k->flags & CONFIG_KEY_REPEATABLE) {
			size *= k->max_count;
			memcpy((char *)next + k->count_offset, (const char *)running + k->count_offset,
			       sizeof(unsigned));
		}
		memcpy((char *)next + k->offset, (const char *)running + k->offset, size);
		if (k->flags & CONFIG_KEY_MARKS_GIVEN)
			memcpy((char *)next + k->given_offset, (const char *)running + k->given_offset,
			       sizeof(bool));
	}
}

bool config_haproxy_changed(const struct config *a, const struct config *b)
{
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if ((k->sections & CONFIG_SECTION_HAPROXY) && key_differs(k, a, b))
			return true;
	}
	return false;
}

int config_check_reload(const struct config *running, const struct config *next, FILE *errors)
{
	/* What would run: the file's allow lists, the running listeners. The
	 * new file alone passed its own check, but its listen or admin (say
	 * unix:PATH and none, which need no allowlist) is not what keeps
	 * running: a TCP listener on 0.0.0.0 would stay, with nothing left to
	 * say who may connect. A shallow copy, only read: next keeps owning
	 * its overrides and policies. */
	struct config after = *next;
	config_keep_restart_only(&after, running);
	int problems = config_check_exposure(&after, NULL, errors);

	/* The CA is a guard like allow is ("allow = any" is fair behind it):
	 * dropped live, every client would get past the handshake without a
	 * certificate on a listener opened for certified peers only. Another
	 * CA is a rotation and reloads; adding one only narrows; turning TLS
	 * off waits for a restart anyway (reload.c), and so does this. */
	if (running->tls_cert[0] && running->tls_ca[0] && after.tls_cert[0] && !after.tls_ca[0]) {
		fprintf(errors,
			"%s: tls_ca removed while the SPOP listeners serve TLS: they would stop "
			"asking clients for a certificate; keep tls_ca = %s, or restart to serve "
			"TLS without client certificates\n",
			CONFIG_PROGRAM, running->tls_ca);
		problems++;
	}
	return problems;
}

/* What the reload logs as "reload: KEY changed; ...", said ahead of it. */
static void warn_restart_only(void *ctx, const char *key)
{
	fprintf(ctx, "%s: warning: %s changed; a reload leaves it as it runs, it takes effect at "
		     "the next restart\n", CONFIG_PROGRAM, key);
}

int config_check_running(const struct config *next, FILE *errors)
{
	char path[CONFIG_PATH_MAX_LEN + sizeof(RUNNING_FILE_SUFFIX)], err[512];
	struct config running;
	long pid = 0;

	/* Where the agent that would reload next writes it: beside the state
	 * file both name (state_file only changes at a restart). */
	if (!running_file_path(next, path, sizeof(path)) || !path[0])
		return 0;
	switch (running_file_read(path, &running, &pid, err, sizeof(err))) {
	case RUNNING_FILE_READ_MISSING:
		return 0; /* no agent runs on it: checked as for a start, as ever */
	case RUNNING_FILE_READ_FAILED:
		fprintf(errors,
			"%s: warning: %s: %s; checked without what the running agent keeps until a "
			"restart\n",
			CONFIG_PROGRAM, path, err);
		return 0;
	case RUNNING_FILE_READ_OK:
		break;
	}
	/* Left by an agent that did not stop cleanly: nothing runs to reload.
	 * EPERM says it runs, as another user. */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		fprintf(errors,
			"%s: warning: %s: left by process %ld, which no longer runs; checked as for a "
			"start\n",
			CONFIG_PROGRAM, path, pid);
		return 0;
	}
	config_restart_only_changes(&running, next, warn_restart_only, errors);
	if ((running.tls_cert[0] != '\0') != (next->tls_cert[0] != '\0'))
		fprintf(errors,
			"%s: warning: tls_cert %s; a reload leaves TLS as it runs, it takes effect at "
			"the next restart\n",
			CONFIG_PROGRAM, next->tls_cert[0] ? "set" : "removed");
	int problems = config_check_reload(&running, next, errors);
	if (problems > 0)
		fprintf(errors,
			"%s: %s: valid for a start, refused for a reload: " CONFIG_RELOAD_EXPOSED
			" (the agent running as process %ld, per %s); restart it to apply this "
			"file\n",
			CONFIG_PROGRAM, next->path ? next->path : "(defaults)", pid, path);
	config_free(&running);
	return problems;
}

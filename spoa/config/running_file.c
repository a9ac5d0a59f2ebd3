/*
 * running_file.c - the running agent's restart-only values as a file, for
 * --check (see running_file.h): written as text, read back through the key
 * table's setters. Formatting and parsing are pure; running_file_read() is
 * the one function here that touches the disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/running_file.h"
#include "util/errmsg.h"

#define LINE_MAX_LEN 1024 /* a path or an address is far shorter */

bool running_file_holds(const struct config_key *k)
{
	if (k->place != CONFIG_IN_CONFIG || k->type == CONFIG_OBSOLETE)
		return false;
	if (!(k->flags & CONFIG_KEY_RELOADABLE))
		return true;
	/* Reloadable, but the reload judges them against what runs: TLS is
	 * turned on or off only by a restart, and tls_ca may change but not
	 * go away while it runs (config_check_reload). */
	return strcmp(k->name, "tls_cert") == 0 || strcmp(k->name, "tls_ca") == 0;
}

bool running_file_path(const struct config *c, char *buf, size_t size)
{
	if (!c->state.file[0]) {
		if (size)
			buf[0] = '\0';
		return true;
	}
	return (size_t)snprintf(buf, size, "%s" RUNNING_FILE_SUFFIX, c->state.file) < size;
}

/* ---- writing ---- */

struct text {
	char *buf;
	size_t size, len;
	bool full;
};

static void add(struct text *t, const char *name, const char *value)
{
	size_t room = t->len < t->size ? t->size - t->len : 0;
	int n = snprintf(t->buf + t->len, room, "%s = %s\n", name, value);
	if (n < 0 || (size_t)n >= room)
		t->full = true;
	else
		t->len += (size_t)n;
}

/* A value that would not read back as it is: a newline would start a line
 * of its own, and the reader trims the blanks around a value. */
static bool writable(const char *value)
{
	size_t n = strlen(value);
	return !strpbrk(value, "\r\n") &&
	       (n == 0 || (value[0] != ' ' && value[0] != '\t' && value[n - 1] != ' ' &&
			   value[n - 1] != '\t'));
}

bool running_file_format(const struct config *c, long pid, char *buf, size_t size, size_t *len,
			 char *err, size_t err_size)
{
	struct text t = {.buf = buf, .size = size};
	char value[LINE_MAX_LEN];

	if (size)
		buf[0] = '\0';
	t.len = (size_t)snprintf(buf, size,
				 "# spoa-breaker: what a reload leaves as it runs, read by --check.\n"
				 "# Written at start and at each reload, removed at exit.\n");
	if (t.len >= size) {
		errmsg_set(err, err_size, "the text does not fit %zu bytes", size);
		return false;
	}
	snprintf(value, sizeof(value), "%ld", pid);
	add(&t, "pid", value);
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (!running_file_holds(k))
			continue;
		/* A list of addresses: one line each, as a file repeats the key. */
		bool list = (k->flags & CONFIG_KEY_REPEATABLE) && k->type == CONFIG_ADDRESS;
		unsigned count = 1;
		if (list)
			count = *(const unsigned *)(const void *)((const char *)c + k->count_offset);
		for (unsigned j = 0; j < count; j++) {
			if (list)
				snprintf(value, sizeof(value), "%s",
					 (const char *)c + k->offset + (size_t)j * k->size);
			else if (config_key_format(k, c, &c->global.values, value, sizeof(value)) >=
				 sizeof(value))
				t.full = true;
			if (!writable(value)) {
				errmsg_set(err, err_size, "%s '%s' cannot be written on one line", k->name,
					   value);
				return false;
			}
			add(&t, k->name, value);
		}
	}
	if (t.full) {
		errmsg_set(err, err_size, "the text does not fit %zu bytes", size);
		return false;
	}
	*len = t.len;
	return true;
}

/* ---- reading ---- */

static void trim(char **start, char **end)
{
	while (*start < *end && (**start == ' ' || **start == '\t'))
		(*start)++;
	while (*end > *start && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\r'))
		(*end)--;
}

static bool parse_pid(const char *value, long *pid)
{
	char *end;
	errno = 0;
	long v = strtol(value, &end, 10);
	if (errno || end == value || *end || v <= 0)
		return false;
	*pid = v;
	return true;
}

/* One "key = value" line (NUL-terminated, blanks trimmed) into running. */
static bool parse_line(char *line, int number, struct config *running, long *pid,
		       bool seen[CONFIG_NB_KEYS], bool *pid_seen, char *err, size_t err_size)
{
	char *eq = strchr(line, '=');
	if (!eq) {
		errmsg_set(err, err_size, "line %d: expected 'key = value'", number);
		return false;
	}
	char *name = line, *name_end = eq, *value = eq + 1, *value_end = line + strlen(line);
	trim(&name, &name_end);
	trim(&value, &value_end);
	*name_end = '\0';
	*value_end = '\0';

	if (strcmp(name, "pid") == 0) {
		if (!parse_pid(value, pid)) {
			errmsg_set(err, err_size, "line %d: pid '%s': expected a process id", number,
				   value);
			return false;
		}
		*pid_seen = true;
		return true;
	}
	const struct config_key *k = config_key_find(name);
	if (!k || !running_file_holds(k)) {
		errmsg_set(err, err_size, "line %d: '%s' is not a key this file holds", number,
			   name);
		return false;
	}
	char why[256];
	if (!config_key_set(k, running, NULL, value, why, sizeof(why))) {
		errmsg_set(err, err_size, "line %d: %s '%s': %s", number, name, value, why);
		return false;
	}
	seen[config_key_index(k)] = true;
	return true;
}

bool running_file_parse(const char *text, size_t len, struct config *running, long *pid,
			char *err, size_t err_size)
{
	bool seen[CONFIG_NB_KEYS] = {false}, pid_seen = false;
	char line[LINE_MAX_LEN];
	int number = 0;

	config_defaults(running);
	if (memchr(text, '\0', len)) {
		errmsg_set(err, err_size, "a NUL byte: not text");
		return false;
	}
	for (size_t at = 0; at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
		number++;
		if (n >= sizeof(line)) {
			errmsg_set(err, err_size, "line %d: longer than %zu characters", number,
				   sizeof(line) - 1);
			return false;
		}
		memcpy(line, text + at, n);
		line[n] = '\0';
		at += n + 1;

		char *start = line, *end = line + n;
		trim(&start, &end);
		*end = '\0';
		if (*start == '\0' || *start == '#')
			continue;
		if (!parse_line(start, number, running, pid, seen, &pid_seen, err, err_size))
			return false;
	}
	if (!pid_seen) {
		errmsg_set(err, err_size, "no pid line");
		return false;
	}
	/* Every value a reload judges by: one missing would be the default
	 * instead of what runs, and the check would answer for another agent. */
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		if (running_file_holds(&config_keys[i]) && !seen[i]) {
			errmsg_set(err, err_size, "no %s line", config_keys[i].name);
			return false;
		}
	}
	return true;
}

enum running_file_read running_file_read(const char *path, struct config *running, long *pid,
					 char *err, size_t err_size)
{
	config_defaults(running);
	/* O_NONBLOCK: a FIFO put there must not hang --check (and with it
	 * `systemctl reload`); it is refused below. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return RUNNING_FILE_READ_MISSING;
		if (errno == ELOOP)
			errmsg_set(err, err_size, "a symbolic link, not the file the agent writes");
		else
			errmsg_set(err, err_size, "cannot open: %s", strerror(errno));
		return RUNNING_FILE_READ_FAILED;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		errmsg_set(err, err_size, "not a regular file");
		close(fd);
		return RUNNING_FILE_READ_FAILED;
	}
	char *text = malloc(RUNNING_FILE_MAX_BYTES + 1);
	if (!text) {
		errmsg_set(err, err_size, "out of memory");
		close(fd);
		return RUNNING_FILE_READ_FAILED;
	}
	size_t len = 0;
	ssize_t n;
	while (len <= RUNNING_FILE_MAX_BYTES &&
	       (n = read(fd, text + len, RUNNING_FILE_MAX_BYTES + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			errmsg_set(err, err_size, "cannot read: %s", strerror(errno));
			free(text);
			close(fd);
			return RUNNING_FILE_READ_FAILED;
		}
		len += (size_t)n;
	}
	close(fd);
	bool ok = len <= RUNNING_FILE_MAX_BYTES;
	if (!ok)
		errmsg_set(err, err_size, "larger than %d bytes", RUNNING_FILE_MAX_BYTES);
	else
		ok = running_file_parse(text, len, running, pid, err, err_size);
	free(text);
	return ok ? RUNNING_FILE_READ_OK : RUNNING_FILE_READ_FAILED;
}

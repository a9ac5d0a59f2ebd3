/*
 * running_file.h - what a running agent keeps until a restart, written
 * down for --check (running_file.c).
 *
 * A reload leaves listen, admin and every other key only a restart applies
 * at their running values, and TLS on or off as it runs; the reload judges
 * the new file against them (config_check_reload). --check is another
 * process: it learns them from a small file the agent writes at start and
 * after each reload, beside its state file (STATE_FILE.running), and
 * removes at a clean exit. So `systemctl reload`, which runs --check before
 * the signal, fails on a file the reload would refuse, and says why.
 *
 * A file rather than a question to the admin listener: it answers with
 * admin = none, when admin itself is what the new file changes, and when
 * admin_allow does not let this host in; --check needs no HTTP client; and
 * the file is as private as the state directory it sits in.
 *
 * The text: "#" comments and "key = value" lines, `pid` (the agent's
 * process), then every key the file holds as the configuration file spells
 * it (config_key_format), one line per listen address.
 */
#ifndef SPOA_CONFIG_RUNNING_FILE_H
#define SPOA_CONFIG_RUNNING_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "config/keys.h"

#define RUNNING_FILE_SUFFIX ".running"
/* Larger is not a file of ours: read no further. */
#define RUNNING_FILE_MAX_BYTES 16384

/* Whether the file holds key k: every [agent] or [haproxy] key only a
 * restart applies, and tls_cert and tls_ca (TLS stays on or off until a
 * restart, and whether it asks for client certificates must not drop). */
bool running_file_holds(const struct config_key *k);

/* The file of an agent configured as c: its state_file followed by
 * RUNNING_FILE_SUFFIX, or "" when it keeps no state file (it then writes
 * none). False when that does not fit size bytes. */
bool running_file_path(const struct config *c, char *buf, size_t size);

/*
 * Pure: the file's text for an agent running c as process pid, into buf
 * (size bytes, NUL-terminated), *len its length. False with err when a
 * value holds a newline (a line of its own would then be read back) or the
 * text does not fit.
 */
bool running_file_format(const struct config *c, long pid, char *buf, size_t size, size_t *len,
			 char *err, size_t err_size);

/*
 * Pure: reads text (len bytes, NUL not needed) into running, which starts
 * from config_defaults(), each line set through the key table; *pid the
 * writer's process. False with err ("line 3: ...") when a line is not
 * "key = value", names a key the file does not hold or a value the key
 * refuses, or when pid or a held key is missing. running owns nothing
 * either way (config_free is harmless on it).
 */
bool running_file_parse(const char *text, size_t len, struct config *running, long *pid,
			char *err, size_t err_size);

enum running_file_read {
	RUNNING_FILE_READ_OK,      /* *running and *pid hold what the file says */
	RUNNING_FILE_READ_MISSING, /* no such file (or directory): no agent published one */
	RUNNING_FILE_READ_FAILED,  /* err says why: unreadable, not a regular file, malformed */
};

/* Reads and parses path. Never blocks on it (a FIFO is refused unread) and
 * reads at most RUNNING_FILE_MAX_BYTES. err never names path: the caller
 * does. */
enum running_file_read running_file_read(const char *path, struct config *running, long *pid,
					 char *err, size_t err_size);

#endif /* SPOA_CONFIG_RUNNING_FILE_H */

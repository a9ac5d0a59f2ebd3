/*
 * running_publish.c - the running file (config/running_file.h) written at
 * start and at each reload, removed at a clean exit.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "config/running_file.h"
#include "daemon/running_publish.h"
#include "state/snapshot_file.h"
#include "util/log.h"

#define PATH_SIZE (CONFIG_PATH_MAX_LEN + sizeof(RUNNING_FILE_SUFFIX))

void daemon_running_publish(const struct config *c)
{
	char path[PATH_SIZE], text[RUNNING_FILE_MAX_BYTES], err[512];
	size_t len;

	if (!running_file_path(c, path, sizeof(path)) || !path[0])
		return; /* no state file: nowhere of its own to write */
	/* The snapshot's own atomic write: a --check never reads half a file. */
	if (!running_file_format(c, (long)getpid(), text, sizeof(text), &len, err, sizeof(err)) ||
	    !snapshot_file_write(path, text, len, err, sizeof(err))) {
		/* The default state directory missing is said by the state
		 * store already; one given explicitly is worth a warning. */
		log_msg(c->state.file_set ? LOG_LEVEL_WARNING : LOG_LEVEL_NOTICE,
			"running file %s not written: %s; --check cannot tell what a reload of "
			"this agent would refuse",
			path, err);
		return;
	}
	log_info("running file %s: what a reload leaves as it runs, for --check", path);
}

void daemon_running_withdraw(const struct config *c)
{
	char path[PATH_SIZE];

	if (!running_file_path(c, path, sizeof(path)) || !path[0])
		return;
	if (unlink(path) != 0 && errno != ENOENT)
		log_warning("running file %s not removed: %s", path, strerror(errno));
}

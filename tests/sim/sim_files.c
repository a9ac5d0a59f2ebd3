/*
 * sim_files.c - the one directory the simulated agent keeps files in: its
 * state snapshot, the operator's record beside it, the running file a
 * reload writes. Private to the process (mkdtemp under TMPDIR), emptied
 * before each schedule so that no agent reads another schedule's
 * snapshot, and removed when the process exits. Nothing is written
 * anywhere else.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

static char dir[512];

static void remove_files(void)
{
	DIR *d = dir[0] ? opendir(dir) : NULL;
	if (!d)
		return;
	struct dirent *de;
	char path[1024];
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
}

static void remove_dir(void)
{
	remove_files();
	if (dir[0])
		rmdir(dir);
	dir[0] = '\0';
}

const char *sim_files_dir(void)
{
	if (dir[0])
		return dir;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/spoa-sim.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "sim: no private directory for the agent's files under %s\n",
			tmp && *tmp ? tmp : "/tmp");
		abort();
	}
	atexit(remove_dir);
	return dir;
}

void sim_files_clear(void)
{
	remove_files();
}

void sim_files_path(const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", sim_files_dir(), name);
}

/*
 * snapshot_file.c - the snapshot on disk (see snapshot_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/snapshot_file.h"
#include "util/errmsg.h"

enum snapshot_read snapshot_file_read(const char *path, size_t max_bytes, char **data,
				      size_t *len, char *err, size_t err_size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*data = NULL;
	*len = 0;
	if (fd < 0) {
		if (errno == ENOENT)
			return SNAPSHOT_READ_MISSING;
		errmsg_set(err, err_size, "cannot open: %s", strerror(errno));
		return SNAPSHOT_READ_FAILED;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		errmsg_set(err, err_size, "not a regular file");
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		errmsg_set(err, err_size, "%lld bytes, more than a snapshot can be (%zu)",
			   (long long)st.st_size, max_bytes);
		close(fd);
		return SNAPSHOT_READ_TOO_BIG;
	}
	/* One byte more than announced: a file that grew meanwhile is noticed. */
	size_t cap = (size_t)st.st_size + 1, got = 0;
	char *buf = malloc(cap);
	if (!buf) {
		errmsg_set(err, err_size, "out of memory for %zu bytes", cap);
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			errmsg_set(err, err_size, "read: %s", strerror(errno));
			free(buf);
			close(fd);
			return SNAPSHOT_READ_FAILED;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == cap) {
			errmsg_set(err, err_size, "the file grew while it was read");
			free(buf);
			close(fd);
			return SNAPSHOT_READ_FAILED;
		}
	}
	close(fd);
	*data = buf;
	*len = got;
	return SNAPSHOT_READ_OK;
}

/* The directory part of path ("." when it has none). */
static void dir_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, size, ".");
	else if (slash == path)
		snprintf(out, size, "/");
	else
		snprintf(out, size, "%.*s", (int)(slash - path), path);
}

static bool write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

bool snapshot_file_write(const char *path, const void *data, size_t len, char *err,
			 size_t err_size)
{
	char tmp[PATH_MAX], dir[PATH_MAX];

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		errmsg_set(err, err_size, "path too long");
		return false;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		errmsg_set(err, err_size, "cannot create %s: %s", tmp, strerror(errno));
		return false;
	}
	if (!write_all(fd, data, len) || fsync(fd) != 0) {
		errmsg_set(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return false;
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		errmsg_set(err, err_size, "cannot rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return false;
	}
	/* The rename itself reaches the disk only with its directory. */
	dir_of(path, dir, sizeof(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return true;
}

bool snapshot_file_move_aside(const char *path, int64_t wall_s, char *moved_to, size_t size,
			      char *err, size_t err_size)
{
	if ((size_t)snprintf(moved_to, size, "%s.corrupt-%lld", path, (long long)wall_s) >= size) {
		errmsg_set(err, err_size, "path too long");
		return false;
	}
	if (rename(path, moved_to) != 0) {
		errmsg_set(err, err_size, "cannot rename to %s: %s", moved_to, strerror(errno));
		return false;
	}
	return true;
}

bool snapshot_file_dir_writable(const char *path, char *err, size_t err_size)
{
	char dir[PATH_MAX];
	struct stat st;

	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st) != 0) {
		errmsg_set(err, err_size, "directory %s: %s", dir, strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		errmsg_set(err, err_size, "%s is not a directory", dir);
		return false;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		errmsg_set(err, err_size, "directory %s is not writable: %s", dir, strerror(errno));
		return false;
	}
	return true;
}

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

#include "state/snapshot.h"
#include "state/snapshot_file.h"
#include "util/errmsg.h"

/* What a path that is not a regular file is, for the message. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

/* Reads exactly len bytes at offset (fewer only at the end of the file). */
static ssize_t read_at(int fd, char *buf, size_t len, off_t offset)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, offset + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

enum snapshot_read snapshot_file_read(const char *path, size_t max_bytes, char **data,
				      size_t *len, char *err, size_t err_size)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO put at the path would block open() until a
	 * writer came, and the agent with it; the fstat() below refuses it.
	 * O_NOFOLLOW: the agent reads only the regular file it writes (its
	 * rename() replaces a link at the path, it never writes through one). */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	*data = NULL;
	*len = 0;
	if (fd < 0) {
		if (errno == ENOENT)
			return SNAPSHOT_READ_MISSING;
		if (errno == ELOOP)
			errmsg_set(err, err_size, "a symbolic link, not a regular file: not read");
		else
			errmsg_set(err, err_size, "cannot open: %s", strerror(errno));
		return SNAPSHOT_READ_FAILED;
	}
	if (fstat(fd, &st) != 0) {
		errmsg_set(err, err_size, "fstat: %s", strerror(errno));
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	if (!S_ISREG(st.st_mode)) {
		errmsg_set(err, err_size, "%s, not a regular file: not read", file_kind(st.st_mode));
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		errmsg_set(err, err_size, "%lld bytes, over the limit of %zu",
			   (long long)st.st_size, max_bytes);
		close(fd);
		return SNAPSHOT_READ_TOO_BIG;
	}
	/* The header says how many breakers follow, so how long the file can
	 * be: judged on its first bytes, before the rest is read. */
	char head[SNAPSHOT_HEADER_MAX_BYTES];
	ssize_t head_len = read_at(fd, head, sizeof(head), 0);
	if (head_len < 0) {
		errmsg_set(err, err_size, "read: %s", strerror(errno));
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	if (snapshot_check_size(head, (size_t)head_len, (uint64_t)st.st_size, err, err_size) !=
	    SNAPSHOT_OK) {
		close(fd);
		return SNAPSHOT_READ_TOO_BIG;
	}
	/* One byte more than announced: a file that grew meanwhile is noticed. */
	size_t cap = (size_t)st.st_size + 1;
	char *buf = malloc(cap);
	if (!buf) {
		errmsg_set(err, err_size, "out of memory for %zu bytes", cap);
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	ssize_t got = read_at(fd, buf, cap, 0);
	if (got < 0 || (size_t)got == cap) {
		if (got < 0)
			errmsg_set(err, err_size, "read: %s", strerror(errno));
		else
			errmsg_set(err, err_size, "the file grew while it was read");
		free(buf);
		close(fd);
		return SNAPSHOT_READ_FAILED;
	}
	close(fd);
	*data = buf;
	*len = (size_t)got;
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
	/* A new file, never one found there: whatever is at PATH.tmp (left by
	 * a crash, or a link planted to make the agent write elsewhere) is
	 * removed, not opened; O_EXCL then creates without following a link,
	 * and fails if something was put back meanwhile. */
	if (unlink(tmp) != 0 && errno != ENOENT) {
		errmsg_set(err, err_size, "cannot remove the old %s: %s", tmp, strerror(errno));
		return false;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
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

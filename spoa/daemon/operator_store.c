/*
 * operator_store.c - the operator's word on disk (see operator_store.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/operator_store.h"
#include "util/errmsg.h"

bool operator_store_path(const char *state_file, char *out, size_t size)
{
	int n = snprintf(out, size, "%s.operator", state_file);
	return n > 0 && (size_t)n < size;
}

bool operator_store_load(const char *path, struct operator_hand *h, char *err, size_t err_size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return true;
		errmsg_set(err, err_size, "%s: %s", path, strerror(errno));
		return false;
	}
	struct stat st;
	bool ok = false;
	char *text = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		errmsg_set(err, err_size, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > OPERATOR_HAND_MAX_TEXT) {
		errmsg_set(err, err_size, "%s: %lld bytes, over the limit of %u", path,
			   (long long)st.st_size, OPERATOR_HAND_MAX_TEXT);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		errmsg_set(err, err_size, "%s: out of memory", path);
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	char why[512];
	if (!operator_hand_parse(h, text, got, why, sizeof(why))) {
		errmsg_set(err, err_size, "%s: %s", path, why);
		goto out;
	}
	ok = true;
out:
	free(text);
	close(fd);
	return ok;
}

bool operator_store_save(const char *path, const struct operator_hand *h, char *err,
			 size_t err_size)
{
	char tmp[4096 + 16];
	struct strbuf text;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errmsg_set(err, err_size, "%s: path too long", path);
		return false;
	}
	strbuf_init(&text);
	operator_hand_format(h, &text);
	if (text.failed) {
		strbuf_free(&text);
		errmsg_set(err, err_size, "%s: out of memory", path);
		return false;
	}
	unlink(tmp); /* a leftover, or a link someone put there */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0;
	size_t done = 0;
	while (ok && done < text.len) {
		ssize_t n = write(fd, text.data + done, text.len - done);
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		if (ok)
			done += (size_t)n;
	}
	ok = ok && fsync(fd) == 0;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		if (!saved)
			saved = errno;
		unlink(tmp);
		errmsg_set(err, err_size, "%s: %s", path, strerror(saved));
	}
	strbuf_free(&text);
	return ok;
}

/*
 * test_snapshot_file.c - the snapshot on disk: what is at the path is
 * never waited on (a FIFO), never followed (a link), never read past its
 * limit; what is at PATH.tmp is replaced, never written through (a
 * symbolic or a hard link to someone else's file).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "state/snapshot.h"
#include "state/snapshot_file.h"

struct dir {
	char path[64];
	char state[128]; /* DIR/state.msgpack */
	char tmp[160];   /* its .tmp */
	char other[128]; /* a file that is not the agent's */
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "/tmp/test_snapshot_file.XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	snprintf(d->state, sizeof(d->state), "%s/state.msgpack", d->path);
	snprintf(d->tmp, sizeof(d->tmp), "%s.tmp", d->state);
	snprintf(d->other, sizeof(d->other), "%s/other", d->path);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	unlink(d->state);
	unlink(d->tmp);
	unlink(d->other);
	rmdir(d->path);
	free(d);
	return 0;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void assert_file_holds(const char *path, const char *want)
{
	char got[64] = "";
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	got[n] = '\0';
	assert_string_equal(got, want);
}

static enum snapshot_read read_it(const struct dir *d, char *err, size_t err_size)
{
	char *data;
	size_t len;
	enum snapshot_read r = snapshot_file_read(d->state, SNAPSHOT_MAX_BYTES, &data, &len, err,
						  err_size);
	free(data);
	return r;
}

/* No writer will ever come: a blocking open would never return. */
static void test_a_fifo_is_refused_without_waiting(void **state)
{
	struct dir *d = *state;
	char err[256] = "";
	assert_int_equal(mkfifo(d->state, 0600), 0);
	assert_int_equal(read_it(d, err, sizeof(err)), SNAPSHOT_READ_FAILED);
	assert_string_equal(err, "a FIFO, not a regular file: not read");
	/* The next write replaces it. */
	assert_true(snapshot_file_write(d->state, "new", 3, err, sizeof(err)));
	assert_file_holds(d->state, "new");
}

static void test_a_link_at_the_path_is_not_followed(void **state)
{
	struct dir *d = *state;
	char err[256] = "";
	write_file(d->other, "other", 5);
	assert_int_equal(symlink(d->other, d->state), 0);
	assert_int_equal(read_it(d, err, sizeof(err)), SNAPSHOT_READ_FAILED);
	assert_string_equal(err, "a symbolic link, not a regular file: not read");
	assert_int_equal(unlink(d->state), 0);
	assert_int_equal(mkdir(d->state, 0700), 0);
	assert_int_equal(read_it(d, err, sizeof(err)), SNAPSHOT_READ_FAILED);
	assert_string_equal(err, "a directory, not a regular file: not read");
	assert_int_equal(rmdir(d->state), 0);
	assert_int_equal(read_it(d, err, sizeof(err)), SNAPSHOT_READ_MISSING);
}

/* Whatever is at PATH.tmp, the write goes to a file of its own: the other
 * file keeps its bytes and its mode, and PATH becomes a regular file. */
static void test_what_is_at_the_tmp_path_is_never_written_through(void **state)
{
	struct dir *d = *state;
	char err[256] = "";
	struct stat st;
	write_file(d->other, "other", 5);
	assert_int_equal(chmod(d->other, 0644), 0);

	assert_int_equal(symlink(d->other, d->tmp), 0);
	assert_true(snapshot_file_write(d->state, "first", 5, err, sizeof(err)));
	assert_file_holds(d->other, "other");
	assert_int_equal(lstat(d->state, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_file_holds(d->state, "first");

	assert_int_equal(link(d->other, d->tmp), 0); /* the same inode */
	assert_true(snapshot_file_write(d->state, "second", 6, err, sizeof(err)));
	assert_file_holds(d->other, "other");
	assert_int_equal(stat(d->other, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_nlink, 1);
	assert_file_holds(d->state, "second");
	assert_int_equal(lstat(d->tmp, &st), -1);
}

/* Over the limit of its header's count: refused from its first bytes. */
static void test_a_file_over_its_limit_is_refused_unread(void **state)
{
	struct dir *d = *state;
	char err[256] = "";
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header h = {.format = SNAPSHOT_FORMAT, .count = 1};
	assert_true(snapshot_encode_header(buf, &h));
	size_t size = snapshot_max_bytes(1) + 1;
	char *pad = calloc(1, size - buf->size);
	msgpack_sbuffer_write(buf, pad, size - buf->size);
	free(pad);
	write_file(d->state, buf->data, buf->size);
	msgpack_sbuffer_free(buf);
	assert_int_equal(read_it(d, err, sizeof(err)), SNAPSHOT_READ_TOO_BIG);
	char want[128];
	snprintf(want, sizeof(want), "%zu bytes, over the limit of %zu for the 1 breaker(s) its "
		 "header announces", size, size - 1);
	assert_string_equal(err, want);

	/* And over max_bytes, whatever it holds. */
	char *data;
	size_t len;
	assert_int_equal(snapshot_file_read(d->state, 100, &data, &len, err, sizeof(err)),
			 SNAPSHOT_READ_TOO_BIG);
	snprintf(want, sizeof(want), "%zu bytes, over the limit of 100", size);
	assert_string_equal(err, want);
	assert_null(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_fifo_is_refused_without_waiting, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_link_at_the_path_is_not_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_what_is_at_the_tmp_path_is_never_written_through,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_file_over_its_limit_is_refused_unread, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

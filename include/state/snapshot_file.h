/*
 * snapshot_file.h - the snapshot on disk (snapshot_file.c): read whole,
 * written atomically, moved aside when it cannot be used.
 */
#ifndef SPOA_SNAPSHOT_FILE_H
#define SPOA_SNAPSHOT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum snapshot_read {
	SNAPSHOT_READ_OK,      /* *data holds the file (malloc'd: the caller frees it) */
	SNAPSHOT_READ_MISSING, /* no such file: a first start */
	SNAPSHOT_READ_TOO_BIG, /* over max_bytes, or over what its header's count allows */
	SNAPSHOT_READ_FAILED,  /* err says why (permissions, not a regular file, I/O) */
};

/*
 * Reads path whole. Never blocks on what is at the path: a FIFO, a
 * socket, a device, a directory or a symbolic link is refused unread
 * (FAILED, err "a FIFO, not a regular file: not read"). A file larger than
 * max_bytes, or than snapshot_max_bytes() of the count its header
 * announces, is refused before the rest of it is read (TOO_BIG, err "N
 * bytes, over the limit of M..."), so reading costs at most
 * min(max_bytes, that limit) of memory. err never names path: the caller
 * does.
 */
enum snapshot_read snapshot_file_read(const char *path, size_t max_bytes, char **data,
				      size_t *len, char *err, size_t err_size);

/* Replaces path by data as one step: PATH.tmp created anew (whatever was
 * there, a link included, is removed first and never written through),
 * written and fsync'ed, renamed over PATH, the directory fsync'ed. A crash
 * at any point leaves the old file or the new one, never half of either.
 * False with err set (the old file is then untouched). Blocking: call it
 * off the event loop. */
bool snapshot_file_write(const char *path, const void *data, size_t len, char *err,
			 size_t err_size);

/* Renames path to PATH.corrupt-<wall_s>, so a bad snapshot is kept for a
 * person to look at and never read again. Writes the new name to moved_to
 * (size bytes). False with err set. */
bool snapshot_file_move_aside(const char *path, int64_t wall_s, char *moved_to, size_t size,
			      char *err, size_t err_size);

/* Whether a file can be created in path's directory (it exists, is a
 * directory, and is writable by this process). False with err set. */
bool snapshot_file_dir_writable(const char *path, char *err, size_t err_size);

#endif /* SPOA_SNAPSHOT_FILE_H */

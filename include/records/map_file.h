/*
 * map_file.h - what every HAProxy map the agent keeps shares (map_file.c,
 * pure): finding its file in `show map`, and reading the lines of `show
 * map FILE`. The maps themselves: owner_map.h, retry_map.h,
 * watched_map.h.
 */
#ifndef SPOA_RECORDS_MAP_FILE_H
#define SPOA_RECORDS_MAP_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "hapi/runtime_api.h"

/* A map file path HAProxy reported, as kept by the agent. */
#define MAP_FILE_PATH_MAX 256

/* The next line of [*p, end), without its '\n'; *p moves past it. False
 * at the end. */
bool map_reply_next_line(const char **p, const char *end, struct runtime_api_str *line);
/* One line of a `show map FILE` reply, "0xADDR KEY VALUE": its key and
 * value (value empty, its ptr NULL, when the line has none). False when
 * the line is not an entry. Every map the agent keeps reads its lines so. */
bool map_entry_split(const char *p, size_t len, struct runtime_api_str *key,
		     struct runtime_api_str *value);
/* Whether a `show map FILE` reply lists entries (none: an empty reply or
 * an empty line) rather than an error sentence. */
bool map_reply_is_list(const char *reply, size_t len);
/* Finds the map whose file is named `name` in a `show map` reply ("# id
 * (file) description" then "ID (PATH) ..." lines) and copies its path into
 * path (size bytes), as HAProxy lists it: absolute, or relative to the
 * configuration's default-path, which is how the commands must name it
 * too. False when there is none, or when the path is not
 * map_path_is_safe() (hapi/runtime_api.h: it goes into commands). */
bool map_file_find(const char *reply, size_t len, const char *name, char *path, size_t size);

#endif /* SPOA_RECORDS_MAP_FILE_H */

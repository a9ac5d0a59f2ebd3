/*
 * info.c - the `show info` reply, parsed (pure): the "Key: value" lines
 * the agent needs to tell one HAProxy process from the next (Pid,
 * Uptime_sec, Process_num, Start_time_sec) and its Version.
 *
 * A reply of its own, small and whole (never streamed): a restart or a
 * reload shows here first, as a new pid or start time.
 */
#include <stdint.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "hapi/text.h"

bool runtime_api_parse_info(const char *buf, size_t len, struct runtime_api_info *info,
			    struct runtime_api_parse_report *report)
{
	struct runtime_api_parse_report local;
	struct runtime_api_parse_report *r = report ? report : &local;
	struct runtime_api_cursor c;
	struct runtime_api_str line;
	bool complete;
	bool have_pid = false, have_uptime = false;

	runtime_api_report_reset(r);
	memset(info, 0, sizeof(*info));
	runtime_api_cursor_init(&c, buf, len);
	while (runtime_api_cursor_next_line(&c, &line, &complete)) {
		if (line.len == 0 && complete)
			continue;
		if (!complete) {
			runtime_api_report_malformed(r, "show info line %u: cut short", c.line);
			break;
		}
		const char *colon = memchr(line.ptr, ':', line.len);
		if (!colon || colon + 1 >= line.ptr + line.len || colon[1] != ' ') {
			runtime_api_report_malformed(r, "show info line %u: not 'Key: value'",
						     c.line);
			continue;
		}
		struct runtime_api_str key = {line.ptr, (size_t)(colon - line.ptr)};
		struct runtime_api_str value = {colon + 2,
						(size_t)(line.ptr + line.len - colon - 2)};
		uint64_t *dst = NULL;
		bool *seen = NULL;

		if (runtime_api_str_eq(key, "Pid") && !have_pid) {
			dst = &info->pid;
			seen = &have_pid;
		} else if (runtime_api_str_eq(key, "Uptime_sec") && !have_uptime) {
			dst = &info->uptime_sec;
			seen = &have_uptime;
		} else if (runtime_api_str_eq(key, "Process_num")) {
			dst = &info->process_num;
		} else if (runtime_api_str_eq(key, "Start_time_sec")) {
			dst = &info->start_time_sec;
		} else if (runtime_api_str_eq(key, "Version")) {
			size_t n = value.len < sizeof(info->version) - 1
				       ? value.len
				       : sizeof(info->version) - 1;
			memcpy(info->version, value.ptr, n);
			info->version[n] = '\0';
			continue;
		} else {
			continue;
		}
		if (!runtime_api_str_u64(value, dst)) {
			*dst = 0;
			runtime_api_report_malformed(r, "show info line %u: %.*s is not a number",
						     c.line, (int)key.len, key.ptr);
			continue;
		}
		if (seen)
			*seen = true;
	}
	if (!have_pid)
		return runtime_api_report_fail(r, "show info: no Pid");
	if (!have_uptime)
		return runtime_api_report_fail(r, "show info: no Uptime_sec");
	return true;
}

/*
 * control_parse.h - the control socket's command language (control_parse.c),
 * read into a request before anything is done. Pure: no I/O.
 *
 * One command a line, words split on blanks, in the style of HAProxy's
 * Runtime API (docs/operating.md, "The control socket"):
 *   help
 *   show breakers [BACKEND[/SERVER]] [json]
 *   hold out BACKEND/SERVER [for DURATION] [force]
 *   hold in BACKEND/SERVER [for DURATION]
 *   unhold BACKEND/SERVER
 *   reset BACKEND/SERVER
 *   pause BACKEND
 *   resume BACKEND
 *   release all
 *   resume all
 * Every name must be one HAProxy accepts (util/names.h): nothing a client
 * sends can reach HAProxy's Runtime API as another command.
 */
#ifndef SPOA_CONTROL_PARSE_H
#define SPOA_CONTROL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/breaker-t.h"

/* The longest line the socket reads; a longer one is refused unread. */
#define CONTROL_LINE_MAX 1024
/* The longest hold: past a week, a hold is a configuration change
 * (`[backend NAME] guarded = false`, or the server out of HAProxy). */
#define CONTROL_HOLD_MAX_MS (7ull * 24 * 3600 * 1000)

enum control_verb {
	CONTROL_HELP,
	CONTROL_SHOW_BREAKERS,
	CONTROL_HOLD,
	CONTROL_UNHOLD,
	CONTROL_RESET,
	CONTROL_PAUSE,
	CONTROL_RESUME,
	CONTROL_RELEASE_ALL,
	CONTROL_RESUME_ALL,
};

struct control_request {
	enum control_verb verb;
	char backend[BREAKER_NAME_MAX + 1]; /* "" when none given (show) */
	char server[BREAKER_NAME_MAX + 1];  /* "" when none given */
	enum breaker_hold hold;             /* HOLD: OUT or IN */
	uint64_t for_ms;                    /* HOLD: 0 until lifted */
	bool force;                         /* HOLD OUT: past the ejection cap */
	bool json;                          /* SHOW */
};

/* Reads one line (no newline; any bytes) into *req; false with what was
 * wrong in err ("unknown command 'holdd': try help"). */
bool control_parse(const char *line, size_t len, struct control_request *req, char *err,
		   size_t err_size);

/* The commands, for `help`. */
extern const char control_help_text[];

#endif /* SPOA_CONTROL_PARSE_H */

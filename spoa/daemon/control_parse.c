/*
 * control_parse.c - the control socket's command language (see
 * control_parse.h). Pure.
 */
#include <stdio.h>
#include <string.h>

#include "config/keys.h"
#include "daemon/control_parse.h"
#include "util/errmsg.h"
#include "util/names.h"

const char control_help_text[] =
	"show breakers [BACKEND[/SERVER]] [json]   state, why, since, failures, holds\n"
	"hold out BACKEND/SERVER [for DURATION] [force]\n"
	"                                          drained, no probe (force: past the ejection cap)\n"
	"hold in BACKEND/SERVER [for DURATION]     serving, never drained; still judged and logged\n"
	"unhold BACKEND/SERVER                     the breaker decides again\n"
	"reset BACKEND/SERVER                      a clean closed breaker\n"
	"pause BACKEND                             observe only: the agent's drains there lifted\n"
	"resume BACKEND                            the breakers act again\n"
	"release all                               lift all the agent holds in HAProxy, hands off\n"
	"resume all                                undo release all and every pause\n"
	"help                                      this list\n";

#define MAX_WORDS 8

struct words {
	const char *at[MAX_WORDS];
	size_t len[MAX_WORDS];
	unsigned n;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* False when there are more than MAX_WORDS words. */
static bool split(const char *line, size_t len, struct words *w)
{
	size_t i = 0;
	w->n = 0;
	while (i < len) {
		while (i < len && is_blank(line[i]))
			i++;
		if (i == len)
			break;
		if (w->n == MAX_WORDS)
			return false;
		size_t start = i;
		while (i < len && !is_blank(line[i]))
			i++;
		w->at[w->n] = line + start;
		w->len[w->n++] = i - start;
	}
	return true;
}

static bool is(const struct words *w, unsigned i, const char *word)
{
	return i < w->n && w->len[i] == strlen(word) && memcmp(w->at[i], word, w->len[i]) == 0;
}

/* A name HAProxy accepts, copied; false with why. */
static bool take_name(const char *at, size_t len, char *out, const char *what, char *err,
		      size_t err_size)
{
	if (!name_is_valid(at, len)) {
		/* Not echoed: a hostile name has no business in the answer
		 * (nor in the log), only its length. */
		errmsg_set(err, err_size,
			   "the %s name (%zu bytes) is not one HAProxy accepts: letters, digits, "
			   "'-', '_', '.' and ':', at most %d",
			   what, len, NAME_MAX_LEN);
		return false;
	}
	memcpy(out, at, len);
	out[len] = '\0';
	return true;
}

/* BACKEND/SERVER (server_needed) or BACKEND[/SERVER]. */
static bool take_target(const struct words *w, unsigned i, bool server_needed,
			struct control_request *req, char *err, size_t err_size)
{
	if (i >= w->n) {
		errmsg_set(err, err_size, "expected %s", server_needed ? "BACKEND/SERVER" : "BACKEND");
		return false;
	}
	const char *slash = memchr(w->at[i], '/', w->len[i]);
	if (!slash) {
		if (server_needed) {
			errmsg_set(err, err_size, "expected BACKEND/SERVER, with a '/'");
			return false;
		}
		return take_name(w->at[i], w->len[i], req->backend, "backend", err, err_size);
	}
	size_t be_len = (size_t)(slash - w->at[i]);
	return take_name(w->at[i], be_len, req->backend, "backend", err, err_size) &&
	       take_name(slash + 1, w->len[i] - be_len - 1, req->server, "server", err, err_size);
}

static bool extra_words(const struct words *w, unsigned from, char *err, size_t err_size)
{
	if (from >= w->n)
		return false;
	errmsg_set(err, err_size, "unexpected word %u after the command: try help", from + 1);
	return true;
}

static bool parse_hold(const struct words *w, struct control_request *req, char *err,
		       size_t err_size)
{
	req->verb = CONTROL_HOLD;
	if (is(w, 1, "out")) {
		req->hold = BREAKER_HOLD_OUT;
	} else if (is(w, 1, "in")) {
		req->hold = BREAKER_HOLD_IN;
	} else {
		errmsg_set(err, err_size, "expected hold out or hold in");
		return false;
	}
	if (!take_target(w, 2, true, req, err, err_size))
		return false;
	unsigned i = 3;
	for (; i < w->n; i++) {
		if (is(w, i, "force") || is(w, i, "--force")) {
			if (req->hold != BREAKER_HOLD_OUT) {
				errmsg_set(err, err_size, "force is for hold out only");
				return false;
			}
			req->force = true;
		} else if (is(w, i, "for") && i + 1 < w->n) {
			char text[32];
			i++;
			if (w->len[i] >= sizeof(text)) {
				errmsg_set(err, err_size, "expected a duration such as 10m or 30s");
				return false;
			}
			memcpy(text, w->at[i], w->len[i]);
			text[w->len[i]] = '\0';
			if (!config_parse_duration_ms(text, &req->for_ms) || req->for_ms == 0 ||
			    req->for_ms > CONTROL_HOLD_MAX_MS) {
				errmsg_set(err, err_size,
					   "'%s' is not a duration between 1ms and 7 days, such as "
					   "10m or 30s",
					   text);
				return false;
			}
		} else {
			return !extra_words(w, i, err, err_size);
		}
	}
	return true;
}

bool control_parse(const char *line, size_t len, struct control_request *req, char *err,
		   size_t err_size)
{
	struct words w;

	memset(req, 0, sizeof(*req));
	if (len > CONTROL_LINE_MAX) {
		errmsg_set(err, err_size, "line longer than %d bytes", CONTROL_LINE_MAX);
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
			errmsg_set(err, err_size, "a control character (byte %zu): commands are text",
				   i + 1);
			return false;
		}
	}
	if (!split(line, len, &w)) {
		errmsg_set(err, err_size, "too many words: try help");
		return false;
	}
	if (w.n == 0) {
		errmsg_set(err, err_size, "empty command: try help");
		return false;
	}
	if (is(&w, 0, "help")) {
		req->verb = CONTROL_HELP;
		return !extra_words(&w, 1, err, err_size);
	}
	if (is(&w, 0, "show") && is(&w, 1, "breakers")) {
		req->verb = CONTROL_SHOW_BREAKERS;
		unsigned i = 2;
		if (i < w.n && !is(&w, i, "json")) {
			if (!take_target(&w, i, false, req, err, err_size))
				return false;
			i++;
		}
		if (is(&w, i, "json")) {
			req->json = true;
			i++;
		}
		return !extra_words(&w, i, err, err_size);
	}
	if (is(&w, 0, "hold"))
		return parse_hold(&w, req, err, err_size);
	if (is(&w, 0, "unhold") || is(&w, 0, "reset")) {
		req->verb = is(&w, 0, "unhold") ? CONTROL_UNHOLD : CONTROL_RESET;
		return take_target(&w, 1, true, req, err, err_size) &&
		       !extra_words(&w, 2, err, err_size);
	}
	if (is(&w, 0, "release") || is(&w, 0, "resume")) {
		bool release = is(&w, 0, "release");
		if (is(&w, 1, "all")) {
			req->verb = release ? CONTROL_RELEASE_ALL : CONTROL_RESUME_ALL;
			return !extra_words(&w, 2, err, err_size);
		}
		if (release) {
			errmsg_set(err, err_size, "expected release all (pause BACKEND for one backend)");
			return false;
		}
		req->verb = CONTROL_RESUME;
		if (!take_target(&w, 1, false, req, err, err_size))
			return false;
		if (req->server[0]) {
			errmsg_set(err, err_size, "resume takes a backend; unhold BACKEND/SERVER for one server");
			return false;
		}
		return !extra_words(&w, 2, err, err_size);
	}
	if (is(&w, 0, "pause")) {
		req->verb = CONTROL_PAUSE;
		if (!take_target(&w, 1, false, req, err, err_size))
			return false;
		if (req->server[0]) {
			errmsg_set(err, err_size, "pause takes a backend; hold out BACKEND/SERVER for one server");
			return false;
		}
		return !extra_words(&w, 2, err, err_size);
	}
	errmsg_set(err, err_size, "unknown command: try help");
	return false;
}

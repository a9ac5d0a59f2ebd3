/*
 * log_escape.h - text a peer sent, made fit for one log line (log_escape.c,
 * pure).
 *
 * A HAPROXY-DISCONNECT message or a HELLO's engine-id is whatever bytes the
 * peer chose: logged raw, a "\n" in it would start a line of the peer's own
 * making ("... status 0, \"\n2026-... notice: breaker closed\""). Escaped,
 * every byte but printable ASCII is spelled out ("\n", "\x1b"), and so are
 * '\' and '"' so the quotes around the text stay the text's bounds.
 */
#ifndef SPOA_LOG_ESCAPE_H
#define SPOA_LOG_ESCAPE_H

#include <stddef.h>

/* Enough for what the agent logs of a peer's text: longer is cut. */
#define LOG_ESCAPE_SIZE 128

/* Writes in[0..len) escaped into out (size > 0, always NUL-terminated) and
 * returns out, to be passed straight to a "%s". What does not fit is cut
 * between two escapes, never inside one, and marked with a trailing "..."
 * (which fits in out whenever size >= 4). in may hold NULs. */
char *log_escape(char *out, size_t size, const void *in, size_t len);

#endif /* SPOA_LOG_ESCAPE_H */

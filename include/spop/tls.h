/*
 * tls.h - TLS on the SPOP listeners (tls.c, OpenSSL): the certificates
 * the agent serves, and one TLS session per connection.
 *
 * A context is what the configuration names: the agent's certificate
 * chain and key, and, when a CA is given, the CA a client certificate
 * must chain to (then a client without one, or with one from elsewhere,
 * fails its handshake). A reload builds a new context beside the running
 * one and swaps it in: sessions keep the context they started with
 * (OpenSSL counts its references), new connections get the new one.
 *
 * A session wraps one non-blocking socket. tls_session_read() and
 * tls_session_write() behave as read() and send() do: bytes, 0 at the
 * end of the stream (read), or -1 with errno; EAGAIN when the socket must
 * be ready first, and tls_session_wants_write() then says for which
 * direction (a read may need to write during the handshake, a write may
 * need to read). The handshake is driven by the first reads: it never
 * waits on the socket, and the connection's HELLO timer bounds how long
 * it may take. A TLS failure is -1 with errno EPROTO, and
 * tls_session_error() says why.
 */
#ifndef SPOA_TLS_H
#define SPOA_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tls_context;
struct tls_session;

/*
 * Loads cert (a PEM chain, the agent's certificate first), key (PEM; NULL
 * or "": in cert's file) and, when ca is neither NULL nor "", the CA
 * bundle client certificates are verified against. NULL with what is
 * wrong in err ("tls_cert /etc/x.pem: No such file or directory"). The
 * caller frees it with tls_context_free().
 */
struct tls_context *tls_context_new(const char *cert, const char *key, const char *ca,
				    char *err, size_t err_size);
/* Drops the caller's reference; sessions made from it keep theirs. */
void tls_context_free(struct tls_context *t);
/* Whether the context asks every client for a certificate. */
bool tls_context_verifies_clients(const struct tls_context *t);

/* A server-side session on fd (non-blocking, accepted), or NULL when out
 * of memory. The caller still owns fd. */
struct tls_session *tls_session_new(struct tls_context *t, int fd);
void tls_session_free(struct tls_session *s);

ssize_t tls_session_read(struct tls_session *s, void *buf, size_t len);
ssize_t tls_session_write(struct tls_session *s, const void *buf, size_t len);
/* After a read or a write returned -1/EAGAIN: whether that call waits
 * for the socket to be writable (else readable). */
bool tls_session_read_wants_write(const struct tls_session *s);
bool tls_session_write_wants_read(const struct tls_session *s);
/* Decrypted bytes wait inside the session: a read returns them without
 * the socket becoming readable again. */
bool tls_session_pending(const struct tls_session *s);
/* Whether the handshake has completed. */
bool tls_session_established(const struct tls_session *s);
/* The TLS alert that ends the session, sent if the socket takes it now;
 * never waits. */
void tls_session_close_notify(struct tls_session *s);
/* Why the last call failed with EPROTO ("peer did not return a
 * certificate"); "" when it did not. */
const char *tls_session_error(const struct tls_session *s);

#endif /* SPOA_TLS_H */

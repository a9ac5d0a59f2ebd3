/*
 * tls.c - TLS on the SPOP listeners, with OpenSSL (see tls.h).
 *
 * Everything here is non-blocking: a session never waits on its socket,
 * it says which readiness it needs and the connection's event loop comes
 * back. The plaintext path never enters this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "spop/tls.h"
#include "util/errmsg.h"

struct tls_context {
	SSL_CTX *ctx;
	bool verifies_clients;
};

struct tls_session {
	SSL *ssl;
	bool read_wants_write;
	bool write_wants_read;
	char error[200];
};

/* Names the session cache for client-verified sessions: OpenSSL refuses
 * to resume one without it. */
static const unsigned char SESSION_ID_CONTEXT[] = "spoa-breaker";

/* OpenSSL's reason for the last failure, or `fallback`. */
static const char *openssl_reason(const char *fallback)
{
	unsigned long e = ERR_peek_last_error();
	const char *reason = e ? ERR_reason_error_string(e) : NULL;
	return reason ? reason : fallback;
}

/* A file the configuration names must be a readable regular file: the
 * message says which of the two it is not, before OpenSSL says something
 * vaguer (and a fifo or a device would block the loop on open). */
static bool readable_file(const char *key, const char *path, char *err, size_t err_size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		errmsg_set(err, err_size, "%s %s: cannot read it: %s", key, path, strerror(errno));
		return false;
	}
	struct stat st;
	bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	close(fd);
	if (!regular) {
		errmsg_set(err, err_size, "%s %s: not a regular file", key, path);
		return false;
	}
	return true;
}

/* A key with a passphrase would prompt on the terminal: refuse it instead. */
static int no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)userdata;
	return 0;
}

static bool load_verification(SSL_CTX *ctx, const char *ca, char *err, size_t err_size)
{
	if (!SSL_CTX_load_verify_locations(ctx, ca, NULL)) {
		errmsg_set(err, err_size, "tls_ca %s: no CA certificate in it (%s)", ca,
			   openssl_reason("unreadable PEM"));
		return false;
	}
	/* The CAs the agent names in its request, so a client with several
	 * certificates picks the right one. */
	STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
	if (!names) {
		errmsg_set(err, err_size, "tls_ca %s: no CA certificate in it", ca);
		return false;
	}
	SSL_CTX_set_client_CA_list(ctx, names);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	return true;
}

struct tls_context *tls_context_new(const char *cert, const char *key, const char *ca,
				    char *err, size_t err_size)
{
	const char *key_file = key && key[0] ? key : cert;
	const char *key_name = key && key[0] ? "tls_key" : "tls_cert";
	bool with_ca = ca && ca[0];

	if (!readable_file("tls_cert", cert, err, err_size) ||
	    (key_file != cert && !readable_file("tls_key", key_file, err, err_size)) ||
	    (with_ca && !readable_file("tls_ca", ca, err, err_size)))
		return NULL;

	ERR_clear_error();
	struct tls_context *t = calloc(1, sizeof(*t));
	SSL_CTX *ctx = t ? SSL_CTX_new(TLS_server_method()) : NULL;
	if (!ctx) {
		errmsg_set(err, err_size, "TLS: out of memory");
		free(t);
		return NULL;
	}
	t->ctx = ctx;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Partial writes: send() semantics. Moving buffer: the connection
	 * compacts its output buffer between a write that had to wait and
	 * its retry (the bytes stay the same, their address does not). Idle
	 * connections give their buffers back. A peer that closes without
	 * the closing alert (HAProxy ending an idle connection) is an end of
	 * stream, not an error. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	SSL_CTX_set_session_id_context(ctx, SESSION_ID_CONTEXT, sizeof(SESSION_ID_CONTEXT) - 1);

	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		errmsg_set(err, err_size, "tls_cert %s: no certificate in it (%s)", cert,
			   openssl_reason("unreadable PEM"));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		unsigned long e = ERR_peek_last_error();
		if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
			errmsg_set(err, err_size, "%s %s: not the private key of tls_cert %s",
				   key_name, key_file, cert);
			goto fail;
		}
		errmsg_set(err, err_size,
			   "%s %s: no private key in it (%s; a key with a passphrase is "
			   "not read)",
			   key_name, key_file, openssl_reason("unreadable PEM"));
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		errmsg_set(err, err_size, "%s %s: not the private key of tls_cert %s", key_name,
			   key_file, cert);
		goto fail;
	}
	if (with_ca && !load_verification(ctx, ca, err, err_size))
		goto fail;
	t->verifies_clients = with_ca;
	ERR_clear_error();
	return t;
fail:
	ERR_clear_error();
	tls_context_free(t);
	return NULL;
}

void tls_context_free(struct tls_context *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

bool tls_context_verifies_clients(const struct tls_context *t)
{
	return t && t->verifies_clients;
}

struct tls_session *tls_session_new(struct tls_context *t, int fd)
{
	struct tls_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ssl = SSL_new(t->ctx); /* holds a reference to the context */
	if (!s->ssl || SSL_set_fd(s->ssl, fd) != 1) {
		SSL_free(s->ssl);
		free(s);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_accept_state(s->ssl);
	return s;
}

void tls_session_free(struct tls_session *s)
{
	if (!s)
		return;
	SSL_free(s->ssl);
	free(s);
}

/* A failed handshake or record: what OpenSSL says, with the verification
 * result when a client certificate was refused. */
static void record_error(struct tls_session *s)
{
	long verify = SSL_get_verify_result(s->ssl);
	const char *reason = openssl_reason("TLS error");
	if (verify != X509_V_OK)
		snprintf(s->error, sizeof(s->error), "%s (%s)", reason,
			 X509_verify_cert_error_string(verify));
	else
		snprintf(s->error, sizeof(s->error), "%s", reason);
	ERR_clear_error();
}

/* The -1 (or 0) of a read or a write that did not move bytes: which
 * readiness it waits for (*wants_other: the direction it was not made
 * for), an end of stream, or an error with errno set. */
static ssize_t not_moved(struct tls_session *s, int ret, bool reading, bool *wants_other)
{
	int saved = errno;
	int e = SSL_get_error(s->ssl, ret);

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		*wants_other = (e == SSL_ERROR_WANT_WRITE) == reading;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		if (reading)
			return 0;
		errno = EPIPE;
		return -1;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		if (saved == 0) { /* the peer closed mid-record */
			if (reading)
				return 0;
			saved = EPIPE;
		}
		errno = saved;
		return -1;
	default:
		record_error(s);
		errno = EPROTO;
		return -1;
	}
}

ssize_t tls_session_read(struct tls_session *s, void *buf, size_t len)
{
	ERR_clear_error();
	errno = 0;
	int n = SSL_read(s->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0) {
		s->read_wants_write = false;
		return n;
	}
	return not_moved(s, n, true, &s->read_wants_write);
}

ssize_t tls_session_write(struct tls_session *s, const void *buf, size_t len)
{
	ERR_clear_error();
	errno = 0;
	int n = SSL_write(s->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0) {
		s->write_wants_read = false;
		return n;
	}
	return not_moved(s, n, false, &s->write_wants_read);
}

bool tls_session_read_wants_write(const struct tls_session *s)
{
	return s->read_wants_write;
}

bool tls_session_write_wants_read(const struct tls_session *s)
{
	return s->write_wants_read;
}

bool tls_session_pending(const struct tls_session *s)
{
	return SSL_pending(s->ssl) > 0;
}

bool tls_session_established(const struct tls_session *s)
{
	return SSL_is_init_finished(s->ssl);
}

void tls_session_close_notify(struct tls_session *s)
{
	if (!SSL_is_init_finished(s->ssl))
		return;
	ERR_clear_error();
	(void)SSL_shutdown(s->ssl); /* one try: what the socket takes now */
	ERR_clear_error();
}

const char *tls_session_error(const struct tls_session *s)
{
	return s->error;
}

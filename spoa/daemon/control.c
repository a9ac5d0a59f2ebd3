/*
 * control.c - the control socket's I/O (see control.h): accept, read one
 * line, answer, close (a line too long: answer, drop the rest the client
 * sends, close). What a command does is the exec callback's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/control.h"
#include "daemon/control_parse.h"
#include "util/container_of.h"
#include "util/log.h"

struct control_client {
	struct control *owner;
	int fd;
	long uid;
	ev_io io;
	ev_timer timeout;
	char line[CONTROL_LINE_MAX + 2];
	size_t len;
	bool too_long; /* past CONTROL_LINE_MAX with no newline: refused */
	/* Answered before the client's stream ended (a line too long): once
	 * the answer is sent, the rest it sends is read and dropped until it
	 * ends. Closing at once would leave its data unread, and the client's
	 * next write would fail (EPIPE): socat, for one, then exits without
	 * reading the answer that waits for it. The timeout bounds it. */
	bool drop_rest;
	char *answer;  /* being written */
	size_t answer_len, answer_sent;
};

struct control {
	struct ev_loop *loop;
	int fd;
	ev_io accept_io;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	control_exec_fn exec;
	void *ctx;
	struct control_client *clients[CONTROL_MAX_CLIENTS];
};

static void client_close(struct control_client *cl)
{
	struct control *c = cl->owner;
	ev_io_stop(c->loop, &cl->io);
	ev_timer_stop(c->loop, &cl->timeout);
	close(cl->fd);
	for (unsigned i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i] == cl)
			c->clients[i] = NULL;
	free(cl->answer);
	free(cl);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents);
static void on_rest(struct ev_loop *loop, ev_io *w, int revents);

/* All the answer is sent: the end of it told, the client's rest dropped
 * until its stream ends (or the timeout set at the answer runs out). */
static void drop_rest(struct control_client *cl)
{
	struct control *c = cl->owner;
	shutdown(cl->fd, SHUT_WR);
	ev_io_stop(c->loop, &cl->io);
	ev_io_init(&cl->io, on_rest, cl->fd, EV_READ);
	ev_io_start(c->loop, &cl->io);
}

/* Writes what the socket takes of the answer; closes once all is sent
 * (or, for a client still writing, drops its rest first). */
static void write_some(struct control_client *cl)
{
	while (cl->answer_sent < cl->answer_len) {
		ssize_t n = send(cl->fd, cl->answer + cl->answer_sent,
				 cl->answer_len - cl->answer_sent, MSG_NOSIGNAL);
		if (n > 0) {
			cl->answer_sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* the loop tells when there is room */
		client_close(cl); /* gone: nobody to answer */
		return;
	}
	if (cl->drop_rest)
		drop_rest(cl);
	else
		client_close(cl);
}

/* The answer is ready: from now on the client is only written to. */
static void answer(struct control_client *cl, struct strbuf *out)
{
	struct control *c = cl->owner;
	if (out->failed) {
		strbuf_free(out);
		strbuf_init(out);
		strbuf_puts(out, "error: out of memory for the answer\n");
	}
	if (out->len == 0 || out->data[out->len - 1] != '\n')
		strbuf_putc(out, '\n');
	cl->answer = strbuf_steal(out, &cl->answer_len);
	cl->answer_sent = 0;
	if (!cl->answer) {
		client_close(cl);
		return;
	}
	ev_io_stop(c->loop, &cl->io);
	ev_io_init(&cl->io, on_writable, cl->fd, EV_WRITE);
	ev_io_start(c->loop, &cl->io);
	/* The reader gets as long again to take the answer. */
	ev_timer_again(c->loop, &cl->timeout);
	write_some(cl);
}

static void answer_text(struct control_client *cl, const char *text)
{
	struct strbuf out;
	strbuf_init(&out);
	strbuf_puts(&out, text);
	answer(cl, &out);
}

static void run_line(struct control_client *cl)
{
	struct control *c = cl->owner;
	struct strbuf out;
	strbuf_init(&out);
	c->exec(c->ctx, cl->line, cl->len, cl->uid, &out);
	answer(cl, &out);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	write_some(container_of(w, struct control_client, io));
}

/* The client's rest after an answer given early: read and dropped, a
 * bounded amount a wake-up so that a client writing without pause does
 * not hold the loop; closed at its end or on any error. */
static void on_rest(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control_client *cl = container_of(w, struct control_client, io);
	(void)loop;
	(void)revents;
	for (int reads = 0; reads < 16; reads++) {
		char buf[4096];
		ssize_t n = recv(cl->fd, buf, sizeof(buf), 0);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		client_close(cl);
		return;
	}
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control_client *cl = container_of(w, struct control_client, io);
	(void)loop;
	(void)revents;

	for (;;) {
		char buf[512];
		ssize_t n = recv(cl->fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* The end of the stream ends the line too (printf
			 * without a newline); nothing at all: nothing to do. */
			if (n == 0 && cl->len > 0 && !cl->too_long)
				run_line(cl);
			else if (n == 0 && cl->too_long)
				answer_text(cl, "error: line longer than 1024 bytes\n");
			else
				client_close(cl);
			return;
		}
		char *nl = memchr(buf, '\n', (size_t)n);
		size_t take = nl ? (size_t)(nl - buf) : (size_t)n;
		if (cl->len + take > CONTROL_LINE_MAX) {
			cl->too_long = true;
			take = CONTROL_LINE_MAX - cl->len;
		}
		memcpy(cl->line + cl->len, buf, take);
		cl->len += take;
		if (cl->too_long) {
			cl->drop_rest = true; /* its stream has not ended */
			answer_text(cl, "error: line longer than 1024 bytes\n");
			return;
		}
		if (nl) {
			run_line(cl);
			return;
		}
	}
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct control_client *cl = container_of(w, struct control_client, timeout);
	(void)loop;
	(void)revents;
	if (cl->answer) {
		client_close(cl); /* it would not read its answer */
		return;
	}
	log_info("control: a client sent no complete line within %d s", CONTROL_TIMEOUT_S);
	answer_text(cl, "error: no complete line in time\n");
}

static long peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -1;
	return (long)cred.uid;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control *c = container_of(w, struct control, accept_io);
	(void)revents;

	for (;;) {
		int fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warning("control: accept: %s", strerror(errno));
			return;
		}
		unsigned slot = 0;
		while (slot < CONTROL_MAX_CLIENTS && c->clients[slot])
			slot++;
		struct control_client *cl = slot < CONTROL_MAX_CLIENTS ? calloc(1, sizeof(*cl)) : NULL;
		if (!cl) {
			static const char busy[] = "error: busy, try again\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		cl->owner = c;
		cl->fd = fd;
		cl->uid = peer_uid(fd);
		c->clients[slot] = cl;
		ev_io_init(&cl->io, on_readable, fd, EV_READ);
		ev_io_start(loop, &cl->io);
		ev_init(&cl->timeout, on_timeout);
		cl->timeout.repeat = CONTROL_TIMEOUT_S;
		ev_timer_again(loop, &cl->timeout);
	}
}

struct control *control_open(struct ev_loop *loop, const char *spec,
			     const struct listen_socket_owner *owner, control_exec_fn exec,
			     void *ctx, char *err, size_t err_size)
{
	bool is_unix = false;

	if (strncmp(spec, "unix:", 5) != 0) {
		snprintf(err, err_size,
			 "control '%s': a unix socket only (unix:PATH): its file says who may "
			 "connect",
			 spec);
		return NULL;
	}
	struct control *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, err_size, "control '%s': out of memory", spec);
		return NULL;
	}
	c->fd = listen_socket_open_as(spec, owner, &is_unix, err, err_size);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	c->loop = loop;
	c->exec = exec;
	c->ctx = ctx;
	snprintf(c->path, sizeof(c->path), "%s", spec + 5);
	ev_io_init(&c->accept_io, on_accept, c->fd, EV_READ);
	ev_io_start(loop, &c->accept_io);
	return c;
}

void control_close(struct control *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i])
			client_close(c->clients[i]);
	ev_io_stop(c->loop, &c->accept_io);
	close(c->fd);
	unlink(c->path);
	free(c);
}

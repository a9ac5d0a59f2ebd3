/*
 * ack_agent.c - the SPOE floor: an agent that answers every NOTIFY with an
 * ACK setting one variable (txn.<prefix>.ack = 1) and does nothing else.
 *
 * What spoa-breaker costs beyond SPOE itself is its figure minus this
 * one's. Like spoa-breaker it announces "pipelining" only, answers a
 * health-check HELLO and closes, answers HAPROXY-DISCONNECT, and sends the
 * ACKs of one read in one write. Never an empty ACK: HAProxy 3.1+ stalls
 * on one. One thread, epoll, level-triggered.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "spop_wire.h"

#define IN_CAP   (256 * 1024)
#define MAX_VARS 8
#define ACK_ROOM (32 + MAX_VARS * 16) /* one ACK frame of MAX_VARS small variables */

/* The variables each ACK sets (--vars): ack, then ack1..ack7. */
static const char *const var_names[MAX_VARS] = {"ack", "ack1", "ack2", "ack3",
						 "ack4", "ack5", "ack6", "ack7"};
static unsigned nb_vars = 1;

struct client {
	int fd;
	int hello_done;
	int closing; /* close once the output is written */
	uint32_t max_frame;
	uint8_t in[IN_CAP];
	size_t in_len;
	uint8_t *out;
	size_t out_len;
	size_t out_cap;
	size_t out_sent;
	int waits_writable; /* registered for EPOLLOUT instead of EPOLLIN */
};

static volatile sig_atomic_t stop_requested;
static int epfd;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *to)
{
	fprintf(to, "Usage: ack_agent [-l HOST:PORT] [-n VARS]\n"
		    "An SPOE agent that ACKs every NOTIFY with one variable (ack=1), to measure\n"
		    "what SPOE itself costs.\n\n"
		    "  -l, --listen HOST:PORT  where to listen (default 127.0.0.1:12350)\n"
		    "  -n, --vars N            set N variables per ACK, 1 to 8 (default 1): what\n"
		    "                          each set-var costs HAProxy\n"
		    "  -h, --help              this help\n"
		    "Stops on TERM or INT.\n");
}

static int listen_on(const char *addr)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	if (getaddrinfo(host, colon + 1, &hints, &ai))
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
		perror("ack_agent: listen");
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static void client_close(struct client *c)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	free(c);
}

/* Room for `n` more bytes of output; 0 when memory ran out. */
static int reserve(struct client *c, size_t n)
{
	if (c->out_cap - c->out_len >= n)
		return 1;
	size_t cap = c->out_cap ? c->out_cap * 2 : 16384;
	while (cap - c->out_len < n)
		cap *= 2;
	uint8_t *p = realloc(c->out, cap);
	if (!p)
		return 0;
	c->out = p;
	c->out_cap = cap;
	return 1;
}

/* Answers one frame into the output buffer; 0 to close after the output. */
static int answer(struct client *c, const struct wire_frame *f)
{
	if (!reserve(c, 256))
		return 0;
	uint8_t *out = c->out + c->out_len;
	switch (f->type) {
	case WIRE_HAPROXY_HELLO: {
		uint64_t theirs = WIRE_MAX_FRAME;
		wire_kv_find_uint(f->payload, f->payload_len, "max-frame-size", &theirs);
		c->max_frame = theirs < WIRE_MAX_FRAME ? (uint32_t)theirs : WIRE_MAX_FRAME;
		c->out_len += wire_agent_hello(out, 256, c->max_frame);
		c->hello_done = 1;
		/* A health check ends with the HELLO. */
		return !wire_kv_has_true(f->payload, f->payload_len, "healthcheck");
	}
	case WIRE_NOTIFY:
		if (!c->hello_done)
			break;
		c->out_len += wire_ack_vars(out, ACK_ROOM, f->stream_id, f->frame_id, var_names,
					    nb_vars, 1);
		return 1;
	case WIRE_HAPROXY_DISCONNECT:
		c->out_len += wire_disconnect(out, 256, WIRE_AGENT_DISCONNECT, 0, "normal");
		return 0;
	default:
		break;
	}
	c->out_len += wire_disconnect(out, 256, WIRE_AGENT_DISCONNECT, 4, "invalid frame");
	return 0;
}

static void flush_out(struct client *c)
{
	while (c->out_sent < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->closing = 1;
			c->out_sent = c->out_len;
			break;
		}
		c->out_sent += (size_t)w;
	}
	if (c->out_sent == c->out_len)
		c->out_len = c->out_sent = 0;
	/* Output left: wait for writability and stop reading until then, so a
	 * peer that does not read cannot grow the buffer without bound. */
	int wait_writable = c->out_len != 0;
	if (wait_writable != c->waits_writable) {
		struct epoll_event ev = {.events = wait_writable ? EPOLLOUT : EPOLLIN, .data.ptr = c};
		epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->waits_writable = wait_writable;
	}
}

static void on_readable(struct client *c)
{
	ssize_t r = read(c->fd, c->in + c->in_len, IN_CAP - c->in_len);
	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		client_close(c);
		return;
	}
	c->in_len += (size_t)r;
	size_t at = 0;
	struct wire_frame f;
	long took;
	int keep = 1;
	while (keep && (took = wire_read_frame(c->in + at, c->in_len - at, c->max_frame, &f)) > 0) {
		at += (size_t)took;
		keep = answer(c, &f);
	}
	if (keep && took < 0) {
		if (reserve(c, 256))
			c->out_len += wire_disconnect(c->out + c->out_len, 256,
						      WIRE_AGENT_DISCONNECT, 3, "frame too big");
		keep = 0;
	}
	memmove(c->in, c->in + at, c->in_len - at);
	c->in_len -= at;
	if (!keep)
		c->closing = 1;
	flush_out(c);
	if (c->closing && c->out_len == 0)
		client_close(c);
}

static void on_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct client *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->max_frame = WIRE_MAX_FRAME;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"listen", required_argument, 0, 'l'}, {"vars", required_argument, 0, 'n'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	const char *addr = "127.0.0.1:12350";
	int o;
	while ((o = getopt_long(argc, argv, "l:n:h", longs, NULL)) != -1) {
		if (o == 'l') {
			addr = optarg;
		} else if (o == 'n') {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 1 || v > MAX_VARS) {
				fprintf(stderr, "ack_agent: --vars takes 1 to %d\n", MAX_VARS);
				return 2;
			}
			nb_vars = (unsigned)v;
		} else if (o == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	int lfd = listen_on(addr);
	if (lfd < 0) {
		fprintf(stderr, "ack_agent: cannot listen on %s\n", addr);
		return 1;
	}
	epfd = epoll_create1(0);
	/* The listener is told apart by a NULL pointer. */
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
	struct epoll_event events[256];
	while (!stop_requested) {
		int n = epoll_wait(epfd, events, 256, 500);
		for (int i = 0; i < n; i++) {
			struct client *c = events[i].data.ptr;
			if (!c)
				on_accept(lfd);
			else if (c->waits_writable) {
				flush_out(c);
				if (c->closing && c->out_len == 0)
					client_close(c);
			} else
				on_readable(c);
		}
	}
	return 0;
}

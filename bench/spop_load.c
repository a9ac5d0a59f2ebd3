/*
 * spop_load.c - a pipelined SPOP load generator: plays HAProxy's SPOE side
 * against an agent and measures how fast and how promptly it answers.
 *
 * Each connection sends a HELLO, then keeps up to `window` NOTIFY frames
 * in flight, each carrying the `breaker-observe` message exactly as
 * haproxy/spoe-breaker.conf makes HAProxy send it. Server names cycle
 * through `servers` distinct ones. Every frame's send time is kept in its
 * window slot (the slot is the stream-id), so each ACK gives one send->ACK
 * latency. Stops at the duration or the frame count, whichever comes
 * first, then waits at most 2 s for the ACKs still owed.
 *
 * Output: one line of key=value figures (see --help), for scripts.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

#include "latency.h"
#include "spop_wire.h"

#define READ_CHUNK   65536
#define DRAIN_NS     2000000000ull /* ACKs still owed after the stop */
#define NOTIFY_ROOM  256           /* a breaker-observe frame is far smaller */

struct options {
	const char *host;
	const char *port;
	int connections;
	int window;
	unsigned servers;
	double duration_s;
	uint64_t count; /* 0: no limit but the duration */
	double rate;    /* NOTIFY/s over all connections; 0: as fast as ACKs come */
	int status;
	const char *backend;
	int idle; /* HELLO, hold the connections for the duration, send nothing */
};

struct conn {
	int fd;
	int alive;
	uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_len;
	size_t out_sent;
	uint64_t *sent_ns; /* by window slot; 0 when the slot is free */
	int *free_slots;
	int nb_free;
	uint64_t next_frame_id;
	uint64_t next_due_ns; /* rate mode: when the next NOTIFY may go */
};

static struct options opt = {
	.host = "127.0.0.1",
	.port = "12345",
	.connections = 1,
	.window = 1,
	.servers = 10,
	.duration_s = 5,
	.status = 200,
	.backend = "be_bench",
};

static volatile sig_atomic_t stop_requested;
static struct latency lat;
static uint64_t frames_sent, acks, refused, protocol_errors, next_server;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *to)
{
	fprintf(to,
		"Usage: spop_load [OPTIONS]\n"
		"Sends breaker-observe NOTIFY frames to an SPOE agent as HAProxy would, and\n"
		"prints NOTIFY/s and send->ACK latency.\n\n"
		"  -a, --addr HOST:PORT    the agent (default 127.0.0.1:12345; loopback expected)\n"
		"  -c, --connections N     SPOP connections (default 1)\n"
		"  -w, --window N          NOTIFY frames in flight per connection (default 1)\n"
		"  -s, --servers N         distinct server names, cycled (default 10)\n"
		"  -d, --duration SECONDS  stop after this long (default 5; at most 3600)\n"
		"  -n, --count N           stop after N frames (default: the duration only)\n"
		"  -r, --rate N            NOTIFY/s over all connections (default: as fast as\n"
		"                          the ACKs allow)\n"
		"      --status N          the HTTP status each message reports (default 200)\n"
		"      --backend NAME      the backend name sent (default be_bench)\n"
		"      --idle              HELLO only, then hold the connections for the\n"
		"                          duration (prints \"ready\" once all are open)\n"
		"  -h, --help              this help\n\n"
		"Prints one line: connections= window= servers= sent= acked= refused= errors=\n"
		"secs= notify_per_s= p50_us= p99_us= max_us= (refused: ACKs that set \"error\").\n"
		"Exit status 0, or 1 when a connection failed or the agent broke protocol.\n");
}

static int parse_addr(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg)
		return -1;
	static char host[256];
	size_t n = (size_t)(colon - arg);
	if (n >= sizeof(host))
		return -1;
	memcpy(host, arg, n);
	host[n] = 0;
	opt.host = host;
	opt.port = colon + 1;
	return 0;
}

static long positive(const char *arg, const char *what, long max)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || v < 1 || v > max) {
		fprintf(stderr, "spop_load: %s '%s': expected 1..%ld\n", what, arg, max);
		exit(2);
	}
	return v;
}

static void parse_options(int argc, char **argv)
{
	static const struct option longs[] = {
		{"addr", required_argument, 0, 'a'},  {"connections", required_argument, 0, 'c'},
		{"window", required_argument, 0, 'w'}, {"servers", required_argument, 0, 's'},
		{"duration", required_argument, 0, 'd'}, {"count", required_argument, 0, 'n'},
		{"rate", required_argument, 0, 'r'},  {"status", required_argument, 0, 'S'},
		{"backend", required_argument, 0, 'B'}, {"idle", no_argument, 0, 'I'},
		{"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "a:c:w:s:d:n:r:h", longs, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (parse_addr(optarg) < 0) {
				fprintf(stderr, "spop_load: --addr '%s': expected HOST:PORT\n", optarg);
				exit(2);
			}
			break;
		case 'c':
			opt.connections = (int)positive(optarg, "--connections", 5000);
			break;
		case 'w':
			opt.window = (int)positive(optarg, "--window", 4096);
			break;
		case 's':
			opt.servers = (unsigned)positive(optarg, "--servers", 10000000);
			break;
		case 'd':
			opt.duration_s = atof(optarg);
			if (opt.duration_s <= 0 || opt.duration_s > 3600) {
				fprintf(stderr, "spop_load: --duration '%s': expected 0..3600 s\n", optarg);
				exit(2);
			}
			break;
		case 'n':
			opt.count = (uint64_t)positive(optarg, "--count", 1000000000L);
			break;
		case 'r':
			opt.rate = (double)positive(optarg, "--rate", 100000000L);
			break;
		case 'S':
			opt.status = (int)positive(optarg, "--status", 599);
			break;
		case 'B':
			opt.backend = optarg;
			break;
		case 'I':
			opt.idle = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spop_load: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
}

/* Connects and completes the HELLO, blocking (bounded by a 5 s timeout);
 * the socket is left non-blocking. -1 on failure, with a message. */
static int open_connection(const struct addrinfo *ai, struct conn *c)
{
	int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0) {
		perror("spop_load: socket");
		return -1;
	}
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	/* HAProxy sets it on its SPOE connections too: no Nagle delay. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		perror("spop_load: connect");
		close(fd);
		return -1;
	}
	uint8_t buf[1024];
	size_t n = wire_haproxy_hello(buf, sizeof(buf), 0);
	if (write(fd, buf, n) != (ssize_t)n) {
		perror("spop_load: HELLO");
		close(fd);
		return -1;
	}
	size_t have = 0;
	struct wire_frame f;
	long took;
	while ((took = wire_read_frame(buf, have, WIRE_MAX_FRAME, &f)) == 0) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		if (r <= 0) {
			fprintf(stderr, "spop_load: no AGENT-HELLO (%s)\n",
				r == 0 ? "closed" : strerror(errno));
			close(fd);
			return -1;
		}
		have += (size_t)r;
	}
	if (took < 0 || f.type != WIRE_AGENT_HELLO) {
		fprintf(stderr, "spop_load: expected AGENT-HELLO, got frame type %d\n",
			took < 0 ? -1 : f.type);
		close(fd);
		return -1;
	}
	/* From here on the event loop drives it. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->fd = fd;
	c->alive = 1;
	return 0;
}

static int conn_setup(struct conn *c)
{
	c->in = malloc(READ_CHUNK + WIRE_MAX_FRAME + 4);
	c->out = malloc((size_t)opt.window * NOTIFY_ROOM);
	c->sent_ns = calloc((size_t)opt.window, sizeof(*c->sent_ns));
	c->free_slots = malloc((size_t)opt.window * sizeof(*c->free_slots));
	if (!c->in || !c->out || !c->sent_ns || !c->free_slots)
		return -1;
	for (int i = 0; i < opt.window; i++)
		c->free_slots[i] = opt.window - 1 - i;
	c->nb_free = opt.window;
	c->next_frame_id = 1;
	return 0;
}

static int may_send_more(uint64_t now, uint64_t end_ns)
{
	if (stop_requested || now >= end_ns)
		return 0;
	return opt.count == 0 || frames_sent < opt.count;
}

/* Fills the connection's free window slots with NOTIFY frames (at the
 * rate, if one is set) and writes them in one go; what the socket does
 * not take now is written when it is writable. */
static void conn_fill(struct conn *c, uint64_t now, uint64_t end_ns, uint64_t interval_ns)
{
	char srv[32];
	while (c->alive && c->nb_free > 0 && may_send_more(now, end_ns)) {
		if (interval_ns && now < c->next_due_ns)
			break;
		int slot = c->free_slots[--c->nb_free];
		snprintf(srv, sizeof(srv), "s%lu", (unsigned long)(next_server++ % opt.servers));
		/* stream-id = slot + 1, as a stream-id of 0 means "none". */
		size_t n = wire_notify_observe(c->out + c->out_len, NOTIFY_ROOM, (uint64_t)slot + 1,
					       c->next_frame_id++, opt.backend, srv, opt.status);
		c->out_len += n;
		c->sent_ns[slot] = now;
		frames_sent++;
		if (interval_ns) {
			c->next_due_ns += interval_ns;
			/* A stall does not turn into a burst larger than a second's worth. */
			if (c->next_due_ns + 1000000000ull < now)
				c->next_due_ns = now;
		}
	}
	while (c->alive && c->out_sent < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			perror("spop_load: send");
			protocol_errors++;
			c->alive = 0;
			return;
		}
		c->out_sent += (size_t)w;
	}
	c->out_len = c->out_sent = 0;
}

/* Reads what the agent sent and accounts for every ACK in it. */
static void conn_read(struct conn *c)
{
	ssize_t r = read(c->fd, c->in + c->in_len, READ_CHUNK);
	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		fprintf(stderr, "spop_load: the agent closed a connection\n");
		protocol_errors++;
		c->alive = 0;
		return;
	}
	uint64_t now = now_ns();
	c->in_len += (size_t)r;
	size_t at = 0;
	struct wire_frame f;
	long took;
	while ((took = wire_read_frame(c->in + at, c->in_len - at, WIRE_MAX_FRAME, &f)) > 0) {
		at += (size_t)took;
		int slot = (int)f.stream_id - 1;
		if (f.type != WIRE_ACK || slot < 0 || slot >= opt.window || !c->sent_ns[slot]) {
			fprintf(stderr, "spop_load: unexpected frame type %d stream %lu\n", f.type,
				(unsigned long)f.stream_id);
			protocol_errors++;
			c->alive = 0;
			return;
		}
		int named;
		int actions = wire_ack_actions(f.payload, f.payload_len, "error", &named);
		if (actions <= 0) {
			/* HAProxy 3.1+ stalls on an empty ACK: as bad as a malformed one. */
			fprintf(stderr, "spop_load: ACK with no action or malformed\n");
			protocol_errors++;
		}
		if (named)
			refused++;
		latency_record(&lat, now - c->sent_ns[slot]);
		c->sent_ns[slot] = 0;
		c->free_slots[c->nb_free++] = slot;
		acks++;
	}
	if (took < 0) {
		fprintf(stderr, "spop_load: malformed frame from the agent\n");
		protocol_errors++;
		c->alive = 0;
		return;
	}
	memmove(c->in, c->in + at, c->in_len - at);
	c->in_len -= at;
}

static int hold_idle(struct conn *conns)
{
	printf("ready connections=%d\n", opt.connections);
	fflush(stdout);
	uint64_t end = now_ns() + (uint64_t)(opt.duration_s * 1e9);
	while (!stop_requested && now_ns() < end)
		usleep(20000);
	for (int i = 0; i < opt.connections; i++)
		close(conns[i].fd);
	return 0;
}

int main(int argc, char **argv)
{
	parse_options(argc, argv);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	int rc = getaddrinfo(opt.host, opt.port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "spop_load: %s:%s: %s\n", opt.host, opt.port, gai_strerror(rc));
		return 1;
	}
	struct conn *conns = calloc((size_t)opt.connections, sizeof(*conns));
	if (!conns)
		return 1;
	for (int i = 0; i < opt.connections; i++)
		if (open_connection(ai, &conns[i]) < 0)
			return 1;
	freeaddrinfo(ai);
	if (opt.idle)
		return hold_idle(conns);

	int ep = epoll_create1(0);
	for (int i = 0; i < opt.connections; i++) {
		if (conn_setup(&conns[i]) < 0) {
			fprintf(stderr, "spop_load: out of memory\n");
			return 1;
		}
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = &conns[i]};
		epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
	}

	uint64_t interval_ns = opt.rate > 0 ? (uint64_t)(1e9 * opt.connections / opt.rate) : 0;
	uint64_t start = now_ns();
	uint64_t end_ns = start + (uint64_t)(opt.duration_s * 1e9);
	for (int i = 0; i < opt.connections; i++) {
		/* Spread the connections' sends over one interval. */
		conns[i].next_due_ns = start + interval_ns * (uint64_t)i / (uint64_t)opt.connections;
		conn_fill(&conns[i], start, end_ns, interval_ns);
	}

	uint64_t load_end = 0, acks_at_end = 0;
	struct epoll_event events[64];
	for (;;) {
		uint64_t now = now_ns();
		if (!load_end && !may_send_more(now, end_ns)) {
			load_end = now;
			acks_at_end = acks;
		}
		uint64_t owed = frames_sent - acks;
		int alive = 0;
		for (int i = 0; i < opt.connections; i++)
			alive += conns[i].alive;
		if (!alive || (load_end && (owed == 0 || now > load_end + DRAIN_NS)))
			break;
		int timeout_ms = 100;
		if (interval_ns && !load_end) {
			/* Wake for the earliest send due, in whole milliseconds. */
			uint64_t due = UINT64_MAX;
			for (int i = 0; i < opt.connections; i++)
				if (conns[i].alive && conns[i].nb_free && conns[i].next_due_ns < due)
					due = conns[i].next_due_ns;
			if (due != UINT64_MAX)
				timeout_ms = due <= now ? 0 : (int)((due - now + 999999) / 1000000);
		}
		int n = epoll_wait(ep, events, 64, timeout_ms);
		for (int i = 0; i < n; i++) {
			struct conn *c = events[i].data.ptr;
			if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				while (c->alive) {
					size_t before = c->in_len;
					uint64_t acks_before = acks;
					conn_read(c);
					/* Edge-triggered: read until nothing more came. */
					if (c->in_len == before && acks == acks_before)
						break;
				}
		}
		now = now_ns();
		for (int i = 0; i < opt.connections; i++)
			conn_fill(&conns[i], now, end_ns, interval_ns);
	}
	if (!load_end) {
		load_end = now_ns();
		acks_at_end = acks;
	}
	double secs = (double)(load_end - start) / 1e9;
	printf("connections=%d window=%d servers=%u sent=%lu acked=%lu refused=%lu errors=%lu "
	       "secs=%.2f notify_per_s=%.0f p50_us=%.1f p99_us=%.1f max_us=%.1f\n",
	       opt.connections, opt.window, opt.servers, (unsigned long)frames_sent,
	       (unsigned long)acks, (unsigned long)refused, (unsigned long)protocol_errors, secs,
	       secs > 0 ? (double)acks_at_end / secs : 0, latency_quantile_ns(&lat, 0.50) / 1e3,
	       latency_quantile_ns(&lat, 0.99) / 1e3, (double)lat.max_ns / 1e3);
	return protocol_errors || acks != frames_sent ? 1 : 0;
}

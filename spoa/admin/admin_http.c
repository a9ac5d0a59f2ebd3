/*
 * admin_http.c - the admin HTTP listener on the event loop (see
 * admin_http.h).
 *
 * libmicrohttpd with MHD_USE_EPOLL and no internal thread: it keeps its
 * sockets in one epoll set whose fd becomes readable when any of them is
 * ready, so libev watches that single fd; MHD_run() then does the work
 * without blocking, and MHD_get_timeout() says when it next needs to run
 * (idle timeouts, or 0 when it still has buffered work).
 *
 * Against clients that hold slots: at most ADMIN_HTTP_PER_IP_CONNECTIONS
 * per address (MHD's own limit), and a total time per request on top of
 * MHD's idle timeout, which a client sending a byte a second never trips:
 * each connection has ADMIN_HTTP_REQUEST_TIMEOUT_S from its start, or from
 * its previous answer, to send a request and read the answer; past that,
 * a sweep shuts its socket down and MHD closes it.
 *
 * Against clients from elsewhere: MHD's accept policy callback checks the
 * allowlist before MHD reads anything from the connection.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/admin_http.h"
#include "spop/agent.h"
#include "util/log.h"
#include "admin/metrics.h"
#include "util/acceptor.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/listen_socket.h"
#include "util/errmsg.h"
#include "util/fd_limit.h"

/* Out of descriptors, MHD retries accept() on every run: we pause it. */
#define ADMIN_HTTP_PAUSE_S 0.1

/* One connection, for the request timeout. */
struct admin_client {
	struct MHD_Connection *conn; /* NULL: a free slot */
	double deadline;             /* clock_mono_s() to send a request and read its answer */
	bool cut;                    /* shut down, waiting for MHD to close it */
};

struct admin_http {
	struct ev_loop *loop;
	struct MHD_Daemon *mhd;
	int listen_fd;
	ev_io io;       /* MHD's epoll fd */
	ev_timer timer; /* MHD's next timeout */
	ev_timer sweep; /* the request timeout, once a second while clients are in */
	ev_timer pause; /* out of descriptors: MHD waits */
	bool out_of_fds; /* MHD said so during the last run */
	/* The render budget (read_page): the loop turn it counts, the bytes
	 * rendered in it, and whether a page waits for the next turn. */
	unsigned render_turn;
	size_t rendered_in_turn;
	bool more_to_render;
	admin_render_fn render;
	void *render_ctx;
	const struct cidr_list *allow;
	uint64_t not_allowed;
	char name[128];
	struct admin_client clients[ADMIN_HTTP_MAX_CONNECTIONS];
	unsigned nb_clients;
};

static const struct {
	const char *path;
	enum admin_page page;
	const char *content_type;
} pages[] = {
	{"/metrics", ADMIN_PAGE_METRICS, METRICS_CONTENT_TYPE},
	{"/state", ADMIN_PAGE_STATE, "application/json"},
	{"/healthz", ADMIN_PAGE_HEALTHZ, "text/plain; charset=utf-8"},
};

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, char *body,
			       size_t len, const char *content_type)
{
	/* MUST_FREE: libmicrohttpd owns body from here, whatever happens. */
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	char *body = strdup(text);
	if (!body)
		return MHD_NO;
	return respond(conn, status, body, strlen(text), "text/plain; charset=utf-8");
}

/* A page too large for one go: the rest is rendered as libmicrohttpd asks
 * for it, one slice per call, on the loop's turn that can send it. */
struct page_job {
	struct admin_http *h;
	enum admin_page page;
	struct admin_cursor cursor;
	struct strbuf buf;
	size_t sent; /* of buf */
};

/*
 * Bytes rendered per loop turn, all pages together. MHD keeps asking for
 * more while the client's socket takes it - on loopback, megabytes in one
 * run - so without a bound one turn rendered dozens of slices (measured:
 * turns of 14 ms during a 156 MB scrape of 100,000 servers; rendering runs
 * at about 40 MB/s, printf-bound). Past the budget read_page answers
 * "nothing yet"; MHD asks again on its next run, which the loop starts at
 * once, after serving what else is ready.
 */
#define ADMIN_BYTES_PER_TURN (48u << 10)

static ssize_t read_page(void *cls, uint64_t pos, char *out, size_t max)
{
	struct page_job *job = cls;
	struct admin_http *h = job->h;
	(void)pos;

	if (job->sent == job->buf.len) {
		unsigned turn = ev_iteration(h->loop);
		if (turn != h->render_turn) {
			h->render_turn = turn;
			h->rendered_in_turn = 0;
		}
		if (h->rendered_in_turn >= ADMIN_BYTES_PER_TURN) {
			h->more_to_render = true;
			return 0;
		}
		job->buf.len = 0;
		job->sent = 0;
		if (job->buf.data)
			job->buf.data[0] = '\0';
		/* Slices of unused table slots write nothing: go on to one that
		 * does (they cost a look at each slot), never answer "nothing yet". */
		while (job->buf.len == 0 && !job->cursor.done) {
			if (!job->h->render(job->h->render_ctx, job->page, &job->cursor, &job->buf) ||
			    job->buf.failed) {
				log_warning("admin %s: a page could not be rendered (out of memory)",
					    job->h->name);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
		}
		if (job->buf.len == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		h->rendered_in_turn += job->buf.len;
	}
	size_t n = job->buf.len - job->sent;
	if (n > max)
		n = max;
	memcpy(out, job->buf.data + job->sent, n);
	job->sent += n;
	return (ssize_t)n;
}

static void free_page(void *cls)
{
	struct page_job *job = cls;
	strbuf_free(&job->buf);
	free(job);
}

/* Answers with what the first slice wrote and, when more remains, the
 * rest as it is asked for. */
static enum MHD_Result respond_page(struct admin_http *h, struct MHD_Connection *conn,
				    enum admin_page page, const char *content_type)
{
	struct page_job *job = calloc(1, sizeof(*job));
	if (!job)
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
	job->h = h;
	job->page = page;
	strbuf_init(&job->buf);
	if (!h->render(h->render_ctx, page, &job->cursor, &job->buf) || job->buf.failed) {
		free_page(job);
		log_warning("admin %s: a page could not be rendered (out of memory)", h->name);
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
	}
	if (job->cursor.done) { /* small: one buffer, as before */
		size_t len;
		char *body = strbuf_steal(&job->buf, &len);
		free_page(job);
		if (!body)
			body = strdup(""), len = 0;
		return body ? respond(conn, MHD_HTTP_OK, body, len, content_type) : MHD_NO;
	}
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_page, job, free_page);
	if (!r) {
		free_page(job);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct admin_http *h = cls;
	(void)version;
	(void)upload_data;

	/* A body is never read: the answer is decided on the first call, and
	 * whatever was uploaded is dropped. */
	*upload_data_size = 0;
	*con_cls = h;

	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		if (strcmp(url, pages[i].path) != 0)
			continue;
		return respond_page(h, conn, pages[i].page, pages[i].content_type);
	}
	return respond_text(conn, MHD_HTTP_NOT_FOUND, "not found: /metrics, /state, /healthz\n");
}

static unsigned mhd_connections(struct admin_http *h)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return info ? info->num_connections : 0;
}

/* Runs MHD, then re-arms the timer for what it says it needs next. */
static void run(struct admin_http *h)
{
	unsigned before = mhd_connections(h);
	h->more_to_render = false;
	MHD_run(h->mhd);
	/* MHD takes its listening socket out of its epoll set while every
	 * slot is taken, and puts it back only at the start of a run. After
	 * a run that freed slots nothing else would wake it (the socket is
	 * not watched): run once more, or a full listener never accepts
	 * again. */
	if (mhd_connections(h) < before)
		MHD_run(h->mhd);
	if (h->out_of_fds) {
		/* MHD found no descriptor for a waiting client and would retry
		 * at every wakeup: refuse that client through the reserve,
		 * and let MHD rest a moment. */
		h->out_of_fds = false;
		fd_reserve_refuse(h->listen_fd);
		ev_io_stop(h->loop, &h->io);
		ev_timer_stop(h->loop, &h->timer);
		ev_timer_start(h->loop, &h->pause);
		return;
	}
	ev_timer_stop(h->loop, &h->timer);
	MHD_UNSIGNED_LONG_LONG ms;
	if (h->more_to_render) {
		/* The slice budget held a page back: go on next turn. */
		ev_timer_set(&h->timer, 0., 0.);
		ev_timer_start(h->loop, &h->timer);
	} else if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		ev_timer_set(&h->timer, (double)ms / 1000.0, 0.);
		ev_timer_start(h->loop, &h->timer);
	}
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	run(container_of(w, struct admin_http, io));
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	run(container_of(w, struct admin_http, timer));
}

static void pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct admin_http *h = container_of(w, struct admin_http, pause);
	(void)revents;
	ev_io_start(loop, &h->io);
	run(h);
}

/* Cuts the clients past their deadline; MHD then sees their sockets
 * closed and frees their slots. On the monotonic clock, not ev_now(): a
 * step of the wall clock would cut every client at once (forward) or none
 * for hours (back). */
static void sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct admin_http *h = container_of(w, struct admin_http, sweep);
	bool cut = false;
	double now = clock_mono_s();
	(void)revents;

	for (unsigned i = 0; i < ADMIN_HTTP_MAX_CONNECTIONS; i++) {
		struct admin_client *c = &h->clients[i];
		if (!c->conn || c->cut || now < c->deadline)
			continue;
		const union MHD_ConnectionInfo *info =
			MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!info)
			continue;
		shutdown(info->connect_fd, SHUT_RDWR);
		c->cut = cut = true;
		log_info("admin %s: a client took more than %ds for one request, closing it",
			 h->name, ADMIN_HTTP_REQUEST_TIMEOUT_S);
	}
	if (cut)
		run(h);
	if (h->nb_clients == 0)
		ev_timer_stop(loop, &h->sweep);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct admin_http *h = cls;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		struct admin_client *c = *socket_context;
		if (c) {
			*c = (struct admin_client){0};
			h->nb_clients--;
		}
		return;
	}
	*socket_context = NULL;
	for (unsigned i = 0; i < ADMIN_HTTP_MAX_CONNECTIONS; i++) {
		struct admin_client *c = &h->clients[i];
		if (c->conn)
			continue;
		*c = (struct admin_client){
			.conn = conn,
			.deadline = clock_mono_s() + ADMIN_HTTP_REQUEST_TIMEOUT_S,
		};
		*socket_context = c;
		if (h->nb_clients++ == 0)
			ev_timer_again(h->loop, &h->sweep);
		return;
	}
}

/* An answer went out: a keep-alive connection's next request gets its own
 * full time. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	(void)cls;
	(void)con_cls;
	(void)code;
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct admin_client *c = info ? info->socket_context : NULL;
	if (c)
		c->deadline = clock_mono_s() + ADMIN_HTTP_REQUEST_TIMEOUT_S;
}

/* MHD's accept policy: MHD_NO closes the connection before it is read. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct admin_http *h = cls;
	const struct cidr_list *l = h->allow;
	(void)addrlen;

	if (!l || (!l->any && l->n == 0) || cidr_list_allows(l, addr))
		return MHD_YES;
	h->not_allowed++;
	char who[64];
	acceptor_peer_text(addr, false, who, sizeof(who));
	/* Rate-limited per call site (util/log.h). */
	log_warning("admin %s: connection from %s refused: not in admin_allow (or allow)", h->name,
		    who);
	return MHD_NO;
}

uint64_t admin_http_not_allowed(const struct admin_http *h)
{
	return h ? h->not_allowed : 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct admin_http *h = cls;
	char line[256];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	/* MHD's only word that accept() ran out of descriptors. */
	if (strstr(line, "resource limit"))
		h->out_of_fds = true;
	log_info("admin %s: %s", h->name, line);
}

struct admin_http *admin_http_open(struct ev_loop *loop, const char *spec,
				   const struct cidr_list *allow, admin_render_fn render,
				   void *ctx, char *err, size_t err_size)
{
	bool is_unix;
	char why[256];
	int fd = listen_socket_open(spec, &is_unix, why, sizeof(why));
	if (fd < 0) {
		errmsg_set(err, err_size, "admin listener: %s", why);
		return NULL;
	}
	if (is_unix) {
		close(fd);
		errmsg_set(err, err_size, "admin address '%s': expected HOST:PORT or [IPV6]:PORT", spec);
		return NULL;
	}
	struct admin_http *h = calloc(1, sizeof(*h));
	if (!h) {
		close(fd);
		errmsg_set(err, err_size, "admin address '%s': out of memory", spec);
		return NULL;
	}
	h->loop = loop;
	h->listen_fd = fd;
	h->render = render;
	h->render_ctx = ctx;
	h->allow = allow;
	snprintf(h->name, sizeof(h->name), "%s", spec);

	/* No MHD_USE_INTERNAL_POLLING_THREAD: MHD_run() on our loop. */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, on_accept, h, on_request, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)ADMIN_HTTP_MAX_CONNECTIONS,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				  (unsigned)ADMIN_HTTP_PER_IP_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)ADMIN_HTTP_TIMEOUT_S,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		close(fd);
		free(h);
		errmsg_set(err, err_size, "admin address '%s': libmicrohttpd could not start", spec);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		MHD_stop_daemon(h->mhd); /* closes fd */
		free(h);
		errmsg_set(err, err_size, "admin address '%s': libmicrohttpd has no epoll fd", spec);
		return NULL;
	}
	ev_io_init(&h->io, io_cb, info->epoll_fd, EV_READ);
	ev_io_start(loop, &h->io);
	ev_timer_init(&h->timer, timer_cb, 0., 0.);
	ev_timer_init(&h->sweep, sweep_cb, 0., 1.);
	ev_timer_init(&h->pause, pause_cb, ADMIN_HTTP_PAUSE_S, 0.);
	fd_reserve_open();
	run(h);
	log_notice("admin HTTP on %s (/metrics, /state, /healthz)", spec);
	return h;
}

void admin_http_close(struct admin_http *h)
{
	if (!h)
		return;
	ev_io_stop(h->loop, &h->io);
	ev_timer_stop(h->loop, &h->timer);
	ev_timer_stop(h->loop, &h->sweep);
	ev_timer_stop(h->loop, &h->pause);
	MHD_stop_daemon(h->mhd);
	free(h);
}

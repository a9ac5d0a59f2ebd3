/*
 * client-t.h - the Runtime API client's own state, private to client.c
 * (the exchanges), queue.c (the queue of commands both others read) and
 * reach.c (whether HAProxy is reached; apart from client.c only for
 * length, see its head comment). The interface is runtime_api.h.
 */
#ifndef SPOA_HAPI_CLIENT_T_H
#define SPOA_HAPI_CLIENT_T_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "hapi/runtime_api.h"

enum runtime_api_phase {
	PHASE_IDLE,
	PHASE_CONNECTING,
	PHASE_WRITING,
	PHASE_READING,
	PHASE_BACKOFF,
};

struct runtime_api_entry {
	char *command;
	size_t len;
	runtime_api_stream_fn stream; /* NULL: the reply is handed over whole */
	runtime_api_reply_fn fn;
	void *ctx;
	double queued_at; /* clock_mono_s() */
};

struct runtime_api_client {
	ev_io io;	   /* first: the callback recovers the client from its watcher */
	ev_timer kick;	   /* 0 s: starts a batch from the loop */
	ev_timer deadline; /* the exchange's whole time budget */
	ev_timer backoff;  /* the wait before the next attempt after a failure */
	ev_timer expire;   /* fails commands that waited too long while HAProxy is down */
	struct ev_loop *loop;
	struct runtime_api_settings settings;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char address[128];
	int fd;
	enum runtime_api_phase phase;

	/* FIFO ring of max_queue entries; the first `inflight` are being sent. */
	struct runtime_api_entry *queue;
	unsigned head, count, inflight;

	char line[RUNTIME_API_MAX_LINE]; /* the batch as sent */
	size_t line_len, line_sent;
	char *in; /* the reply so far (grows up to max_reply), or what the
		   * stream left unused */
	size_t in_len, in_cap;
	bool streaming;	      /* the exchange is one streamed command */
	size_t streamed;      /* bytes of its reply so far */
	char stream_tail[2];  /* its last two bytes: "\n\n" ends a whole output */
	double started;       /* clock_mono_s() when the exchange began */
	runtime_api_exchange_fn on_exchange; /* told when one begins */
	void *on_exchange_ctx;
	struct runtime_api_str *parts; /* max_batch outputs of the split reply */

	bool down;		  /* unreachable since the last failed attempt */
	unsigned failed_attempts; /* in a row */
	double backoff_delay;	  /* the next backoff */
	bool full_logged;	  /* "queue full" said once per episode */
	bool freeing;
	struct runtime_api_stats stats;
};

/* queue.c: the queue's i-th command (0: the oldest); the
 * oldest popped and answered (it leaves the queue before its callback
 * runs, so the callback may submit). */
const struct runtime_api_entry *runtime_api_queue_at(const struct runtime_api_client *c,
						     unsigned i);
void runtime_api_answer_oldest(struct runtime_api_client *c, enum runtime_api_result result,
			       const char *reply, size_t len);

/* reach.c: an attempt reached HAProxy, or failed to; the
 * timer that fails commands waiting too long while it is down. */
void runtime_api_mark_up(struct runtime_api_client *c);
void runtime_api_mark_down(struct runtime_api_client *c, const char *reason);
/* Fails the commands that waited `timeout` unsent while HAProxy is down;
 * the timer set for the next of them. */
void runtime_api_expire_waiting(struct runtime_api_client *c);
void runtime_api_arm_expire(struct runtime_api_client *c);
void runtime_api_expire_cb(struct ev_loop *loop, ev_timer *w, int revents);

#endif /* SPOA_HAPI_CLIENT_T_H */

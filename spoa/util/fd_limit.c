/*
 * fd_limit.c - the descriptor limit and the reserve descriptor (see
 * fd_limit.h).
 *
 * A listening socket with a connection waiting stays readable: a listener
 * that cannot accept() it for want of a descriptor is woken again at once,
 * forever (one core at full speed, a log line per wakeup). Closing the
 * reserve frees exactly one descriptor, enough to take the connection off
 * the queue and close it; the listener then pauses on a timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fd_limit.h"

static int reserve = -1;

uint64_t fd_limit_raise(uint64_t wanted)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024; /* the usual soft limit; never fails on Linux */
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < wanted) {
		rlim_t target = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > wanted
					? (rlim_t)wanted
					: rl.rlim_max;
		struct rlimit raised = {.rlim_cur = target, .rlim_max = rl.rlim_max};
		if (target > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0)
			rl.rlim_cur = target;
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

void fd_reserve_open(void)
{
	if (reserve < 0)
		reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool fd_reserve_refuse(int listen_fd)
{
	if (reserve < 0)
		return false;
	close(reserve);
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

bool fd_limit_hit(int accept_errno)
{
	return accept_errno == EMFILE || accept_errno == ENFILE || accept_errno == ENOBUFS ||
	       accept_errno == ENOMEM;
}

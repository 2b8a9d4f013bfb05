/*
 * The synchronous fd sink (format/fd_sink.h, kt__fd_sink_new()): one
 * buffer, written with pwrite() to a file and write() to a pipe, socket
 * or terminal, with SIGPIPE kept from the host and a stalled reader
 * bounded by a timeout.  The writer's own sink, and the session's when
 * io_uring is not used.  One thread at a time: the sink's owner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <katra/atomic.h>
#include "format/fd_sink.h"

#define OUT_BUF (256u << 10) /* the buffer a writer fills between writes */

struct fd_sink {
	kt__sink base;
	int fd;
	int seekable;
	int nowait;               /* RWF_NOWAIT works on fd (until EOPNOTSUPP) */
	uint64_t timeout_ns;      /* 0: a stream write waits as long as it takes */
	const uint64_t *stop_at;  /* or NULL; see kt__fd_sink_set_timeout() */
	uint8_t *buf;
};

int kt__write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static uint8_t *fd_acquire(kt__sink *s, size_t *cap)
{
	struct fd_sink *f = (struct fd_sink *)s;
	*cap = OUT_BUF;
	return f->buf;
}

/*
 * writev() to a pipe or socket, which raises SIGPIPE when its reader has
 * gone: by default that kills the process, and the host never asked for
 * it.  The write is made with SIGPIPE blocked; the one it raised (sent to
 * this thread, so pending on it) is taken back before the mask is
 * restored, and the write reports EPIPE.  One raised by someone else and
 * already pending is left for its owner.  @flags: pwritev2()'s.
 */
static ssize_t writev_nosigpipe(int fd, const struct iovec *v, int n, int flags)
{
	sigset_t pipe_only, old, pending;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	ssize_t k = pwritev2(fd, v, n, -1, flags);
	int err = errno;
	if (k < 0 && err == EPIPE && !was_pending) {
		static const struct timespec now = { 0, 0 };
		while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR)
			;
	}
	if (!sigismember(&old, SIGPIPE))
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return k;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Wait until @f's fd takes bytes, or give up: -1 with ETIMEDOUT once
 * *@limit (set on the first call: the sink's timeout from now) or the
 * stop's deadline has passed.  A reader that stopped reading (SIGSTOP, a
 * pager, a stuck collector) must not hold the flusher, and through it
 * kt_session_stop() and BLOCK emitters, for ever.
 */
static int wait_writable(struct fd_sink *f, uint64_t *limit)
{
	uint64_t now = mono_ns();
	if (!*limit)
		*limit = now + f->timeout_ns;
	/* Stale is fine: the stop's deadline only ever comes after a wait
	 * that began before it, and the next wait reads it again. */
	uint64_t stop = f->stop_at ? kt__load_stale(f->stop_at) : 0;
	uint64_t end = stop && stop < *limit ? stop : *limit;
	if (now >= end) {
		errno = ETIMEDOUT;
		return -1;
	}
	uint64_t ms = (end - now + 999999) / 1000000;
	struct pollfd p = { .fd = f->fd, .events = POLLOUT };
	if (poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms) < 0 && errno != EINTR)
		return -1;
	return 0;
}

/*
 * One write to a pipe, socket or terminal, in order (no offset).  With a
 * timeout it never blocks past it: RWF_NOWAIT where the file supports it,
 * else poll() first and at most PIPE_BUF bytes, which a pipe that polls
 * writable takes without blocking.
 */
static ssize_t stream_write(struct fd_sink *f, const struct iovec *v, int n)
{
	uint64_t limit = 0;
	if (!f->timeout_ns)
		return writev_nosigpipe(f->fd, v, n, 0);
	for (;;) {
		if (f->nowait) {
			ssize_t k = writev_nosigpipe(f->fd, v, n, RWF_NOWAIT);
			if (k >= 0 || (errno != EAGAIN && errno != EOPNOTSUPP))
				return k;
			if (errno == EOPNOTSUPP) {
				f->nowait = 0;
				continue;
			}
		} else {
			struct pollfd p = { .fd = f->fd, .events = POLLOUT };
			if (poll(&p, 1, 0) > 0) {
				struct iovec one = { v->iov_base,
						     v->iov_len < PIPE_BUF ? v->iov_len : PIPE_BUF };
				return writev_nosigpipe(f->fd, &one, 1, 0);
			}
		}
		if (wait_writable(f, &limit) < 0)
			return -1;
	}
}

/* Set once at load (kt__fd_sink_set_idle()), before any thread. */
static int (*idle_pause)(void);
static void (*idle_resume)(int);

void kt__fd_sink_set_idle(int (*pause)(void), void (*resume)(int))
{
	idle_pause = pause;
	idle_resume = resume;
}

/* One write, however long the file makes it wait, outside the calling
 * thread's work (kt__fd_sink_set_idle()).  errno is the write's. */
static ssize_t one_write(struct fd_sink *f, const struct iovec *v, int n, uint64_t off)
{
	int was = idle_pause ? idle_pause() : 0;
	ssize_t k = f->seekable ? pwritev(f->fd, v, n, (off_t)off) : stream_write(f, v, n);
	int err = errno;
	if (idle_resume)
		idle_resume(was);
	errno = err;
	return k;
}

static int fd_write(kt__sink *s, uint8_t *p, size_t n, uint64_t off)
{
	struct fd_sink *f = (struct fd_sink *)s;
	while (n) {
		struct iovec v = { p, n };
		ssize_t k = one_write(f, &v, 1, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* No progress at all would loop forever: an error. */
			if (!s->error)
				s->error = k < 0 ? -errno : -EIO;
			return s->error;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static int fd_sync(kt__sink *s, int wait)
{
	struct fd_sink *f = (struct fd_sink *)s;
	/* Writes are synchronous: nothing is ever in flight. */
	if (wait < 0 || s->error)
		return s->error;
	/* Pipes and character devices cannot be synced: nothing to do. */
	int was = idle_pause ? idle_pause() : 0;
	int rc = fdatasync(f->fd) < 0 ? errno : 0;
	if (idle_resume)
		idle_resume(was);
	if (rc && rc != EINVAL && rc != EROFS)
		s->error = -rc;
	return s->error;
}

static int fd_write_ref(kt__sink *s, const uint8_t *head, size_t head_len, const void *body,
			size_t body_len, const uint8_t *tail, size_t tail_len, uint64_t off,
			void (*done)(void *ctx, int res), void *ctx)
{
	struct fd_sink *f = (struct fd_sink *)s;
	struct iovec iov[3] = { { (void *)head, head_len }, { (void *)body, body_len },
				{ (void *)tail, tail_len } };
	struct iovec *v = iov;
	int n = 3;
	size_t total = head_len + body_len + tail_len, left = total;

	while (left && !s->error) {
		ssize_t k = one_write(f, v, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			s->error = k < 0 ? -errno : -EIO;
			continue;
		}
		left -= (size_t)k;
		off += (uint64_t)k;
		/* Step over what a short write took. */
		while (n && (size_t)k >= v->iov_len) {
			k -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n) {
			v->iov_base = (uint8_t *)v->iov_base + k;
			v->iov_len -= (size_t)k;
		}
	}
	done(ctx, s->error ? s->error : (int)total);
	return s->error;
}

static int fd_retarget(kt__sink *s, int fd)
{
	struct fd_sink *f = (struct fd_sink *)s;
	f->fd = fd;
	f->seekable = lseek(fd, 0, SEEK_CUR) >= 0;
	return s->error;
}

static void fd_close(kt__sink *s)
{
	struct fd_sink *f = (struct fd_sink *)s;
	free(f->buf);
	free(f);
}

kt__sink *kt__fd_sink_new(int fd)
{
	struct fd_sink *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->buf = malloc(OUT_BUF);
	if (!f->buf) {
		free(f);
		return NULL;
	}
	f->fd = fd;
	f->seekable = lseek(fd, 0, SEEK_CUR) >= 0;
	f->nowait = 1;
	f->base = (kt__sink){ .acquire = fd_acquire, .write = fd_write, .sync = fd_sync,
			      .write_ref = fd_write_ref, .close = fd_close,
			      .retarget = fd_retarget, .backend = KT_IO_PWRITE };
	return &f->base;
}

void kt__fd_sink_set_timeout(kt__sink *s, uint64_t timeout_ns, const uint64_t *stop_at)
{
	struct fd_sink *f = (struct fd_sink *)s;
	f->timeout_ns = timeout_ns;
	f->stop_at = stop_at;
}


/*
 * The io_uring sink: a pool of staging buffers registered with the ring,
 * written with WRITE_FIXED, several in flight at once.  A completion hands
 * its buffer back to the pool; a short write is resubmitted for the rest;
 * the first error is kept and reported by every later call.  fdatasync goes
 * through the ring too (IORING_OP_FSYNC with DATASYNC, drained behind the
 * writes before it).
 *
 * A policy may allow io_uring at set-up and refuse io_uring_enter later
 * (a seccomp filter installed once the program runs): from the first
 * refusal the sink writes with the pwrite sink instead, the writes the
 * kernel never saw included, so nothing is lost.
 *
 * Only the flusher thread calls into a sink, so nothing here is shared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flush/flush.h"

#define FSYNC_TAG UINT64_MAX
#define REF_TAG (UINT64_C(1) << 32) /* user_data of zero-copy op i: REF_TAG + i */
#define REF_OPS 32

/* A write straight from caller memory (the ring): head and tail copied
 * here, the body referenced until the completion. */
struct ref_op {
	uint8_t head[64], tail[16];
	struct iovec iov[3];
	int niov, first;     /* iovecs left start at iov[first] */
	size_t total, done;
	uint64_t off;
	void (*cb)(void *ctx, int res);
	void *ctx;
	int busy;            /* taken: being set up, or queued */
	int queued;          /* a write of it is in flight */
	int sent;            /* the kernel took it (an io_uring_enter worked) */
};

struct slot {
	uint64_t off;   /* file offset of the buffer's first byte */
	size_t len;     /* bytes to write */
	size_t done;    /* bytes written so far */
	int busy;       /* out of the pool: with the writer or in flight */
	int queued;     /* a write of it is in flight */
	int sent;       /* the kernel took it (an io_uring_enter worked) */
};

struct uring_sink {
	kt__sink base;
	struct io_uring ring;
	int fd;
	uint8_t *mem;        /* nbuf * bufsz, registered */
	size_t bufsz;
	unsigned nbuf;
	struct slot *slots;
	unsigned *free_stack;
	unsigned nfree;
	unsigned inflight;   /* writes and syncs not yet completed */
	uint64_t bad_off;    /* lowest offset a failed write covered */
	struct ref_op refs[REF_OPS];
	unsigned refs_busy;
	unsigned syncs_unsent; /* fsyncs queued since the last submit */
	int dead;            /* the ring failed; nothing more is submitted */
	int closed;          /* io_uring_queue_exit() done */
	int regular;         /* a regular file: truncate past a failure */
	kt__sink *pw;        /* io_uring_enter refused: the pwrite sink */
	void (*on_close)(void *ctx); /* kt__uring_sink_on_close() */
	void *on_close_ctx;
};

static void submit(struct uring_sink *u);
static void go_pwrite(struct uring_sink *u);

/* io_uring_enter's answer under a policy that refuses it. */
static int refused(int rc)
{
	return rc == -EPERM || rc == -ENOSYS || rc == -EACCES;
}

static void fail(struct uring_sink *u, int err, uint64_t off)
{
	if (!u->base.error)
		u->base.error = err;
	if (off < u->bad_off)
		u->bad_off = off;
}

/* A free submission entry, submitting what is queued if none is left;
 * NULL when the ring is dead or still full. */
static struct io_uring_sqe *get_sqe(struct uring_sink *u)
{
	if (u->dead)
		return NULL;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe) {
		submit(u);
		sqe = u->dead ? NULL : io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static int queue_write(struct uring_sink *u, unsigned i)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	if (!sqe)
		return u->dead ? -EIO : -EBUSY;
	struct slot *s = &u->slots[i];
	io_uring_prep_write_fixed(sqe, u->fd, u->mem + (size_t)i * u->bufsz + s->done,
				  (unsigned)(s->len - s->done), s->off + s->done, (int)i);
	io_uring_sqe_set_data64(sqe, i);
	return 0;
}

static int queue_ref(struct uring_sink *u, unsigned i)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	if (!sqe)
		return u->dead ? -EIO : -EBUSY;
	struct ref_op *op = &u->refs[i];
	io_uring_prep_writev(sqe, u->fd, op->iov + op->first, (unsigned)(op->niov - op->first),
			     op->off + op->done);
	io_uring_sqe_set_data64(sqe, REF_TAG + i);
	return 0;
}

static void ref_finish(struct uring_sink *u, struct ref_op *op, int res)
{
	op->busy = 0;
	op->queued = 0;
	u->refs_busy--;
	op->cb(op->ctx, res);
}

static void slot_free(struct uring_sink *u, unsigned i)
{
	u->slots[i].busy = 0;
	u->slots[i].queued = 0;
	u->free_stack[u->nfree++] = i;
}

/* Slot @i's remaining bytes, written at once by the pwrite sink. */
static void slot_now(struct uring_sink *u, unsigned i)
{
	struct slot *s = &u->slots[i];
	int rc = u->base.error;
	if (!rc)
		rc = u->pw->write(u->pw, u->mem + (size_t)i * u->bufsz + s->done, s->len - s->done,
				  s->off + s->done);
	if (rc)
		fail(u, rc, s->off + s->done);
	slot_free(u, i);
}

/*
 * Op @i (a slot or a zero-copy op) after its queueing gave @rc: in flight,
 * or, once io_uring_enter is refused (perhaps by the submit a full queue
 * makes) or the queueing failed at @off, handed to @now, which writes it
 * with the pwrite sink or, with the sink's error set, fails it.
 */
static void start_op(struct uring_sink *u, unsigned i, int rc, uint64_t off, int *queued,
		     int *sent, void (*now)(struct uring_sink *u, unsigned i))
{
	if (rc)
		fail(u, rc, off);
	if (u->pw || rc) {
		now(u, i);
		return;
	}
	*queued = 1;
	*sent = 0;
	u->inflight++;
	submit(u);
}

/* Write slot @i's remaining bytes. */
static void start_slot(struct uring_sink *u, unsigned i)
{
	struct slot *s = &u->slots[i];
	int rc = u->pw ? 0 : queue_write(u, i);
	start_op(u, i, rc, s->off + s->done, &s->queued, &s->sent, slot_now);
}

static void store_res(void *ctx, int res)
{
	*(int *)ctx = res;
}

/* Zero-copy op @i's remaining iovecs, written at once by the pwrite sink. */
static void ref_now(struct uring_sink *u, unsigned i)
{
	struct ref_op *op = &u->refs[i];
	const struct iovec *v = op->iov;
	size_t len[3];
	int res = u->base.error;
	/* Those before first are written; first steps over what was. */
	for (int k = 0; k < 3; k++)
		len[k] = k < op->first || k >= op->niov ? 0 : v[k].iov_len;
	if (!res)
		u->pw->write_ref(u->pw, v[0].iov_base, len[0], v[1].iov_base, len[1], v[2].iov_base,
				 len[2], op->off + op->done, store_res, &res);
	if (res < 0)
		fail(u, res, op->off + op->done);
	ref_finish(u, op, res < 0 ? res : (int)op->total);
}

/* Write zero-copy op @i's remaining iovecs. */
static void start_ref(struct uring_sink *u, unsigned i)
{
	struct ref_op *op = &u->refs[i];
	int rc = u->pw ? 0 : queue_ref(u, i);
	start_op(u, i, rc, op->off + op->done, &op->queued, &op->sent, ref_now);
}

static void complete_ref(struct uring_sink *u, unsigned i, int res)
{
	struct ref_op *op = &u->refs[i];
	op->queued = 0;
	if (res < 0) {
		fail(u, res, op->off + op->done);
		ref_finish(u, op, res);
		return;
	}
	op->done += (size_t)res;
	if (op->done == op->total) {
		ref_finish(u, op, (int)op->total);
		return;
	}
	/* Short write: step over what was taken and queue the rest. */
	size_t k = (size_t)res;
	while (op->first < op->niov && k >= op->iov[op->first].iov_len)
		k -= op->iov[op->first++].iov_len;
	op->iov[op->first].iov_base = (uint8_t *)op->iov[op->first].iov_base + k;
	op->iov[op->first].iov_len -= k;
	if (res > 0 && !u->base.error) {
		start_ref(u, i);
		return;
	}
	fail(u, u->base.error ? u->base.error : -EIO, op->off + op->done);
	ref_finish(u, op, u->base.error);
}

static void complete(struct uring_sink *u, uint64_t tag, int res)
{
	u->inflight--;
	if (tag == FSYNC_TAG) {
		/* A file that cannot be synced (a pipe, /dev/null) is not an
		 * error, as with fdatasync(). */
		if (res < 0 && res != -EINVAL && res != -EROFS)
			fail(u, res, UINT64_MAX);
		return;
	}
	if (tag >= REF_TAG) {
		complete_ref(u, (unsigned)(tag - REF_TAG), res);
		return;
	}
	struct slot *s = &u->slots[tag];
	s->queued = 0; /* not in flight: a resubmission queues it again */
	if (res < 0) {
		fail(u, res, s->off + s->done);
	} else {
		s->done += (size_t)res;
		if (s->done < s->len) {
			/* Short write: queue the rest, unless it made no progress
			 * or something already failed. */
			if (res > 0 && !u->base.error) {
				start_slot(u, (unsigned)tag);
				return;
			}
			fail(u, u->base.error ? u->base.error : -EIO, s->off + s->done);
		}
	}
	slot_free(u, (unsigned)tag);
}

/* Close the instance, telling whoever keeps its fd number first. */
static void queue_exit(struct uring_sink *u)
{
	if (u->on_close)
		u->on_close(u->on_close_ctx);
	io_uring_queue_exit(&u->ring);
	u->closed = 1;
}

/*
 * Waiting on the ring or submitting to it failed (not EINTR): it cannot be
 * trusted to report what is in flight.  The file is good below the lowest
 * offset any write in flight covers.  Closing the ring cancels the
 * requests and the kernel waits for them before it lets go of their
 * pages; only then do the callers get their memory back, each exactly
 * once.
 */
static void ring_dead(struct uring_sink *u, int rc)
{
	uint64_t low = UINT64_MAX;
	for (unsigned i = 0; i < u->nbuf; i++)
		if (u->slots[i].queued && u->slots[i].off + u->slots[i].done < low)
			low = u->slots[i].off + u->slots[i].done;
	for (unsigned i = 0; i < REF_OPS; i++)
		if (u->refs[i].queued && u->refs[i].off + u->refs[i].done < low)
			low = u->refs[i].off + u->refs[i].done;
	fail(u, rc, low);
	queue_exit(u);
	u->dead = 1;
	u->inflight = 0;
	u->syncs_unsent = 0;
	for (unsigned i = 0; i < u->nbuf; i++)
		if (u->slots[i].queued)
			slot_free(u, i);
	for (unsigned i = 0; i < REF_OPS; i++)
		if (u->refs[i].queued)
			ref_finish(u, &u->refs[i], rc);
}

/* Take one completion off the ring and handle it.  Seen first: handling
 * it may reap again (a short write's resubmission that finds
 * io_uring_enter refused), which must not see it twice. */
static void take(struct uring_sink *u, struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	int res = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	complete(u, tag, res);
}

/* Reap completions; with @wait, block for at least one. */
static void reap(struct uring_sink *u, int wait)
{
	struct io_uring_cqe *cqe;
	if (u->dead)
		return;
	if (wait && u->inflight) {
		int rc, was = kt__work_pause();
		do
			rc = io_uring_wait_cqe(&u->ring, &cqe);
		while (rc == -EINTR);
		kt__work_resume(was);
		if (rc < 0) {
			if (refused(rc))
				go_pwrite(u);
			else
				ring_dead(u, rc);
			return;
		}
		take(u, cqe);
	}
	while (!u->dead && io_uring_peek_cqe(&u->ring, &cqe) == 0)
		take(u, cqe);
}

/*
 * Hand what is queued to the kernel; a refusal moves to the pwrite sink.
 * EAGAIN and EBUSY (the kernel short of memory, completions not yet
 * reaped) pass: the entries stay queued for the next submit.  Any other
 * failure gives the ring up as dead, as a failed wait does: else its
 * writes would stay queued for ever and the rings they hold would drop
 * every event until the session stops.
 */
static void submit(struct uring_sink *u)
{
	int rc = io_uring_submit(&u->ring);
	if (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY)
		return;
	if (rc >= 0) {
		for (unsigned i = 0; i < u->nbuf; i++)
			u->slots[i].sent = u->slots[i].queued;
		for (unsigned i = 0; i < REF_OPS; i++)
			u->refs[i].sent = u->refs[i].queued;
		u->syncs_unsent = 0;
	} else if (refused(rc)) {
		go_pwrite(u);
	} else {
		ring_dead(u, rc);
	}
}

/* Requests in flight that the kernel never took. */
static unsigned unsent(const struct uring_sink *u)
{
	unsigned n = u->syncs_unsent;
	for (unsigned i = 0; i < u->nbuf; i++)
		n += u->slots[i].queued && !u->slots[i].sent;
	for (unsigned i = 0; i < REF_OPS; i++)
		n += u->refs[i].queued && !u->refs[i].sent;
	return n;
}

/*
 * Wait, without io_uring_enter, for what the kernel took: its completions
 * land in the shared ring, and a completion the kernel hands to this
 * thread as task work runs when nanosleep() returns.  After ~10 s the
 * ring is given up as dead, as when waiting on it fails.
 */
static void wait_taken(struct uring_sink *u)
{
	static const struct timespec ms = { 0, 1000000 };
	for (unsigned waited = 0; !u->dead && u->inflight > unsent(u); waited++) {
		if (waited == 10000) {
			ring_dead(u, -ETIMEDOUT);
			return;
		}
		int was = kt__work_pause();
		nanosleep(&ms, NULL);
		kt__work_resume(was);
		reap(u, 0);
	}
}

/*
 * io_uring_enter was refused (a seccomp filter installed after set-up):
 * the pwrite sink writes from now on, first what the kernel never saw.
 * The ring stays open until close, as the session knows its fd.
 */
static void go_pwrite(struct uring_sink *u)
{
	if (u->pw || u->dead)
		return;
	if (!(u->pw = kt__fd_sink_new(u->fd))) {
		ring_dead(u, -ENOMEM);
		return;
	}
	u->base.backend = KT_IO_PWRITE;
	reap(u, 0);
	wait_taken(u);
	if (u->dead)
		return;
	u->dead = 1;
	for (unsigned i = 0; i < u->nbuf; i++)
		if (u->slots[i].queued) {
			u->inflight--;
			slot_now(u, i);
		}
	for (unsigned i = 0; i < REF_OPS; i++)
		if (u->refs[i].queued) {
			u->inflight--;
			ref_now(u, i);
		}
	u->inflight -= u->syncs_unsent;
	if (u->syncs_unsent && !u->base.error) {
		int rc = u->pw->sync(u->pw, 1);
		if (rc)
			fail(u, rc, UINT64_MAX);
	}
	u->syncs_unsent = 0;
}

static uint8_t *u_acquire(kt__sink *base, size_t *cap)
{
	struct uring_sink *u = (struct uring_sink *)base;
	reap(u, 0);
	while (!u->nfree && u->inflight)
		reap(u, 1);
	if (!u->nfree) {
		fail(u, -EIO, 0);
		return NULL;
	}
	unsigned i = u->free_stack[--u->nfree];
	u->slots[i].busy = 1;
	*cap = u->bufsz;
	return u->mem + (size_t)i * u->bufsz;
}

static int u_write(kt__sink *base, uint8_t *buf, size_t len, uint64_t off)
{
	struct uring_sink *u = (struct uring_sink *)base;
	unsigned i = (unsigned)((size_t)(buf - u->mem) / u->bufsz);
	struct slot *s = &u->slots[i];

	s->off = off;
	s->len = len;
	s->done = 0;
	if (u->base.error) {
		/* After a failure nothing more is written: a later buffer
		 * landing past a hole would leave the file unreadable. */
		s->busy = 0;
		u->free_stack[u->nfree++] = i;
		return u->base.error;
	}
	start_slot(u, i);
	return u->base.error;
}

static int u_write_ref(kt__sink *base, const uint8_t *head, size_t head_len, const void *body,
		       size_t body_len, const uint8_t *tail, size_t tail_len, uint64_t off,
		       void (*done)(void *ctx, int res), void *ctx)
{
	struct uring_sink *u = (struct uring_sink *)base;
	if (u->pw && !u->base.error) {
		/* The error is the sink's too: nothing is written after it. */
		int rc = u->pw->write_ref(u->pw, head, head_len, body, body_len, tail, tail_len,
					  off, done, ctx);
		if (rc)
			fail(u, rc, off);
		return rc;
	}
	if (head_len > sizeof(u->refs[0].head) || tail_len > sizeof(u->refs[0].tail)) {
		done(ctx, -EINVAL);
		return -EINVAL;
	}
	while (!u->base.error && u->refs_busy == REF_OPS)
		reap(u, 1);
	if (u->base.error) {
		done(ctx, u->base.error);
		return u->base.error;
	}
	unsigned i = 0;
	while (u->refs[i].busy)
		i++;
	struct ref_op *op = &u->refs[i];
	memcpy(op->head, head, head_len);
	memcpy(op->tail, tail, tail_len);
	op->iov[0] = (struct iovec){ op->head, head_len };
	op->iov[1] = (struct iovec){ (void *)body, body_len };
	op->iov[2] = (struct iovec){ op->tail, tail_len };
	op->niov = 3;
	op->first = 0;
	op->total = head_len + body_len + tail_len;
	op->done = 0;
	op->off = off;
	op->cb = done;
	op->ctx = ctx;
	op->busy = 1;
	u->refs_busy++;
	start_ref(u, i);
	/* Still busy: in flight, @done runs later.  Else it has run. */
	return op->busy ? 0 : u->base.error;
}

static void u_poll(kt__sink *base)
{
	reap((struct uring_sink *)base, 0);
}

static void wait_all(struct uring_sink *u)
{
	while (u->inflight)
		reap(u, 1);
}

static int u_sync(kt__sink *base, int wait)
{
	struct uring_sink *u = (struct uring_sink *)base;
	if (wait < 0) {
		wait_all(u);
		return u->base.error;
	}
	if (!u->base.error && !u->dead) {
		struct io_uring_sqe *sqe = get_sqe(u);
		if (sqe) {
			io_uring_prep_fsync(sqe, u->fd, IORING_FSYNC_DATASYNC);
			/* Drain: the sync starts after every write queued before
			 * it has completed, so it covers them. */
			io_uring_sqe_set_flags(sqe, IOSQE_IO_DRAIN);
			io_uring_sqe_set_data64(sqe, FSYNC_TAG);
			u->inflight++;
			u->syncs_unsent++;
			submit(u);
		} else if (!u->pw) {
			fail(u, -EBUSY, UINT64_MAX);
		}
	}
	/* Refused, now or before: the pwrite sink syncs at once. */
	if (u->pw && !u->base.error) {
		int rc = u->pw->sync(u->pw, 1);
		if (rc)
			fail(u, rc, UINT64_MAX);
	}
	if (wait)
		wait_all(u);
	else
		reap(u, 0);
	return u->base.error;
}

static int u_retarget(kt__sink *base, int fd)
{
	struct uring_sink *u = (struct uring_sink *)base;
	struct stat sb;
	wait_all(u);
	/* Nothing is in flight now: a buffer still out is one the released
	 * writer took and never filled.  It comes back to the pool. */
	for (unsigned i = 0; i < u->nbuf; i++)
		if (u->slots[i].busy)
			slot_free(u, i);
	u->fd = fd;
	if (u->pw)
		u->pw->retarget(u->pw, fd);
	u->regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	return u->base.error;
}

static void u_close(kt__sink *base)
{
	struct uring_sink *u = (struct uring_sink *)base;
	wait_all(u);
	/* A write failed part way: later buffers may have landed beyond the
	 * hole.  Cut the file where the good bytes end, so what remains is a
	 * valid prefix. */
	if (u->base.error && u->regular && u->bad_off != UINT64_MAX)
		(void)ftruncate(u->fd, (off_t)u->bad_off);
	if (!u->closed) {
		io_uring_unregister_buffers(&u->ring);
		queue_exit(u);
	}
	if (u->pw)
		u->pw->close(u->pw);
	munmap(u->mem, (size_t)u->nbuf * u->bufsz);
	free(u->slots);
	free(u->free_stack);
	free(u);
}

/*
 * Nothing of the ring's memory goes to a fork()ed child: the submission
 * and completion rings would keep the instance (and its pinned buffers)
 * alive there after the child closes its copy of the fd, and the child
 * would copy the 8 MiB of pinned staging buffers at every fork.
 */
static int no_fork_copy(struct uring_sink *u)
{
	struct io_uring *r = &u->ring;
	size_t sqes = (size_t)r->sq.ring_entries * sizeof(struct io_uring_sqe);
	if (madvise(u->mem, (size_t)u->nbuf * u->bufsz, MADV_DONTFORK) < 0 ||
	    madvise(r->sq.ring_ptr, r->sq.ring_sz, MADV_DONTFORK) < 0 ||
	    madvise(r->sq.sqes, sqes, MADV_DONTFORK) < 0 ||
	    (r->cq.ring_ptr != r->sq.ring_ptr &&
	     madvise(r->cq.ring_ptr, r->cq.ring_sz, MADV_DONTFORK) < 0))
		return -errno;
	return 0;
}

void kt__uring_sink_on_close(kt__sink *s, void (*fn)(void *ctx), void *ctx)
{
	if (s->backend != KT_IO_URING)
		return;
	((struct uring_sink *)s)->on_close = fn;
	((struct uring_sink *)s)->on_close_ctx = ctx;
}

int kt__uring_sink_fd(const kt__sink *s)
{
	if (s->backend != KT_IO_URING)
		return -1;
	return ((const struct uring_sink *)s)->ring.ring_fd;
}

/*
 * io_uring_queue_init() with the instance's fd at 3 or above: in a daemon
 * with fds 0-2 closed it would take one of them, and the daemon's next
 * write to stderr would go to io_uring.  liburing keeps the fd inside its
 * struct, so it cannot be moved after; the free low numbers are held with
 * /dev/null while the instance is made, then let go.
 */
static int queue_init_high(unsigned entries, struct io_uring *ring)
{
	int held[3], n = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fd > 2) {
			if (fd >= 0)
				close(fd);
			break;
		}
		held[n++] = fd;
	}
	int rc = io_uring_queue_init(entries, ring, 0);
	while (n > 0)
		close(held[--n]);
	return rc;
}

int kt__uring_sink_new(int fd, unsigned nbuf, size_t bufsz, kt__sink **out)
{
	*out = NULL;
	struct uring_sink *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = fd;
	u->nbuf = nbuf;
	u->bufsz = bufsz;
	u->bad_off = UINT64_MAX;
	struct stat sb;
	u->regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	int rc = queue_init_high(2 * nbuf + 4, &u->ring);
	if (rc < 0)
		goto err_free;
	rc = -ENOMEM;
	u->mem = mmap(NULL, (size_t)nbuf * bufsz, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (u->mem == MAP_FAILED) {
		u->mem = NULL;
		goto err_ring;
	}
	if ((rc = no_fork_copy(u)))
		goto err_mem;
	rc = -ENOMEM;
	u->slots = calloc(nbuf, sizeof(*u->slots));
	u->free_stack = calloc(nbuf, sizeof(*u->free_stack));
	if (!u->slots || !u->free_stack)
		goto err_mem;
	struct iovec *iov = calloc(nbuf, sizeof(*iov));
	if (!iov)
		goto err_mem;
	for (unsigned i = 0; i < nbuf; i++) {
		iov[i].iov_base = u->mem + (size_t)i * bufsz;
		iov[i].iov_len = bufsz;
		u->free_stack[u->nfree++] = nbuf - 1 - i;
	}
	/* Registered buffers are pinned once, so each write skips the
	 * per-I/O page mapping of a plain write. */
	rc = io_uring_register_buffers(&u->ring, iov, nbuf);
	free(iov);
	if (rc < 0)
		goto err_mem;
	u->base = (kt__sink){ .acquire = u_acquire, .write = u_write, .sync = u_sync,
			      .write_ref = u_write_ref, .poll = u_poll, .close = u_close,
			      .retarget = u_retarget, .backend = KT_IO_URING };
	*out = &u->base;
	return 0;
err_mem:
	free(u->slots);
	free(u->free_stack);
	if (u->mem)
		munmap(u->mem, (size_t)nbuf * bufsz);
err_ring:
	io_uring_queue_exit(&u->ring);
err_free:
	free(u);
	return rc;
}

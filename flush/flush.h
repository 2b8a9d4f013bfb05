/*
 * flush/flush.h - internal: the io_uring sink (uring.c), a kt__sink
 * (format/format.h) beside format/'s synchronous fd sink, which this
 * header passes on (format/fd_sink.h); one thread at a time calls a
 * sink: a session's flusher.  Also the door through which capture/ gives
 * a session the output it writes to (kt__output), snapshot requests and
 * katra's own threads.
 */
#ifndef KATRA_FLUSH_FLUSH_H
#define KATRA_FLUSH_FLUSH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <katra/katra.h>
#include "format/format.h"
#include "format/fd_sink.h"

/*
 * An io_uring sink over @fd (not owned): @nbuf registered buffers of @bufsz
 * bytes.  Return: 0 and *@out; -ENOSYS, -EPERM (io_uring refused by the
 * kernel or a seccomp policy), -ENOMEM, or another -errno from set-up.
 */
int kt__uring_sink_new(int fd, unsigned nbuf, size_t bufsz, kt__sink **out);

/* The io_uring instance's own fd behind @s, or -1 for another sink: what a
 * fork()ed child closes so the instance dies with the parent's session. */
int kt__uring_sink_fd(const kt__sink *s);

/*
 * @fn(@ctx) runs, on the calling thread, just before @s (an io_uring
 * sink; any other sink ignores it) closes its instance's fd, also when a
 * failed ring is closed in the middle of a session: whoever keeps that fd
 * number must let go of it then, since it may soon name a file of the host.
 */
void kt__uring_sink_on_close(kt__sink *s, void (*fn)(void *ctx), void *ctx);

/*
 * kt__output - what a session's file may take, and where the trace goes
 * on when it is full: the capture manager's byte cap and segments
 * (capture/segments.c).  The policy is the output's; the session only asks
 * before each frame and does what it is told.  A session without one
 * writes one file without bound.  The callbacks run on the session's
 * flusher thread, one at a time, and must not call into the session.
 */
typedef struct kt__output {
	uint64_t max_bytes;    /* recorded in the header (capture.max_bytes) */
	uint64_t file_bytes;   /* what one file may reach; 0: no bound, and
				* no callback below is called */
	/*
	 * A frame of about @need bytes is next, the current file holds @at
	 * bytes, and @tail bytes (what the file's end takes: names, threads,
	 * drop records, summary) must stay free.  Return KT__ROOM_FITS;
	 * KT__ROOM_NEXT: go on in the next file, then ask again (a second
	 * KT__ROOM_NEXT counts as KT__ROOM_FULL); KT__ROOM_FULL: no room.
	 */
	int (*room)(void *ctx, uint64_t at, uint64_t need, uint64_t tail);
	/* The next file: an fd the session writes from offset 0 and never
	 * closes, or -errno (then the output is full).  NULL: none. */
	int (*next)(void *ctx);
	/* The file that @next gave holds the header and is the current one. */
	void (*started)(void *ctx);
	/* The current file took a frame whose events end at tick @last. */
	void (*wrote)(void *ctx, uint64_t last);
	/* The output is full: from now on events are counted dropped (a
	 * drop record per thread at the file's end says so).  Called once. */
	void (*full)(void *ctx);
	void *ctx;
} kt__output;

enum { KT__ROOM_FULL = 0, KT__ROOM_FITS = 1, KT__ROOM_NEXT = 2 };

/*
 * kt__session_start_output - kt_session_start() into @o->fd (@o->use_fd
 * set), bounded by @out (copied; NULL: no bound).  Return: as
 * kt_session_start(), and -EINVAL for an @out with a file_bytes under
 * 64 KiB or without room and full.  Any thread.
 */
int kt__session_start_output(const kt_session_options *o, const kt__output *out, kt_session **s);

/*
 * pthread_create() for katra's own threads (the flusher, a capture's
 * thread): every asynchronous signal is blocked in them, so the host's
 * handlers (a profiling timer's SIGPROF, SIGALRM, SIGCHLD, ...) run on
 * the host's threads, and a write to a pipe whose reader left cannot kill
 * the process with SIGPIPE.  Return: 0 or -errno.
 */
int kt__thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/*
 * Snapshot requests (flush/control.c, tools/cmd_snapshot.c): the client
 * sends KT__CTL_REQ_WORDS u64 { magic, max_age_ns, max_bytes } with the
 * output file's descriptor (SCM_RIGHTS); the process answers, in host
 * byte order (both ends are on one machine), the reply of the magic's
 * version, its size fixed by it:
 *   version 1 (KT__CTL_MAGIC_V1): KT__CTL_REP_WORDS_V1 u64 { rc,
 *     window_start, window_end, head_loss_ns, events, events_trimmed,
 *     bytes_lapped, bytes_overwritten, bytes_on_disk, thread_count };
 *   version 2 (KT__CTL_MAGIC): the same, then events_overwritten.
 * A request that does not parse is answered with the newest reply, rc
 * -EINVAL (its version is not known).
 */
#define KT__CTL_MAGIC_V1 UINT64_C(0x31706e736172746b) /* "ktrasnp1" */
#define KT__CTL_MAGIC UINT64_C(0x32706e736172746b)    /* "ktrasnp2" */
#define KT__CTL_REQ_WORDS 3
#define KT__CTL_REP_WORDS_V1 10
#define KT__CTL_REP_WORDS 11
#define KT__CTL_REP_EVENTS_OVERWRITTEN 10 /* its word in a version 2 reply */

/* Descriptors a request's parse keeps track of; more are counted only. */
#define KT__CTL_FDS 8

/* A snapshot request, parsed. */
typedef struct kt__ctl_req {
	unsigned version;           /* 1 or 2, from the magic; 0 unparsed */
	uint64_t max_age_ns, max_bytes;
	int fd;                     /* the output file: -1 unless valid */
	int fds[KT__CTL_FDS];       /* every descriptor it brought, @fd too */
	size_t nfds;                /* how many; past KT__CTL_FDS, counted only */
} kt__ctl_req;

/*
 * kt__ctl_request_parse - a request's @len bytes at @words and the
 * ancillary data recvmsg() returned (@ctl_len bytes at @ctl, aligned as a
 * struct cmsghdr; NULL for none), with its @msg_flags.  Valid: exactly
 * the request's words, a version's magic first, and one descriptor in all, not
 * truncated (MSG_CTRUNC).  Pure: it closes nothing; the caller closes
 * every fds[] but the one it keeps.  Return: 0 with @req->fd set, or
 * -EINVAL (@req->fds still listed).  Any thread.
 */
int kt__ctl_request_parse(const uint8_t *words, size_t len, const uint8_t *ctl, size_t ctl_len,
			  int msg_flags, kt__ctl_req *req);

/*
 * kt__control_path - the socket of process @pid's flight session:
 * $XDG_RUNTIME_DIR/katra/PID.sock, or /tmp/katra-UID/PID.sock, the
 * directory made (0700) if missing and refused (-EPERM) unless it is the
 * caller's and closed to others.  Return: 0, or -errno.  Any thread.
 */
int kt__control_path(long pid, char *buf, size_t cap);

#endif

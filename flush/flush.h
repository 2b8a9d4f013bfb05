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
 * kt__flush_sleep - how long a flusher sleeps after a drain that took
 * @fullest bytes from its fullest ring, @since_ns after the drain before:
 * @period_ns, or, while that ring fills slower than 7/8 of @chunk_max a
 * period, the time it is predicted to take to hold that much, at most
 * @max_ns (an empty drain sleeps @max_ns; @max_ns at or under the period
 * keeps the period).  Pure; any thread.
 */
uint64_t kt__flush_sleep(uint64_t period_ns, uint64_t max_ns, size_t chunk_max, uint64_t fullest,
			 uint64_t since_ns);

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
 * kt__session_start_output - kt_session_start() into @o->fd (KT_GIVEN_FD
 * in @o->given), bounded by @out (copied; NULL: no bound).  Return: as
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
 * kt__period_wait - wait @ns on @cond (a CLOCK_MONOTONIC one) under @lock,
 * or until *@stop (read under @lock) is set; the period threads' wait
 * (flush/live_flight.c, flush/sched.c).  Returns *@stop.
 */
int kt__period_wait(pthread_mutex_t *lock, pthread_cond_t *cond, const int *stop, uint64_t ns);

/*
 * The work gate (flush/work.c): none of katra's own threads is inside
 * malloc() at a fork().  A thread of katra's calls kt__work_begin() as it
 * starts and kt__work_end() before it returns, and wraps every wait
 * (sleep, poll(), accept(), a blocking write, a join or a lock another
 * such thread may hold a while) in kt__work_pause() and
 * kt__work_resume(): a fork() waits until every such thread is paused or
 * ended, and none resumes before the fork is done.  kt__work_begin() may
 * wait for a fork in progress: call it, and kt__work_resume(), holding no
 * lock.  kt__work_pause() returns whether the calling thread was in its
 * work (0 on any other thread, where both are no-ops).
 * kt__work_fork(@phase): session.c's fork handlers, first before the
 * fork (0) and before the child's session starts (2), last in the
 * parent (1).  kt__work_hold(1) ... kt__work_hold(0): the calling thread
 * holds a lock a fork's handlers take (the names', categories' or
 * tracks' table lock, around their callbacks): no pause in between, as
 * its resume would wait for a fork that waits for that lock.
 */
void kt__work_begin(void);
/* kt__thread_start() of a thread in its work from before it exists: the
 * runtime's own first steps in it (a sanitizer's allocations) are never
 * under way at a fork.  The thread calls kt__work_adopt() first, not
 * kt__work_begin(), and kt__work_end() before it returns. */
int kt__work_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
void kt__work_adopt(void);
void kt__work_end(void);
int kt__work_pause(void);
void kt__work_hold(int on);
void kt__work_resume(int was);
void kt__work_fork(int phase);

/*
 * Snapshot requests (flush/control.c, tools/cmd/cmd_snapshot.c): the client
 * sends KT__CTL_REQ_WORDS u64 { magic, max_age_ns, max_bytes }; the
 * process answers, in host byte order (both ends are on one machine), the
 * reply of the magic's version, its size fixed by it:
 *   version 1 (KT__CTL_MAGIC_V1): KT__CTL_REP_WORDS_V1 u64 { rc,
 *     window_start, window_end, head_loss_ns, events, events_trimmed,
 *     bytes_lapped, bytes_overwritten, bytes_on_disk, thread_count };
 *   version 2 (KT__CTL_MAGIC): the same, then events_overwritten;
 *   version 3 (KT__CTL_MAGIC_V3): version 2's words.
 * Versions 1 and 2 brought the output file's descriptor (SCM_RIGHTS) for
 * the process to write: a file someone else chose, whose write may never
 * return (a FUSE file), so they are refused now, with their own reply, rc
 * -EPROTONOSUPPORT.  Version 3 brings no descriptor: the process writes
 * the snapshot into memory of its own (a memfd) and, with rc 0, sends it
 * with the reply (SCM_RIGHTS, one descriptor); the client copies
 * bytes_on_disk bytes of it into the file it made, then sends one byte
 * (or closes).  The process empties the memfd then, or after
 * KT__CTL_COPY_S seconds, whichever comes first.
 * A request that does not parse is answered with the newest reply, rc
 * -EINVAL (its version is not known).
 */
#define KT__CTL_MAGIC_V1 UINT64_C(0x31706e736172746b) /* "ktrasnp1" */
#define KT__CTL_MAGIC UINT64_C(0x32706e736172746b)    /* "ktrasnp2" */
#define KT__CTL_MAGIC_V3 UINT64_C(0x33706e736172746b) /* "ktrasnp3" */
#define KT__CTL_REQ_WORDS 3
#define KT__CTL_REP_WORDS_V1 10
#define KT__CTL_REP_WORDS 11
#define KT__CTL_REP_EVENTS_OVERWRITTEN 10 /* its word in a version 2 reply */
#define KT__CTL_REP_BYTES 8               /* bytes_on_disk's word */
#define KT__CTL_IO_S 2     /* a client's request and its reply, at most */
#define KT__CTL_COPY_S 10  /* a client's copy of the snapshot, at most */

/* Descriptors a request's parse keeps track of; more are counted only. */
#define KT__CTL_FDS 8

/* A snapshot request, parsed. */
typedef struct kt__ctl_req {
	unsigned version;           /* 1, 2 or 3, from the magic; 0 unparsed */
	uint64_t max_age_ns, max_bytes;
	int fd;                     /* versions 1 and 2: the output file, -1
				     * unless valid; version 3: -1 */
	int fds[KT__CTL_FDS];       /* every descriptor it brought, @fd too */
	size_t nfds;                /* how many; past KT__CTL_FDS, counted only */
} kt__ctl_req;

/*
 * kt__ctl_request_parse - a request's @len bytes at @words and the
 * ancillary data recvmsg() returned (@ctl_len bytes at @ctl, aligned as a
 * struct cmsghdr; NULL for none), with its @msg_flags.  Valid: exactly
 * the request's words, a version's magic first, not truncated
 * (MSG_CTRUNC), and one descriptor in all for versions 1 and 2, none for
 * version 3.  Pure: it closes nothing; the caller closes every fds[] but
 * the one it keeps.  Return: 0 with @req->fd set (-1 for version 3), or
 * -EINVAL (@req->fds still listed).  Any thread.
 */
int kt__ctl_request_parse(const uint8_t *words, size_t len, const uint8_t *ctl, size_t ctl_len,
			  int msg_flags, kt__ctl_req *req);

/*
 * Where a flight session listens.  The directory: $XDG_RUNTIME_DIR/katra
 * when $XDG_RUNTIME_DIR is the caller's own (its euid) and closed to
 * others (no group or other bits), else /tmp/katra-EUID; made 0700 if
 * missing, never through a symbolic link, and refused (-EPERM) unless it
 * is the caller's and closed to others.  It is used through the
 * descriptor kt__control_dir() returns, never by its path again: a name
 * in it is reached as /proc/self/fd/DIRFD/NAME (kt__control_at()).
 * A socket's name says which process it is: "NS-PID.sock", NS the inode
 * of its PID namespace and PID its pid there, so that processes of one
 * user in different PID namespaces (each a pid 1, say) never share one.
 */

/* kt__control_dir - the directory, opened (O_PATH, close-on-exec) and
 * checked.  Return: the descriptor, or -errno.  Any thread. */
int kt__control_dir(void);

/* kt__control_name - the socket's name for process @pid as this process
 * sees it (0: this process), from /proc/PID/ns/pid and /proc/PID/status
 * (NSpid); a process whose /proc cannot be read is named as in namespace
 * 0.  Return: 0, or -errno (-ENAMETOOLONG when @cap is too small).  Any
 * thread. */
int kt__control_name(long pid, char *buf, size_t cap);

/* kt__control_at - @name in the directory @dirfd as a socket address:
 * /proc/self/fd/DIRFD/NAME, so that bind() and connect() reach the
 * directory opened, whatever its path names now.  Return: the address's
 * length, or -ENAMETOOLONG. */
int kt__control_at(int dirfd, const char *name, void *sockaddr_un);

#endif

/*
 * katra/snapshot.h - snapshots of a flight session: the newest window of
 * every thread's ring, written to a trace file while producers go on.
 * katra.h includes it; it may also be included on its own.
 */
#ifndef KATRA_SNAPSHOT_H
#define KATRA_SNAPSHOT_H

#include <stdint.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_session kt_session;

/** One thread's row in kt_snapshot_result.threads. */
typedef struct kt_snapshot_thread {
	uint32_t thread_id;
	uint64_t events;            /* its events written */
	uint64_t overwritten;       /* its events of this session its ring
				     * overwrote before the copy began (exact:
				     * counted by the thread once per
				     * sub-buffer, off the fast path; a drop
				     * record in the file); ones overwritten
				     * during the copy are bytes_lapped's, and
				     * none is both counted and in the file */
	/* Its own window (trace ticks): its first and last events in the file,
	 * all its events between them in it (0, 0: none).  Each reaches back
	 * as far as its own ring held: a quiet thread keeps seconds beside a
	 * busy one's milliseconds.  A zone begun before it has only its end
	 * in the file (katra stats lists it from window_start).  Before it:
	 * @overwritten, from overwritten_first to overwritten_last (0 with
	 * none); @trimmed, its events the ring held, left out for
	 * @max_age_ns or @max_bytes; and head_loss_ns, of @max_age_ns, how
	 * much its ring no longer held. */
	uint64_t window_start, window_end;
	uint64_t overwritten_first, overwritten_last;
	uint64_t trimmed;
	uint64_t head_loss_ns;
} kt_snapshot_thread;

/** What kt_session_snapshot() wrote.  Times are trace ticks (the file's
 * clock); the _ns fields are CLOCK_MONOTONIC durations. */
typedef struct kt_snapshot_result {
	uint64_t window_start;      /* from here to window_end every thread
				     * has all its events in the file: the
				     * latest start of a thread that lost its
				     * head's window, or first_event */
	uint64_t window_end;        /* the last event kept */
	uint64_t head_loss_ns;      /* the largest row's head_loss_ns */
	uint64_t events;            /* events written */
	uint64_t events_trimmed;    /* events the rings held, left out to make
				     * the window complete or to meet the
				     * limits */
	uint64_t bytes_lapped;      /* ring bytes overwritten while the rings
				     * were copied (newest first) before the
				     * copy reached them, and so left out */
	uint64_t bytes_overwritten; /* ring bytes the threads wrote in this
				     * session and no longer held: their
				     * oldest events, overwritten (the lapped
				     * ones included) */
	uint64_t bytes_on_disk;     /* the file's size */
	uint32_t thread_count;      /* threads with events in the file */
	uint64_t events_overwritten; /* the threads' overwritten, summed
				      * (whether or not there are rows) */
	uint32_t thread_rows;        /* rows kt_session_snapshot_threads()
				      * filled */
	uint64_t first_event;        /* the earliest thread window's start */
} kt_snapshot_result;

/**
 * kt_session_snapshot - write the newest window of every thread's ring
 * in a KT_SESSION_FLIGHT session to a new trace file.
 * @s:          the session.
 * @path:       the file to create (never an existing one: -EEXIST; never
 *              through a final symlink); NULL to write to @fd instead.
 * @fd:         with @path NULL: where to write, from its offset; not closed.
 * @max_age_ns: keep only events at most this old (when the rings were
 *              copied); 0: no limit.
 * @max_bytes:  keep at most this many bytes of events (as the rings hold
 *              them; the file is smaller); 0: no limit.
 * @res:        optional; what was written.
 *
 * Producers go on at full rate meanwhile: each ring is copied from its
 * newest records back, the part a producer overwrote before the copy
 * reached it is left out, and each thread keeps its own window: from its
 * oldest surviving event (or the limits' start) to its newest, so a busy
 * thread that laps its ring in milliseconds does not cut what a quiet
 * thread kept for seconds.  The file is a normal trace (names, threads,
 * summary) and `katra verify` passes on it; each thread's events
 * overwritten before the copy are one drop record of it (ring full), timed
 * before its window (SPEC §4.6; kt_session_snapshot_threads()'s rows).  Snapshots of one session are taken one at a time (a second caller waits); kt_session_stop() waits for one in
 * progress.  Snapshots copy into memory as large as all the rings
 * together, kept until the session stops, mapped at its start for the
 * threads registered then and grown by a snapshot after more register.
 *
 * Return: 0; KT_ENOSESSION when @s is not a running flight session;
 * -EINVAL for no @path and a negative @fd; -EEXIST, -ENOMEM, -errno from
 * creating or writing the file (a file it created is then removed).  Any
 * thread but a signal handler.
 */
KT_API int kt_session_snapshot(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
			       uint64_t max_bytes, kt_snapshot_result *res);

/** kt_session_snapshot_threads - kt_session_snapshot(), and a row per
 * thread in the file (with events or overwritten ones) into @rows, in the
 * order written: at most @cap, @res->thread_rows says how many.
 * Return, threads: as kt_session_snapshot(). */
KT_API int kt_session_snapshot_threads(kt_session *s, const char *path, int fd,
				       uint64_t max_age_ns, uint64_t max_bytes,
				       kt_snapshot_result *res, kt_snapshot_thread *rows,
				       uint32_t cap);

#ifdef __cplusplus
}
#endif

#endif /* KATRA_SNAPSHOT_H */

/*
 * katra.h - the producer API and sessions.
 *
 * A producer thread emits events into its own ring; a session's flusher
 * thread drains every ring into one trace file.  The emit functions below
 * are static inline: with no session active each is one relaxed load and a
 * branch that is not taken; with a session active, one clock read, one
 * bounds check, the record stores and one release store.  Anything else
 * (the thread's first event, a full ring, a pending drop marker) happens in
 * an out-of-line slow path.
 *
 * Threads: every kt_* emit function may be called from any thread at any
 * time, including before kt_init() and with no session (they then do
 * nothing).  The ring protocol (one producer, one consumer per ring) is
 * described in ring/ring.h.
 *
 * Signal handlers: the emit functions (kt_zone_begin/end, kt_instant,
 * kt_counter, kt_counter_f64, kt_frame, kt_flow, kt_message, kt_emit) and
 * kt_now() are async-signal-safe on a thread that has emitted (or called
 * kt_thread_name() while a session ran) before: they take no lock and
 * allocate nothing.  An
 * emit from a handler that interrupted an emit of the same thread is not
 * written: it is counted as refused (kt_summary.events_refused, and a drop
 * record in the trace).  A thread's very first emit registers its ring,
 * which takes a lock and maps memory; from a handler that interrupted
 * katra's own registry code on that thread it is refused the same way.
 * Nothing else here is async-signal-safe: intern names with kt_name() (and
 * KT_ZONE() sites' first pass) outside handlers.
 *
 * fork(): the child has no session, whatever the parent had: its emits do
 * nothing until it starts a session of its own, and it never writes into
 * the parent's rings (they are not mapped in the child).  Names interned
 * before the fork keep their ids.  fork() from a signal handler that
 * interrupted a katra call other than an emit may deadlock in the child
 * (POSIX no longer counts fork() as async-signal-safe).
 * exec(): every descriptor katra opens is close-on-exec.
 * KATRA_DISABLE compiles every emit and call out: katra/disable.h.
 */
#ifndef KATRA_KATRA_H
#define KATRA_KATRA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <katra/atomic.h>
#include <katra/error.h>
#include <katra/snapshot.h>
#include <katra/trace.h>
#include <katra/version.h>
#include <katra/zone.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "katra's producer path stores records in file byte order: little-endian targets only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- process-wide configuration ------------------------------------- */

#define KT_RING_MIN (64u << 10)
#define KT_RING_DEFAULT (4u << 20)
#define KT_RING_MAX (1u << 30)

/** Process-wide settings; zero means "the default" in every field. */
typedef struct kt_config {
	size_t ring_size;     /* bytes per thread ring: a power of two in
			       * [KT_RING_MIN, KT_RING_MAX]; default 4 MiB */
	int overflow;         /* kt_overflow; default KT_OVERFLOW_WAIT */
	int clock;            /* kt_clock_source; default KT_CLOCK_AUTO: the
			       * TSC where invariant, else CLOCK_MONOTONIC */
} kt_config;

/**
 * kt_init - set the process-wide configuration.
 * @cfg: the settings, or NULL for the defaults.  The environment can
 *       override the clock: KT_CLOCK=tsc|monotonic.
 *
 * Optional: the first session starts katra with the defaults.  Rings that
 * already exist keep their size; new rings use the new one.
 *
 * Return: 0; -EINVAL for a ring size that is not a power of two in range,
 * an unknown policy or clock, or KT_CLOCK_TSC on a CPU without an invariant
 * TSC; KT_EBUSY while a session is active, or when asking for a different
 * clock than an earlier call chose (the clock is fixed once per process).
 * Call it from one thread.
 */
KT_API int kt_init(const kt_config *cfg);

/**
 * kt_shutdown - release every ring no thread holds.  Interned names stay,
 * so ids handed out keep naming their strings.  Stops nothing: call it
 * with no session active (KT_EBUSY otherwise) and when no thread emits
 * any more.
 * Return: 0 or KT_EBUSY.
 */
KT_API int kt_shutdown(void);

/**
 * kt_name - intern @name and return its id (never 0).
 *
 * The same string always gives the same id in one process.  Takes a lock:
 * call it once and keep the id, as KT_ZONE() does.  Return: the id, or 0 if
 * @name is NULL, empty, longer than 65535 bytes, or memory ran out.
 * Any thread.
 */
KT_API uint32_t kt_name(const char *name);

/**
 * kt_thread_name - name the calling thread in every trace it appears in;
 * with a session running, also make its ring (its emits are then async-
 * signal-safe).  With none, keep the name only: a program that never
 * traces pays no ring (4 MiB+); the thread's first emit in one makes it.
 * Return: 0, -EINVAL for NULL or over 65535 bytes, -ENOMEM.  Any thread.
 */
KT_API int kt_thread_name(const char *name);

/* ---- sessions -------------------------------------------------------- */

typedef struct kt_session kt_session;

/**
 * kt_session_options.given: the fields whose zero is taken as written.
 * Every field of kt_session_options takes a value other than zero as
 * written; zero is its default, except in a field whose bit is set here,
 * where zero is the value it says.  A field whose zero is no value of its
 * own (a ring size, a flush period) has no bit.  A bit not listed here
 * makes kt_session_start() fail with -EINVAL.
 */
typedef enum kt_session_given {
	KT_GIVEN_FD = 1u << 0,       /* @fd 0 is fd 0 (a daemon whose stdin is
				      * closed gets it from open()), not "no
				      * fd: write to @path" */
	KT_GIVEN_CODEC = 1u << 1,    /* @codec 0 is KT_CODEC_NONE: raw chunks,
				      * not the default KT_CODEC_COMPACT */
	KT_GIVEN_OVERFLOW = 1u << 2, /* @overflow 0 is KT_OVERFLOW_WAIT, set
				      * for this session, not "keep the
				      * process's policy" (which kt_init() may
				      * have made another) */
} kt_session_given;

#define KT_GIVEN_ALL (KT_GIVEN_FD | KT_GIVEN_CODEC | KT_GIVEN_OVERFLOW)

/**
 * How a session writes its file, by concern: its output, its encoding,
 * its writes, its header's strings, the rings, flight mode and crash
 * files.  Zero means "the default" in every field, but in the fields
 * @given names.  Fill it with designated initializers: fields may be
 * added or moved between minor versions.
 */
typedef struct kt_session_options {
	/* ---- which fields' zeros are values ---- */
	unsigned given;             /* kt_session_given bits; default none */

	/* ---- the output ---- */
	int fd;                     /* when > 0, or 0 with KT_GIVEN_FD: write
				     * here instead of @path, from its offset;
				     * an O_APPEND fd from the file's end
				     * (nothing else may write the file
				     * meanwhile); the session does not close
				     * it */

	/* ---- the encoding ---- */
	int codec;                  /* kt_codec; default KT_CODEC_COMPACT:
				     * ~1 byte per event for less flusher CPU
				     * than any LZ4 codec; KT_CODEC_NONE (0
				     * with KT_GIVEN_CODEC) for raw chunks
				     * (written straight from the rings, ~17
				     * bytes per event) */
	int codec_level;            /* default 1: LZ4 acceleration for the LZ4
				     * codecs; kt_writer_chunk() says what it
				     * means for the compact ones */

	/* ---- the writes ---- */
	int io;                     /* kt_io_backend; default KT_IO_AUTO: io_uring
				     * for a regular file or block device (not
				     * O_APPEND), pwrite otherwise; the
				     * environment's KT_IO=pwrite|uring|auto
				     * overrides it */
	uint64_t flush_period_ns;   /* how often the flusher drains the rings
				     * (sooner at a ring's watermark); 0: 1 ms,
				     * stretched up to 4 ms (README), else kept */
	uint64_t fsync_interval_ns; /* default 0: fdatasync only at stop (as
				     * @stop_sync says) */
	/* How long a write to a pipe, socket or terminal may wait for its
	 * reader to make room (a reader stopped, paused in a pager, stuck)
	 * before the session gives up on the file: its I/O error is then
	 * -ETIMEDOUT and every event not yet written is counted dropped.
	 * The same bound holds from kt_session_stop() on, so stop returns
	 * within it even while the reader trickles.  Default
	 * KT_IO_TIMEOUT_DEFAULT_NS; UINT64_MAX waits for ever.  Regular
	 * files and devices are not affected. */
	uint64_t io_timeout_ns;
	/* kt_stop_sync; default KT_STOP_SYNC_DATA: kt_session_stop()
	 * fdatasync()s the file before it returns (0.2-0.6 s for hundreds of
	 * MB on a disk), so a stop that returned 0 survives a power cut.
	 * KT_STOP_SYNC_NONE leaves the pages to the kernel: the file is
	 * complete for every reader at once, durable later. */
	int stop_sync;

	/* ---- the header's strings and numbers (each may be NULL or 0) ---- */
	const char *workload;       /* what ran */
	const char *run_id;         /* the run this trace belongs to */
	const char *capture_id;     /* the capture, as the manager names it */
	uint64_t epoch;             /* the capture's epoch */
	uint32_t note_count;        /* @notes' length */
	const char *const *notes;   /* free-form strings kept in the header */
	/* A byte cap, keep-newest segments and their callbacks are the
	 * capture manager's (katra/capture.h: kt_manager_options.max_bytes
	 * and cap_policy), not a session's: a session writes the one file it
	 * is given. */
	uint64_t max_duration_ns;   /* recorded in the header; not enforced here */

	/* ---- the rings ---- */
	/*
	 * The rings and what a full one does, for this session: @ring_size
	 * (as kt_config.ring_size) and @overflow (KT_OVERFLOW_WAIT with
	 * KT_GIVEN_OVERFLOW, KT_OVERFLOW_BLOCK or KT_OVERFLOW_DROP; 0 without
	 * the bit keeps the process's, from kt_init() or the default WAIT)
	 * are set process-wide as the session starts, as kt_init() would set
	 * them.  Rings that already exist keep their size (a thread that
	 * emitted before keeps its ring); new ones get this one.
	 * kt_session_start() fails with -EINVAL for a size or policy
	 * kt_init() refuses.
	 */
	size_t ring_size;
	int overflow;
	/* Rings made and faulted in by kt_session_start() for up to this many
	 * (<= 16) threads to come, which then pay nothing on first use (else
	 * ~1 ms per MiB of ring, on the thread; ~2 where a hypervisor shadows
	 * page tables, ring/memory.c); default 0: none; none with crash
	 * files. */
	unsigned spare_rings;

	/* ---- flight mode ---- */
	/*
	 * kt_session_mode; default KT_SESSION_NORMAL.  KT_SESSION_FLIGHT is a
	 * flight recorder: nothing is written while it records (@path, @fd
	 * and the writes' options are not used); each thread's ring keeps
	 * its newest events, a full ring overwriting its oldest instead of
	 * dropping the newest (the emit path costs the same; @overflow and
	 * kt_config.overflow do not apply), and
	 * kt_session_snapshot() writes the newest window to a trace file
	 * whenever asked.  @codec and @codec_level are the snapshots'.  The
	 * rings of threads that exit stay (their events in snapshots) until
	 * the session stops.  With crash files (@crash_dir) the rings live in
	 * them, and after the process dies `katra recover` rebuilds each
	 * thread's newest window, its overwritten events counted.
	 */
	int mode;
	/* KT_SESSION_FLIGHT only; default 0: off.  Non-zero: take snapshots
	 * asked for by `katra snapshot PID`, from processes of this user only,
	 * over a socket in $XDG_RUNTIME_DIR/katra/ (when that directory is
	 * this user's and 0700; else /tmp/katra-UID/, made 0700), served by a
	 * thread of katra's until the session stops.  The snapshot is written
	 * into memory and handed to the client, which writes the file: no
	 * client makes this process write a file, and none holds up the stop,
	 * a kt_name() or the exit (SECURITY.md §5). */
	int listen;

	/* ---- crash files ---- */
	/* Back the rings with files in CRASH_DIR/katra-<pid>/ ("" means
	 * /dev/shm) so `katra recover` can rebuild the trace of a process
	 * that died.  NULL: the environment's KT_CRASH_DIR, if set and not
	 * empty; otherwise off.  The emit path costs the same. */
	const char *crash_dir;

	/* ---- the scheduler ---- */
	/*
	 * kt_session_sched; default KT_SCHED_OFF, or the environment's
	 * KT_SCHED=1.  KT_SCHED_ON: the flusher follows each traced thread's
	 * context switches (perf_event_open() on the thread, no root needed
	 * at perf_event_paranoid <= 2) and writes them as scheduler records,
	 * so readers can say a zone's on-CPU and off-CPU time.  Emits cost
	 * the same: the kernel writes the switches, the flusher reads them.
	 * At most KT_SCHED_MAX_THREADS threads at once (a message says when
	 * more are left out).  Where the kernel refuses (perf_event_paranoid
	 * 3, seccomp, a container) the session starts anyway, says why once
	 * on stderr, and the file says scheduler data is absent.  Not in
	 * flight sessions.
	 */
	int sched;
	/*
	 * Samples of each traced thread's user-space call chain, about this
	 * many per second of the thread's CPU time; default 0: none, or the
	 * environment's KT_SAMPLE_HZ=N (0..KT_SAMPLE_HZ_MAX; over the
	 * kernel's perf_event_max_sample_rate, it lowers the rate).  The
	 * flusher opens a sampling perf event per thread (no root needed at
	 * perf_event_paranoid <= 2) and writes each sample as a record
	 * naming an interned stack, with the process's executable mappings,
	 * so `katra` can name the functions (format/SPEC.md §4.2.2).  Emits
	 * cost the same.  The chain follows frame pointers: code built
	 * without them (-fomit-frame-pointer) gives chains that stop early.
	 * Where the kernel refuses, the session starts anyway, says why once
	 * on stderr and in a note `samples: absent: WHY`.  Not in flight
	 * sessions.
	 */
	uint32_t sample_hz;
} kt_session_options;

/** The highest kt_session_options.sample_hz. */
#define KT_SAMPLE_HZ_MAX 100000u

/** kt_session_options.sched. */
typedef enum kt_session_sched {
	KT_SCHED_OFF = 0,
	KT_SCHED_ON = 1,
} kt_session_sched;

/** Threads whose context switches one session follows at once. */
#define KT_SCHED_MAX_THREADS 256u

/** kt_session_options.stop_sync. */
typedef enum kt_stop_sync {
	KT_STOP_SYNC_DATA = 0,
	KT_STOP_SYNC_NONE = 1,
} kt_stop_sync;

/** kt_session_options.mode. */
typedef enum kt_session_mode {
	KT_SESSION_NORMAL = 0,
	KT_SESSION_FLIGHT = 1,
} kt_session_mode;

/** kt_session_options.io_timeout_ns's default: 5 s. */
#define KT_IO_TIMEOUT_DEFAULT_NS UINT64_C(5000000000)

/** What a session did, per thread and in total. */
typedef struct kt_summary {
	uint64_t events_written;
	uint64_t events_dropped;
	uint64_t events_refused;    /* records refused (over a quarter of the
				     * ring, malformed, or emitted by a thread
				     * whose ring could not be made): also in
				     * dropped */
	uint64_t chunks;
	uint64_t bytes_raw;
	uint64_t bytes_on_disk;      /* written, over every segment of a capture's
				      * session, or the one file */
	uint64_t flusher_cpu_ns;    /* CPU time the flusher thread used */
	int io_backend;             /* kt_io_backend that ran */
	int io_error;               /* first I/O error as -errno, or 0 */
	kt_clock_calibration clock_start;
	kt_clock_calibration clock_stop;
	uint32_t thread_count;
	kt_summary_thread *threads; /* thread_count rows in thread_id order;
				     * release with kt_summary_release() */
	int capped;                 /* a capture's byte cap was reached (the
				     * manager's default backend); else 0 */
	uint32_t segments;          /* files written: a capture's segments
				     * under KT_CAP_KEEP_NEWEST; else 1 */
} kt_summary;

/**
 * kt_session_start - start writing every thread's ring into a new trace.
 * @path: the file to create, or to replace; ignored when @opts names an fd
 *        (@opts->fd > 0, or KT_GIVEN_FD).  An existing file is cut only
 *        once every other step of the start has worked: a start that fails
 *        for any reason but writing the file itself leaves it as it was,
 *        and removes a file it created.  A FIFO without a reader fails
 *        with -ENXIO rather than waiting for one.
 * @opts: options, or NULL for the defaults.
 * @out:  receives the session.
 *
 * Events emitted after this returns are captured; ring contents from
 * before are discarded.  With crash files (@opts->crash_dir or
 * KT_CRASH_DIR) every ring, existing or new, is backed by a file in the
 * session's crash directory until the session stops, which removes it.
 * Return: 0; KT_EBUSY if a session is active; -EINVAL (also for KT_IO_URING
 * on a pipe, socket or O_APPEND file, where writes at offsets cannot
 * work); -errno from creating or writing the file, from creating the crash
 * directory or its files, or from io_uring set-up when KT_IO_URING is
 * forced.  kt_session_get_start_error() then says which.  Any thread; a
 * pthread_cancel() of it acts only after the call (no cancellation point
 * acts inside).
 */
KT_API int kt_session_start(const char *path, const kt_session_options *opts,
			    kt_session **out);

/**
 * kt_session_get_start_error - why the calling thread's last kt_session_start()
 * failed, naming what failed: "crash directory in /x (KT_CRASH_DIR): No
 * such file or directory", "trace file out.katra: Permission denied", ...
 *
 * Return: a thread-local string, "" after a start that succeeded; valid
 * until the thread's next kt_session_start().
 */
KT_API const char *kt_session_get_start_error(void);

/**
 * kt_session_stop - drain, finish and close the session's file.
 * @s:   the session; freed by this call.
 * @sum: optional; receives the summary (release it with
 *       kt_summary_release()).
 *
 * Every event whose emit returned before this call is in the file or
 * counted as dropped.  Events racing with the call may land in neither and
 * are counted nowhere.  Writes the names, threads, drops and summary, and
 * fdatasyncs (unless stop_sync is KT_STOP_SYNC_NONE).  Return: 0, or the session's first I/O error (-errno): the
 * file then holds a valid prefix; -ETIMEDOUT when a pipe or socket's
 * reader took nothing for io_timeout_ns.  Call it from any one thread; a
 * pthread_cancel() of it acts only after the call.
 */
KT_API int kt_session_stop(kt_session *s, kt_summary *sum);

/** kt_summary_release - free what kt_session_stop() put in @sum. */
KT_API void kt_summary_release(kt_summary *sum);

/* ---- the producer fast path ----------------------------------------- */

#ifndef KATRA_DISABLE
/*
 * The parts of a ring the inline path touches.  The rest (and the consumer
 * side, on its own cache line) is private to ring/.  Fields here are
 * written only by the owning thread.
 */
struct kt__ring_prod {
	uint64_t head;          /* bytes published; the flusher acquires it */
	/* head may reach this without the slow path.  KT__LIMIT_BUSY while
	 * this thread is inside an emit: a signal handler that interrupts it
	 * and emits on the same thread is sent to the slow path, which counts
	 * the nested record as refused instead of writing over this one.
	 * Accessed atomically only so a handler on this thread may read it:
	 * relaxed, ordered against the record by signal fences. */
	uint64_t limit;
	uint8_t *base;          /* first of two back-to-back mappings */
	uint64_t mask;          /* ring size - 1 */
};

/* Any limit below the smallest record (16 bytes) fails the fast path's
 * bounds check; 1 is never a limit the slow path computes (those are 0 or
 * a ring position of a multiple of 8 bytes). */
#define KT__LIMIT_BUSY 1u

/* The calling thread's ring; NULL until its first emit in a session. */
extern KT_API __thread struct kt__ring_prod *kt__tls_ring
	__attribute__((tls_model("initial-exec")));
/* Non-zero while a session runs. */
extern KT_API int kt__active;
/* Non-zero when timestamps are TSC ticks, zero for CLOCK_MONOTONIC ns. */
extern KT_API int kt__clock_tsc;

/* Out of line and cold, so the compiler keeps the fast path free of the
 * calls, spills and frame set-up they would need. */
KT_API __attribute__((cold)) uint64_t kt__now_slow(void);
KT_API __attribute__((cold)) void kt__emit_slow(uint8_t type, uint32_t id, uint8_t flags,
						const void *payload, size_t len);
/* Count a record the format cannot hold as refused (and so as dropped). */
KT_API __attribute__((cold)) void kt__refuse(void);

/*
 * The timestamp of a fast-path record.  On x86 the fast path runs only
 * while the clock is the TSC: with CLOCK_MONOTONIC the slow path keeps the
 * ring's limit at 0, so every record goes out of line and no clock branch
 * sits here.  Elsewhere CLOCK_MONOTONIC through the vDSO is the clock.
 */
static inline uint64_t kt__fast_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return kt__now_slow();
#endif
}

/** kt_now - the timestamp katra would give an event now, in ticks. */
static inline uint64_t kt_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(kt__clock_tsc, 1))
		return __rdtsc();
#endif
	return kt__now_slow();
}

static inline int kt__on(void)
{
	/* Relaxed: a stale value only decides whether this one event is
	 * traced; ordering of the record itself comes from the ring's
	 * release store of head. */
	return __builtin_expect(kt__load_stale(&kt__active), 0);
}

/*
 * Store one record (katra/record.h) at @p: timestamp, then name id, type,
 * flags and payload length packed into one little-endian word, then the
 * payload and its zero padding.  Shared by the inline path and the slow
 * path.
 */
static inline __attribute__((always_inline)) void
kt__put_record(uint8_t *p, uint64_t ts, uint8_t type, uint32_t id, uint8_t flags,
	       const void *payload, size_t len)
{
	uint64_t meta = (uint64_t)id | (uint64_t)type << KT_REC_META_SHIFT(KT_REC_TYPE) |
			(uint64_t)flags << KT_REC_META_SHIFT(KT_REC_FLAGS) |
			(uint64_t)len << KT_REC_META_SHIFT(KT_REC_LEN);
	memcpy(p + KT_REC_TS, &ts, 8);
	memcpy(p + KT_REC_NAME, &meta, 8);
	if (len) {
		memcpy(p + KT_REC_HEAD, payload, len);
		if (len & 7)
			memset(p + KT_REC_HEAD + len, 0, 8 - (len & 7));
	}
}

/*
 * Append one record with @len (a compile-time constant in every caller but
 * kt_message/kt_emit) bytes of payload.
 */
static inline __attribute__((always_inline)) void
kt__emit(uint8_t type, uint32_t id, uint8_t flags, const void *payload, size_t len)
{
	struct kt__ring_prod *r = kt__tls_ring;
	size_t size = kt_event_size(len);
	uint64_t head, limit; /* declared before the gotos, as C++ requires */

	if (__builtin_expect(r == NULL, 0))
		goto slow;
	/* Fixed-size records are far below a quarter of the smallest ring;
	 * only variable ones pay for this check. */
	if (!(__builtin_constant_p(len) && len <= 4096) &&
	    __builtin_expect(size > (r->mask + 1) / 4 || len > KT_REC_MAX_PAYLOAD, 0))
		goto slow;
	/*
	 * Mark the thread busy before reading head, so a signal handler that
	 * emits on this thread either ran to the end before the mark (and
	 * head below is its new one) or finds the mark and stays off this
	 * record.  limit itself is the mark: the bounds check reads it
	 * anyway, so a nested emit costs no branch here.  Relaxed, with
	 * signal fences: only this thread and its handlers touch limit, and
	 * they need the compiler to keep program order, no more.  A limit a
	 * handler's slow path set meanwhile is overwritten with the one read
	 * here: every limit ever set is at most tail + size for a tail that
	 * only grows, so an older one still never overwrites unread bytes.
	 */
	limit = kt__load_own(&r->limit);
	kt__store_relaxed(&r->limit, KT__LIMIT_BUSY);
	kt__signal_fence();
	/* Relaxed: head is written only by this thread (and its handlers,
	 * which the mark keeps out from here on). */
	head = kt__load_own(&r->head);
	if (__builtin_expect(head + size > limit, 0)) {
		kt__store_relaxed(&r->limit, limit);
		goto slow;
	}
	kt__put_record(r->base + (head & r->mask), kt__fast_now(), type, id, flags, payload,
		       len);
	/* Release: the record's bytes above become visible to the flusher no
	 * later than the head that covers them (pairs with the flusher's
	 * acquire load of head). */
	kt__store_release(&r->head, head + size);
	/* The mark goes only after head moved: a handler in between is
	 * refused, never handed the old head. */
	kt__signal_fence();
	kt__store_relaxed(&r->limit, limit);
	return;
slow:
	kt__emit_slow(type, id, flags, payload, len);
}
#else /* compiled out: calls check their arguments, emits do nothing */
#include <katra/disable.h>
#endif

/** kt_zone_begin - a zone named @id starts on this thread. */
static inline void kt_zone_begin(uint32_t id)
{
	if (kt__on())
		kt__emit(KT_EV_ZONE_BEGIN, id, 0, NULL, 0);
}

/** kt_zone_end - the innermost zone named @id ends on this thread. */
static inline void kt_zone_end(uint32_t id)
{
	if (kt__on())
		kt__emit(KT_EV_ZONE_END, id, 0, NULL, 0);
}

/** kt_instant - a point event. */
static inline void kt_instant(uint32_t id)
{
	if (kt__on())
		kt__emit(KT_EV_INSTANT, id, 0, NULL, 0);
}

/** kt_counter - an integer counter's new value. */
static inline void kt_counter(uint32_t id, int64_t value)
{
	if (kt__on())
		kt__emit(KT_EV_COUNTER_I64, id, 0, &value, 8);
}

/** kt_counter_f64 - a floating-point counter's new value. */
static inline void kt_counter_f64(uint32_t id, double value)
{
	if (kt__on())
		kt__emit(KT_EV_COUNTER_F64, id, 0, &value, 8);
}

/** kt_frame - frame @frame_no ends (a frame mark). */
static inline void kt_frame(uint32_t id, uint64_t frame_no)
{
	if (kt__on())
		kt__emit(KT_EV_FRAME, id, 0, &frame_no, 8);
}

/** kt_flow - a step of flow @flow_id; @phase is a kt_flow_phase. */
static inline void kt_flow(uint32_t id, uint64_t flow_id, kt_flow_phase phase)
{
	if (kt__on()) {
		if (__builtin_expect((unsigned)phase > KT_FLOW_END, 0))
			kt__refuse();
		else
			kt__emit(KT_EV_FLOW, id, (uint8_t)phase, &flow_id, 8);
	}
}

/**
 * kt_message - a text message of @len bytes (not NUL-terminated in the
 * trace).  Longer than 65535 bytes or a quarter of the ring: refused and
 * counted in the summary's events_refused.
 */
static inline void kt_message(uint32_t id, const char *text, size_t len)
{
	if (kt__on())
		kt__emit(KT_EV_MESSAGE, id, 0, text, len);
}

/**
 * kt_emit - a record of any type.  @type KT_EV_USER carries opaque bytes
 * with @flags free for the caller; other types must have the payload size
 * and flags SPEC §4.2 gives them.  A record that does not (an unknown type,
 * a wrong size) is refused and counted as dropped, as are records over the
 * limits of kt_message().
 */
static inline void kt_emit(uint8_t type, uint32_t id, uint8_t flags, const void *payload,
			   size_t len)
{
	if (kt__on()) {
		if (__builtin_expect(!kt__record_ok(type, flags, len), 0))
			kt__refuse();
		else
			kt__emit(type, id, flags, payload, len);
	}
}

/* A site's id, interned on its first pass. */
static inline uint32_t kt__site_get(kt_site *site)
{
	/* Relaxed: two threads racing here intern the same site and store
	 * the same id; kt_site_id() says what the flag pointer may lag. */
	uint32_t id = kt__load_stale(&site->id);
	if (__builtin_expect(id == 0, 0))
		id = kt_site_id(site);
	return id;
}

/* A site's zone begins: its id, for the end.  A site without a category
 * costs what kt_zone_begin() costs once its id is cached. */
static inline uint32_t kt__site_begin(kt_site *site)
{
	uint32_t id = kt__site_get(site);
	kt_zone_begin(id);
	return id;
}

/* A site with a category: 0 (and nothing emitted) while it is off.  Off
 * costs two loads (the cached flag pointer, the flag) and a branch that
 * falls through: laid out for off, as kt__on() is for tracing off (a taken
 * branch per site doubled the off cost; on, a record's ~10 ns hide the
 * jump to the body).  The
 * pointer is read first: before the first pass it points at an "on" flag,
 * so the first pass reaches kt_site_id(), which sets the real one. */
static inline uint32_t kt__site_begin_c(kt_site *site)
{
	if (__builtin_expect(!kt__load_stale(kt__load_stale(&site->enabled)), 1))
		return 0;
	uint32_t id = kt__load_stale(&site->id);
	if (__builtin_expect(id == 0, 0)) {
		id = kt_site_id(site);
		if (!kt__load_stale(kt__load_stale(&site->enabled)))
			return 0;
	}
	kt_zone_begin(id);
	return id;
}

static inline void kt__zone_cleanup(const uint32_t *id)
{
	kt_zone_end(*id);
}

/* The end of a zone whose begin may have been skipped (id 0): a category
 * switched off after the begin still ends the zone it began. */
static inline void kt__zone_cleanup_c(const uint32_t *id)
{
	if (*id)
		kt_zone_end(*id);
}

#define KT__CAT2(a, b) a##b
#define KT__CAT(a, b) KT__CAT2(a, b)

/* The static site of a macro call: its name, location and category. */
#define KT__SITE(var, cat, literal)                                                 \
	static kt_site var = { literal, __FILE__, __func__, cat, __LINE__, 0, &kt__flag_on }

/**
 * KT_ZONE("name") - a zone from here to the end of the enclosing block,
 * recorded with its file, line and function (a static site per call,
 * interned once: katra/zone.h), then costing what kt_zone_begin() and
 * kt_zone_end() cost.  KT_ZONE_C("category", "name") is the same zone in
 * a category: while the category is off it emits nothing (and a zone it
 * began still ends).  In C it ends through the cleanup attribute; in C++
 * through a scope guard's destructor (below), so it also ends when an
 * exception leaves the block.
 */
#if !defined(__cplusplus) && !defined(KATRA_DISABLE) /* disable.h has its own */
#define KT__ZONE(var, cat, literal, begin, end_fn)                                 \
	KT__SITE(KT__CAT(kt__site_, __LINE__), cat, literal);                       \
	const uint32_t var __attribute__((cleanup(end_fn), unused)) =               \
		begin(&KT__CAT(kt__site_, __LINE__))
#define KT_ZONE_AS(var, literal) KT__ZONE(var, NULL, literal, kt__site_begin, kt__zone_cleanup)
#define KT_ZONE_C_AS(var, cat, literal)                                             \
	KT__ZONE(var, cat, literal, kt__site_begin_c, kt__zone_cleanup_c)
#define KT__ZONE_ID(var) (var)
#endif

#ifdef __cplusplus
}

/* The scope guard behind C++'s KT_ZONE: begins in its constructor, ends
 * in its destructor; neither throws nor allocates.  katra.hpp names it
 * katra::zone. */
struct kt__zone_guard {
	uint32_t id;
	explicit kt__zone_guard(uint32_t zone_id) noexcept : id(zone_id)
	{
		kt_zone_begin(zone_id);
	}
	~kt__zone_guard() { kt_zone_end(id); }
	kt__zone_guard(const kt__zone_guard &) = delete;
	kt__zone_guard &operator=(const kt__zone_guard &) = delete;
};

/* KT_ZONE_C's guard: begun (or not, with its category off) by
 * kt__site_begin_c(), ended only if it began. */
struct kt__zone_guard_c {
	uint32_t id;
	explicit kt__zone_guard_c(kt_site *site) noexcept : id(kt__site_begin_c(site)) {}
	~kt__zone_guard_c() { kt__zone_cleanup_c(&id); }
	kt__zone_guard_c(const kt__zone_guard_c &) = delete;
	kt__zone_guard_c &operator=(const kt__zone_guard_c &) = delete;
};

#ifndef KATRA_DISABLE
#define KT_ZONE_AS(var, literal)                                                    \
	KT__SITE(KT__CAT(kt__site_, __LINE__), NULL, literal);                      \
	const kt__zone_guard var(kt__site_get(&KT__CAT(kt__site_, __LINE__)))
#define KT_ZONE_C_AS(var, cat, literal)                                             \
	KT__SITE(KT__CAT(kt__site_, __LINE__), cat, literal);                       \
	const kt__zone_guard_c var(&KT__CAT(kt__site_, __LINE__))
#define KT__ZONE_ID(var) ((var).id)
#endif
#endif

#define KT_ZONE(literal) KT_ZONE_AS(KT__CAT(kt__zone_, __LINE__), literal)
#define KT_ZONE_C(cat, literal) KT_ZONE_C_AS(KT__CAT(kt__zone_, __LINE__), cat, literal)

/**
 * KT_ZONE_AS(z, "name"), KT_ZONE_C_AS(z, "category", "name") - KT_ZONE and
 * KT_ZONE_C with a handle @z (a const local of the block), for arguments
 * that belong to this zone alone.  KT_ZONE_ON(z) is true if the zone
 * began: a KT_ZONE always, a KT_ZONE_C while its category was on.
 * KT_ZONE_ARG_I64(z, "name", v), _U64, _F64 and KT_ZONE_ARG_STR(z, "name",
 * s, n) are KT_ARG_*'s (katra/args.h) under that test: inside a zone whose
 * category is off they write nothing, where a plain KT_ARG_* would be
 * given to the enclosing zone.  The test reads the handle, a local: an
 * off zone's arguments cost a branch.
 */
#define KT_ZONE_ON(var) (KT__ZONE_ID(var) != 0)
#define KT__ZONE_ARG(var, arg, ...)                                                 \
	do {                                                                        \
		if (KT_ZONE_ON(var))                                                \
			arg(__VA_ARGS__);                                           \
	} while (0)
#define KT_ZONE_ARG_I64(var, literal, v) KT__ZONE_ARG(var, KT_ARG_I64, literal, v)
#define KT_ZONE_ARG_U64(var, literal, v) KT__ZONE_ARG(var, KT_ARG_U64, literal, v)
#define KT_ZONE_ARG_F64(var, literal, v) KT__ZONE_ARG(var, KT_ARG_F64, literal, v)
#define KT_ZONE_ARG_STR(var, literal, s, n) KT__ZONE_ARG(var, KT_ARG_STR, literal, s, n)

#include <katra/args.h>
#include <katra/mem.h>
#endif /* KATRA_KATRA_H */

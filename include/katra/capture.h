/*
 * katra/capture.h - bounded, run-aligned captures.
 *
 * A capture manager owns one directory, its root, and runs at most one
 * capture at a time in it.  A capture belongs to a run (a run id and an
 * epoch): it starts when the run's start is reported, stops when the run's
 * stop is, or by itself at its duration or byte cap, and ends either
 * published - a trace file and its JSON sidecar, renamed into the root
 * only once complete, fsynced, with the trace's SHA-256 - or with a code
 * that says why not.  Events outside the run's boundaries are trimmed, and
 * the status says exactly how much of the run the file covers.
 *
 *     kt_manager *m;
 *     kt_manager_options mo = { .root = "/var/tmp/captures" };
 *     kt_manager_new(&mo, &m);
 *     kt_capture_ref sr;
 *     kt_manager_start(m, &(kt_start_request){ .run_id = "bench-42", .epoch = 1,
 *                                             .validity = "valid",
 *                                             .boundary_at = t0 }, &sr);
 *     ... the run ...
 *     kt_capture_ref tk;
 *     kt_manager_request_stop(m, &(kt_stop_request){ .run_id = "bench-42", .epoch = 1,
 *                                                   .boundary_at = t1 }, &tk);
 *     kt_capture_status st;
 *     kt_manager_await(m, &tk, UINT64_MAX, &st);   // st.state == KT_STATE_PUBLISHED
 *     kt_manager_close(m);
 *
 * Times are wall-clock nanoseconds since the Unix epoch (CLOCK_REALTIME
 * unless a clock is injected); 0 means "not set".  A trace maps them to its
 * own timestamps through the wall and monotonic start times in its header.
 *
 * Threads: every kt_manager_* function may be called from any thread, and
 * concurrently, except kt_manager_close(), after which nothing may be.
 * Each capture has a thread of its own that stops and publishes it.
 */
#ifndef KATRA_CAPTURE_H
#define KATRA_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <katra/katra.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KT_CAPTURE_DEFAULT_DURATION_NS 5000000000ull
#define KT_CAPTURE_MAX_DURATION_NS 30000000000ull
#define KT_CAPTURE_DEFAULT_MAX_BYTES (64ull << 20)
#define KT_CAPTURE_MAX_BYTES (256ull << 20)
#define KT_CAPTURE_MIN_FREE (16ull << 20)
#define KT_CAPTURE_RUN_ID_MAX 128   /* bytes, without the NUL */
#define KT_CAPTURE_ID_MAX 64        /* bytes, without the NUL */
#define KT_CAPTURE_SCHEMA "katra.capture-status/v1"
#define KT_CAPTURE_REASON_MAX_DURATION "max-duration"
#define KT_CAPTURE_REASON_MAX_BYTES "max-bytes"

/*
 * The one list of capture states: X(enum name, value, name), the name
 * being kt_capture_state_name()'s and the sidecar's "state".  Append only:
 * the values are part of the ABI and the names of the sidecar schema.
 */
#define KT_CAPTURE_STATES(X)                                                            \
	X(KT_STATE_CAPTURING, 1, "capturing")                                           \
	X(KT_STATE_REPLAYED,  2, "replayed")  /* a start repeated; see the first */     \
	X(KT_STATE_STOPPING,  3, "stopping")  /* draining, trimming, publishing */      \
	X(KT_STATE_PUBLISHED, 4, "published") /* file and sidecar in place */           \
	X(KT_STATE_SKIPPED,   5, "skipped")   /* never started; the code says why */    \
	X(KT_STATE_FAILED,    6, "failed")    /* started, not published; code says why */ \
	X(KT_STATE_ABORTED,   7, "aborted")   /* stopped with abort, file removed */

/** Where a capture is. */
typedef enum kt_capture_state {
	KT_STATE_NONE = 0,      /* no such capture */
#define KT__STATE_ENUM(name, value, text) name = value,
	KT_CAPTURE_STATES(KT__STATE_ENUM)
#undef KT__STATE_ENUM
} kt_capture_state;

/*
 * The one list of capture codes, which say why: X(enum name, value, name),
 * the name being kt_capture_code_name()'s and the sidecar's "code".
 * Append only, as for the states.
 */
#define KT_CAPTURE_CODES(X)                                             \
	X(KT_CODE_RUN_INVALID,            1,  "run-invalid")            \
	X(KT_CODE_PROFILER_BUSY,          2,  "profiler-busy")          \
	X(KT_CODE_DISK_BUDGET,            3,  "disk-budget")            \
	X(KT_CODE_ARTIFACT_CREATE_FAILED, 4,  "artifact-create-failed") \
	X(KT_CODE_START_FAILED,           5,  "start-failed")           \
	X(KT_CODE_OUTPUT_TOO_LARGE,       6,  "output-too-large")       \
	X(KT_CODE_STOP_FAILED,            7,  "stop-failed")            \
	X(KT_CODE_PUBLISH_FAILED,         8,  "publish-failed")         \
	X(KT_CODE_DURATION_COMPLETE,      9,  "duration-complete")      \
	X(KT_CODE_ABORTED,                10, "aborted")                \
	X(KT_CODE_NO_ACTIVE_CAPTURE,      11, "no-active-capture")      \
	X(KT_CODE_DURABILITY_UNKNOWN,     12, "durability-unknown")

/** Why. */
typedef enum kt_capture_code {
	KT_CODE_NONE = 0,
#define KT__CODE_ENUM(name, value, text) name = value,
	KT_CAPTURE_CODES(KT__CODE_ENUM)
#undef KT__CODE_ENUM
} kt_capture_code;

/** kt_capture_state_name - "capturing", ...; "" for KT_STATE_NONE or unknown. */
KT_API const char *kt_capture_state_name(kt_capture_state state);

/** kt_capture_code_name - "run-invalid", ...; "" for KT_CODE_NONE or unknown. */
KT_API const char *kt_capture_code_name(kt_capture_code code);

/** What a capture with a byte cap does when it is reached. */
typedef enum kt_cap_policy {
	KT_CAP_STOP = 0,        /* the capture stops: output-too-large */
	KT_CAP_KEEP_NEWEST = 1, /* the oldest of KT_CAP_SEGMENTS segments goes */
} kt_cap_policy;

/** Segments a KT_CAP_KEEP_NEWEST capture keeps, of max_bytes / KT_CAP_SEGMENTS
 * bytes each. */
#define KT_CAP_SEGMENTS 4u

/**
 * What a backend is given to start a capture.  @session is filled for a
 * katra session writing this capture into @fd (run id, capture id, epoch
 * and duration over the manager's template options): kt_session_start()
 * takes it as it is, but then writes one file without the byte cap.  The
 * manager's own backend (kt_manager_session_backend()) also keeps the cap
 * and the KT_CAP_KEEP_NEWEST segments.  The struct lasts until @start
 * returns, what its pointers point at until @stop returns.
 */
typedef struct kt_backend_args {
	int fd;                        /* the artifact: empty, open for writing;
					* the manager's, valid until stop returns */
	const char *run_id;
	const char *capture_id;
	uint64_t epoch;
	uint64_t max_bytes;
	const kt_session_options *session;
	/* A backend that keeps the byte cap itself says it is reached with
	 * @on_cap(@cap_ctx): the capture then stops, output-too-large.  Any
	 * thread but inside @start (it takes the manager's lock, which @start
	 * is called with), until @stop returns.  @cap_ctx is the capture,
	 * opaque. */
	void (*on_cap)(void *cap_ctx);
	void *cap_ctx;
} kt_backend_args;

/**
 * Records a capture.  The default records with a katra session
 * (kt_manager_session_backend()).
 * @start: begin writing a trace into @args->fd; keep what @stop needs in
 *         *@handle.  Return 0, or a negative code (the capture then fails
 *         with start-failed).  Called with the manager's lock held: it must
 *         not call the manager.
 * @stop:  stop, with every event in the file(s) when it returns; release
 *         @handle.  Return 0, or a negative code (stop-failed).  Called on
 *         the capture's own thread.
 */
typedef struct kt_capture_backend {
	int (*start)(void *ctx, const kt_backend_args *args, void **handle);
	int (*stop)(void *ctx, void *handle);
	void *ctx;
	/* The flight policy only (required by it; see kt_manager_options):
	 * write the newest window, at most @max_age_ns old and @max_bytes of
	 * ring bytes, as a trace into @fd (empty, open for writing), and say
	 * what it wrote in *@res, as kt_session_snapshot() does, which the
	 * default calls.  Return 0, or a negative code (stop-failed).  Called
	 * on the capture's own thread, before @stop. */
	int (*snapshot)(void *ctx, void *handle, int fd, uint64_t max_age_ns, uint64_t max_bytes,
			kt_snapshot_result *res);
} kt_capture_backend;

/**
 * kt_manager_session_backend - the manager's default backend: a katra
 * session per capture (kt_session_start() over kt_backend_args.session),
 * which writes the capture's segments and stops at its byte cap; flight
 * snapshots with kt_session_snapshot().
 * @last: NULL, or where each capture's stop leaves its session's summary
 *        (zeroed before the first; each stop releases the one there
 *        first); read it once kt_manager_await() has returned, and
 *        release it with kt_summary_release().
 * Return: the backend, for kt_manager_options.backend.  Any thread.
 */
KT_API kt_capture_backend kt_manager_session_backend(kt_summary *last);

/**
 * Who may capture in a root.  The default takes an exclusive flock on
 * <root>/.katra.lock, so a second process sharing the root is refused.
 * @acquire returns 1 when the capture may run, 0 when another holds the
 * profiler; @release gives it back.
 */
typedef struct kt_capture_owner {
	int (*acquire)(void *ctx, const char *capture_id);
	void (*release)(void *ctx, const char *capture_id);
	void *ctx;
} kt_capture_owner;

/**
 * The file operations whose failures a test needs to provoke.  NULL members
 * mean the system calls.
 */
typedef struct kt_capture_hooks {
	int (*fsync)(void *ctx, int fd);
	int (*renameat)(void *ctx, int dirfd, const char *from, const char *to);
	void *ctx;
} kt_capture_hooks;

/** Manager options.  Zero means "the default" in every field but @root. */
typedef struct kt_manager_options {
	const char *root;         /* an existing directory, not a symlink */
	const kt_capture_backend *backend;
	const kt_capture_owner *owner;
	uint64_t duration_ns;     /* default 5 s, at most 30 s */
	uint64_t max_bytes;       /* default 64 MiB, at most 256 MiB */
	uint64_t min_free;        /* free disk kept beyond what a capture may
				   * take; default 16 MiB.  A start needs
				   * 2.25 x max_bytes + min_free free: while it
				   * publishes, a capture holds its segments and
				   * the trimmed copy at once. */
	int cap_policy;           /* kt_cap_policy: KT_CAP_STOP (default) ends
				   * output-too-large; KT_CAP_KEEP_NEWEST keeps the
				   * newest events and reports the head lost */
	uint64_t (*now)(void *ctx);          /* wall-clock ns; default CLOCK_REALTIME */
	void *now_ctx;
	/* Write a capture id (at most KT_CAPTURE_ID_MAX bytes of
	 * [A-Za-z0-9._-], no leading dot or dash) into @buf; return 0.  Default: 16
	 * random hex digits. */
	int (*new_id)(void *ctx, char *buf, size_t size);
	void *id_ctx;
	const kt_session_options *session; /* template for the default backend:
					    * codec, io, flush period, ...; NULL:
					    * the session defaults (KT_CODEC_COMPACT).
					    * mode KT_SESSION_FLIGHT is the flight
					    * policy: the run is kept in memory (the
					    * rings), not on disk, for as long as it
					    * runs, and the stop writes the window
					    * [boundary_finish - duration,
					    * boundary_finish] (the stop's time for an
					    * open end; never before the run's start)
					    * with the backend's snapshot, then
					    * publishes it as any capture.  The status's
					    * boundary_start is the window's start;
					    * head_loss_ns what the rings could not
					    * hold of it.  max_bytes bounds the ring
					    * bytes taken, cap_policy is not used */
	const kt_capture_hooks *hooks;
} kt_manager_options;

typedef struct kt_manager kt_manager;

/** A run's start.  @run_id_len 0 means strlen(@run_id). */
typedef struct kt_start_request {
	const char *run_id;
	size_t run_id_len;
	uint64_t epoch;
	const char *state;        /* the run's own state; recorded nowhere */
	const char *validity;     /* must be "valid" */
	uint64_t boundary_at;     /* the run's start, wall ns; 0: the capture's
				   * start; above INT64_MAX: run-invalid */
} kt_start_request;

/**
 * KT_CAPTURE_REF_FIELDS - the fields that name a capture and say where it
 * stands: the run (@run_id, @epoch), the capture (@capture_id, "" when
 * none), its @state and @code.  They are all of kt_capture_ref and the
 * first of kt_capture_status, listed here once so that the two cannot
 * drift apart: a status names its capture with a ref's fields, by the
 * same names.  A declaration list, for those two structs only.
 */
#define KT_CAPTURE_REF_FIELDS                     \
	char run_id[KT_CAPTURE_RUN_ID_MAX + 1];   \
	uint64_t epoch;                           \
	char capture_id[KT_CAPTURE_ID_MAX + 1];   \
	kt_capture_state state;                   \
	kt_capture_code code;

/**
 * What kt_manager_start() and kt_manager_request_stop() answer: the run,
 * the capture they concern ("" when none) and its state and code then.
 */
typedef struct kt_capture_ref {
	KT_CAPTURE_REF_FIELDS
} kt_capture_ref;

/** A run's stop.  @run_id_len 0 means strlen(@run_id). */
typedef struct kt_stop_request {
	const char *run_id;
	size_t run_id_len;
	uint64_t epoch;
	const char *reason;       /* free text, kept in the status: at most 63
				   * bytes, cut at a character; bytes that are
				   * not UTF-8 become "\xNN" */
	uint64_t boundary_at;     /* the run's end, wall ns; 0 or UINT64_MAX:
				   * no end (the capture's stop); see below */
	int abort;                /* discard instead of publishing */
} kt_stop_request;

/**
 * A capture's status: the fields of the sidecar, named as in its JSON.
 * @file and @sidecar are names inside the root.  Spans are ns:
 *  - requested_span: boundary_finish - boundary_start;
 *  - head_loss: how much of the run after boundary_start the file lacks
 *    (the capture started late, or KEEP_NEWEST dropped its head);
 *  - tail_excess: how long the capture ran past boundary_finish (cut);
 *  - capture_span: the part of [boundary_start, boundary_finish] the file
 *    covers.
 * @complete: published, and the file covers the whole requested span.
 */
typedef struct kt_capture_status {
	KT_CAPTURE_REF_FIELDS       /* as kt_capture_ref's */
	char file[240];             /* <run id>.<epoch>.<capture id>.katra */
	char sha256[65];
	uint64_t bytes;
	char sidecar[256];
	uint64_t boundary_start, boundary_finish;
	uint64_t start_requested_at, start_completed_at;
	uint64_t stop_requested_at, stop_completed_at;
	char stop_reason[64];
	int64_t requested_span_ns, capture_span_ns, head_loss_ns, tail_excess_ns;
	int complete;
	/* Not in the JSON: events in the file, and events trimmed away. */
	uint64_t events, events_trimmed;
} kt_capture_status;

/**
 * kt_manager_new - open a manager over @opts->root.
 *
 * Removes what interrupted captures left behind: temporary files of
 * processes that no longer run and, when no live manager holds the root,
 * sidecars whose trace never got renamed into place.
 *
 * Return: 0 and *@out; -EINVAL for an option out of range or a missing
 * root; -ELOOP if the root is a symlink; -ENOTDIR if it is not a
 * directory; -errno from opening it; -ENOMEM.  Any thread.
 */
KT_API int kt_manager_new(const kt_manager_options *opts, kt_manager **out);

/**
 * kt_manager_start - start a capture for a run.
 *
 * Fills @res: capturing; replayed (this run and epoch were started before:
 * the result names that capture); or skipped / failed with the code:
 * run-invalid (a bad run id - 1 to 128 bytes of [A-Za-z0-9._-], not
 * starting with '.' or '-', no ".." - validity not "valid", an epoch
 * older than one already seen for the run, or an epoch or boundary_at
 * above INT64_MAX), profiler-busy, disk-budget,
 * artifact-create-failed, start-failed.  A skipped start names no capture
 * (capture_id ""): nothing started.  Any thread.
 */
KT_API void kt_manager_start(kt_manager *m, const kt_start_request *req, kt_capture_ref *res);

/**
 * kt_manager_request_stop - ask a run's capture to stop.
 *
 * Fills @ticket: stopping (publishing continues on the capture's thread);
 * aborted (with @req->abort: the capture is stopped and its files removed
 * before this returns); the capture's current state if it already stopped;
 * or state none with code no-active-capture.  A stop (not an abort) whose
 * @req->boundary_at lies before the run's start, or above INT64_MAX other
 * than UINT64_MAX, changes nothing: the ticket says capturing with code
 * run-invalid, and the capture goes on until a valid stop or an abort.
 * Any thread.
 */
KT_API void kt_manager_request_stop(kt_manager *m, const kt_stop_request *req,
				    kt_capture_ref *ticket);

/**
 * kt_manager_await - wait until a ticket's capture is over.
 * @timeout_ns: how long to wait; UINT64_MAX for as long as it takes.
 *
 * Return: 0 with the final status in *@st; -ETIMEDOUT with the status as it
 * is.  A no-active-capture ticket gives at once a status with state
 * skipped and that code.  Any thread.
 */
KT_API int kt_manager_await(kt_manager *m, const kt_capture_ref *ticket, uint64_t timeout_ns,
			    kt_capture_status *st);

/**
 * kt_manager_get_status - the status of the capture of @run_id, @epoch.
 * Return: 0; -ENOENT if the manager knows no such capture.  Any thread.
 */
KT_API int kt_manager_get_status(kt_manager *m, const char *run_id, uint64_t epoch,
				 kt_capture_status *st);

/**
 * kt_manager_close - abort the active capture, if any, wait for every
 * capture thread, release the owner and free @m.  Threads already waiting
 * in kt_manager_await() or in an aborting kt_manager_request_stop() return
 * (the capture aborted) before @m is freed; a call that begins after close
 * did is not allowed.  Any one thread, once.
 */
KT_API void kt_manager_close(kt_manager *m);

/**
 * kt_capture_status_json - @st as the sidecar's JSON object (schema
 * KT_CAPTURE_SCHEMA), one line, keys in a fixed order, empty strings and
 * unset times left out.  Return: a string to free(), or NULL without memory.
 */
KT_API char *kt_capture_status_json(const kt_capture_status *st);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_CAPTURE_H */

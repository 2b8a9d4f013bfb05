/*
 * capture/manager_impl.h - private to capture/: a manager's and a capture's
 * state, shared by the lifecycle (manager.c), the files below the root
 * (root.c), a capture's segments and its session's output (segments.c),
 * the capture's thread and its publishing (publish.c) and the status JSON
 * (sidecar.c).  Nothing outside capture/ includes it.
 */
#ifndef KATRA_CAPTURE_MANAGER_IMPL_H
#define KATRA_CAPTURE_MANAGER_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <katra/capture.h>
#include <katra/katra.h>
#include "flush/flush.h"

#define KT__MGR_TMP_PREFIX ".katra-tmp-"
#define KT__MGR_LOCK_NAME ".katra.lock"
#define KT__MGR_NSEG (KT_CAP_SEGMENTS + 1) /* slots: a new segment opens before the old retires */
#define KT__MGR_MAX_RECORDS 4096             /* captures remembered for status and replay */

struct capture {
	kt_capture_status st;        /* under m->lock */
	int stop_req, abort_req, capped; /* under m->lock */
	int running;                 /* its thread has not finished; under m->lock */
	int waiters;                 /* threads waiting on it: not to be freed */
	pthread_t thread;
	int joinable;

	/* Owned by the capture's thread (and, until the backend stops, by the
	 * backend's callbacks, which the stop waits for). */
	kt_manager *m;
	void *handle;
	char base[96];               /* .katra-tmp-<pid>-<capture id> */
	int seg_fd[KT__MGR_NSEG];    /* by segment index % NSEG; -1 when closed */
	uint32_t seg_lo, seg_hi;     /* segments kept: [lo, hi] */
	uint32_t seg_cur;            /* the one the session writes */
	uint64_t seg_bytes;          /* what one segment may reach */
	uint64_t seg_last[KT_CAP_SEGMENTS]; /* last tick written, by index % N */
	int retired;
	uint64_t retired_tick;       /* last tick of the newest retired segment */
	/* Retired segments the capture's thread still has to delete: an
	 * unlink of a big file takes milliseconds the flusher cannot spare.
	 * Under m->lock. */
	uint32_t unlink_q[8];
	unsigned unlink_n;
	kt_session_options so;
	/* The flight policy's snapshot (flight.c): the tick of its first
	 * event when the rings no longer held the window's start (else 0),
	 * and the events it left out. */
	uint64_t flight_first_tick, flight_trimmed;
};

struct kt_manager {
	pthread_mutex_t lock;
	pthread_cond_t cond;         /* on CLOCK_MONOTONIC */
	int rootfd;
	int lockfd;                  /* the default owner's lock file */
	kt_capture_backend backend;
	kt_capture_owner owner;
	kt_capture_hooks hooks;
	kt_session_options session;
	uint64_t duration_ns, max_bytes, min_free;
	int cap_policy;
	int flight;                  /* the flight policy: session.mode */
	uint64_t (*now)(void *);
	void *now_ctx;
	int (*new_id)(void *, char *, size_t);
	void *id_ctx;
	struct capture **caps;       /* in start order */
	size_t ncaps, capcap;
	struct capture *active;
	int closing;                 /* kt_manager_close() waits for waiters */
};

/* ---- root.c: files below the root, defaults, clocks and ids ----------- */

/*
 * Whether @s[0..@len) is a run id or capture id: 1 to @max bytes of
 * [A-Za-z0-9._-], no leading dot or dash, no "..".  Return: 1 or 0.
 */
int kt__mgr_id_ok(const char *s, size_t len, size_t max);

/*
 * Open @name below @rootfd, never through a symlink nor out of the root
 * (openat2, or O_NOFOLLOW on one component where openat2 is missing or
 * filtered); O_CLOEXEC is added.  Return: the fd or -errno.
 */
int kt__mgr_open_beneath(int rootfd, const char *name, int flags, mode_t mode);

/* fsync(@fd), or the hook that stands for it.  Return: 0 or -errno. */
int kt__mgr_fsync(kt_manager *m, int fd);

/* Rename @from to @to within the root, or the hook.  Return: 0 or -errno. */
int kt__mgr_rename(kt_manager *m, const char *from, const char *to);

/* The manager's wall clock in ns (the default is CLOCK_REALTIME). */
uint64_t kt__mgr_now(kt_manager *m);

/* *@dl = now on CLOCK_MONOTONIC (the clock of m->cond) plus @ns. */
void kt__mgr_deadline(struct timespec *dl, uint64_t ns);

/* The default clock: CLOCK_REALTIME in ns; @ctx unused. */
uint64_t kt__mgr_realtime_ns(void *ctx);

/* The default capture id: 16 random hex digits.  Return: 0 or -EIO. */
int kt__mgr_random_id(void *ctx, char *buf, size_t size);

/*
 * The default owner: flock() on the lock file below the root, which this
 * opens (or creates) into m->lockfd.  Return: 0 or -errno.
 */
int kt__mgr_default_owner(kt_manager *m);

/*
 * Remove a gone process's temporary files, and, when no manager holds the
 * root, sidecars whose trace is missing.  Called by kt_manager_new().
 */
void kt__mgr_clean_root(kt_manager *m);

/* ---- segments.c: a capture's files and its session's output ------------ */

/* Close and delete every file of @c that is not published. */
void kt__mgr_remove_temps(struct capture *c);

/* Open segment @index of @c below the root (O_EXCL).  Return: its fd
 * (kept in c->seg_fd) or -errno.  The start, for segment 0, then the
 * flusher's thread. */
int kt__mgr_open_segment(struct capture *c, uint32_t index);

/* The byte cap is reached (@ctx is the capture): it stops, output-too-
 * large.  The flusher's thread, or any backend's. */
void kt__mgr_on_cap(void *ctx);

/* The output the default backend's session writes @c to: its byte cap
 * and, under KT_CAP_KEEP_NEWEST, its segments.  The start, lock held. */
kt__output kt__mgr_output(struct capture *c);

/* Delete the retired segments queued for @c; called and returns with the
 * lock held, and drops it meanwhile. */
void kt__mgr_unlink_retired(struct capture *c);

/* ---- flight.c: the flight policy's stop -------------------------------- */

/*
 * A flight capture is asked to stop: fix its window (the status's
 * boundary_start becomes the window's start) and have the backend write
 * it into segment 0.  Called without the lock, on the capture's thread,
 * before the backend stops.  Return: 0, or the backend's error.
 */
int kt__mgr_flight_snapshot(struct capture *c);

/* ---- publish.c: the capture's thread ----------------------------------- */

/*
 * The thread of capture @arg, started by kt_manager_start(): waits for its
 * stop, stops the backend, publishes (or cleans up), and leaves the final
 * status in the capture.  Return: NULL.
 */
void *kt__mgr_capture_main(void *arg);

#endif

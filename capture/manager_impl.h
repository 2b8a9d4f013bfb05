/*
 * capture/manager_impl.h - private to capture/: a manager's and a capture's
 * state, shared by the lifecycle (manager.c), the files below the root
 * (root.c), the capture's thread and its publishing (publish.c) and the
 * status JSON (status_json.c).  Nothing outside capture/ includes it.
 */
#ifndef KATRA_CAPTURE_MANAGER_IMPL_H
#define KATRA_CAPTURE_MANAGER_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <katra/capture.h>
#include <katra/katra.h>

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
	int retired;
	uint64_t retired_tick;       /* last tick of the newest retired segment */
	/* Retired segments the capture's thread still has to delete: an
	 * unlink of a big file takes milliseconds the flusher cannot spare.
	 * Under m->lock. */
	uint32_t unlink_q[8];
	unsigned unlink_n;
	kt_session_options so;
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
	uint64_t (*now)(void *);
	void *now_ctx;
	int (*new_id)(void *, char *, size_t);
	void *id_ctx;
	struct capture **caps;       /* in start order */
	size_t ncaps, capcap;
	struct capture *active;
	int closing;                 /* kt_manager_close() waits for waiters */
};

#endif

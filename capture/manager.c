/*
 * The capture manager's lifecycle: one capture at a time per root.  A
 * manager is made and closed here; a start passes an admission ladder and
 * starts the backend and the capture's thread (publish.c), which waits for
 * its stop, trims and publishes; a stop asks it, an await waits for the
 * final status, and captures are remembered for status and for replaying
 * a start of the same run and epoch.  Files below the root, the default
 * owner and backend are in root.c; a capture's segments and byte cap
 * (the output its session writes to) in segments.c; the status JSON in
 * sidecar.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <katra/capture.h>
#include "flush/flush.h"
#include "format/utf8.h"
#include "capture/manager_impl.h"

/* ---- manager ------------------------------------------------------------ */

int kt_manager_new(const kt_manager_options *opts, kt_manager **out)
{
	*out = NULL;
	if (!opts || !opts->root || !opts->root[0])
		return -EINVAL;
	if (opts->duration_ns > KT_CAPTURE_MAX_DURATION_NS || opts->max_bytes > KT_CAPTURE_MAX_BYTES ||
	    (opts->max_bytes && opts->max_bytes < (1u << 20)) ||
	    (opts->cap_policy != KT_CAP_STOP && opts->cap_policy != KT_CAP_KEEP_NEWEST))
		return -EINVAL;
	/* The flight policy writes its window with the backend's snapshot. */
	if (opts->session && opts->session->mode == KT_SESSION_FLIGHT && opts->backend &&
	    !opts->backend->snapshot)
		return -EINVAL;
	/* A root that is itself a symlink is refused: O_NOFOLLOW alone would
	 * say ENOTDIR beside O_DIRECTORY, so look first, and still open with
	 * O_NOFOLLOW against a swap in between. */
	struct stat sb;
	if (lstat(opts->root, &sb) == 0 && S_ISLNK(sb.st_mode))
		return -ELOOP;
	int rootfd = open(opts->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	kt_manager *m = calloc(1, sizeof(*m));
	if (!m) {
		close(rootfd);
		return -ENOMEM;
	}
	m->rootfd = rootfd;
	m->lockfd = -1;
	m->duration_ns = opts->duration_ns ? opts->duration_ns : KT_CAPTURE_DEFAULT_DURATION_NS;
	m->max_bytes = opts->max_bytes ? opts->max_bytes : KT_CAPTURE_DEFAULT_MAX_BYTES;
	m->min_free = opts->min_free ? opts->min_free : KT_CAPTURE_MIN_FREE;
	m->cap_policy = opts->cap_policy;
	m->flight = opts->session && opts->session->mode == KT_SESSION_FLIGHT;
	m->now = opts->now ? opts->now : kt__mgr_realtime_ns;
	m->now_ctx = opts->now_ctx;
	m->new_id = opts->new_id ? opts->new_id : kt__mgr_random_id;
	m->id_ctx = opts->id_ctx;
	/* Without a template, the session defaults: compact chunks. */
	if (opts->session)
		m->session = *opts->session;
	if (opts->hooks)
		m->hooks = *opts->hooks;
	if (opts->backend)
		m->backend = *opts->backend;
	else
		m->backend = kt_manager_session_backend(NULL);
	if (opts->owner) {
		m->owner = *opts->owner;
	} else {
		int rc = kt__mgr_default_owner(m);
		if (rc < 0) {
			close(rootfd);
			free(m);
			return rc;
		}
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->lock, NULL);
	kt__mgr_clean_root(m);
	*out = m;
	return 0;
}

/*
 * Free disk a capture may take at its peak, plus the reserve: while it
 * publishes, its segments (max_bytes, and a fifth segment opens before the
 * oldest goes) and the trimmed copy (max_bytes) are on disk together.  The
 * seed asks for max_bytes + reserve; that would let a publish fill the disk.
 */
static uint64_t disk_needed(const kt_manager *m)
{
	uint64_t peak = 2 * m->max_bytes + m->max_bytes / KT_CAP_SEGMENTS;
	return m->min_free > UINT64_MAX - peak ? UINT64_MAX : peak + m->min_free;
}

static struct capture *find(kt_manager *m, const char *run_id, uint64_t epoch)
{
	for (size_t i = m->ncaps; i-- > 0;)
		if (m->caps[i]->st.epoch == epoch && !strcmp(m->caps[i]->st.run_id, run_id))
			return m->caps[i];
	return NULL;
}

/* Forget the oldest finished capture when the table is full. */
static int remember(kt_manager *m, struct capture *c)
{
	if (m->ncaps == KT__MGR_MAX_RECORDS) {
		for (size_t i = 0; i < m->ncaps; i++) {
			struct capture *o = m->caps[i];
			if (o->running || o->waiters)
				continue;
			if (o->joinable)
				pthread_join(o->thread, NULL);
			free(o);
			memmove(&m->caps[i], &m->caps[i + 1], (m->ncaps - i - 1) * sizeof(*m->caps));
			m->ncaps--;
			break;
		}
		if (m->ncaps == KT__MGR_MAX_RECORDS)
			return -ENOMEM;
	}
	if (m->ncaps == m->capcap) {
		size_t n = m->capcap ? 2 * m->capcap : 16;
		struct capture **p = realloc(m->caps, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->caps = p;
		m->capcap = n;
	}
	m->caps[m->ncaps++] = c;
	return 0;
}

/* ---- start ------------------------------------------------------------- */

static void result_of(const struct capture *c, kt_capture_ref *res)
{
	snprintf(res->run_id, sizeof(res->run_id), "%s", c->st.run_id);
	res->epoch = c->st.epoch;
	snprintf(res->capture_id, sizeof(res->capture_id), "%s", c->st.capture_id);
	res->state = c->st.state;
	res->code = c->st.code;
}

static struct capture *new_capture(kt_manager *m, const kt_start_request *req, const char *run_id,
				   uint64_t t_req)
{
	struct capture *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->m = m;
	for (size_t i = 0; i < KT__MGR_NSEG; i++)
		c->seg_fd[i] = -1;
	snprintf(c->st.run_id, sizeof(c->st.run_id), "%s", run_id);
	c->st.epoch = req->epoch;
	c->st.start_requested_at = t_req;
	c->st.boundary_start = req->boundary_at;
	c->st.state = KT_STATE_SKIPPED;
	return c;
}

/*
 * Replay a start already seen, or remember @c (lock held).  Return: 1
 * when the start is over with *@res filled and @c not kept, else 0.
 */
static int replay_or_remember(kt_manager *m, struct capture *c, kt_capture_ref *res)
{
	struct capture *old = find(m, c->st.run_id, c->st.epoch);
	if (old && old->st.state != KT_STATE_SKIPPED) {
		result_of(old, res);
		res->state = KT_STATE_REPLAYED;
		res->code = KT_CODE_NONE;
		return 1;
	}
	/* Finished captures' threads are joined here, so that a long-lived
	 * manager does not keep their stacks. */
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->joinable && !m->caps[i]->running) {
			pthread_join(m->caps[i]->thread, NULL);
			m->caps[i]->joinable = 0;
		}
	/* Remembered from here on, even when skipped, for kt_manager_get_status(); a
	 * later start of the same run and epoch finds this newer record first. */
	if (remember(m, c)) {
		res->state = KT_STATE_FAILED;
		res->code = KT_CODE_START_FAILED;
		return 1;
	}
	return 0;
}

/* ---- the admission ladder: each rung refuses (1, the code set) or lets
 * the start on (0); the lock is held throughout. */

struct admission {
	kt_manager *m;
	struct capture *c;
	const kt_start_request *req;
	int owned;                   /* the owner was acquired */
};

/* Not a valid run, or a newer epoch of it has been seen. */
static int refuse_invalid(struct admission *a)
{
	kt_manager *m = a->m;
	int newer_seen = 0;
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->st.epoch > a->req->epoch &&
		    !strcmp(m->caps[i]->st.run_id, a->c->st.run_id))
			newer_seen = 1;
	if (!a->req->validity || strcmp(a->req->validity, "valid") || newer_seen) {
		a->c->st.code = KT_CODE_RUN_INVALID;
		return 1;
	}
	return 0;
}

static int refuse_busy(struct admission *a)
{
	if (!a->m->active)
		return 0;
	a->c->st.code = KT_CODE_PROFILER_BUSY;
	return 1;
}

static int refuse_disk(struct admission *a)
{
	struct statvfs vfs;
	if (fstatvfs(a->m->rootfd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < disk_needed(a->m)) {
		a->c->st.code = KT_CODE_DISK_BUDGET;
		return 1;
	}
	return 0;
}

static int take_id(struct admission *a)
{
	kt_capture_status *st = &a->c->st;
	if (a->m->new_id(a->m->id_ctx, st->capture_id, sizeof(st->capture_id)) ||
	    !kt__mgr_id_ok(st->capture_id, strnlen(st->capture_id, sizeof(st->capture_id)),
			   KT_CAPTURE_ID_MAX)) {
		st->capture_id[0] = 0;
		st->state = KT_STATE_FAILED;
		st->code = KT_CODE_ARTIFACT_CREATE_FAILED;
		return 1;
	}
	return 0;
}

static int take_owner(struct admission *a)
{
	if ((a->owned = a->m->owner.acquire(a->m->owner.ctx, a->c->st.capture_id)))
		return 0;
	/* The id was only asked for: nothing started under it. */
	a->c->st.capture_id[0] = 0;
	a->c->st.code = KT_CODE_PROFILER_BUSY;
	return 1;
}

static int open_first_segment(struct admission *a)
{
	struct capture *c = a->c;
	snprintf(c->base, sizeof(c->base), KT__MGR_TMP_PREFIX "%ld-%s", (long)getpid(),
		 c->st.capture_id);
	c->seg_fd[0] = kt__mgr_open_segment(c, 0);
	if (c->seg_fd[0] >= 0)
		return 0;
	c->seg_fd[0] = -1;
	c->st.state = KT_STATE_FAILED;
	c->st.code = KT_CODE_ARTIFACT_CREATE_FAILED;
	return 1;
}

static int (*const ladder[])(struct admission *) = {
	refuse_invalid, refuse_busy, refuse_disk, take_id, take_owner, open_first_segment,
};

/* Start the backend on segment 0 (lock held).  Return: 0, or its error
 * with the capture's code set and its files removed. */
static int start_backend(kt_manager *m, struct capture *c)
{
	c->so = m->session;
	c->so.fd = c->seg_fd[0];
	c->so.given |= KT_GIVEN_FD; /* fd 0 too, in a process whose stdin is closed */
	c->so.run_id = c->st.run_id;
	c->so.capture_id = c->st.capture_id;
	c->so.epoch = c->st.epoch;
	c->so.max_duration_ns = m->duration_ns;
	kt_backend_args a = { c->seg_fd[0], c->st.run_id, c->st.capture_id, c->st.epoch,
			      m->max_bytes, &c->so, kt__mgr_on_cap, c };
	int rc = m->backend.start(m->backend.ctx, &a, &c->handle);
	if (rc == KT_EBUSY) {
		/* Another katra session in this process holds the rings. */
		c->st.code = KT_CODE_PROFILER_BUSY;
		c->st.capture_id[0] = 0;
	} else if (rc) {
		c->st.state = KT_STATE_FAILED;
		c->st.code = KT_CODE_START_FAILED;
	}
	if (rc)
		kt__mgr_remove_temps(c);
	return rc;
}

/* The capture is on: make it active and start its thread (lock held). */
static void start_thread(kt_manager *m, struct capture *c)
{
	c->st.start_completed_at = kt__mgr_now(m);
	c->st.state = KT_STATE_CAPTURING;
	c->st.code = KT_CODE_NONE;
	c->running = 1;
	m->active = c;
	if (kt__thread_start(&c->thread, kt__mgr_capture_main, c) == 0) {
		c->joinable = 1;
		return;
	}
	/* No thread to stop it: stop it here, and without the lock, as
	 * kt__mgr_capture_main() does (the flusher may wait for it in a
	 * callback).  It stays active meanwhile. */
	c->st.state = KT_STATE_FAILED;
	c->st.code = KT_CODE_START_FAILED;
	pthread_mutex_unlock(&m->lock);
	m->backend.stop(m->backend.ctx, c->handle);
	pthread_mutex_lock(&m->lock);
	kt__mgr_unlink_retired(c);
	kt__mgr_remove_temps(c);
	c->running = 0;
	m->active = NULL;
	pthread_cond_broadcast(&m->cond);
}

void kt_manager_start(kt_manager *m, const kt_start_request *req, kt_capture_ref *res)
{
	memset(res, 0, sizeof(*res));
	res->epoch = req->epoch;
	res->state = KT_STATE_SKIPPED;
	res->code = KT_CODE_RUN_INVALID;
	size_t len = req->run_id_len ? req->run_id_len : (req->run_id ? strlen(req->run_id) : 0);
	uint64_t t_req = kt__mgr_now(m);
	/* Epochs and times above INT64_MAX could not be written as JSON
	 * integers, nor a span between them as an int64. */
	if (!kt__mgr_id_ok(req->run_id, len, KT_CAPTURE_RUN_ID_MAX) || req->epoch > INT64_MAX ||
	    req->boundary_at > INT64_MAX)
		return;
	memcpy(res->run_id, req->run_id, len);
	res->run_id[len] = 0;
	struct capture *c = new_capture(m, req, res->run_id, t_req);
	if (!c) {
		res->code = KT_CODE_START_FAILED;
		res->state = KT_STATE_FAILED;
		return;
	}
	pthread_mutex_lock(&m->lock);
	if (replay_or_remember(m, c, res)) {
		pthread_mutex_unlock(&m->lock);
		free(c);
		return;
	}
	struct admission a = { m, c, req, 0 };
	for (size_t i = 0; i < sizeof(ladder) / sizeof(*ladder); i++)
		if (ladder[i](&a))
			break;
	if (c->seg_fd[0] >= 0 && start_backend(m, c) == 0)
		start_thread(m, c);
	if (a.owned && c->st.state != KT_STATE_CAPTURING)
		m->owner.release(m->owner.ctx, c->st.capture_id);
	result_of(c, res);
	pthread_mutex_unlock(&m->lock);
}

/* ---- stop --------------------------------------------------------------- */

static int final_state(kt_capture_state s)
{
	return s == KT_STATE_PUBLISHED || s == KT_STATE_FAILED || s == KT_STATE_ABORTED ||
	       s == KT_STATE_SKIPPED;
}

/* A run's end the capture can use: within INT64_MAX (as the start is) and
 * not before the run's start; 0 is no end.  Called with the lock held. */
static int finish_ok(const struct capture *c, uint64_t at)
{
	return !at || (at <= INT64_MAX && at >= c->st.boundary_start);
}

/* A thread stops waiting on @c (lock held); a closing manager waits for
 * the last one before it frees @c, the lock and the condition. */
static void left_wait(kt_manager *m, struct capture *c)
{
	c->waiters--;
	if (m->closing)
		pthread_cond_broadcast(&m->cond);
}

void kt_manager_request_stop(kt_manager *m, const kt_stop_request *req, kt_capture_ref *t)
{
	memset(t, 0, sizeof(*t));
	t->epoch = req->epoch;
	t->code = KT_CODE_NO_ACTIVE_CAPTURE;
	size_t len = req->run_id_len ? req->run_id_len : (req->run_id ? strlen(req->run_id) : 0);
	if (!kt__mgr_id_ok(req->run_id, len, KT_CAPTURE_RUN_ID_MAX))
		return;
	memcpy(t->run_id, req->run_id, len);
	t->run_id[len] = 0;
	pthread_mutex_lock(&m->lock);
	struct capture *c = find(m, t->run_id, req->epoch);
	if (!c || c->st.state == KT_STATE_SKIPPED) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	/* UINT64_MAX says "no end" as 0 does: it must not become a window
	 * ending 2^64 ns after the epoch (which wraps). */
	uint64_t finish = req->boundary_at == UINT64_MAX ? 0 : req->boundary_at;
	if (c->st.state == KT_STATE_CAPTURING && !c->stop_req && !req->abort &&
	    !finish_ok(c, finish)) {
		/* Refused whole: an inverted window would publish nothing as
		 * "complete".  The capture goes on for a good stop or an abort. */
		result_of(c, t);
		t->code = KT_CODE_RUN_INVALID;
		pthread_mutex_unlock(&m->lock);
		return;
	}
	if (c->st.state == KT_STATE_CAPTURING && !c->stop_req) {
		c->stop_req = 1;
		c->st.stop_requested_at = kt__mgr_now(m);
		c->st.boundary_finish = finish_ok(c, finish) ? finish : 0;
		/* Free text: cut at a character, its stray bytes escaped, so it
		 * can never fail the sidecar's JSON and with it the publish. */
		kt__utf8_repair(req->reason ? req->reason : "",
				req->reason ? strlen(req->reason) : 0, c->st.stop_reason,
				sizeof(c->st.stop_reason));
		c->st.state = KT_STATE_STOPPING;
	}
	if (req->abort && !final_state(c->st.state)) {
		c->abort_req = 1;
		pthread_cond_broadcast(&m->cond);
		c->waiters++;
		while (c->running)
			pthread_cond_wait(&m->cond, &m->lock);
		left_wait(m, c);
	}
	pthread_cond_broadcast(&m->cond);
	result_of(c, t);
	pthread_mutex_unlock(&m->lock);
}

/* ---- await, status, close ---------------------------------------------- */

int kt_manager_await(kt_manager *m, const kt_capture_ref *t, uint64_t timeout_ns,
		     kt_capture_status *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->run_id, sizeof(st->run_id), "%s", t->run_id);
	st->epoch = t->epoch;
	snprintf(st->capture_id, sizeof(st->capture_id), "%s", t->capture_id);
	if (t->code == KT_CODE_NO_ACTIVE_CAPTURE) {
		st->state = KT_STATE_SKIPPED;
		st->code = KT_CODE_NO_ACTIVE_CAPTURE;
		return 0;
	}
	struct timespec dl;
	int forever = timeout_ns == UINT64_MAX;
	kt__mgr_deadline(&dl, forever ? 0 : timeout_ns);
	int rc = 0;
	pthread_mutex_lock(&m->lock);
	struct capture *c = find(m, t->run_id, t->epoch);
	if (!c) {
		pthread_mutex_unlock(&m->lock);
		st->state = KT_STATE_SKIPPED;
		st->code = KT_CODE_NO_ACTIVE_CAPTURE;
		return 0;
	}
	c->waiters++;
	while (!final_state(c->st.state) && !rc) {
		if (forever)
			pthread_cond_wait(&m->cond, &m->lock);
		else if (pthread_cond_timedwait(&m->cond, &m->lock, &dl) == ETIMEDOUT)
			rc = final_state(c->st.state) ? 0 : -ETIMEDOUT;
	}
	*st = c->st;
	left_wait(m, c);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int kt_manager_get_status(kt_manager *m, const char *run_id, uint64_t epoch,
			  kt_capture_status *st)
{
	memset(st, 0, sizeof(*st));
	if (!run_id)
		return -ENOENT;
	pthread_mutex_lock(&m->lock);
	struct capture *c = find(m, run_id, epoch);
	if (c)
		*st = c->st;
	pthread_mutex_unlock(&m->lock);
	return c ? 0 : -ENOENT;
}

static int any_waiter(const kt_manager *m)
{
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->waiters)
			return 1;
	return 0;
}

void kt_manager_close(kt_manager *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->closing = 1;
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->running)
			m->caps[i]->abort_req = 1;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->joinable)
			pthread_join(m->caps[i]->thread, NULL);
	/* Every capture is final now: threads that were waiting in await or
	 * an aborting stop wake up and leave; wait for the last of them. */
	pthread_mutex_lock(&m->lock);
	pthread_cond_broadcast(&m->cond);
	while (any_waiter(m))
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < m->ncaps; i++)
		free(m->caps[i]);
	free(m->caps);
	if (m->lockfd >= 0)
		close(m->lockfd);
	close(m->rootfd);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

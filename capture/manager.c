/*
 * The capture manager: one capture at a time per root, each with a thread
 * that waits for its stop (requested, at its duration, or at its byte cap),
 * stops the backend, trims the trace to the run's boundaries and publishes
 * it.
 *
 * Publishing is ordered so that a crash at any instant leaves no trace in
 * place without its sidecar and no sidecar that lies about its trace:
 *   1. the trimmed trace is written to a temporary name and fsynced;
 *   2. its SHA-256 is taken from the bytes read back, and checked to parse;
 *   3. the sidecar is written to a temporary name and fsynced;
 *   4. the sidecar is renamed into place, then the directory fsynced;
 *   5. the trace is renamed into place, then the directory fsynced.
 * A crash between 4 and 5 leaves a sidecar whose trace is missing; the
 * next manager over the root removes it, with every temporary file of a
 * process that is gone (they are named .katra-tmp-<pid>-...).
 *
 * Every file is opened below the root with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), and every name the manager makes is one path
 * component of a checked alphabet, so nothing is written outside it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <katra/capture.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "capture/capture_internal.h"
#include "flush/flush.h"
#include "format/utf8.h"

#define TMP_PREFIX ".katra-tmp-"
#define LOCK_NAME ".katra.lock"
#define NSEG (KT_CAP_SEGMENTS + 1) /* slots: a new segment opens before the old retires */
#define MAX_RECORDS 4096             /* captures remembered for status and replay */

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
	int seg_fd[NSEG];            /* by segment index % NSEG; -1 when closed */
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

/* ---- names ------------------------------------------------------------ */

static const char *const state_names[] = {
#define KT__STATE_NAME(name, value, text) [name] = text,
	KT_CAPTURE_STATES(KT__STATE_NAME)
#undef KT__STATE_NAME
};

static const char *const code_names[] = {
#define KT__CODE_NAME(name, value, text) [name] = text,
	KT_CAPTURE_CODES(KT__CODE_NAME)
#undef KT__CODE_NAME
};

const char *kt_capture_state_name(kt_capture_state state)
{
	if ((unsigned)state < sizeof(state_names) / sizeof(*state_names) && state_names[state])
		return state_names[state];
	return "";
}

const char *kt_capture_code_name(kt_capture_code code)
{
	if ((unsigned)code < sizeof(code_names) / sizeof(*code_names) && code_names[code])
		return code_names[code];
	return "";
}

/*
 * A run id or capture id: 1 to @max bytes of [A-Za-z0-9._-], no leading
 * dot and no "..", so that it is one harmless path component; no leading
 * dash, so that a file name made from it never reads as an option on a
 * command line.
 */
static int id_ok(const char *s, size_t len, size_t max)
{
	if (!s || len == 0 || len > max || s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return 0;
		if (ch == '.' && i + 1 < len && s[i + 1] == '.')
			return 0;
	}
	return 1;
}

/* ---- files below the root -------------------------------------------- */

static int open_beneath(int rootfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, name, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	/* ENOSYS before Linux 5.6; EPERM from a seccomp filter that does
	 * not know openat2. */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	/* Before Linux 5.6: every name here is one checked component, so
	 * refusing a symlink in its place is the same confinement. */
	if (strchr(name, '/'))
		return -EINVAL;
	int f = openat(rootfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
	return f >= 0 ? f : -errno;
}

static int do_fsync(kt_manager *m, int fd)
{
	if (m->hooks.fsync)
		return m->hooks.fsync(m->hooks.ctx, fd);
	return fsync(fd) < 0 ? -errno : 0;
}

static int do_rename(kt_manager *m, const char *from, const char *to)
{
	if (m->hooks.renameat)
		return m->hooks.renameat(m->hooks.ctx, m->rootfd, from, to);
	return renameat(m->rootfd, from, m->rootfd, to) < 0 ? -errno : 0;
}

static uint64_t now(kt_manager *m)
{
	return m->now(m->now_ctx);
}

static uint64_t realtime_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int random_id(void *ctx, char *buf, size_t size)
{
	(void)ctx;
	uint8_t b[8];
	if (size < 17 || getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	for (size_t i = 0; i < 8; i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* ---- the default owner and backend ------------------------------------ */

static int flock_acquire(void *ctx, const char *capture_id)
{
	(void)capture_id;
	kt_manager *m = ctx;
	return flock(m->lockfd, LOCK_EX | LOCK_NB) == 0;
}

static void flock_release(void *ctx, const char *capture_id)
{
	(void)capture_id;
	kt_manager *m = ctx;
	flock(m->lockfd, LOCK_UN);
}

static int session_start(void *ctx, const kt_backend_args *a, void **handle)
{
	(void)ctx;
	kt_session *s = NULL;
	int rc = kt_session_start(NULL, a->session, &s);
	*handle = s;
	return rc;
}

static int session_stop(void *ctx, void *handle)
{
	(void)ctx;
	kt_summary sum;
	int rc = kt_session_stop(handle, &sum);
	kt_summary_release(&sum);
	return rc;
}

/* ---- leftovers --------------------------------------------------------- */

/* Whether a temporary file's process is gone: .katra-tmp-<pid>-... */
static int tmp_is_stale(const char *name)
{
	const char *p = name + strlen(TMP_PREFIX);
	char *end;
	errno = 0;
	unsigned long pid = strtoul(p, &end, 10);
	if (end == p || *end != '-' || errno || pid == 0 || pid > INT32_MAX)
		return 1; /* not a name the manager makes: nobody owns it */
	if ((pid_t)pid == getpid())
		return 0; /* another manager of this process may be using it */
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static void clean_root(kt_manager *m)
{
	int dfd = openat(m->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	/* Orphan sidecars only while no manager anywhere holds the root:
	 * otherwise one may be between its two renames. */
	int owned = m->owner.acquire(m->owner.ctx, "");
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		size_t len = strlen(n);
		if (!strncmp(n, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (tmp_is_stale(n))
				unlinkat(m->rootfd, n, 0);
		} else if (owned && len > 11 && !strcmp(n + len - 11, ".katra.json")) {
			char trace[256];
			struct stat sb;
			if (len - 5 < sizeof(trace)) {
				memcpy(trace, n, len - 5);
				trace[len - 5] = 0;
				if (fstatat(m->rootfd, trace, &sb, AT_SYMLINK_NOFOLLOW) < 0 &&
				    errno == ENOENT)
					unlinkat(m->rootfd, n, 0);
			}
		}
	}
	if (owned)
		m->owner.release(m->owner.ctx, "");
	closedir(d);
}

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
	m->now = opts->now ? opts->now : realtime_ns;
	m->now_ctx = opts->now_ctx;
	m->new_id = opts->new_id ? opts->new_id : random_id;
	m->id_ctx = opts->id_ctx;
	/* Without a template, the session defaults: compact chunks. */
	if (opts->session)
		m->session = *opts->session;
	if (opts->hooks)
		m->hooks = *opts->hooks;
	if (opts->backend)
		m->backend = *opts->backend;
	else
		m->backend = (kt_capture_backend){ session_start, session_stop, NULL };
	if (opts->owner) {
		m->owner = *opts->owner;
	} else {
		int fd = open_beneath(rootfd, LOCK_NAME, O_RDWR | O_CREAT, 0644);
		if (fd < 0) {
			close(rootfd);
			free(m);
			return fd;
		}
		m->lockfd = fd;
		m->owner = (kt_capture_owner){ flock_acquire, flock_release, m };
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->lock, NULL);
	clean_root(m);
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
	if (m->ncaps == MAX_RECORDS) {
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
		if (m->ncaps == MAX_RECORDS)
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

static void seg_name(const struct capture *c, uint32_t index, char *buf, size_t size)
{
	if (index == 0)
		snprintf(buf, size, "%s.katra", c->base);
	else
		snprintf(buf, size, "%s.seg%" PRIu32, c->base, index);
}

/* Close and delete every file of @c that is not published. */
static void remove_temps(struct capture *c)
{
	char name[128];
	for (uint32_t i = c->seg_lo; i <= c->seg_hi; i++) {
		if (c->seg_fd[i % NSEG] >= 0)
			close(c->seg_fd[i % NSEG]);
		c->seg_fd[i % NSEG] = -1;
		seg_name(c, i, name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	static const char *const other[] = { "out", "json" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s.%s", c->base, other[i]);
		unlinkat(c->m->rootfd, name, 0);
	}
}

/* ---- the backend's callbacks (the flusher's thread) ------------------- */

static void cb_on_cap(void *ctx)
{
	struct capture *c = ctx;
	pthread_mutex_lock(&c->m->lock);
	c->capped = 1;
	pthread_cond_broadcast(&c->m->cond);
	pthread_mutex_unlock(&c->m->lock);
}

static int cb_open_segment(void *ctx, uint32_t index)
{
	struct capture *c = ctx;
	char name[128];
	seg_name(c, index, name, sizeof(name));
	int fd = open_beneath(c->m->rootfd, name, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd >= 0) {
		c->seg_fd[index % NSEG] = fd;
		c->seg_hi = index;
	}
	return fd;
}

static void cb_retire_segment(void *ctx, uint32_t index, uint64_t last_tick)
{
	struct capture *c = ctx;
	char name[128];
	if (index < c->seg_lo || index > c->seg_hi)
		return;
	close(c->seg_fd[index % NSEG]);
	c->seg_fd[index % NSEG] = -1;
	c->seg_lo = index + 1;
	pthread_mutex_lock(&c->m->lock);
	int queued = c->unlink_n < sizeof(c->unlink_q) / sizeof(*c->unlink_q);
	if (queued) {
		c->unlink_q[c->unlink_n++] = index;
		pthread_cond_broadcast(&c->m->cond);
	}
	pthread_mutex_unlock(&c->m->lock);
	if (!queued) {
		seg_name(c, index, name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	if (!c->retired || last_tick > c->retired_tick)
		c->retired_tick = last_tick;
	c->retired = 1;
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

static void *capture_main(void *arg);
static void unlink_retired(struct capture *c);

void kt_manager_start(kt_manager *m, const kt_start_request *req, kt_start_result *res)
{
	memset(res, 0, sizeof(*res));
	res->epoch = req->epoch;
	res->state = KT_STATE_SKIPPED;
	res->code = KT_CODE_RUN_INVALID;
	size_t len = req->run_id_len ? req->run_id_len : (req->run_id ? strlen(req->run_id) : 0);
	uint64_t t_req = now(m);
	/* Epochs and times above INT64_MAX could not be written as JSON
	 * integers, nor a span between them as an int64. */
	if (!id_ok(req->run_id, len, KT_CAPTURE_RUN_ID_MAX) || req->epoch > INT64_MAX ||
	    req->boundary_at > INT64_MAX)
		return;
	memcpy(res->run_id, req->run_id, len);
	res->run_id[len] = 0;

	struct capture *c = calloc(1, sizeof(*c));
	if (!c) {
		res->code = KT_CODE_START_FAILED;
		res->state = KT_STATE_FAILED;
		return;
	}
	c->m = m;
	for (size_t i = 0; i < NSEG; i++)
		c->seg_fd[i] = -1;
	snprintf(c->st.run_id, sizeof(c->st.run_id), "%s", res->run_id);
	c->st.epoch = req->epoch;
	c->st.start_requested_at = t_req;
	c->st.boundary_start = req->boundary_at;
	c->st.state = KT_STATE_SKIPPED;

	pthread_mutex_lock(&m->lock);
	struct capture *old = find(m, res->run_id, req->epoch);
	if (old && old->st.state != KT_STATE_SKIPPED) {
		result_of(old, res);
		res->state = KT_STATE_REPLAYED;
		res->code = KT_CODE_NONE;
		pthread_mutex_unlock(&m->lock);
		free(c);
		return;
	}
	/* Finished captures' threads are joined here, so that a long-lived
	 * manager does not keep their stacks. */
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->joinable && !m->caps[i]->running) {
			pthread_join(m->caps[i]->thread, NULL);
			m->caps[i]->joinable = 0;
		}
	/* Remembered from here on, even when skipped, for kt_manager_status(); a
	 * later start of the same run and epoch finds this newer record first. */
	if (remember(m, c)) {
		pthread_mutex_unlock(&m->lock);
		free(c);
		res->state = KT_STATE_FAILED;
		res->code = KT_CODE_START_FAILED;
		return;
	}
	int newer_seen = 0;
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i]->st.epoch > req->epoch && !strcmp(m->caps[i]->st.run_id, res->run_id))
			newer_seen = 1;
	struct statvfs vfs;
	int owned = 0, rc = 0;
	if (!req->validity || strcmp(req->validity, "valid") || newer_seen) {
		c->st.code = KT_CODE_RUN_INVALID;
	} else if (m->active) {
		c->st.code = KT_CODE_PROFILER_BUSY;
	} else if (fstatvfs(m->rootfd, &vfs) == 0 &&
		   (uint64_t)vfs.f_bavail * vfs.f_frsize < disk_needed(m)) {
		c->st.code = KT_CODE_DISK_BUDGET;
	} else if (m->new_id(m->id_ctx, c->st.capture_id, sizeof(c->st.capture_id)) ||
		   !id_ok(c->st.capture_id, strnlen(c->st.capture_id, sizeof(c->st.capture_id)),
			  KT_CAPTURE_ID_MAX)) {
		c->st.capture_id[0] = 0;
		c->st.state = KT_STATE_FAILED;
		c->st.code = KT_CODE_ARTIFACT_CREATE_FAILED;
	} else if (!(owned = m->owner.acquire(m->owner.ctx, c->st.capture_id))) {
		/* The id was only asked for: nothing started under it. */
		c->st.capture_id[0] = 0;
		c->st.code = KT_CODE_PROFILER_BUSY;
	} else {
		snprintf(c->base, sizeof(c->base), TMP_PREFIX "%ld-%s", (long)getpid(),
			 c->st.capture_id);
		c->seg_fd[0] = cb_open_segment(c, 0);
		if (c->seg_fd[0] < 0) {
			c->seg_fd[0] = -1;
			c->st.state = KT_STATE_FAILED;
			c->st.code = KT_CODE_ARTIFACT_CREATE_FAILED;
		}
	}
	if (c->seg_fd[0] >= 0) {
		c->so = m->session;
		c->so.fd = c->seg_fd[0];
		c->so.use_fd = 1; /* fd 0 too, in a process whose stdin is closed */
		c->so.run_id = c->st.run_id;
		c->so.capture_id = c->st.capture_id;
		c->so.epoch = c->st.epoch;
		c->so.max_bytes = m->max_bytes;
		c->so.cap_policy = m->cap_policy;
		c->so.max_duration_ns = m->duration_ns;
		c->so.on_cap = cb_on_cap;
		c->so.open_segment = cb_open_segment;
		c->so.retire_segment = cb_retire_segment;
		c->so.cap_ctx = c;
		kt_backend_args a = { c->seg_fd[0], c->st.run_id, c->st.capture_id, c->st.epoch,
				      m->max_bytes, &c->so };
		rc = m->backend.start(m->backend.ctx, &a, &c->handle);
		if (rc == KT_EBUSY) {
			/* Another katra session in this process holds the rings. */
			c->st.code = KT_CODE_PROFILER_BUSY;
			c->st.capture_id[0] = 0;
		} else if (rc) {
			c->st.state = KT_STATE_FAILED;
			c->st.code = KT_CODE_START_FAILED;
		}
		if (rc)
			remove_temps(c);
	}
	if (c->seg_fd[0] >= 0 && !rc) {
		c->st.start_completed_at = now(m);
		c->st.state = KT_STATE_CAPTURING;
		c->st.code = KT_CODE_NONE;
		c->running = 1;
		m->active = c;
		if (kt__thread_start(&c->thread, capture_main, c)) {
			/* No thread to stop it: stop it here, and without the
			 * lock, as capture_main() does (the flusher may wait for
			 * it in a callback).  It stays active meanwhile. */
			c->st.state = KT_STATE_FAILED;
			c->st.code = KT_CODE_START_FAILED;
			pthread_mutex_unlock(&m->lock);
			m->backend.stop(m->backend.ctx, c->handle);
			pthread_mutex_lock(&m->lock);
			unlink_retired(c);
			remove_temps(c);
			c->running = 0;
			m->active = NULL;
			pthread_cond_broadcast(&m->cond);
		} else {
			c->joinable = 1;
		}
	}
	if (owned && c->st.state != KT_STATE_CAPTURING)
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

void kt_manager_request_stop(kt_manager *m, const kt_stop_request *req, kt_stop_ticket *t)
{
	memset(t, 0, sizeof(*t));
	t->epoch = req->epoch;
	t->code = KT_CODE_NO_ACTIVE_CAPTURE;
	size_t len = req->run_id_len ? req->run_id_len : (req->run_id ? strlen(req->run_id) : 0);
	if (!id_ok(req->run_id, len, KT_CAPTURE_RUN_ID_MAX))
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
		c->st.stop_requested_at = now(m);
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

/* ---- publish (the capture's thread) ------------------------------------ */

/* SHA-256 of the whole of @fd, and a check that it parses to its summary. */
static int digest_and_check(int fd, char hex[65], uint64_t *events)
{
	uint64_t bytes;
	int rc = kt__sha256_fd(fd, hex, &bytes);
	if (rc)
		return rc;
	kt_reader *r = NULL;
	rc = kt_reader_open_fd(&r, fd, NULL);
	if (rc < 0)
		return rc;
	kt_trace_frame f;
	int have_summary = 0;
	*events = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK)
			*events += f.u.chunk.event_count;
		have_summary |= f.kind == KT_FRAME_SUMMARY;
	}
	kt_reader_close(r);
	return rc < 0 ? rc : have_summary ? 0 : KT_ETRUNCATED;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/*
 * The spans, from the boundaries and the window the file covers:
 * [@from, @to] in wall ns (0 when the side is open).
 */
static void spans(kt_capture_status *st, uint64_t from, uint64_t to)
{
	uint64_t bs = st->boundary_start, bf = st->boundary_finish;
	st->requested_span_ns = bs && bf ? (int64_t)sub0(bf, bs) : 0;
	/* Without a run start the capture's own start stands for it: a
	 * keep-newest capture still reports the head it let go. */
	st->head_loss_ns = (int64_t)sub0(from, bs ? bs : st->start_completed_at);
	st->tail_excess_ns = bf ? (int64_t)sub0(st->stop_requested_at, bf) : 0;
	uint64_t a = from > bs ? from : bs;
	uint64_t b = bf && bf < to ? bf : to;
	st->capture_span_ns = (int64_t)sub0(b, a);
}

/*
 * Trim, check and publish.  Returns the final state and sets *@code;
 * called without the lock, on the capture's thread.  @st is the thread's
 * copy of the status, filled in as it goes.
 */
static kt_capture_state publish(struct capture *c, kt_capture_status *st, kt_capture_code *code)
{
	kt_manager *m = c->m;
	char json_tmp[128], out_tmp[128];
	int fds[NSEG];
	size_t n = 0;
	for (uint32_t i = c->seg_lo; i <= c->seg_hi; i++)
		if (c->seg_fd[i % NSEG] >= 0)
			fds[n++] = c->seg_fd[i % NSEG];
	snprintf(out_tmp, sizeof(out_tmp), "%s.out", c->base);
	snprintf(json_tmp, sizeof(json_tmp), "%s.json", c->base);

	/* The window, in the trace's monotonic ns, from the run's wall-clock
	 * boundaries and the header's pair of start times. */
	kt_reader *hr = NULL;
	kt_header h;
	if (!n || kt_reader_open_fd(&hr, fds[0], NULL) < 0) {
		kt_reader_close(hr);
		remove_temps(c);
		*code = KT_CODE_STOP_FAILED;
		return KT_STATE_FAILED;
	}
	h = *kt_reader_header(hr);
	uint64_t w0 = h.start_wall_ns, m0 = h.start_mono_ns;
	kt_rewrite_options o = { .in_fds = fds, .n_in = n, .codec = -1, .filter = 1,
			       .from_ns = 0, .to_ns = UINT64_MAX };
	if (st->boundary_start)
		o.from_ns = sub0(add_sat(st->boundary_start, m0), w0);
	if (st->boundary_finish)
		o.to_ns = sub0(add_sat(st->boundary_finish, m0), w0);
	/* The capture covers the run from its start, or from just after the
	 * last event of the newest segment it let go. */
	uint64_t covered_from = st->start_completed_at;
	char note[160];
	const char *notes[1] = { note };
	if (c->retired) {
		uint64_t cut = kt_ticks_to_ns(&h.clock, NULL, c->retired_tick) + 1;
		if (cut > o.from_ns)
			o.from_ns = cut;
		uint64_t wcut = sub0(add_sat(cut, w0), m0);
		if (wcut > covered_from)
			covered_from = wcut;
	}
	kt_reader_close(hr);
	spans(st, covered_from, st->stop_requested_at);
	snprintf(note, sizeof(note),
		 "katra.capture: trimmed to [%" PRIu64 ", %" PRIu64 "] ns; head_loss_ns=%" PRId64
		 " tail_excess_ns=%" PRId64,
		 o.from_ns, o.to_ns, st->head_loss_ns, st->tail_excess_ns);
	o.extra_notes = notes;
	o.n_extra_notes = 1;

	int out = open_beneath(m->rootfd, out_tmp, O_RDWR | O_CREAT | O_EXCL, 0644);
	int jfd = -1;
	char *json = NULL;
	kt_capture_state state = KT_STATE_FAILED;
	*code = KT_CODE_PUBLISH_FAILED;
	if (out < 0)
		goto fail;
	o.out_fd = out;
	kt_rewrite_result rr;
	if (kt_rewrite(&o, &rr) < 0)
		goto fail;
	if (rr.bytes > m->max_bytes) {
		*code = KT_CODE_OUTPUT_TOO_LARGE;
		goto fail;
	}
	if (do_fsync(m, out) < 0) {
		*code = KT_CODE_DURABILITY_UNKNOWN;
		goto fail;
	}
	if (digest_and_check(out, st->sha256, &st->events) < 0)
		goto fail;
	st->events_trimmed = rr.events_in - rr.events_out;
	st->bytes = rr.bytes;
	snprintf(st->file, sizeof(st->file), "%s.%" PRIu64 ".%s.katra", st->run_id, st->epoch,
		 st->capture_id);
	snprintf(st->sidecar, sizeof(st->sidecar), "%s.json", st->file);
	st->stop_completed_at = now(m);
	st->state = KT_STATE_PUBLISHED;
	st->complete = st->boundary_start && st->boundary_finish && !st->head_loss_ns &&
		       st->stop_requested_at >= st->boundary_finish &&
		       st->code != KT_CODE_OUTPUT_TOO_LARGE;
	if (!(json = kt_capture_status_json(st)))
		goto fail;
	jfd = open_beneath(m->rootfd, json_tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (jfd < 0 || write_all(jfd, json, strlen(json)) < 0 || write_all(jfd, "\n", 1) < 0)
		goto fail;
	if (do_fsync(m, jfd) < 0) {
		*code = KT_CODE_DURABILITY_UNKNOWN;
		goto fail;
	}
	pthread_mutex_lock(&m->lock);
	int abort_now = c->abort_req;
	pthread_mutex_unlock(&m->lock);
	if (abort_now) {
		*code = KT_CODE_ABORTED;
		state = KT_STATE_ABORTED;
		goto fail;
	}
	/* A pair already under these names (a restarted process replaying a
	 * run, epoch and id): its trace goes first, so that no moment shows
	 * it beside the new sidecar. */
	if (unlinkat(m->rootfd, st->file, 0) == 0)
		do_fsync(m, m->rootfd);
	if (do_rename(m, json_tmp, st->sidecar) < 0)
		goto fail;
	if (do_fsync(m, m->rootfd) < 0) {
		*code = KT_CODE_DURABILITY_UNKNOWN;
		unlinkat(m->rootfd, st->sidecar, 0);
		goto fail;
	}
	if (do_rename(m, out_tmp, st->file) < 0) {
		unlinkat(m->rootfd, st->sidecar, 0);
		goto fail;
	}
	*code = st->code;
	state = KT_STATE_PUBLISHED;
	if (do_fsync(m, m->rootfd) < 0)
		*code = KT_CODE_DURABILITY_UNKNOWN; /* in place; whether it lasts is unknown */
	close(out);
	close(jfd);
	free(json);
	remove_temps(c);
	return state;
fail:
	if (out >= 0)
		close(out);
	if (jfd >= 0)
		close(jfd);
	free(json);
	st->file[0] = st->sidecar[0] = st->sha256[0] = 0;
	st->bytes = 0;
	st->complete = 0;
	remove_temps(c);
	return state;
}

/* Delete the retired segments queued for it; called and returns with the
 * lock held, and drops it meanwhile. */
static void unlink_retired(struct capture *c)
{
	uint32_t q[sizeof(c->unlink_q) / sizeof(*c->unlink_q)];
	unsigned n = c->unlink_n;
	memcpy(q, c->unlink_q, n * sizeof(*q));
	c->unlink_n = 0;
	pthread_mutex_unlock(&c->m->lock);
	for (unsigned i = 0; i < n; i++) {
		char name[128];
		seg_name(c, q[i], name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	pthread_mutex_lock(&c->m->lock);
}

static void *capture_main(void *arg)
{
	struct capture *c = arg;
	kt_manager *m = c->m;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)(m->duration_ns / 1000000000u);
	dl.tv_nsec += (long)(m->duration_ns % 1000000000u);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}

	pthread_mutex_lock(&m->lock);
	while (!c->stop_req && !c->capped && !c->abort_req) {
		if (c->unlink_n) {
			unlink_retired(c);
			continue;
		}
		if (pthread_cond_timedwait(&m->cond, &m->lock, &dl) == ETIMEDOUT)
			break;
	}
	if (!c->stop_req && c->abort_req) {
		/* Closing the manager: no reason, nothing will be published. */
		c->stop_req = 1;
		c->st.stop_requested_at = now(m);
	} else if (!c->stop_req) {
		/* It stops itself: at the byte cap, or at its duration. */
		c->stop_req = 1;
		c->st.stop_requested_at = now(m);
		int cap = c->capped;
		snprintf(c->st.stop_reason, sizeof(c->st.stop_reason), "%s",
			 cap ? KT_CAPTURE_REASON_MAX_BYTES : KT_CAPTURE_REASON_MAX_DURATION);
		c->st.code = cap ? KT_CODE_OUTPUT_TOO_LARGE : KT_CODE_DURATION_COMPLETE;
		c->st.state = KT_STATE_STOPPING;
	}
	pthread_mutex_unlock(&m->lock);

	/* Without the lock: stopping a session waits for its flusher, which
	 * may be inside cb_on_cap() waiting for the lock. */
	int rc = m->backend.stop(m->backend.ctx, c->handle);

	pthread_mutex_lock(&m->lock);
	unlink_retired(c);
	kt_capture_status st = c->st;
	int abort_now = c->abort_req;
	/* A KEEP_NEWEST cap that could not rotate, or a STOP cap reached as
	 * the stop was asked for: the file lacks events either way. */
	if (c->capped && st.code == KT_CODE_NONE)
		st.code = c->st.code = KT_CODE_OUTPUT_TOO_LARGE;
	pthread_mutex_unlock(&m->lock);

	kt_capture_code code;
	kt_capture_state state;
	if (abort_now) {
		remove_temps(c);
		state = KT_STATE_ABORTED;
		code = KT_CODE_ABORTED;
	} else if (rc) {
		remove_temps(c);
		state = KT_STATE_FAILED;
		code = KT_CODE_STOP_FAILED;
	} else {
		state = publish(c, &st, &code);
	}

	pthread_mutex_lock(&m->lock);
	if (state != KT_STATE_PUBLISHED) {
		/* What publish() filled stays out of a status without a file. */
		st.file[0] = st.sidecar[0] = st.sha256[0] = 0;
		st.bytes = 0;
		st.complete = 0;
	}
	if (!st.stop_completed_at)
		st.stop_completed_at = now(m);
	st.state = state;
	st.code = code;
	if (state != KT_STATE_PUBLISHED)
		spans(&st, st.start_completed_at, st.stop_requested_at);
	c->st = st;
	c->running = 0;
	if (m->active == c)
		m->active = NULL;
	m->owner.release(m->owner.ctx, c->st.capture_id);
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- await, status, close ---------------------------------------------- */

int kt_manager_await(kt_manager *m, const kt_stop_ticket *t, uint64_t timeout_ns,
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
	clock_gettime(CLOCK_MONOTONIC, &dl);
	int forever = timeout_ns == UINT64_MAX;
	if (!forever) {
		dl.tv_sec += (time_t)(timeout_ns / 1000000000u);
		dl.tv_nsec += (long)(timeout_ns % 1000000000u);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
	}
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

int kt_manager_status(kt_manager *m, const char *run_id, uint64_t epoch, kt_capture_status *st)
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

/* ---- JSON ----------------------------------------------------------------- */

/* RFC 3339 in UTC with the fraction's trailing zeros cut, as Go writes a
 * time.Time: 2026-11-30T05:00:00.12Z. */
static void rfc3339(uint64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000u);
	unsigned frac = (unsigned)(ns % 1000000000u);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac) {
		char f[16];
		snprintf(f, sizeof(f), ".%09u", frac);
		size_t l = strlen(f);
		while (l > 2 && f[l - 1] == '0')
			f[--l] = 0;
		snprintf(buf + n, size - n, "%sZ", f);
	} else {
		snprintf(buf + n, size - n, "Z");
	}
}

/* A string of the status as JSON.  A caller may fill a status with any
 * bytes: those that are not UTF-8 are escaped, never a reason to fail. */
static int set_str(json_t *o, const char *key, const char *v, int omit_empty)
{
	if (omit_empty && !v[0])
		return 0;
	json_t *j = json_string(v);
	if (!j) {
		size_t n = strlen(v), cap = 4 * n + 1;
		char *fixed = malloc(cap);
		if (!fixed)
			return -1;
		kt__utf8_repair(v, n, fixed, cap);
		j = json_string(fixed);
		free(fixed);
	}
	return json_object_set_new(o, key, j);
}

static int set_time(json_t *o, const char *key, uint64_t ns)
{
	char buf[64];
	if (!ns)
		return 0;
	rfc3339(ns, buf, sizeof(buf));
	return json_object_set_new(o, key, json_string(buf));
}

char *kt_capture_status_json(const kt_capture_status *st)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int e = 0;
	e |= set_str(o, "schema", KT_CAPTURE_SCHEMA, 0);
	e |= set_str(o, "run_id", st->run_id, 0);
	e |= json_object_set_new(o, "epoch", json_integer((json_int_t)st->epoch));
	e |= set_str(o, "capture_id", st->capture_id, 0);
	e |= set_str(o, "state", kt_capture_state_name(st->state), 0);
	e |= set_str(o, "code", kt_capture_code_name(st->code), 1);
	e |= set_str(o, "file", st->file, 1);
	e |= set_str(o, "sha256", st->sha256, 1);
	if (st->bytes)
		e |= json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
	e |= set_str(o, "sidecar", st->sidecar, 1);
	e |= set_time(o, "boundary_start", st->boundary_start);
	e |= set_time(o, "boundary_finish", st->boundary_finish);
	e |= set_time(o, "start_requested_at", st->start_requested_at);
	e |= set_time(o, "start_completed_at", st->start_completed_at);
	e |= set_time(o, "stop_requested_at", st->stop_requested_at);
	e |= set_time(o, "stop_completed_at", st->stop_completed_at);
	e |= set_str(o, "stop_reason", st->stop_reason, 1);
	e |= json_object_set_new(o, "requested_span_ns", json_integer(st->requested_span_ns));
	e |= json_object_set_new(o, "capture_span_ns", json_integer(st->capture_span_ns));
	e |= json_object_set_new(o, "head_loss_ns", json_integer(st->head_loss_ns));
	e |= json_object_set_new(o, "tail_excess_ns", json_integer(st->tail_excess_ns));
	e |= json_object_set_new(o, "complete", json_boolean(st->complete));
	char *s = e ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

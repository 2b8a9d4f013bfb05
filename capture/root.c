/*
 * What a capture manager keeps below its root, and its defaults: every
 * file is opened below the root with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), and every name the manager makes is one path
 * component of a checked alphabet, so nothing is written outside it.
 * Here are those opens, the fsync and rename hooks, the cleaning of a
 * dead process's leftovers, the default owner (a lock file) and backend
 * (a katra session writing the capture's segments: segments.c), clocks
 * and ids.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <katra/capture.h>
#include <katra/katra.h>
#include "capture/manager_impl.h"

/*
 * A run id or capture id: 1 to @max bytes of [A-Za-z0-9._-], no leading
 * dot and no "..", so that it is one harmless path component; no leading
 * dash, so that a file name made from it never reads as an option on a
 * command line.
 */
int kt__mgr_id_ok(const char *s, size_t len, size_t max)
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

int kt__mgr_open_beneath(int rootfd, const char *name, int flags, mode_t mode)
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

int kt__mgr_fsync(kt_manager *m, int fd)
{
	if (m->hooks.fsync)
		return m->hooks.fsync(m->hooks.ctx, fd);
	return fsync(fd) < 0 ? -errno : 0;
}

int kt__mgr_rename(kt_manager *m, const char *from, const char *to)
{
	if (m->hooks.renameat)
		return m->hooks.renameat(m->hooks.ctx, m->rootfd, from, to);
	return renameat(m->rootfd, from, m->rootfd, to) < 0 ? -errno : 0;
}

/* ---- clocks and ids --------------------------------------------------- */

uint64_t kt__mgr_now(kt_manager *m)
{
	return m->now(m->now_ctx);
}

uint64_t kt__mgr_realtime_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int kt__mgr_random_id(void *ctx, char *buf, size_t size)
{
	(void)ctx;
	uint8_t b[8];
	if (size < 17 || getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	for (size_t i = 0; i < 8; i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
	return 0;
}

void kt__mgr_deadline(struct timespec *dl, uint64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += (time_t)(ns / 1000000000u);
	dl->tv_nsec += (long)(ns % 1000000000u);
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
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

/* The manager's args only: @cap_ctx is its capture, whose segments the
 * session writes. */
static int session_start(void *ctx, const kt_backend_args *a, void **handle)
{
	(void)ctx;
	kt_session *s = NULL;
	kt__output out = kt__mgr_output(a->cap_ctx);
	int rc = kt__session_start_output(a->session, &out, &s);
	*handle = s;
	return rc;
}

static int session_stop(void *ctx, void *handle)
{
	kt_summary sum, *last = ctx;
	int rc = kt_session_stop(handle, &sum);
	if (last) {
		kt_summary_release(last);
		*last = sum;
	} else {
		kt_summary_release(&sum);
	}
	return rc;
}

static int session_snapshot(void *ctx, void *handle, int fd, uint64_t max_age_ns,
			    uint64_t max_bytes, kt_snapshot_result *res)
{
	(void)ctx;
	return kt_session_snapshot(handle, NULL, fd, max_age_ns, max_bytes, res);
}

kt_capture_backend kt_manager_session_backend(kt_summary *last)
{
	return (kt_capture_backend){ session_start, session_stop, last, session_snapshot };
}

int kt__mgr_default_owner(kt_manager *m)
{
	int fd = kt__mgr_open_beneath(m->rootfd, KT__MGR_LOCK_NAME, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return fd;
	m->lockfd = fd;
	m->owner = (kt_capture_owner){ flock_acquire, flock_release, m };
	return 0;
}

/* ---- leftovers --------------------------------------------------------- */

/* Whether a temporary file's process is gone: .katra-tmp-<pid>-... */
static int tmp_is_stale(const char *name)
{
	const char *p = name + strlen(KT__MGR_TMP_PREFIX);
	char *end;
	errno = 0;
	unsigned long pid = strtoul(p, &end, 10);
	if (end == p || *end != '-' || errno || pid == 0 || pid > INT32_MAX)
		return 1; /* not a name the manager makes: nobody owns it */
	if ((pid_t)pid == getpid())
		return 0; /* another manager of this process may be using it */
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

void kt__mgr_clean_root(kt_manager *m)
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
		if (!strncmp(n, KT__MGR_TMP_PREFIX, strlen(KT__MGR_TMP_PREFIX))) {
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

/*
 * snapshot_all.c - `katra snapshot --all`, and `katra snapshot PID` of a
 * process with no flight session whose descendants have one (the pid of
 * `katra record --flight`, issue #30): every such process's newest
 * window, asked of all at once as `katra snapshot PID` asks one, then
 * merged into one trace (tools/cmd/merge.h): a process each, one clock.
 *
 * Which processes: under PID, those whose parent chain (/proc/N/stat's
 * ppid) reaches PID, as katra record, their subreaper, keeps them even
 * once their own parent has ended; with --all, every socket of the
 * control directory named for a process of our PID namespace.  Either
 * way a process is only asked through its socket, as snapshot_take()
 * checks it (ours, and the one who listens is that pid).  Every request
 * is sent before any answer is read, and the answers are read as they
 * come, so the windows end as near one instant as the processes take
 * their snapshots, and a process that never answers costs the others
 * nothing: it is given up once the timeout passes, and left out.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flush/flush.h"
#include "ring/ring.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/merge.h"
#include "tools/cmd/snapshot.h"

#define MAX_SCAN 65536 /* processes of /proc read */
#define MAX_DEPTH 64   /* generations under PID followed */

int snapshot_listens(long pid)
{
	char name[64];
	struct stat sb;
	int dir = kt__control_dir(), yes = 0;
	if (dir >= 0 && !kt__control_name(pid, name, sizeof(name)))
		yes = fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(sb.st_mode) &&
		      sb.st_uid == geteuid();
	if (dir >= 0)
		close(dir);
	return yes;
}

/* A process's parent from /proc/@pid/stat: after the last ')' (the name
 * may hold one), the state, then the ppid.  -1 when unreadable. */
static long parent_of(long pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	long ppid;
	return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : -1;
}

static int by_value(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

struct pids {
	long *v;
	size_t n;
};

/* @pid rising, each @ppid moved with its pid (insertion sort: /proc's
 * order is nearly sorted already). */
static void sort_pairs(long *pid, long *ppid, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && pid[j - 1] > pid[j]; j--) {
			long t = pid[j];
			pid[j] = pid[j - 1], pid[j - 1] = t;
			t = ppid[j];
			ppid[j] = ppid[j - 1], ppid[j - 1] = t;
		}
}

/* Every process under @root, with a socket of its own, into @out. */
static int under(long root, struct pids *out)
{
	long *pid = calloc(MAX_SCAN, sizeof(*pid)), *ppid = calloc(MAX_SCAN, sizeof(*ppid));
	char *in = calloc(MAX_SCAN, 1);
	DIR *d = opendir("/proc");
	size_t n = 0;
	struct dirent *e;
	if (!pid || !ppid || !in || !d || !(out->v = calloc(MAX_SCAN, sizeof(long)))) {
		free(pid), free(ppid), free(in);
		if (d)
			closedir(d);
		return -ENOMEM;
	}
	while ((e = readdir(d)) && n < MAX_SCAN) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0 || (ppid[n] = parent_of(p)) < 0)
			continue;
		pid[n++] = p;
	}
	closedir(d);
	/* Sorted by pid, ppid alongside, so that a parent is found by
	 * bisection (/proc lists pids rising, but that is not promised). */
	sort_pairs(pid, ppid, n);
	/* A generation a pass: a child is in once its parent is. */
	for (int depth = 0, more = 1; more && depth < MAX_DEPTH; depth++) {
		more = 0;
		for (size_t i = 0; i < n; i++) {
			const long *at = in[i] ? NULL : bsearch(&ppid[i], pid, n, sizeof(*pid), by_value);
			if (!in[i] && (ppid[i] == root || (at && in[at - pid])))
				more = in[i] = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (in[i] && snapshot_listens(pid[i]))
			out->v[out->n++] = pid[i];
	free(pid), free(ppid), free(in);
	return 0;
}

/* Every process of our PID namespace with a socket in the control
 * directory ("NS-PID.sock", NS ours), still running, into @out. */
static int listening(struct pids *out)
{
	char own[64];
	int dir = kt__control_dir(), rc = dir < 0 ? dir : kt__control_name(0, own, sizeof(own));
	DIR *d = rc ? NULL : fdopendir(dir);
	char *dash = strchr(own, '-');
	if (!d || !dash || !(out->v = calloc(MAX_SCAN, sizeof(long)))) {
		if (d)
			closedir(d);
		else if (dir >= 0)
			close(dir);
		return rc ? rc : -ENOMEM;
	}
	size_t ns_len = (size_t)(dash - own) + 1;
	struct dirent *e;
	while ((e = readdir(d)) && out->n < MAX_SCAN) {
		char *end, proc[64];
		if (strncmp(e->d_name, own, ns_len))
			continue;
		long p = strtol(e->d_name + ns_len, &end, 10);
		snprintf(proc, sizeof(proc), "/proc/%ld", p);
		if (p > 0 && !strcmp(end, ".sock") && p != (long)getpid() && !access(proc, F_OK))
			out->v[out->n++] = p;
	}
	closedir(d);
	return 0;
}

int snapshot_has_listeners(long pid)
{
	struct pids p = { 0 };
	int yes = !under(pid, &p) && p.n;
	free(p.v);
	return yes;
}

/* The requests of @fd[0..n) still unanswered (fd -1: none) into @pf, the
 * index of each into @who; how many. */
static size_t pending(const struct pids *p, const int *fd, struct pollfd *pf, size_t *who)
{
	size_t m = 0;
	for (size_t i = 0; i < p->n; i++)
		if (fd[i] >= 0) {
			pf[m] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
			who[m++] = i;
		}
	return m;
}

/* The answers to the requests on @fd[0..n) (-1: none), each as it comes,
 * process i's into @paths[i]; what has not come once @a's timeout passed
 * is given up.  Each fd is closed and set to -1; @ok[i] set for those
 * that answered. */
static void get_all(const struct pids *p, int *fd, char **paths, int *ok,
		    const struct snap_args *a)
{
	uint64_t end = kt__mono_ns() + (a->timeout_ns ? a->timeout_ns : SNAPSHOT_TIMEOUT_NS);
	struct pollfd *pf = calloc(p->n, sizeof(*pf));
	size_t *who = calloc(p->n, sizeof(*who));
	for (int r = 1; r > 0 && pf && who;) {
		size_t m = pending(p, fd, pf, who);
		uint64_t now = kt__mono_ns();
		r = m && now < end ? poll(pf, m, (int)((end - now + 999999) / 1000000)) : 0;
		if (r < 0 && errno == EINTR)
			r = 1;
		for (size_t j = 0; r > 0 && j < m; j++) {
			if (!pf[j].revents)
				continue;
			ok[who[j]] = snapshot_get(p->v[who[j]], fd[who[j]], paths[who[j]], a, 1) == EXIT_OK;
			fd[who[j]] = -1;
		}
	}
	/* Left: given up once the timeout passed; or, out of memory for the
	 * poll, each asked in turn, bounded by its socket's own timeout. */
	for (size_t i = 0; i < p->n; i++) {
		if (fd[i] < 0)
			continue;
		if (pf && who) {
			snapshot_say_failed(p->v[i], -ETIME, a);
			close(fd[i]);
		} else {
			ok[i] = snapshot_get(p->v[i], fd[i], paths[i], a, 1) == EXIT_OK;
		}
		fd[i] = -1;
	}
	free(pf);
	free(who);
}

/* Each of @p's windows into @tmp/PID.katra, asked of every process before
 * any answer is read, so that the windows end as near one instant as the
 * processes answer; the paths of those that answered into @paths, in
 * @p's order (n of them). */
static size_t take_all(const struct pids *p, const char *tmp, const struct snap_args *a,
		       char **paths)
{
	int *fd = calloc(p->n, sizeof(*fd)), *ok = calloc(p->n, sizeof(*ok));
	size_t n = 0;
	for (size_t i = 0; fd && ok && i < p->n; i++) {
		fd[i] = -1;
		if (asprintf(&paths[i], "%s/%ld.katra", tmp, p->v[i]) < 0)
			paths[i] = NULL;
		else
			fd[i] = snapshot_ask(p->v[i], a, 1);
	}
	if (fd && ok)
		get_all(p, fd, paths, ok, a);
	for (size_t i = 0; i < p->n; i++) {
		if (ok && ok[i]) {
			paths[n++] = paths[i];
			continue;
		}
		fprintf(stderr, "katra snapshot: process %ld did not answer: left out\n", p->v[i]);
		free(paths[i]);
	}
	free(fd);
	free(ok);
	return n;
}

int snapshot_many(long root, const char *out, const struct snap_args *a)
{
	struct pids p = { 0 };
	int rc = root ? under(root, &p) : listening(&p);
	if (rc || !p.n) {
		fprintf(stderr, "katra snapshot: %s\n",
			rc ? kt_strerror(rc) : "no process has a flight session listening");
		free(p.v);
		return EXIT_BAD;
	}
	qsort(p.v, p.n, sizeof(*p.v), by_value);
	if (p.n > merge_max_inputs())
		p.n = merge_max_inputs();
	const char *t = getenv("TMPDIR");
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/katra-snapshot-XXXXXX", t && *t == '/' ? t : "/tmp");
	char **paths = calloc(p.n, sizeof(*paths));
	struct merge_proc *mp = calloc(p.n, sizeof(*mp));
	size_t n = 0;
	rc = EXIT_BAD;
	if (!paths || !mp || !mkdtemp(tmp)) {
		fprintf(stderr, "katra snapshot: %s\n", strerror(errno));
	} else {
		n = take_all(&p, tmp, a, paths);
		if (!n)
			fprintf(stderr, "katra snapshot: no process answered\n");
		else if ((rc = merge_traces((const char *const *)paths, n, out, mp)) != EXIT_BAD)
			fprintf(stderr, "katra snapshot: %zu process%s into %s\n", n,
				n == 1 ? "" : "es", out);
		for (size_t i = 0; i < n; i++) {
			unlink(paths[i]);
			free(paths[i]);
		}
		rmdir(tmp);
	}
	free(paths);
	free(mp);
	free(p.v);
	return rc == EXIT_BAD ? EXIT_BAD : EXIT_OK;
}

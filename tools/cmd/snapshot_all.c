/*
 * snapshot_all.c - `katra snapshot --all`, and `katra snapshot PID` of a
 * process with no flight session whose descendants have one (the pid of
 * `katra record --flight`, issue #30): every such process's newest
 * window, asked of each in turn as `katra snapshot PID` asks one, then
 * merged into one trace (tools/cmd/merge.h): a process each, one clock.
 *
 * Which processes: under PID, those whose parent chain (/proc/N/stat's
 * ppid) reaches PID, as katra record, their subreaper, keeps them even
 * once their own parent has ended; with --all, every socket of the
 * control directory named for a process of our PID namespace.  Either
 * way a process is only asked through its socket, as snapshot_take()
 * checks it (ours, and the one who listens is that pid).  The windows
 * are asked one after another, not at one instant: each is its process's
 * newest at the time it answers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flush/flush.h"
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

struct pids {
	long *v;
	size_t n;
};

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
	/* A generation a pass: a child is in once its parent is. */
	for (int depth = 0, more = 1; more && depth < MAX_DEPTH; depth++) {
		more = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; !in[i] && j < n; j++)
				if (ppid[i] == root || (in[j] && pid[j] == ppid[i]))
					more = in[i] = 1;
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

static int by_value(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* Each of @p's windows into @tmp/PID.katra; the paths of those that
 * answered into @paths (n of them). */
static size_t take_all(const struct pids *p, const char *tmp, const struct snap_args *a,
		       char **paths)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (asprintf(&paths[n], "%s/%ld.katra", tmp, p->v[i]) < 0)
			break;
		if (snapshot_take(p->v[i], paths[n], a, 1) == EXIT_OK) {
			n++;
		} else {
			fprintf(stderr, "katra snapshot: process %ld did not answer: left out\n",
				p->v[i]);
			free(paths[n]);
		}
	}
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

/*
 * cmd_record.c - `katra record [options] -- CMD ARGS...`: run CMD with
 * tracing on, with no session code in it (issue #30).
 *
 * Through the environment: KT_RECORD_DIR names the capture directory,
 * KT_SCHED=1 asks for scheduler records (SPEC §4.2.1) unless --no-sched
 * or the caller's KT_SCHED=0, and
 * a program linked with libkatra starts a session of its own as it loads
 * (flush/autostart.c), into DIR/PID.katra; so does every process it
 * fork()s that goes on emitting, and every katra-linked program it execs.
 * No LD_PRELOAD: a program not linked with katra writes nothing, which is
 * said at the end.
 *
 * katra record forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to CMD (a
 * Ctrl-C at a terminal reaches CMD's process group too: a program that
 * counts them sees two), waits for CMD and, as a subreaper, for every
 * descendant CMD left behind, then writes the trace: every process's file
 * merged into OUT (tools/merge.h: a process entry each, its threads under
 * it, one clock), a process that was killed first rebuilt from its crash
 * directory when --crash-dir asked for crash files.  The processes' files
 * go once OUT holds them, unless --keep.  It exits as CMD did: CMD's exit
 * status; 127 when CMD was not found, 126 when it could not be run; when
 * CMD was killed by signal N, katra record kills itself with N (no core
 * file), or exits 128+N should N not end it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <katra/capture.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/merge.h"
#include "tools/cmd/opts.h"
#include "tools/cmd/record_join.h"
#include "tools/cmd/recover.h"
#include "tools/cmd/top.h"

extern char **environ;

#define MAX_PROCS 1024 /* processes' files a record takes */

/* A number and that it was given, so that 0 is passed on rather than
 * taken for "not given" (--codec 0 is KT_CODEC_NONE: raw chunks). */
struct given_num {
	uint64_t v;
	int given;
};

struct rec_args {
	const char *out, *dir, *categories, *crash, *run_id, *root;
	struct given_num epoch;
	struct given_num codec;
	uint64_t ring;
	int flight, keep, top, no_sched;
	int dir_given; /* an existing --dir may be used; OUT.d must be new */
};

static int opt_given_ns(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct given_num *g = dst;
	g->given = 1;
	return opt_ns(cmd, o, value, &g->v);
}

static const struct opts_spec record_spec = {
	.cmd = "record", .npos = 0, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "-o", opt_str, offsetof(struct rec_args, out), .wants = "a file" },
		{ "--dir", opt_str, offsetof(struct rec_args, dir), .wants = "a directory" },
		{ "--codec", opt_given_ns, offsetof(struct rec_args, codec), .wants = "a codec id" },
		{ "--ring-size", opt_ns, offsetof(struct rec_args, ring), .wants = "bytes" },
		{ "--categories", opt_str, offsetof(struct rec_args, categories),
		  .wants = "a category list" },
		{ "--crash-dir", opt_str, offsetof(struct rec_args, crash), .wants = "a directory" },
		{ "--run-id", opt_str, offsetof(struct rec_args, run_id), .wants = "a run id" },
		{ "--epoch", opt_given_ns, offsetof(struct rec_args, epoch), .wants = "a number" },
		{ "--capture-root", opt_str, offsetof(struct rec_args, root),
		  .wants = "a directory" },
		{ "--flight", NULL, offsetof(struct rec_args, flight), .flag = 1 },
		{ "--keep", NULL, offsetof(struct rec_args, keep), .flag = 1 },
		{ "--top", NULL, offsetof(struct rec_args, top), .flag = 1 },
		{ "--no-sched", NULL, offsetof(struct rec_args, no_sched), .flag = 1 },
		{ .name = NULL } },
	.help = "usage: katra record [options] -- CMD ARGS...\n"
		"Runs CMD with tracing on: a program linked with libkatra starts a\n"
		"session itself (no session code needed), and so does each process it\n"
		"forks or execs that is linked with katra, each into DIR/PID.katra.\n"
		"  -o OUT            the trace of every process, merged (default\n"
		"                    record.katra; never replaced)\n"
		"  --dir DIR         the capture directory (default OUT.d, made new)\n"
		"  --codec N         kt_codec of the files, 0 raw (default compact)\n"
		"  --ring-size B     bytes per thread ring (a power of two)\n"
		"  --categories L    as KT_CATEGORIES: \"-physics\", \"render,io\"\n"
		"  --crash-dir D     crash files under D: a process that was killed is\n"
		"                    rebuilt from them (katra recover) before the merge,\n"
		"                    and its crash directory removed after it\n"
		"  --run-id R        the run every process belongs to (KT_RUN_ID): each\n"
		"                    file's header and OUT's name it, with --epoch N\n"
		"                    (KT_EPOCH, default 0)\n"
		"  --capture-root D  with --run-id: the harness's capture of the run,\n"
		"                    published in D, is joined by the run's other\n"
		"                    processes once all are done (trimmed to its window,\n"
		"                    one trace, its sidecar listing the processes)\n"
		"  --flight          flight sessions: `katra snapshot PID` per process,\n"
		"                    or of katra record's pid: every process, one trace\n"
		"  --keep            keep each process's file in DIR after writing OUT\n"
		"                    (and the crash directories rebuilt from)\n"
		"  --top             `katra top` on CMD while it runs (KATRA_LIVE=1 is\n"
		"                    set); CMD's output goes to OUT.log, not the screen\n"
		"  --no-sched        no scheduler records (on by default, as KT_SCHED=1,\n"
		"                    unless the environment has KT_SCHED=0)\n"
		"SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to CMD.  Exits with\n"
		"CMD's status (127 not found, 126 not runnable; killed by a signal: the\n"
		"same signal, or 128+N).\n",
};

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define NFORWARDED (sizeof(forwarded) / sizeof(*forwarded))

static void catch_signals(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &sa, NULL);
}

static int set_num(const char *name, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return setenv(name, buf, 1);
}

/* The variables flush/autostart.c and the library read. */
static int set_env(const struct rec_args *a, const char *absdir)
{
	int rc = setenv("KT_RECORD_DIR", absdir, 1);
	if (!rc && a->codec.given)
		rc = set_num("KT_RECORD_CODEC", a->codec.v);
	if (!rc && a->ring)
		rc = set_num("KT_RECORD_RING", a->ring);
	if (!rc && a->flight)
		rc = setenv("KT_RECORD_FLIGHT", "1", 1);
	if (!rc && a->categories)
		rc = setenv("KT_CATEGORIES", a->categories, 1);
	if (!rc && a->crash)
		rc = setenv("KT_CRASH_DIR", a->crash, 1);
	if (!rc && a->run_id)
		rc = setenv("KT_RUN_ID", a->run_id, 1);
	if (!rc && a->run_id)
		rc = set_num("KT_EPOCH", a->epoch.v);
	/* Scheduler records cost the emit path nothing (bench/RESULTS.md,
	 * session 4c), so on unless asked not to; KT_SCHED=0 already set
	 * stands. */
	if (!rc && (a->no_sched || !getenv("KT_SCHED")))
		rc = setenv("KT_SCHED", a->no_sched ? "0" : "1", 1);
	return rc;
}

/* DIR made new (or an existing one we may write), said before CMD runs. */
static int prepare_dir(const struct rec_args *a, char *abs, size_t cap)
{
	if (mkdir(a->dir, 0755) < 0 && !(errno == EEXIST && a->dir_given)) {
		say("record: capture directory %s: %s", a->dir, strerror(errno));
		return EXIT_BAD;
	}
	struct stat sb;
	if (lstat(a->dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || access(a->dir, W_OK | X_OK) < 0) {
		say("record: capture directory %s: not a directory we may write", a->dir);
		return EXIT_BAD;
	}
	if (!realpath(a->dir, abs) || strlen(abs) >= cap) {
		say("record: capture directory %s: %s", a->dir, strerror(errno));
		return EXIT_BAD;
	}
	return 0;
}

/* CMD started; with @log, its stdout and stderr there (created new). */
static int spawn(char **cmd, const char *log, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int rc = posix_spawn_file_actions_init(&fa);
	if (!rc && log)
		rc = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log,
						      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	if (!rc && log)
		rc = posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	if (!rc)
		rc = posix_spawnp(pid, cmd[0], &fa, NULL, cmd, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (!rc)
		return 0;
	say("record: %s: %s", cmd[0], strerror(rc));
	return rc == ENOENT ? 127 : 126;
}

/* CMD's status, then every descendant it left (we are their subreaper). */
static int wait_all(pid_t pid, int *status)
{
	int st, orphans = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	*status = st;
	child_pid = 0;
	while ((w = waitpid(-1, &st, 0)) > 0 || (w < 0 && errno == EINTR))
		orphans += w > 0;
	return orphans;
}

/* As CMD ended: its status, or its signal on ourselves. */
static int exit_as(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (!WIFSIGNALED(st))
		return EXIT_BAD;
	int sig = WTERMSIG(st);
	struct rlimit none = { 0, 0 };
	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	fflush(NULL);
	raise(sig);
	return 128 + sig;
}

/* Is @name a process's file, DIGITS[-DIGITS].katra? */
static int is_trace_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 7 || strcmp(name + n - 6, ".katra"))
		return 0;
	return strspn(name, "0123456789-") == n - 6;
}

/* A process's file rebuilt by katra recover: PID.recovered.katra. */
#define RECOVERED ".recovered.katra"

/* What a process's file holds, as record_finish() reports it. */
struct proc_file {
	char name[64];
	uint64_t pid, events, dropped;
	char thread[64];  /* its first named thread's name */
	int complete, chunks, readable;
	int recovered;    /* rebuilt from its crash directory */
	int unflushed;    /* its file holds nothing, its crash rings may */
};

/* Read @name in @dirfd without decoding events (the directory's files
 * are read as any input: the reader trusts no byte of them). */
static void scan_file(int dirfd, const char *name, struct proc_file *pf)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	kt_reader *r;
	kt_trace_frame f;
	kt_reader_status st;
	memset(pf, 0, sizeof(*pf));
	snprintf(pf->name, sizeof(pf->name), "%s", name);
	if (fd < 0)
		return;
	if (kt_reader_open_fd(fd, NULL, &r)) {
		close(fd);
		return;
	}
	pf->readable = 1;
	pf->pid = kt_reader_get_header(r)->process_id;
	kt_reader_skip_events(r, 1);
	while (kt_reader_next_frame(r, &f) == 1) {
		pf->chunks += f.kind == KT_FRAME_CHUNK;
		if (f.kind == KT_FRAME_CHUNK)
			pf->events += f.u.chunk.event_count;
		if (f.kind == KT_FRAME_THREAD && !pf->thread[0] && f.u.thread.name_len)
			snprintf(pf->thread, sizeof(pf->thread), "%s", f.u.thread.name);
	}
	kt_reader_get_status(r, &st);
	pf->complete = st.complete;
	pf->dropped = st.dropped;
	kt_reader_close(r);
	close(fd);
}

/*
 * A file that holds nothing: no event chunk and no summary.  A fork()ed
 * child that execs at once leaves such a one (its session started in the
 * child handler; the exec'd image writes PID-1.katra).  A file the reader
 * refuses is kept, for the user to see.
 */
static int holds_nothing(const struct proc_file *pf)
{
	return pf->readable && !pf->chunks && !pf->complete;
}

/* Does directory @fd hold a ring file (ring-N)? */
static int holds_ring(int fd)
{
	DIR *d = fdopendir(dup(fd));
	struct dirent *e;
	int rings = 0;
	if (d) /* a dup shares the offset: from the start */
		rewinddir(d);
	while (d && (e = readdir(d)))
		rings |= !strncmp(e->d_name, "ring-", 5);
	if (d)
		closedir(d);
	return !d || rings;
}

/* Crash directory @name in @at, when no process holds its control
 * file's lock and it holds no ring (or @rings_too: its rings are in OUT):
 * its files, then itself, removed. */
static void remove_crash(int at, const char *name, int rings_too)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	int ctl = openat(fd, "control", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int free_lock = ctl >= 0 && fcntl(ctl, F_GETLK, &lk) == 0 && lk.l_type == F_UNLCK;
	if (ctl >= 0)
		close(ctl);
	DIR *d = free_lock && (rings_too || !holds_ring(fd)) ? fdopendir(dup(fd)) : NULL;
	struct dirent *e;
	struct stat sb;
	if (d)
		rewinddir(d);
	while (d && (e = readdir(d)))
		if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
			unlinkat(fd, e->d_name, 0);
	if (d) {
		closedir(d);
		unlinkat(at, name, AT_REMOVEDIR);
	}
	close(fd);
}

/*
 * The crash directories (katra-PID, katra-PID.N) of process @pid, whose
 * file held nothing, that hold nothing either: a fork()ed child that
 * execs at once made one (its session started in the child handler), and
 * exec() left it, lock let go and no ring in it, to the image that took
 * the next name.  One with a ring stays, for katra recover.
 */
static void remove_empty_crash(const char *crash, uint64_t pid)
{
	int at = open(crash, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char name[64];
	for (int n = 0; at >= 0 && n < 100; n++) {
		if (n)
			snprintf(name, sizeof(name), "katra-%llu.%d", (unsigned long long)pid, n);
		else
			snprintf(name, sizeof(name), "katra-%llu", (unsigned long long)pid);
		remove_crash(at, name, 0);
	}
	if (at >= 0)
		close(at);
}

/* Whether process @pid's crash directory in @crash holds a ring. */
static int crash_has_ring(const char *crash, uint64_t pid)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/katra-%llu", crash, (unsigned long long)pid) >=
	    sizeof(path))
		return 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rings = fd >= 0 && holds_ring(fd);
	if (fd >= 0)
		close(fd);
	return rings;
}

/* The pid of file @name (PID[-N].katra) and its image number N (0 for
 * PID.katra): the N-th exec'd image of the process wrote PID-N.katra. */
static uint64_t name_pid(const char *name, unsigned long *image)
{
	char *end;
	uint64_t pid = strtoull(name, &end, 10);
	*image = *end == '-' ? strtoul(end + 1, NULL, 10) : 0;
	return pid;
}

/*
 * Whether a later image of the process that wrote @name, which holds
 * nothing, wrote a file in @d: then @name was left by exec() (a fork()ed
 * child that execs at once starts a session in the child handler) and
 * nothing of it was lost.  Otherwise the process ended before its first
 * write, killed most likely, and its events are said to be lost.
 */
static int exec_left_it(DIR *d, const char *name)
{
	unsigned long image, other;
	uint64_t pid = name_pid(name, &image);
	long at = telldir(d);
	struct dirent *e;
	int later = 0;
	rewinddir(d);
	while (!later && (e = readdir(d)))
		later = is_trace_name(e->d_name) && name_pid(e->d_name, &other) == pid &&
			other > image;
	seekdir(d, at);
	return later;
}

/* A process's file @name that held nothing, and no later image of it:
 * its events, if it had any, are lost; said once per file.  Returns 1
 * when said. */
static int say_unwritten(DIR *d, const char *name, const char *crash)
{
	if (exec_left_it(d, name))
		return 0;
	fprintf(stderr, "katra record: ");
	text_puts(stderr, name);
	fprintf(stderr, ": the process ended before its first write: its events are lost (%s)\n",
		crash ? "its crash directory holds no ring"
		      : "with --crash-dir, a killed process is rebuilt from its crash files");
	return 1;
}

/*
 * The processes' files in @dir: regular files only, never followed; an
 * empty one, or one that holds nothing (holds_nothing()), goes, and with
 * it its process's crash directories that hold nothing (with --crash-dir).
 * One whose crash directory holds a ring stays, as unflushed: a process
 * killed before its flusher's first write has its events there only, for
 * recover_cut().  One that goes with no later image of its process is
 * said, and counted in *@lost (say_unwritten()).  Each read into @pf (up
 * to @cap).  Returns how many.
 */
static size_t list_files(const char *dir, const char *crash, struct proc_file *pf, size_t cap,
			 size_t *lost)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < cap) {
		struct stat sb;
		if (!is_trace_name(e->d_name) || strlen(e->d_name) >= 64 ||
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (sb.st_size)
			scan_file(dirfd(d), e->d_name, &pf[n]);
		if (sb.st_size == 0 || holds_nothing(&pf[n])) {
			/* Its pid from its name: an empty file has no header. */
			uint64_t pid = strtoull(e->d_name, NULL, 10);
			if (crash && pid && crash_has_ring(crash, pid)) {
				memset(&pf[n], 0, sizeof(pf[n]));
				snprintf(pf[n].name, sizeof(pf[n].name), "%s", e->d_name);
				pf[n].pid = pid;
				pf[n].readable = pf[n].unflushed = 1;
				n++;
				continue;
			}
			if (crash)
				remove_empty_crash(crash, pid);
			*lost += (size_t)say_unwritten(d, e->d_name, crash);
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		n++;
	}
	closedir(d);
	return n;
}

static int by_pid(const void *a, const void *b)
{
	const struct proc_file *x = a, *y = b;
	return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid) : strcmp(x->name, y->name);
}

/* A line per process, by pid: every event a survivor wrote or dropped. */
static void report_files(struct proc_file *pf, size_t n)
{
	qsort(pf, n, sizeof(*pf), by_pid);
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "  pid %-8llu %-16s ", (unsigned long long)pf[i].pid,
			pf[i].thread[0] ? pf[i].thread : "-");
		text_puts(stderr, pf[i].name);
		fprintf(stderr, ": %llu events, %llu dropped, %s\n",
			(unsigned long long)pf[i].events, (unsigned long long)pf[i].dropped,
			!pf[i].readable   ? "unreadable"
			: pf[i].recovered ? "recovered from its crash files"
			: pf[i].complete  ? "complete"
					  : "cut short (katra recover, with --crash-dir)");
	}
}

/*
 * A process cut short (killed) whose crash directory is in --crash-dir:
 * rebuilt by katra recover into DIR/PID.recovered.katra, which then
 * stands for its file (the cut file stays beside it).
 */
static void recover_cut(const struct rec_args *a, int dirfd, struct proc_file *pf)
{
	char crash[PATH_MAX], out[PATH_MAX], name[64];
	if (!a->crash || !pf->readable || pf->complete || !pf->pid ||
	    (size_t)snprintf(crash, sizeof(crash), "%s/katra-%llu", a->crash,
			     (unsigned long long)pf->pid) >= sizeof(crash) ||
	    (size_t)snprintf(name, sizeof(name), "%llu" RECOVERED,
			     (unsigned long long)pf->pid) >= sizeof(name) ||
	    (size_t)snprintf(out, sizeof(out), "%s/%s", a->dir, name) >= sizeof(out) ||
	    access(crash, F_OK))
		return;
	fflush(stdout);
	int rc = recover_dir(crash, out, NULL, &kt__recover_caps);
	if (rc != EXIT_OK && rc != EXIT_PARTIAL)
		return;
	struct proc_file r;
	scan_file(dirfd, name, &r);
	if (!r.readable)
		return;
	r.recovered = 1;
	if (!r.thread[0])
		memcpy(r.thread, pf->thread, sizeof(r.thread));
	*pf = r;
}

/* DIR's files, as merge inputs. */
static char **input_paths(const char *dir, const struct proc_file *pf, size_t n)
{
	char **paths = calloc(n, sizeof(*paths));
	for (size_t i = 0; paths && i < n; i++)
		if (asprintf(&paths[i], "%s/%s", dir, pf[i].name) < 0)
			paths[i] = NULL;
	return paths;
}

/* DIR's files, once OUT holds them (and the cut files a rebuilt one
 * stood for). */
static void remove_files(const struct rec_args *a, char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(paths[i]);
		if (len > sizeof(RECOVERED) && !strcmp(paths[i] + len - strlen(RECOVERED), RECOVERED)) {
			strcpy(paths[i] + len - strlen(RECOVERED), ".katra");
			unlink(paths[i]);
			strcpy(paths[i] + len - strlen(RECOVERED), RECOVERED);
		}
		unlink(paths[i]);
	}
	if (!a->dir_given)
		rmdir(a->dir);
}

/* The crash directories the processes of @pf were rebuilt from, once OUT
 * holds them: a second `katra record` or `katra recover` of them would
 * only give the same events again.  --keep keeps them, with DIR. */
static void remove_rebuilt(const struct rec_args *a, const struct proc_file *pf, size_t n)
{
	int at = open(a->crash, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char name[64];
	for (size_t i = 0; at >= 0 && i < n; i++) {
		if (!pf[i].recovered)
			continue;
		snprintf(name, sizeof(name), "katra-%llu", (unsigned long long)pf[i].pid);
		remove_crash(at, name, 1);
	}
	if (at >= 0)
		close(at);
}

/* OUT merged from the @n processes' files @pf: 0, or the exit status. */
static int merge_out(const struct rec_args *a, struct proc_file *pf, size_t n)
{
	char **paths = input_paths(a->dir, pf, n);
	struct merge_proc *mp = calloc(n, sizeof(*mp));
	int rc = EXIT_BAD, ok = paths && mp;
	for (size_t i = 0; ok && i < n; i++)
		ok = paths[i] != NULL;
	if (!ok)
		say("record: out of memory");
	else
		rc = merge_traces((const char *const *)paths, n, a->out, mp);
	if (rc != EXIT_BAD) {
		fprintf(stderr, "katra record: %zu process%s traced into ", n, n == 1 ? "" : "es");
		text_puts(stderr, a->out);
		fputs(a->keep ? "; each process's file is kept in " : "\n", stderr);
		if (a->keep) {
			text_puts(stderr, a->dir);
			fputc('\n', stderr);
		}
		report_files(pf, n);
	}
	if (rc != EXIT_BAD && !a->keep) {
		remove_files(a, paths, n);
		if (a->crash)
			remove_rebuilt(a, pf, n);
	}
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	free(mp);
	return rc == EXIT_PARTIAL ? 0 : rc;
}

/* The unflushed processes (list_files()) recover_cut() did not rebuild:
 * said, and their files removed.  Returns how many processes are left,
 * in order. */
static size_t drop_unflushed(const struct rec_args *a, struct proc_file *pf, size_t n)
{
	size_t k = 0;
	char path[PATH_MAX];
	for (size_t i = 0; i < n; i++) {
		if (!pf[i].unflushed) {
			pf[k++] = pf[i];
			continue;
		}
		fprintf(stderr,
			"katra record: pid %llu ended before its first write and its crash "
			"directory could not be rebuilt: its events are lost\n",
			(unsigned long long)pf[i].pid);
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", a->dir, pf[i].name) < sizeof(path))
			unlink(path);
	}
	return k;
}

/* OUT from the processes' files: 0, or the exit status said. */
static int record_finish(const struct rec_args *a, const char *cmd)
{
	struct proc_file *pf = calloc(MAX_PROCS, sizeof(*pf));
	if (!pf) {
		say("record: out of memory");
		return EXIT_BAD;
	}
	size_t lost = 0, n = list_files(a->dir, a->crash, pf, MAX_PROCS, &lost);
	/* OUT numbers the processes in pid order. */
	qsort(pf, n, sizeof(*pf), by_pid);
	int dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; dfd >= 0 && i < n; i++)
		recover_cut(a, dfd, &pf[i]);
	if (dfd >= 0)
		close(dfd);
	n = drop_unflushed(a, pf, n);
	int rc = 0;
	if (!n && a->flight) {
		/* A flight session writes only the snapshots asked of it. */
		fprintf(stderr, "katra record: --flight: nothing is written at exit; each process "
				"answered `katra snapshot PID` (or of katra record's pid, all of them) "
				"while it ran\n");
		if (!a->dir_given)
			rmdir(a->dir);
	} else if (!n && lost) {
		say("record: nothing was traced: every process of %s ended before its first write",
		    cmd);
		if (!a->dir_given)
			rmdir(a->dir);
		rc = EXIT_BAD;
	} else if (!n) {
		say("record: nothing was traced: %s wrote no file (is it linked with katra?)", cmd);
		if (!a->dir_given)
			rmdir(a->dir);
		rc = EXIT_BAD;
	} else {
		rc = merge_out(a, pf, n);
	}
	free(pf);
	return rc;
}

static int run(const struct rec_args *a, char **cmd)
{
	char abs[PATH_MAX];
	if (!access(a->out, F_OK)) {
		say("record: %s exists: not replaced", a->out);
		return EXIT_BAD;
	}
	int rc = prepare_dir(a, abs, sizeof(abs));
	if (rc)
		return rc;
	if (set_env(a, abs)) {
		say("record: environment: %s", strerror(errno));
		return EXIT_BAD;
	}
	/* Descendants that outlive CMD come to us, to be waited for. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	catch_signals();
	pid_t pid;
	char log[PATH_MAX];
	if (a->top && ((size_t)snprintf(log, sizeof(log), "%s.log", a->out) >= sizeof(log) ||
		       setenv("KATRA_LIVE", "1", 1))) {
		say("record: --top: %s.log: too long", a->out);
		return EXIT_BAD;
	}
	if ((rc = spawn(cmd, a->top ? log : NULL, &pid))) {
		if (!a->dir_given)
			rmdir(a->dir);
		return rc;
	}
	child_pid = pid;
	if (a->top) {
		top_follow(pid);
		catch_signals(); /* the screen took SIGINT, SIGTERM and SIGHUP */
	}
	int st;
	int orphans = wait_all(pid, &st);
	if (orphans)
		fprintf(stderr, "katra record: %d process%s outlived %s, waited for\n", orphans,
			orphans == 1 ? "" : "es", cmd[0]);
	if (a->root)
		record_join(a->root, a->dir, a->run_id, a->epoch.v);
	rc = record_finish(a, cmd[0]);
	int code = exit_as(st);
	return rc && !code ? rc : code;
}

int cmd_record(int argc, char **argv)
{
	struct rec_args a = { 0 };
	int dash = 1;
	while (dash < argc && strcmp(argv[dash], "--"))
		dash++;
	int rc = opts_parse(&record_spec, dash, argv, &a, NULL);
	if (rc != OPTS_GO)
		return rc;
	if (dash + 1 >= argc)
		return usage_error("record: no command: katra record [options] -- CMD ARGS...");
	char dflt[PATH_MAX];
	if (a.run_id && (!*a.run_id || strlen(a.run_id) > KT_CAPTURE_RUN_ID_MAX))
		return usage_error("record: --run-id wants 1 to %d bytes", KT_CAPTURE_RUN_ID_MAX);
	if (a.root && !a.run_id)
		return usage_error("record: --capture-root goes with --run-id");
	if (a.epoch.given && !a.run_id)
		return usage_error("record: --epoch goes with --run-id");
	if (a.epoch.v > INT64_MAX)
		return usage_error("record: --epoch wants at most %lld", (long long)INT64_MAX);
	if (!a.out)
		a.out = "record.katra";
	a.dir_given = a.dir != NULL;
	if (!a.dir) {
		if ((size_t)snprintf(dflt, sizeof(dflt), "%s.d", a.out) >= sizeof(dflt))
			return usage_error("record: -o %s: too long", a.out);
		a.dir = dflt;
	}
	return run(&a, argv + dash + 1);
}

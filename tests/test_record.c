/*
 * `katra record -- CMD` (issue #30): examples/multiproc run with no
 * session code, its processes' traces; --codec 0 raw, not the default;
 * CMD's exit status passed on (127,
 * 126, a signal); a program's own session under record; SIGINT forwarded;
 * flight snapshots of every process; a killed CMD, an outliving child.
 * Counts are exact: multiproc's parent emits 2 x 100 zones, its worker
 * 2 x EVENTS records, its helper 2 x 1000.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <katra/reader.h>

#define KATRA KT_BIN_DIR "/katra"
#define MULTIPROC KT_BIN_DIR "/examples/multiproc"
#define EVENTS 50000

static char tmp[] = "/tmp/kt_record_XXXXXX";

/* Each test in a directory of its own (not a TestSuite's .init: the
 * TSan build's stand-in for Criterion has none), removed when it passes. */
static void setup(void)
{
	/* Scheduler records (on by default) are events too: the counts
	 * below are the programs' own, so off but where a test says. */
	setenv("KT_SCHED", "0", 1);
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(chdir(tmp), 0);
}

static void teardown(void)
{
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

/* katra ARGS with stderr to err.txt; the pid, not waited for. */
static pid_t start(const char *const *args)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(KATRA, (char *const *)args);
		_exit(99);
	}
	return pid;
}

static int finish(pid_t pid)
{
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static int run(const char *const *args)
{
	int st = finish(start(args));
	cr_assert(WIFEXITED(st), "katra died: %d", st);
	return WEXITSTATUS(st);
}

static int err_has(const char *what)
{
	char buf[16384] = { 0 };
	FILE *f = fopen("err.txt", "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* `katra info @path`'s events, dropped and status complete or not. */
static void info(const char *path, long *events, long *dropped, int *complete)
{
	char cmd[512], line[512];
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	*events = *dropped = -1;
	*complete = 0;
	while (fgets(line, sizeof(line), p)) {
		sscanf(line, "events %ld", events);
		sscanf(line, "dropped %ld", dropped);
		if (!strncmp(line, "status", 6) && strstr(line, "complete"))
			*complete = 1;
	}
	pclose(p);
}

/* The thread name of @path's thread 1 line, as info prints it. */
static int has_thread(const char *path, const char *name)
{
	char cmd[512], line[512];
	int found = 0;
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	while (fgets(line, sizeof(line), p))
		if (!strncmp(line, "  thread", 8) && strstr(line, name))
			found = 1;
	pclose(p);
	return found;
}

Test(record, one_process_file_becomes_out)
{
	setup();
	const char *args[] = { KATRA, "record", "-o", "h.katra", "--", MULTIPROC, "helper", NULL };
	cr_assert_eq(run(args), 0);
	long ev, dr;
	int complete;
	info("h.katra", &ev, &dr, &complete);
	cr_assert_eq(ev, 2000);
	cr_assert_eq(dr, 0);
	cr_assert(complete);
	cr_assert(has_thread("h.katra", "helper"));
	/* OUT.d was made for the run and goes with its one file. */
	cr_assert_neq(access("h.katra.d", F_OK), 0);
	/* OUT is never replaced. */
	cr_assert_eq(run(args), 1);
	cr_assert(err_has("exists"));
	teardown();
}

/* `katra info @path`'s chunks line ("chunks N (R raw, ...)"): its raw
 * count, or -1; *@n the count of every codec. */
static long raw_chunks(const char *path, long *n)
{
	char cmd[512], line[512];
	long raw = -1;
	*n = -1;
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		sscanf(line, "chunks %ld (%ld raw", n, &raw);
	pclose(p);
	return *n > 0 ? raw : -1;
}

/* The one process file of @dir (kept by --keep), into @path. */
static void kept_file(const char *dir, char *path, size_t cap)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	struct dirent *e;
	path[0] = 0;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".katra"))
			snprintf(path, cap, "%.64s/%.255s", dir, e->d_name);
	closedir(d);
	cr_assert_neq(path[0], 0, "no process file in %s", dir);
}

/* --codec 0 is KT_CODEC_NONE, passed on as given (KT_RECORD_CODEC=0 and
 * KT_GIVEN_CODEC), not taken for "no --codec": the process's own file
 * (kept; OUT is the merge's, in its own codec) has raw chunks; without
 * --codec, the default's (compact), none raw. */
/* `katra info @path`'s threads named "katra.sched ..." (scheduler
 * streams) and the header's flags line has sched or not. */
static int sched_streams(const char *path)
{
	char cmd[512], line[512];
	int n = 0;
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	while (fgets(line, sizeof(line), p))
		n += !strncmp(line, "  thread", 8) && strstr(line, "katra.sched") != NULL;
	pclose(p);
	return n;
}

/* Scheduler records on by default (issue #31): the helper's thread is
 * followed, its stream in the trace and the header saying so; none, and
 * not asked, with --no-sched. */
Test(record, sched_on_by_default_and_off_with_no_sched)
{
	setup();
	unsetenv("KT_SCHED");
	const char *on[] = { KATRA, "record", "-o", "on.katra", "--", MULTIPROC, "helper", NULL };
	const char *off[] = { KATRA, "record", "--no-sched", "-o", "off.katra", "--", MULTIPROC,
			      "helper", NULL };
	cr_assert_eq(run(on), 0);
	cr_assert_eq(run(off), 0);
	kt_reader *r;
	cr_assert_eq(kt_reader_open("on.katra", NULL, &r), 0);
	uint32_t flags = kt_reader_get_header(r)->flags;
	kt_reader_close(r);
	cr_assert_eq(flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), KT_HDR_SCHED,
		     "followed (perf_event_open allowed here, paranoid 2)");
	cr_assert_geq(sched_streams("on.katra"), 1);
	cr_assert_eq(kt_reader_open("off.katra", NULL, &r), 0);
	flags = kt_reader_get_header(r)->flags;
	kt_reader_close(r);
	cr_assert_eq(flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), 0);
	cr_assert_eq(sched_streams("off.katra"), 0);
	teardown();
}

Test(record, codec_zero_is_raw_not_the_default)
{
	setup();
	const char *raw[] = { KATRA, "record", "-o", "r.katra", "--keep", "--codec", "0", "--",
			      MULTIPROC, "helper", NULL };
	cr_assert_eq(run(raw), 0);
	char path[512];
	long n;
	kept_file("r.katra.d", path, sizeof(path));
	cr_assert_eq(raw_chunks(path, &n), n);
	cr_assert_gt(n, 0);
	const char *dflt[] = { KATRA, "record", "-o", "d.katra", "--keep", "--", MULTIPROC,
			       "helper", NULL };
	cr_assert_eq(run(dflt), 0);
	kept_file("d.katra.d", path, sizeof(path));
	cr_assert_eq(raw_chunks(path, &n), 0);
	cr_assert_gt(n, 0);
	teardown();
}

Test(record, exit_status_as_a_shell)
{
	setup();
	const char *a[] = { KATRA, "record", "-o", "a.katra", "--", "sh", "-c", "exit 7", NULL };
	cr_assert_eq(run(a), 7);
	cr_assert(err_has("nothing was traced"));
	cr_assert_neq(access("a.katra", F_OK), 0);
	const char *b[] = { KATRA, "record", "-o", "b.katra", "--", "no-such-command-kt", NULL };
	cr_assert_eq(run(b), 127);
	int fd = open("plain", O_WRONLY | O_CREAT, 0644);
	close(fd);
	const char *c[] = { KATRA, "record", "-o", "c.katra", "--", "./plain", NULL };
	cr_assert_eq(run(c), 126);
	/* katra itself, run by a recorded script, is not recorded. */
	const char *k[] = { KATRA, "record", "-o", "k.katra", "--", KATRA, "--help", NULL };
	cr_assert_eq(run(k), 1);
	cr_assert(err_has("nothing was traced"));
	const char *d[] = { KATRA, "record", "-o", "d.katra", "--", "sh", "-c", "kill -TERM $$",
			    NULL };
	int st = finish(start(d));
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
	teardown();
}

Test(record, unwritable_dir_said_before_cmd)
{
	setup();
	const char *a[] = { KATRA, "record", "-o", "a.katra", "--dir", "/proc/kt-no", "--",
			    "touch", "ran", NULL };
	cr_assert_eq(run(a), 1);
	cr_assert(err_has("capture directory"));
	cr_assert_neq(access("ran", F_OK), 0, "CMD ran");
	teardown();
}

/* Each process's file in DIR: the parent, the worker, the helper whole;
 * every event of theirs written (none dropped). */
Test(record, multiproc_every_process_a_file)
{
	setup();
	const char *a[] = { KATRA, "record", "-o", "m.katra", "--keep", "--", MULTIPROC,
			    "--events", "50000", NULL };
	cr_assert_eq(run(a), 0);
	DIR *d = opendir("m.katra.d");
	cr_assert_not_null(d);
	struct dirent *e;
	int parent = 0, worker = 0, helper = 0, doomed = 0;
	while ((e = readdir(d))) {
		char path[512];
		long ev, dr;
		int complete;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "m.katra.d/%s", e->d_name);
		info(path, &ev, &dr, &complete);
		if (has_thread(path, "parent")) {
			parent++;
			cr_assert(complete && ev == 400 && dr == 0, "parent %ld %ld", ev, dr);
		} else if (has_thread(path, "worker")) {
			worker++;
			cr_assert(complete && ev == 2 * EVENTS && dr == 0, "worker %ld %ld", ev, dr);
		} else if (has_thread(path, "helper")) {
			helper++;
			cr_assert(complete && ev == 2000 && dr == 0, "helper %ld %ld", ev, dr);
		} else {
			/* The killed worker's, cut short; nothing else: the
			 * helper's pre-exec file held nothing and went. */
			cr_assert(!complete && ev > 0, "%s: %ld events", path, ev);
			cr_assert_eq(++doomed, 1);
		}
	}
	closedir(d);
	cr_assert_eq(parent, 1);
	cr_assert_eq(worker, 1);
	/* katra record says each process's account. */
	cr_assert(err_has("parent           "));
	cr_assert(err_has(": 400 events, 0 dropped, complete"));
	cr_assert(err_has(": 100000 events, 0 dropped, complete"));
	cr_assert(err_has(": 2000 events, 0 dropped, complete"));
	cr_assert_eq(helper, 1);
	teardown();
}

/* The program's own session wins: its file holds the parent's events;
 * its fork()ed workers stay silent (the parent's trace protected); the
 * helper it execs is recorded through the environment. */
Test(record, own_session_wins)
{
	setup();
	char own[600];
	snprintf(own, sizeof(own), "%s/own.katra", tmp);
	const char *a[] = { KATRA, "record", "-o", "o.katra", "--keep", "--", MULTIPROC,
			    "--own", own, NULL };
	int rc = run(a);
	char said[2048] = { 0 };
	FILE *f = fopen("err.txt", "r");
	if (f) {
		said[fread(said, 1, sizeof(said) - 1, f)] = 0;
		fclose(f);
	}
	cr_assert_eq(rc, 0, "katra record exited %d; it said: %s", rc, said);
	long ev, dr;
	int complete;
	info("own.katra", &ev, &dr, &complete);
	cr_assert(complete && ev == 400, "own %ld", ev);
	DIR *d = opendir("o.katra.d");
	cr_assert_not_null(d);
	struct dirent *e;
	int helper = 0, workers = 0;
	while ((e = readdir(d))) {
		char path[512];
		snprintf(path, sizeof(path), "o.katra.d/%s", e->d_name);
		helper += has_thread(path, "helper");
		workers += has_thread(path, "worker") + has_thread(path, "doomed");
	}
	closedir(d);
	cr_assert_eq(helper, 1);
	cr_assert_eq(workers, 0);
	teardown();
}

/* SIGINT to katra record reaches CMD, which stops; the trace is written. */
Test(record, sigint_forwarded)
{
	setup();
	const char *a[] = { KATRA, "record", "-o", "s.katra", "--", MULTIPROC, "--until-signal",
			    NULL };
	pid_t pid = start(a);
	/* CMD is running and traced once its file is there. */
	for (int i = 0; i < 2000; i++) {
		DIR *d = opendir("s.katra.d");
		struct dirent *e;
		int seen = 0;
		while (d && (e = readdir(d)))
			seen |= e->d_name[0] != '.';
		if (d)
			closedir(d);
		if (seen)
			break;
		usleep(10000);
	}
	usleep(100000);
	cr_assert_eq(kill(pid, SIGINT), 0);
	int st = finish(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	long ev, dr;
	int complete;
	info("s.katra", &ev, &dr, &complete);
	cr_assert(complete, "s.katra not complete");
	cr_assert_gt(ev, 0);
	cr_assert_eq(ev % 2, 0); /* whole zones: the loop ended between them */
	teardown();
}

/* What one process of a merged trace holds. */
struct proc_seen {
	uint64_t pid;
	uint32_t flags, threads;
	char thread[32];       /* its thread's name */
	char name[32];         /* its process entry's name */
	uint64_t written, dropped;
};

/* The processes of @path (at most 8), each with its threads' rows of the
 * summary added up; returns how many. */
static int processes_of(const char *path, struct proc_seen *ps)
{
	kt_reader *r;
	kt_trace_frame f;
	uint32_t proc_of[64] = { 0 };
	int n = 0;
	memset(ps, 0, 8 * sizeof(*ps));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (p) {
			cr_assert(p->id >= 1 && p->id <= 8, "process id %u", p->id);
			ps[p->id - 1].pid = p->pid;
			ps[p->id - 1].flags = p->flags;
			snprintf(ps[p->id - 1].name, sizeof(ps[p->id - 1].name), "%.*s",
				 (int)p->name_len, p->name);
			n = p->id > (uint32_t)n ? (int)p->id : n;
		} else if (f.kind == KT_FRAME_THREAD) {
			uint32_t t = f.u.thread.thread_id, pr = f.u.thread.process;
			cr_assert(t < 64 && pr >= 1 && pr <= 8, "thread %u of %u", t, pr);
			proc_of[t] = pr;
			ps[pr - 1].threads++;
			snprintf(ps[pr - 1].thread, sizeof(ps[pr - 1].thread), "%s", f.u.thread.name);
		} else if (f.kind == KT_FRAME_SUMMARY) {
			for (uint32_t i = 0; i < f.u.summary.thread_count; i++) {
				const kt_summary_thread *row = &f.u.summary.threads[i];
				cr_assert(row->thread_id < 64 && proc_of[row->thread_id]);
				ps[proc_of[row->thread_id] - 1].written += row->written;
				ps[proc_of[row->thread_id] - 1].dropped += row->dropped;
			}
		}
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete && !st.error);
	kt_reader_close(r);
	return n;
}

/* A track descriptor as protoc printed it. */
struct desc {
	unsigned long long uuid, parent, pid;
	int process, thread;
	char name[32];
};

/* The track descriptors of `katra export --perfetto @katra`, decoded by
 * protoc against the checked-in tools/export/perfetto_trace.proto; how
 * many (at most @cap). */
static int perfetto_descs(const char *katra, struct desc *d, int cap)
{
	char cmd[1024], line[512];
	snprintf(cmd, sizeof(cmd), "%s export --perfetto %s m.pftrace 2>/dev/null && protoc "
		 "--decode=perfetto.protos.Trace --proto_path=%s/tools/export perfetto_trace.proto "
		 "< m.pftrace", KATRA, katra, KT_SRC_DIR);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	int n = 0, depth = 0, in = 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = line + strspn(line, " ");
		if (strstr(s, "{"))
			depth++;
		if (!strncmp(s, "track_descriptor {", 18) && n < cap) {
			memset(&d[n], 0, sizeof(d[n]));
			in = depth;
		}
		if (in) {
			sscanf(s, "uuid: %llu", &d[n].uuid);
			sscanf(s, "parent_uuid: %llu", &d[n].parent);
			sscanf(s, "pid: %llu", &d[n].pid);
			sscanf(s, "thread_name: \"%31[^\"]", d[n].name);
			d[n].process |= !strncmp(s, "process {", 9);
			d[n].thread |= !strncmp(s, "thread {", 8);
		}
		if (s[0] == '}' && depth-- == in && in) {
			in = 0;
			n++;
		}
	}
	cr_assert_eq(pclose(p), 0);
	return n;
}

/*
 * Issue #30's second must-show: the Perfetto export of multiproc's trace,
 * decoded by protoc, has a process descriptor per process (@ps's four
 * pids) and each thread's descriptor under its own process (its parent
 * uuid the descriptor of its pid).  Without the process entries every
 * thread sat under the one process of the header's pid.
 */
static void perfetto_has_processes(const char *katra, const struct proc_seen *ps)
{
	struct desc d[64];
	int n = perfetto_descs(katra, d, 64), procs = 0, threads = 0;
	for (int i = 0; i < n; i++) {
		if (d[i].process) {
			procs++;
			int known = 0;
			for (int k = 0; k < 4; k++)
				known += d[i].pid == ps[k].pid;
			cr_assert_eq(known, 1, "process descriptor of pid %llu", d[i].pid);
		}
		if (!d[i].thread)
			continue;
		threads++;
		int under = 0;
		for (int k = 0; k < n; k++)
			under += d[k].process && d[k].uuid == d[i].parent && d[k].pid == d[i].pid;
		cr_assert_eq(under, 1, "thread %s (pid %llu) not under its process", d[i].name,
			     d[i].pid);
		for (int k = 0; k < 4; k++)
			if (!strcmp(ps[k].thread, d[i].name))
				cr_assert_eq(d[i].pid, ps[k].pid, "thread %s", d[i].name);
	}
	cr_assert_eq(procs, 4);
	cr_assert_eq(threads, 4);
}

/*
 * Issue #30's first must-show: multiproc under katra record with crash
 * files gives one trace that katra verify passes, holding four processes,
 * each thread under its process; the three survivors' every event
 * accounted for (emitted == written + dropped: 400, 2 x EVENTS, 2000);
 * the killed worker rebuilt from its crash files (flag recovered, events
 * kept).  Without the merge OUT would not exist; without the recovery
 * the doomed process would be cut short (no KT_PROCESS_RECOVERED).
 */
Test(record, multiproc_one_trace_of_four_processes)
{
	setup();
	cr_assert_eq(mkdir("crash", 0700), 0);
	char crash[600];
	snprintf(crash, sizeof(crash), "%s/crash", tmp);
	const char *a[] = { KATRA, "record", "-o", "m.katra", "--crash-dir", crash, "--",
			    MULTIPROC, "--events", "50000", NULL };
	cr_assert_eq(run(a), 0);
	cr_assert(err_has("4 processes traced into m.katra"));
	cr_assert(err_has("recovered from its crash files"));
	const char *v[] = { KATRA, "verify", "m.katra", NULL };
	cr_assert_eq(run(v), 0);
	struct proc_seen ps[8];
	cr_assert_eq(processes_of("m.katra", ps), 4);
	int parent = 0, worker = 0, helper = 0, doomed = 0;
	uint64_t doomed_pid = 0;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(ps[i].threads, 1, "process %d: %u threads", i + 1, ps[i].threads);
		/* The helper too, exec'd through /proc/self/exe (comm "exe"). */
		cr_assert_str_eq(ps[i].name, "multiproc", "process %d", i + 1);
		uint64_t all = ps[i].written + ps[i].dropped;
		if (!strcmp(ps[i].thread, "parent")) {
			parent++;
			cr_assert(all == 400 && ps[i].flags == KT_PROCESS_COMPLETE, "%llu",
				  (unsigned long long)all);
		} else if (!strcmp(ps[i].thread, "worker")) {
			worker++;
			cr_assert(all == 2 * EVENTS && ps[i].flags == KT_PROCESS_COMPLETE);
		} else if (!strcmp(ps[i].thread, "helper")) {
			helper++;
			cr_assert(all == 2000 && ps[i].flags == KT_PROCESS_COMPLETE);
		} else {
			doomed++;
			doomed_pid = ps[i].pid;
			cr_assert_str_eq(ps[i].thread, "doomed");
			cr_assert(ps[i].flags & KT_PROCESS_RECOVERED, "flags %u", ps[i].flags);
			cr_assert_gt(ps[i].written, 1000);
		}
	}
	cr_assert(parent == 1 && worker == 1 && helper == 1 && doomed == 1);
	/* The crash directory keeps the killed worker's only: the helper's
	 * pre-exec fork child made one that held nothing, and it went. */
	DIR *d = opendir("crash");
	cr_assert_not_null(d);
	struct dirent *e;
	int dirs = 0;
	char kept[64];
	snprintf(kept, sizeof(kept), "katra-%llu", (unsigned long long)doomed_pid);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			dirs++;
			cr_assert_str_eq(e->d_name, kept);
		}
	closedir(d);
	cr_assert_eq(dirs, 1);
	perfetto_has_processes("m.katra", ps);
	/* The processes' files went with the merge. */
	cr_assert_neq(access("m.katra.d", F_OK), 0);
	teardown();
}

/* The first child of @pid (0 while it has none). */
static pid_t child_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	int child = 0;
	if (f) {
		if (fscanf(f, "%d", &child) != 1)
			child = 0;
		fclose(f);
	}
	return child;
}

/* The process descriptors of `katra export --perfetto @katra`, decoded by
 * protoc: "PID NAME;" each, into @out. */
static void perfetto_processes(const char *katra, char *out, size_t size)
{
	char cmd[1024], line[512], name[64] = "";
	snprintf(cmd, sizeof(cmd), "%s export --perfetto %s p.pftrace 2>/dev/null && protoc "
		 "--decode=perfetto.protos.Trace --proto_path=%s/tools/export perfetto_trace.proto "
		 "< p.pftrace", KATRA, katra, KT_SRC_DIR);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	unsigned long long pid = 0;
	int in = 0;
	size_t at = 0;
	out[0] = 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = line + strspn(line, " ");
		if (!strncmp(s, "process {", 9))
			in = 1, pid = 0, name[0] = 0;
		else if (in && sscanf(s, "pid: %llu", &pid) == 1)
			continue;
		else if (in && sscanf(s, "process_name: \"%63[^\"]", name) == 1)
			continue;
		else if (in && s[0] == '}' && at < size)
			in = 0, at += (size_t)snprintf(out + at, size - at, "%llu %s;", pid, name);
	}
	cr_assert_eq(pclose(p), 0);
}

/*
 * A flight snapshot says whose it is (SPEC §4.10): `katra snapshot PID`
 * of multiproc under `katra record --flight` holds one process entry, id
 * 0, of multiproc's pid and name, and its Perfetto export (protoc), its
 * Chrome and its FXT export name the process by it: without the entry
 * they said "katra trace".
 */
Test(record, flight_snapshot_names_its_process)
{
	setup();
	const char *a[] = { KATRA, "record", "--flight", "-o", "f.katra", "--", MULTIPROC,
			    "--until-signal", NULL };
	pid_t pid = start(a), cmd = 0;
	for (int i = 0; i < 500 && !(cmd = child_of(pid)); i++)
		usleep(10000);
	cr_assert_gt(cmd, 0);
	char arg[32];
	snprintf(arg, sizeof(arg), "%d", (int)cmd);
	const char *s[] = { KATRA, "snapshot", arg, "--out", "snap.katra", NULL };
	int rc = 1;
	for (int i = 0; i < 500 && (rc = run(s)); i++) /* until its session listens */
		usleep(10000);
	cr_assert_eq(rc, 0);
	kt_reader *r;
	kt_trace_frame f;
	int entries = 0;
	cr_assert_eq(kt_reader_open("snap.katra", NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (!p)
			continue;
		entries++;
		cr_assert(p->id == 0 && p->pid == (uint64_t)cmd && p->parent_pid == (uint64_t)pid,
			  "entry %u: pid %llu parent %llu", p->id, (unsigned long long)p->pid,
			  (unsigned long long)p->parent_pid);
		cr_assert_str_eq(p->name, "multiproc");
	}
	kt_reader_close(r);
	cr_assert_eq(entries, 1);
	char got[256], want[64];
	perfetto_processes("snap.katra", got, sizeof(got));
	snprintf(want, sizeof(want), "%d multiproc;", (int)cmd);
	cr_assert_str_eq(got, want);
	/* Chrome's process_name and FXT's process koid name it too. */
	char ex[256];
	snprintf(ex, sizeof(ex), "%s export --chrome snap.katra c.json 2>/dev/null && grep -q "
		 "'{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":"
		 "\"multiproc\"}}' c.json", KATRA, (int)cmd);
	cr_assert_eq(system(ex), 0, "%s", ex);
	snprintf(ex, sizeof(ex), "%s export --fxt snap.katra s.fxt 2>/dev/null && grep -q "
		 "multiproc s.fxt", KATRA);
	cr_assert_eq(system(ex), 0, "%s", ex);
	cr_assert_eq(kill(pid, SIGINT), 0);
	int st = finish(pid);
	cr_assert(WIFEXITED(st), "status %d", st);
	teardown();
}

/* `katra snapshot @pid --out @out` until @out holds @want processes (the
 * processes start their sessions as they load and fork); how many the
 * last one held. */
static int snapshot_until(pid_t pid, const char *out, int want, struct proc_seen *ps)
{
	char word[32];
	snprintf(word, sizeof(word), "%d", (int)pid);
	const char *a[] = { KATRA, "snapshot", word, "--out", out, NULL };
	const char *all[] = { KATRA, "snapshot", "--all", "--out", out, NULL };
	int n = 0;
	for (int i = 0; i < 500 && n < want; i++) {
		unlink(out);
		pid_t s = fork();
		cr_assert_geq(s, 0);
		if (s == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 1);
			dup2(null, 2);
			execv(KATRA, (char *const *)(pid ? a : all));
			_exit(99);
		}
		int st;
		cr_assert_eq(waitpid(s, &st, 0), s);
		n = !(WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : pid ? processes_of(out, ps) : want;
		/* A process not yet past its first emit holds no named thread:
		 * asked again. */
		for (int k = 0; pid && k < n && k < 8; k++)
			if (!ps[k].written || !ps[k].thread[0])
				n = 0;
		if (n < want)
			usleep(10000);
	}
	return n;
}

/*
 * Issue #30's flight mode across processes: under katra record --flight
 * every process runs a flight session; `katra snapshot PID` of katra
 * record's own pid (which has none) asks each process under it and
 * merges their windows into one trace: multiproc --pair's parent and
 * child, each a process with events.  --all asks every listening process
 * of ours, these two among them.  Without it, PID has no socket and the
 * snapshot fails.
 */
Test(record, flight_snapshot_of_every_process)
{
	setup();
	const char *a[] = { KATRA, "record", "--flight", "-o", "f.katra", "--", MULTIPROC, "--pair",
			    NULL };
	pid_t pid = start(a);
	struct proc_seen ps[8];
	cr_assert_eq(snapshot_until(pid, "s.katra", 2, ps), 2);
	/* One of each, in either order (by pid). */
	int parent = !strcmp(ps[0].thread, "pair_parent") ? 0 : 1;
	cr_assert_str_eq(ps[parent].thread, "pair_parent");
	cr_assert_str_eq(ps[1 - parent].thread, "pair_child");
	for (int i = 0; i < 2; i++) {
		cr_assert_gt(ps[i].written, 0, "%s", ps[i].thread);
		cr_assert_eq(ps[i].threads, 1);
	}
	const char *v[] = { KATRA, "verify", "s.katra", NULL };
	cr_assert_eq(run(v), 0);
	/* --all: other listening processes of ours may be there too (any
	 * number: katra info, not processes_of()). */
	cr_assert_eq(snapshot_until(0, "all.katra", 1, NULL), 1);
	char cmd[600], line[512];
	snprintf(cmd, sizeof(cmd), "%s info all.katra", KATRA);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	int ours = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long id, got;
		if (sscanf(line, "  process %llu pid %llu", &id, &got) == 2)
			ours += got == ps[0].pid || got == ps[1].pid;
	}
	pclose(p);
	cr_assert_eq(ours, 2, "--all: %d of ours", ours);
	cr_assert_eq(kill(pid, SIGINT), 0);
	int st = finish(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	teardown();
}

/*
 * What goes wrong is said (issue #30): a traced CMD killed by a signal
 * still leaves the trace (its child's 2000 events), and katra record
 * dies of the same signal; a child that outlives CMD (started in the
 * background, still running when CMD exits 3) is waited for, said, and
 * its events are in the trace; katra record exits 3, as CMD did.
 */
Test(record, killed_cmd_and_outliving_child)
{
	setup();
	char sh[600];
	snprintf(sh, sizeof(sh), "%s helper; kill -TERM $$", MULTIPROC);
	const char *a[] = { KATRA, "record", "-o", "k.katra", "--", "sh", "-c", sh, NULL };
	int st = finish(start(a));
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
	long ev, dr;
	int complete;
	info("k.katra", &ev, &dr, &complete);
	cr_assert(complete && ev == 2000 && dr == 0, "%ld %ld", ev, dr);
	snprintf(sh, sizeof(sh), "(sleep 0.2; %s helper) & exit 3", MULTIPROC);
	const char *b[] = { KATRA, "record", "-o", "o.katra", "--", "sh", "-c", sh, NULL };
	cr_assert_eq(run(b), 3);
	cr_assert(err_has("1 process outlived sh, waited for"));
	info("o.katra", &ev, &dr, &complete);
	cr_assert(complete && ev == 2000 && dr == 0, "%ld %ld", ev, dr);
	teardown();
}

/* The run @path's header names: its run id into @run (or ""), its epoch. */
static uint64_t run_of(const char *path, char *run, size_t cap)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0, "%s", path);
	const kt_header *h = kt_reader_get_header(r);
	int named = (h->flags & KT_HDR_CAPTURE) && h->run_id;
	snprintf(run, cap, "%s", named ? h->run_id : "");
	uint64_t epoch = h->epoch;
	kt_reader_close(r);
	return epoch;
}

/*
 * The capture manager across processes, its first part: the run id and
 * epoch reach every process through the environment (katra record
 * --run-id, --epoch: KT_RUN_ID, KT_EPOCH), so each process's file - the
 * parent's, its fork()ed workers', the exec'd helper's - names run
 * bench-42 epoch 7 in its header, and so does OUT, the merge of them all.
 * Without --run-id none names a run.
 */
Test(record, run_id_and_epoch_reach_every_process)
{
	setup();
	const char *a[] = { KATRA, "record", "--run-id", "bench-42", "--epoch", "7", "--keep",
			    "-o", "r.katra", "--", MULTIPROC, "--events", "1000", NULL };
	cr_assert_eq(run(a), 0);
	char run_id[160], path[512];
	cr_assert_eq(run_of("r.katra", run_id, sizeof(run_id)), 7);
	cr_assert_str_eq(run_id, "bench-42");
	DIR *d = opendir("r.katra.d");
	cr_assert_not_null(d);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "r.katra.d/%.255s", e->d_name);
			cr_assert_eq(run_of(path, run_id, sizeof(run_id)), 7, "%s", path);
			cr_assert_str_eq(run_id, "bench-42", "%s", path);
			files++;
		}
	closedir(d);
	cr_assert_eq(files, 4); /* parent, worker, doomed, helper */
	const char *b[] = { KATRA, "record", "-o", "n.katra", "--", MULTIPROC, "helper", NULL };
	cr_assert_eq(run(b), 0);
	run_of("n.katra", run_id, sizeof(run_id));
	cr_assert_str_eq(run_id, "");
	const char *c[] = { KATRA, "record", "--epoch", "3", "--", MULTIPROC, "helper", NULL };
	cr_assert_eq(run(c), 2);
	teardown();
}

/*
 * The capture manager across processes: multiproc --capture is a harness
 * whose capture manager publishes run r1 epoch 3 in ROOT, its worker
 * fork()ed during the run.  Under katra record --run-id r1 --epoch 3
 * --capture-root ROOT the worker records a file of its own (a child of a
 * session of the environment's run), and at the end the capture holds
 * both processes, trimmed to its window: the harness's 400 events and
 * the worker's 2000, one trace that katra verify passes with its sidecar,
 * which lists them (pid, parent, name, events).  Without the join the
 * capture holds the harness alone and its sidecar no processes.
 */
Test(record, capture_joined_by_the_runs_processes)
{
	setup();
	cr_assert_eq(mkdir("root", 0755), 0);
	char root[600];
	snprintf(root, sizeof(root), "%s/root", tmp);
	const char *a[] = { KATRA, "record", "--run-id", "r1", "--epoch", "3", "--capture-root",
			    root, "-o", "r.katra", "--", MULTIPROC, "--capture", root, NULL };
	cr_assert_eq(run(a), 0);
	cr_assert(err_has("now holds 2 processes"));
	DIR *d = opendir("root");
	cr_assert_not_null(d);
	struct dirent *e;
	char trace[300] = "", side[300] = "";
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 11 && !strcmp(e->d_name + n - 11, ".katra.json"))
			snprintf(side, sizeof(side), "root/%.255s", e->d_name);
		else if (n > 6 && !strcmp(e->d_name + n - 6, ".katra"))
			snprintf(trace, sizeof(trace), "root/%.255s", e->d_name);
	}
	closedir(d);
	cr_assert(trace[0] && side[0] && !strncmp(trace, "root/r1.3.", 10), "%s", trace);
	const char *v[] = { KATRA, "verify", trace, NULL };
	cr_assert_eq(run(v), 0);
	struct proc_seen ps[8];
	cr_assert_eq(processes_of(trace, ps), 2);
	cr_assert_str_eq(ps[0].thread, "harness");
	cr_assert_eq(ps[0].written, 400);
	cr_assert_str_eq(ps[1].thread, "run_worker");
	cr_assert_eq(ps[1].written, 2000);
	char run_id[160];
	cr_assert_eq(run_of(trace, run_id, sizeof(run_id)), 3);
	cr_assert_str_eq(run_id, "r1");
	json_t *o = json_load_file(side, 0, NULL), *list = json_object_get(o, "processes");
	cr_assert_eq(json_array_size(list), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *p = json_array_get(list, i);
		cr_assert_eq((uint64_t)json_integer_value(json_object_get(p, "pid")), ps[i].pid);
		cr_assert_eq(json_integer_value(json_object_get(p, "events")), i ? 2000 : 400);
		cr_assert_str_eq(json_string_value(json_object_get(p, "name")), "multiproc");
	}
	cr_assert_eq((uint64_t)json_integer_value(
			     json_object_get(json_array_get(list, 1), "parent")),
		     ps[0].pid);
	json_decref(o);
	teardown();
}

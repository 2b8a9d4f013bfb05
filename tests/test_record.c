/*
 * `katra record -- CMD` (issue #30): examples/multiproc run with no
 * session code, its processes' traces; --codec 0 raw, not the default;
 * CMD's exit status passed on (127,
 * 126, a signal); a program's own session under record; SIGINT forwarded
 * (test_record_run.c has the rest).
 * Counts are exact: multiproc's parent emits 2 x 100 zones, its worker
 * 2 x EVENTS records, its helper 2 x 1000.
 */
#include "record_util.h"

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
	/* The crash directory is left empty: the killed worker's went once
	 * OUT held it (rebuilt, as its flags say), and the helper's pre-exec
	 * fork child's, which held nothing, went too. */
	DIR *d = opendir("crash");
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_assert(e->d_name[0] == '.', "%s stayed (the doomed worker was %llu)", e->d_name,
			  (unsigned long long)doomed_pid);
	closedir(d);
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

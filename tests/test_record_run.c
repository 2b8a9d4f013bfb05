/*
 * `katra record` across processes (issue #30), the rest of test_record.c:
 * `katra snapshot` of every process under `katra record --flight`; a
 * killed CMD and a child that outlives it; the run id and epoch in every
 * process's file; a harness's capture joined by its run's processes.
 */
#include <errno.h>
#include <time.h>

#include "record_util.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "flush/flush.h"

/* Flight sessions of this test listen in a runtime directory of its own
 * ($XDG_RUNTIME_DIR, inherited by katra and the programs it runs), so
 * `katra snapshot --all` asks this test's processes and no others (other
 * tests', a desktop session's). */
static void private_runtime(void)
{
	char rt[600];
	snprintf(rt, sizeof(rt), "%s/rt", tmp);
	cr_assert_eq(mkdir(rt, 0700), 0);
	cr_assert_eq(setenv("XDG_RUNTIME_DIR", rt, 1), 0);
}

/* `katra snapshot @pid --out @out` until @out holds @want processes (the
 * processes start their sessions as they load and fork); how many the
 * last one held. */
static int snapshot_until(pid_t pid, const char *out, int want, struct proc_seen *ps)
{
	char word[32];
	snprintf(word, sizeof(word), "%d", (int)pid);
	/* A process that never answers (never_answers) is given up in 0.3 s. */
	const char *a[] = { KATRA, "snapshot", word, "--out", out, "--timeout", "300000000", NULL };
	const char *all[] = { KATRA, "snapshot", "--all", "--out", out, "--timeout", "300000000",
			      NULL };
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
 * of ours: in this test's own runtime directory, these two and no other.
 * Without it, PID has no socket and the snapshot fails.
 */
Test(record, flight_snapshot_of_every_process)
{
	setup();
	private_runtime();
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
	/* --all: the two, and nothing else listens here. */
	struct proc_seen all[8];
	cr_assert_eq(snapshot_until(0, "all.katra", 1, NULL), 1);
	cr_assert_eq(processes_of("all.katra", all), 2);
	cr_assert(all[0].pid + all[1].pid == ps[0].pid + ps[1].pid &&
		  (all[0].pid == ps[0].pid || all[0].pid == ps[1].pid));
	cr_assert_eq(kill(pid, SIGINT), 0);
	int st = finish(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	teardown();
}

/* A child of this test that runs @body, which writes a byte to its
 * argument once it is ready and never returns; it dies with the test
 * (a failed assertion leaves none behind).  Its pid, once it is ready. */
static pid_t ready_child(void (*body)(int ready))
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		body(ready[1]);
		_exit(1);
	}
	char c;
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

/* Listen on this process's socket and take every connection, never
 * answering. */
static void never_answers(int ready)
{
	struct sockaddr_un a;
	char name[64];
	int dir = kt__control_dir(), fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (dir < 0 || fd < 0 || kt__control_name(getpid(), name, sizeof(name)))
		return;
	int len = kt__control_at(dir, name, &a);
	if (len < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)len) || listen(fd, 8) ||
	    write(ready, "r", 1) != 1)
		return;
	for (;;)
		accept(fd, NULL, NULL); /* kept open, never read */
}

/* A process that listens on its socket and takes every connection but
 * never answers: its pid, once it listens. */
static pid_t fake_listener(void)
{
	return ready_child(never_answers);
}

/*
 * A process that took the connection and never answers is given up once
 * --timeout passes (30 s by default), said by its pid; --all goes on to
 * the others (multiproc --pair's two under katra record --flight).
 * Before the timeout katra snapshot waited in recvmsg() for ever: the
 * alarm fails the test then.
 */
Test(record, snapshot_gives_up_on_a_process_that_never_answers)
{
	setup();
	private_runtime();
	alarm(120);
	pid_t fake = fake_listener();
	char word[32], want[128];
	snprintf(word, sizeof(word), "%d", (int)fake);
	const char *a[] = { KATRA, "snapshot", word, "--timeout", "300000000", "--out", "x.katra",
			    NULL };
	cr_assert_eq(run(a), 1);
	snprintf(want, sizeof(want), "katra snapshot: process %d did not answer in 0.3 s: given up",
		 (int)fake);
	cr_assert(err_has(want));
	cr_assert_eq(access("x.katra", F_OK), -1);
	const char *r[] = { KATRA, "record", "--flight", "-o", "f.katra", "--", MULTIPROC, "--pair",
			    NULL };
	pid_t rec = start(r);
	struct proc_seen ps[8];
	cr_assert_eq(snapshot_until(0, "all.katra", 1, NULL), 1);
	int n = processes_of("all.katra", ps);
	for (int i = 0; i < n; i++)
		cr_assert_neq(ps[i].pid, (uint64_t)fake);
	cr_assert_geq(n, 1);
	const char *all[] = { KATRA, "snapshot", "--all", "--timeout", "300000000", "--out",
			      "all2.katra", NULL };
	cr_assert_eq(run(all), 0);
	snprintf(want, sizeof(want), "katra snapshot: process %d did not answer: left out",
		 (int)fake);
	cr_assert(err_has(want));
	cr_assert_eq(kill(rec, SIGINT), 0);
	finish(rec);
	kill(fake, SIGKILL);
	finish(fake);
	alarm(0);
	teardown();
}

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A flight session that listens, its counter "mono_ms" set to
 * CLOCK_MONOTONIC's milliseconds every 1 ms: a window's newest value says
 * when it was taken. */
static void counts_ms(int ready)
{
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .listen = 1 };
	kt_session *s;
	if (kt_session_start(NULL, &o, &s))
		return;
	uint32_t id = kt_name("mono_ms");
	kt_counter(id, mono_ms());
	if (write(ready, "r", 1) != 1)
		return;
	for (;;) {
		kt_counter(id, mono_ms());
		usleep(1000);
	}
}

/* A process of this test's own running counts_ms(): its pid, once it
 * listens. */
static pid_t clock_emitter(void)
{
	return ready_child(counts_ms);
}

/* The newest i64 counter value in @path. */
static int64_t newest_counter(const char *path)
{
	kt_reader *r;
	kt_event ev;
	kt_value v;
	int64_t max = -1;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next(r, &ev) == 1)
		if (kt_event_get_value(&ev, &v) && v.kind == KT_VALUE_I64 && v.i64 > max)
			max = v.i64;
	kt_reader_close(r);
	return max;
}

/*
 * --all sends every process its request before it reads any answer, so
 * the windows end together: a process that never answers, asked first
 * (the lower pid), holds no other's window back.  Asked in turn, the
 * clock emitter's window ended once the fake's 3 s timeout had passed.
 */
Test(record, snapshot_all_asks_every_process_at_once)
{
	setup();
	private_runtime();
	alarm(120);
	pid_t fake = fake_listener(), em = clock_emitter();
	cr_assert_lt(fake, em, "pids wrapped between the two forks: run again");
	int64_t t0 = mono_ms();
	const char *all[] = { KATRA, "snapshot", "--all", "--timeout", "3000000000", "--out",
			      "at.katra", NULL };
	cr_assert_eq(run(all), 0);
	int64_t last = newest_counter("at.katra");
	cr_assert_geq(last, t0 - 5);
	cr_assert_lt(last - t0, 1500, "the window ended %lld ms after the command started",
		     (long long)(last - t0));
	kill(em, SIGKILL);
	kill(fake, SIGKILL);
	finish(em);
	finish(fake);
	alarm(0);
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

/*
 * A process killed before its flusher's first write (its file empty,
 * stood for here by emptying the file of one killed with SIGKILL, since
 * the flusher's first write comes within a millisecond) with crash files
 * asked for: its events are in its crash rings only, and katra record
 * rebuilds it from them rather than dropping it as a process that traced
 * nothing (it said "nothing was traced" before).
 */
Test(record, killed_before_its_first_write_is_recovered)
{
	setup();
	cr_assert_eq(mkdir("c", 0700), 0);
	char sh[600];
	snprintf(sh, sizeof(sh),
		 "%s --until-signal & p=$!; sleep 0.3; kill -KILL $p; wait $p; "
		 ": > \"$KT_RECORD_DIR/$p.katra\"; echo $p > pid.txt",
		 MULTIPROC);
	const char *a[] = { KATRA, "record", "--crash-dir", "c", "-o", "o.katra", "--",
			    "sh", "-c", sh, NULL };
	cr_assert_eq(run(a), 0);
	cr_assert(err_has("recovered from its crash files"));
	unsigned long long pid = 0;
	FILE *f = fopen("pid.txt", "r");
	cr_assert(f && fscanf(f, "%llu", &pid) == 1);
	fclose(f);
	struct proc_seen ps[8];
	cr_assert_eq(processes_of("o.katra", ps), 1);
	cr_assert_eq(ps[0].pid, pid);
	cr_assert(ps[0].flags & KT_PROCESS_RECOVERED);
	/* Its crash directory went once OUT held it; --crash-dir's stays. */
	char dir[64];
	snprintf(dir, sizeof(dir), "c/katra-%llu", pid);
	cr_assert(access(dir, F_OK) < 0 && errno == ENOENT, "%s stayed", dir);
	cr_assert_eq(access("c", F_OK), 0);
	/* Its events: what its rings held unwritten when it was killed (the
	 * test emptied what was written), a number the flusher's timing
	 * decides, so not asserted; katra verify's count is the trace's. */
	const char *v[] = { KATRA, "verify", "o.katra", NULL };
	cr_assert_eq(run(v), 0);
	teardown();
}

/*
 * The same without crash files: the killed process's events are lost,
 * and katra record says so, naming its file, where it used to drop the
 * file without a word.  The process beside it (multiproc's helper, run
 * by the shell) is traced.  And a whole multiproc run, whose helper
 * fork()s and execs (the child's pre-exec file holds nothing, its
 * exec'd image writes PID-1.katra), says nothing is lost.
 */
Test(record, killed_before_its_first_write_without_crash_files_is_said)
{
	setup();
	char sh[600];
	snprintf(sh, sizeof(sh),
		 "%s helper; %s --until-signal & p=$!; sleep 0.3; kill -KILL $p; wait $p; "
		 ": > \"$KT_RECORD_DIR/$p.katra\"; echo $p > pid.txt",
		 MULTIPROC, MULTIPROC);
	const char *a[] = { KATRA, "record", "-o", "o.katra", "--", "sh", "-c", sh, NULL };
	cr_assert_eq(run(a), 0);
	unsigned long long pid = 0;
	FILE *f = fopen("pid.txt", "r");
	cr_assert(f && fscanf(f, "%llu", &pid) == 1);
	fclose(f);
	char want[160];
	snprintf(want, sizeof(want),
		 "%llu.katra: the process ended before its first write: its events are lost", pid);
	cr_assert(err_has(want));
	struct proc_seen ps[8];
	cr_assert_eq(processes_of("o.katra", ps), 1);
	cr_assert_neq(ps[0].pid, pid);
	const char *m[] = { KATRA, "record", "--crash-dir", ".", "-o", "m.katra", "--", MULTIPROC,
			    "--events", "2000", NULL };
	cr_assert_eq(run(m), 0);
	cr_assert(err_has("4 processes traced"));
	cr_assert(!err_has("before its first write"));
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
 * Without --run-id none names a run.  The doomed worker, killed 5 ms
 * after it begins, may not have written yet (its flusher's first write
 * comes later on a loaded machine, or under ASan, seen 4 runs in 4):
 * then its file is gone and katra record says so.
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
	/* parent, worker, doomed, helper */
	cr_assert_eq(files + err_has("before its first write: its events are lost"), 4);
	const char *b[] = { KATRA, "record", "-o", "n.katra", "--", MULTIPROC, "helper", NULL };
	cr_assert_eq(run(b), 0);
	run_of("n.katra", run_id, sizeof(run_id));
	cr_assert_str_eq(run_id, "");
	const char *c[] = { KATRA, "record", "--epoch", "3", "--", MULTIPROC, "helper", NULL };
	cr_assert_eq(run(c), 2);
	teardown();
}

/* The joined sidecar @o (at @side, beside @trace) keeps the hash and
 * size of the trace its join started from.  A crash between the join's
 * two renames leaves such a sidecar beside that trace: made here by
 * giving @trace's own hash and size as joined_from_* and another sha256,
 * katra verify says so, as a warning (exit 0); with joined_from_* naming
 * another trace, the sidecar does not match (exit 1). */
static void join_undone_is_told(const char *trace, const char *side, json_t *o)
{
	const char *sha = json_string_value(json_object_get(o, "sha256"));
	const char *was = json_string_value(json_object_get(o, "joined_from_sha256"));
	json_int_t bytes = json_integer_value(json_object_get(o, "bytes"));
	cr_assert(sha && was && strlen(was) == 64 && strcmp(sha, was));
	cr_assert_gt(json_integer_value(json_object_get(o, "joined_from_bytes")), 0);
	json_t *c = json_deep_copy(o);
	json_object_set_new(c, "joined_from_sha256", json_string(sha));
	json_object_set_new(c, "joined_from_bytes", json_integer(bytes));
	json_object_set_new(c, "sha256", json_string(was));
	cr_assert_eq(json_dump_file(c, side, JSON_COMPACT | JSON_PRESERVE_ORDER), 0);
	char cmd[1024], out[2048];
	snprintf(cmd, sizeof(cmd), "%s verify '%s' 2>&1", KATRA, trace);
	cr_assert_eq(cmd_out(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, ".json: warning: its join with the run's other processes did not "
			      "finish: the trace is the capture its harness published"),
		  "%s", out);
	json_object_set_new(c, "joined_from_bytes", json_integer(bytes + 1));
	cr_assert_eq(json_dump_file(c, side, JSON_COMPACT | JSON_PRESERVE_ORDER), 0);
	const char *v[] = { KATRA, "verify", trace, NULL };
	cr_assert_eq(run(v), 1);
	json_decref(c);
}

/*
 * The capture manager across processes: multiproc --capture is a harness
 * whose capture manager publishes run r1 epoch 3 in ROOT, its worker
 * fork()ed during the run.  Under katra record --run-id r1 --epoch 3
 * --capture-root ROOT the worker records a file of its own (a child of a
 * session of the environment's run), and at the end the capture holds
 * both processes, trimmed to its window: the harness's 400 events and
 * the worker's 2000 (its 500 late zones, after the run's end, cut
 * away; its own file keeps them: 3000), one trace that katra verify passes with its sidecar,
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
	cr_assert(err_has("run_worker       "));
	cr_assert(err_has(".katra: 3000 events, 0 dropped, complete"));
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
	join_undone_is_told(trace, side, o);
	json_decref(o);
	teardown();
}

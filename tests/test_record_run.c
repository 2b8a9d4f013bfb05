/*
 * `katra record` across processes (issue #30), the rest of test_record.c:
 * `katra snapshot` of every process under `katra record --flight`; a
 * killed CMD and a child that outlives it; the run id and epoch in every
 * process's file; a harness's capture joined by its run's processes.
 */
#include <errno.h>

#include "record_util.h"

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
	json_decref(o);
	teardown();
}

/*
 * Sampled stacks wherever a trace goes (issue #31): `katra record` of a
 * program of two processes merges each one's sample records with its own
 * stack and map entries, renumbered (each process numbers its stacks from
 * 1: without the renumbering one process's samples name the other's
 * stacks; without the copy, no stack at all); a capture that keeps its
 * newest segments publishes samples whose stacks and mappings its later
 * segments wrote again.
 */
#include "record_util.h"

#include <inttypes.h>

#include <katra/capture.h>
#include <katra/writer.h>
#include "cli.h"
#include "deny_perf.h"
#include "helpers.h"
#include "sample_spin.h"
#include "tmp_path.h"

#define SAMPLE_PROCS KT_BIN_DIR "/tests/sample_procs"

struct per_pid {
	unsigned long pid, zone, heavy, light;
};

/* The zone "sampled"'s samples of each process (at most 4) in the folded
 * lines of @folded ("name (pid);thread (tid);...;leaf N"); how many
 * processes. */
static int per_process(const char *folded, struct per_pid *pp)
{
	FILE *f = fopen(folded, "re");
	cr_assert_not_null(f);
	char line[8192];
	int n = 0;
	memset(pp, 0, 4 * sizeof(*pp));
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' '), *semi = strchr(line, ';');
		cr_assert(sp && semi, "%s", line);
		*sp = 0;
		if (!strstr(line, ";sampled"))
			continue;
		*semi = 0;
		char *open = strrchr(line, '(');
		cr_assert_not_null(open, "%s", line);
		unsigned long pid = strtoul(open + 1, NULL, 10), k = strtoul(sp + 1, NULL, 10);
		const char *leaf = strrchr(semi + 1, ';');
		leaf = leaf ? leaf + 1 : semi + 1;
		int i = 0;
		while (i < n && pp[i].pid != pid)
			i++;
		cr_assert_lt(i, 4, "more than 4 processes");
		if (i == n)
			pp[n++].pid = pid;
		pp[i].zone += k;
		pp[i].heavy += !strcmp(leaf, "kt_sample_heavy") ? k : 0;
		pp[i].light += !strcmp(leaf, "kt_sample_light") ? k : 0;
	}
	fclose(f);
	return n;
}

/* `katra stats @path`'s count of samples of no known stack. */
static long unknown_stacks(const char *path)
{
	char cmd[1024], line[512];
	long unknown = -1;
	unsigned long all;
	snprintf(cmd, sizeof(cmd), "%s stats '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "samples: %lu (%ld of no known stack)", &all, &unknown) == 2)
			cr_assert_gt(all, 0);
	pclose(p);
	return unknown;
}

/* katra record of sample_procs @mode, sampled at 1000 Hz: each of its two
 * processes' zone named by its samples, 9 parts in 10 the heavy function. */
static void record_two(const char *mode)
{
	setup();
	setenv("KT_SAMPLE_HZ", "1000", 1);
	const char *a[] = { KATRA, "record", "-o", "r.katra", "--", SAMPLE_PROCS, mode, NULL };
	cr_assert_eq(run(a), 0, "katra record failed");
	unsetenv("KT_SAMPLE_HZ");
	const char *e[] = {
		KATRA, "export", "--collapsed", "--samples", "r.katra", "r.folded", NULL
	};
	cr_assert_eq(run(e), 0);
	struct per_pid pp[4];
	cr_assert_eq(per_process("r.folded", pp), 2);
	for (int i = 0; i < 2; i++) {
		/* 300 ms at 1000 Hz: about 300 (fewer if the kernel lowers the
		 * rate, perf_event_max_sample_rate). */
		cr_assert_geq(pp[i].zone, 100, "pid %lu: %lu samples", pp[i].pid, pp[i].zone);
		cr_assert_geq(pp[i].heavy * 100, pp[i].zone * 85, "pid %lu: heavy %lu of %lu",
		              pp[i].pid, pp[i].heavy, pp[i].zone);
		cr_assert_leq(pp[i].light * 100, pp[i].zone * 15, "pid %lu: light %lu of %lu",
		              pp[i].pid, pp[i].light, pp[i].zone);
	}
	cr_assert_neq(pp[0].pid, pp[1].pid);
	cr_assert_eq(unknown_stacks("r.katra"), 0);
	teardown();
}

Test(sample_paths, record_of_a_fork_names_both_processes_samples, .timeout = 120)
{
	record_two("fork");
}

/* An exec()ed process: its libraries where ASLR put them, not where its
 * parent's are, so each address is named by its own process's maps. */
Test(sample_paths, record_of_an_exec_names_both_processes_samples, .timeout = 120)
{
	record_two("exec");
}

/* The same in `export --perfetto`, decoded by protoc: the samples of two
 * pids, and no frame left as "FILE+0xOFF" (the exec()ed process's
 * library is named among its own map entries). */
Test(sample_paths, perfetto_of_an_exec_names_both_processes_samples, .timeout = 120)
{
	setup();
	setenv("KT_SAMPLE_HZ", "1000", 1);
	const char *a[] = { KATRA, "record", "-o", "r.katra", "--", SAMPLE_PROCS, "exec", NULL };
	cr_assert_eq(run(a), 0, "katra record failed");
	unsetenv("KT_SAMPLE_HZ");
	const char *e[] = { KATRA, "export", "--perfetto", "r.katra", "r.pftrace", NULL };
	cr_assert_eq(run(e), 0);
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
	         "protoc --decode=perfetto.protos.Trace --proto_path=%s/tools/export "
	         "perfetto_trace.proto < r.pftrace > r.txt",
	         KT_SRC_DIR);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	FILE *f = fopen("r.txt", "re");
	cr_assert_not_null(f);
	char line[512];
	unsigned long pids[2] = { 0 }, unnamed = 0, heavy = 0, samples = 0;
	int in_sample = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long pid;
		in_sample = strstr(line, "perf_sample {") ? 1 : strchr(line, '}') ? 0 : in_sample;
		samples += strstr(line, "perf_sample {") != NULL;
		if (in_sample && sscanf(line, " pid: %lu", &pid) == 1 && pid != pids[0] &&
		    pid != pids[1])
			pids[pids[0] ? 1 : 0] = pid;
		unnamed += strstr(line, "str: \"libkt_sample_lib.so+0x") != NULL;
		heavy += strstr(line, "str: \"kt_sample_heavy\"") != NULL;
	}
	fclose(f);
	cr_assert_geq(samples, 200, "%lu samples", samples);
	cr_assert(pids[0] && pids[1], "samples of two pids: %lu %lu", pids[0], pids[1]);
	cr_assert_eq(unnamed, 0);
	cr_assert_geq(heavy, 1);
	teardown();
}

/* The notes of @path that say samples are absent (at most one kept). */
static int absent_notes(const char *path, char *note, size_t cap)
{
	kt_reader *r;
	int n = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	const kt_header *h = kt_reader_get_header(r);
	for (uint32_t i = 0; i < h->note_count; i++)
		if (!strncmp(h->notes[i], "samples: ", 9) && n++ == 0)
			snprintf(note, cap, "%s", h->notes[i]);
	kt_reader_close(r);
	return n;
}

/*
 * katra record with KT_SAMPLE_HZ where perf_event_open is refused (a
 * seccomp filter on katra record and so on its program): the program's
 * zone is recorded, and the merged trace's header keeps its process's
 * note that samples are absent and why (without, the merge drops it).
 */
Test(sample_paths, record_refused_says_samples_absent, .timeout = 120)
{
	setup();
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		t_deny_perf();
		setenv("KT_SAMPLE_HZ", "1000", 1);
		const char *a[] = { KATRA, "record",     "-o",  "r.katra",
			            "--",  SAMPLE_PROCS, "one", NULL };
		execv(KATRA, (char *const *)a);
		_exit(99);
	}
	int st = finish(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "katra record: %d", st);
	char note[200] = "";
	cr_assert_eq(absent_notes("r.katra", note, sizeof(note)), 1);
	cr_assert_str_eq(note, "samples: absent: perf_event_open refused: Operation not permitted");
	cr_assert(err_has("katra: samples absent from this trace: perf_event_open refused: "
	                  "Operation not permitted\n"));
	struct proc_seen ps[8];
	cr_assert_eq(processes_of("r.katra", ps), 1);
	cr_assert_eq(ps[0].written, 2, "the zone's begin and end");
	teardown();
}

/* ---- katra merge of two files' stacks, maps and samples ------------------ */

/* Process @pid's file at @path: thread 1 (its main) sampled once on thread
 * 2's stream, naming stack 1 of one frame, 0x1000 + @pid, in the map entry
 * of "/lib/p@pid.so", seen 3000 ticks (1000 ns) after the calibration. */
static void sampled_file(const char *path, uint64_t pid)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	h.process_id = pid;
	unlink(path);
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	kt_process_def p = { 0, 0, pid, 1, 1000, 0, 4, 0, "proc", NULL };
	cr_assert_eq(kt_writer_process(w, &p), 0);
	cr_assert_eq(kt_writer_thread(w, 1, (uint32_t)pid, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 0, "katra.samples"), 0);
	char lib[32];
	snprintf(lib, sizeof(lib), "/lib/p%" PRIu64 ".so", pid);
	kt_map_def m = { h.clock.ticks + 3000, 0x1000, 0x1000, 0, 0, (uint32_t)strlen(lib), lib };
	cr_assert_eq(kt_writer_map(w, &m), 0);
	uint64_t frame = 0x1000 + pid;
	kt_stack_def st = { 1, 1, &frame };
	cr_assert_eq(kt_writer_stack(w, &st), 0);
	kt_event ev = { .ts = h.clock.ticks + 6000, .type = KT_EV_SAMPLE };
	kt_value v = { .kind = KT_VALUE_SAMPLE, .thread = 1, .u64 = 1 };
	uint8_t pay[16], buf[64];
	cr_assert_eq(kt_event_set_value(&ev, &v, pay), 1);
	size_t len = kt_event_encode(buf, sizeof(buf), &ev);
	cr_assert_gt(len, 0);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_NONE, 0, buf, len), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* What a merged file says of its stacks, maps and samples. */
struct merged {
	uint32_t proc_of_thread[8]; /* thread id -> process entry id */
	uint64_t pid_of_proc[8];    /* process entry id -> pid */
	uint64_t frame_of_stack[8]; /* stack id -> its one frame */
	uint32_t nstacks, nmaps, nsamples;
	struct {
		uint32_t process;
		uint64_t ts;
		char path[32];
	} maps[4];
	struct {
		uint32_t thread;
		uint64_t stack;
	} samples[4];
};

/* @fn(@ctx, value) for each sample record of @f, when it is a chunk. */
static void chunk_samples(const kt_trace_frame *f, void (*fn)(void *, const kt_value *), void *ctx)
{
	kt_chunk_iter it;
	kt_event ev;
	kt_value v;
	if (f->kind != KT_FRAME_CHUNK)
		return;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev) == 1)
		if (kt_event_get_value(&ev, &v) && v.kind == KT_VALUE_SAMPLE)
			fn(ctx, &v);
}

static void merged_sample(void *ctx, const kt_value *v)
{
	struct merged *g = ctx;
	if (g->nsamples < 4) {
		g->samples[g->nsamples].thread = v->thread;
		g->samples[g->nsamples++].stack = v->u64;
	}
}

static void read_merged(const char *path, struct merged *g)
{
	kt_reader *r;
	kt_trace_frame f;
	memset(g, 0, sizeof(*g));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_stack_def *st = kt_trace_frame_get_stack(&f);
		const kt_map_def *mp = kt_trace_frame_get_map(&f);
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (p && p->id < 8)
			g->pid_of_proc[p->id] = p->pid;
		if (f.kind == KT_FRAME_THREAD && f.u.thread.thread_id < 8)
			g->proc_of_thread[f.u.thread.thread_id] = f.u.thread.process;
		if (st && st->id < 8 && st->depth == 1) {
			g->frame_of_stack[st->id] = st->frames[0];
			g->nstacks++;
		}
		if (mp && g->nmaps < 4) {
			g->maps[g->nmaps].process = mp->process;
			g->maps[g->nmaps].ts = mp->ts;
			snprintf(g->maps[g->nmaps++].path, 32, "%s", mp->path);
		}
		chunk_samples(&f, merged_sample, g);
	}
	kt_reader_close(r);
}

/*
 * Two processes' files, each with its stack 1 and its map entry: the
 * merge keeps both stacks under two ids, each sample naming its own
 * process's (its one frame 0x1000 + its pid), each map entry in its
 * process, at its time in ns (the calibration's 123456000 ns + 1000).
 */
Test(sample_paths, merge_renumbers_stacks_and_keeps_maps_per_process)
{
	char a[64], b[64], out[64];
	tmp_path(a, sizeof(a), "smerge-a.katra");
	tmp_path(b, sizeof(b), "smerge-b.katra");
	tmp_path(out, sizeof(out), "smerge.katra");
	sampled_file(a, 700);
	sampled_file(b, 701);
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "merge", a, b, "-o", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	struct merged g;
	read_merged(out, &g);
	cr_assert_eq(g.nstacks, 2);
	cr_assert_eq(g.nsamples, 2);
	cr_assert_eq(g.nmaps, 2);
	for (uint32_t i = 0; i < 2; i++) {
		uint32_t t = g.samples[i].thread;
		uint64_t s = g.samples[i].stack;
		cr_assert(t > 0 && t < 8 && s > 0 && s < 8, "thread %u stack %" PRIu64, t, s);
		uint64_t pid = g.pid_of_proc[g.proc_of_thread[t]];
		cr_assert_eq(pid, 700 + i);
		cr_assert_eq(g.frame_of_stack[s], 0x1000 + pid);
		char lib[32];
		snprintf(lib, sizeof(lib), "/lib/p%" PRIu64 ".so", pid);
		cr_assert_eq(g.pid_of_proc[g.maps[i].process], pid);
		cr_assert_str_eq(g.maps[i].path, lib);
		cr_assert_eq(g.maps[i].ts, 123457000);
	}
	cr_assert_neq(g.samples[0].stack, g.samples[1].stack);
	unlink(a);
	unlink(b);
	unlink(out);
}

/* ---- a capture's newest segments ------------------------------------------ */

/* What a file says of its samples: how many, how many name a stack no
 * entry defines, its map entries and those of @lib. */
struct sample_file {
	unsigned long samples, unknown, maps, lib_maps;
};

/* A file's stack ids so far, and its samples counted against them. */
struct known {
	struct sample_file *sf;
	const uint32_t *ids;
	size_t n;
};

static void known_sample(void *ctx, const kt_value *v)
{
	struct known *k = ctx;
	size_t i = 0;
	while (i < k->n && k->ids[i] != v->u64)
		i++;
	k->sf->samples++;
	k->sf->unknown += i == k->n;
}

static void read_samples(const char *path, const char *lib, struct sample_file *sf)
{
	kt_reader *r;
	kt_trace_frame f;
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0;
	memset(sf, 0, sizeof(*sf));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_stack_def *st = kt_trace_frame_get_stack(&f);
		const kt_map_def *mp = kt_trace_frame_get_map(&f);
		if (st) {
			if (n == cap)
				cr_assert_not_null(ids = realloc(ids, (cap = 2 * cap + 64) * 4));
			ids[n++] = st->id;
		}
		if (mp) {
			sf->maps++;
			sf->lib_maps += strstr(mp->path, lib) != NULL;
		}
		/* Entries come before the chunks that name them (SPEC §4.11). */
		struct known k = { sf, ids, n };
		chunk_samples(&f, known_sample, &k);
	}
	kt_reader_close(r);
	free(ids);
}

/*
 * A capture of 1 MiB that keeps its newest segments (256 KiB each) of a
 * thread sampled at 1000 Hz while it spins in kt_sample_heavy() and emits
 * about 10 MiB of events: the published file is its last segments, and
 * every sample there names a stack entry the file holds, with the map
 * entry of the library.  Without the segments' own entries (and
 * kt_rewrite()'s copy of them) its samples name stacks it lacks.
 */
Test(sample_paths, a_capture_s_newest_segments_name_their_stacks, .timeout = 120)
{
	char root[] = "/tmp/kt-sample-cap-XXXXXX";
	cr_assert_not_null(mkdtemp(root));
	kt_session_options so = { .sample_hz = 1000, .flush_period_ns = 1000000 };

	kt_summary sum = { 0 };
	kt_capture_backend be = kt_manager_session_backend(&sum);
	kt_manager_options mo = { .root = root,
		                  .backend = &be,
		                  .max_bytes = 1u << 20,
		                  .cap_policy = KT_CAP_KEEP_NEWEST,
		                  .duration_ns = UINT64_C(30000000000),
		                  .session = &so };
	kt_manager *m;
	cr_assert_eq(kt_manager_new(&mo, &m), 0);
	kt_capture_ref r, t;
	kt_manager_start(
		m,
		&(kt_start_request){
			.run_id = "s", .epoch = 1, .state = "running", .validity = "valid" },
		&r);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	uint32_t z = kt_name("spin");
	unsigned acc = 0;
	uint64_t x = 88172645463325252u;
	for (uint64_t end = thread_cpu_ns() + 600000000u; thread_cpu_ns() < end;)
		for (int i = 0; i < 64; i++) {
			/* Values no codec shrinks much: the segments' bytes are
			 * the copy's, whichever encoder made them. */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			kt_counter(z, (int64_t)x);
			acc += kt_sample_heavy(4000);
		}
	kt_manager_request_stop(m, &(kt_stop_request){ .run_id = "s", .epoch = 1, .reason = "end" },
	                        &t);
	kt_capture_status st;
	cr_assert_eq(kt_manager_await(m, &t, UINT64_MAX, &st), 0);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED, "state %d code %d capped %d segs %u", st.state,
	             st.code, (int)sum.capped, (unsigned)sum.segments);
	cr_assert_gt(sum.segments, KT_CAP_SEGMENTS, "%u segments", (unsigned)sum.segments);
	kt_summary_release(&sum);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, st.file);
	struct sample_file sf;
	read_samples(path, "libkt_sample_lib.so", &sf);
	cr_assert_geq(sf.samples, 20, "%lu samples (acc %u)", sf.samples, acc);
	cr_assert_eq(sf.unknown, 0, "%lu of %lu samples name no stack", sf.unknown, sf.samples);
	cr_assert_geq(sf.lib_maps, 1, "%lu maps", sf.maps);
	kt_manager_close(m);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

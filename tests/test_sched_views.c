/*
 * test_sched_views.c - the views of scheduler records (SPEC §4.2.1,
 * issue #31) on a synthetic trace whose every time is known
 * (synth_sched.h): `export --chrome` state slices, `export --fxt`
 * context switch records.
 */
#define _GNU_SOURCE
#include "synth_sched.h"
#include "cli.h"
#include "fxt.h"

#include <criterion/criterion.h>
#include <jansson.h>

static const char *trace_path(void)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-schedviews-%d.katra", (int)getpid());
	unlink(path);
	t_sched_trace(path, 1);
	return path;
}

/* A Chrome time (us, three decimals and a 3) as the ns it stands for. */
static uint64_t chrome_ns(json_t *v)
{
	return (uint64_t)(json_number_value(v) * 1000.0 + 0.2);
}

/* The states of each followed thread, as slices on its stream's row, in
 * order: running until it blocked, blocked until it came back, ...; the
 * one in progress at the end cut there; after a follow then an in, the
 * time between is "waiting"; a loss ends the state and the out after it
 * (state unknown) makes none.  Each goes out at its end. */
Test(chrome, sched_states_are_slices_on_the_stream_row)
{
	const char *path = trace_path();
	size_t len = 0;
	uint8_t *bytes = t_export("--chrome", path, &len);
	json_t *doc = json_loadb((const char *)bytes, len, 0, NULL), *e;
	cr_assert_not_null(doc);
	free(bytes);
	static const struct {
		int tid;
		const char *name;
		uint64_t b, e;
		int cpu; /* -1: none */
		int cut;
	} want[] = {
		{ 2, "running", 500, 2000, 1, 0 },   { 4, "waiting", 1000, 3000, -1, 0 },
		{ 4, "running", 3000, 4000, 1, 0 },  { 2, "blocked", 2000, 6000, 1, 0 },
		{ 2, "running", 6000, 8000, 0, 0 },  { 2, "preempted", 8000, 9000, 0, 0 },
		{ 2, "running", 9000, 11000, 1, 1 },
	};
	size_t i, n = 0;
	json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
		const char *cat = json_string_value(json_object_get(e, "cat"));
		if (!cat || strcmp(cat, "sched"))
			continue;
		cr_assert_lt(n, sizeof(want) / sizeof(want[0]));
		json_t *args = json_object_get(e, "args");
		cr_assert_str_eq(json_string_value(json_object_get(e, "ph")), "X");
		cr_assert_eq(json_integer_value(json_object_get(e, "pid")), 4242);
		cr_assert_eq(json_integer_value(json_object_get(e, "tid")), want[n].tid, "%zu", n);
		cr_assert_str_eq(json_string_value(json_object_get(e, "name")), want[n].name);
		uint64_t b = chrome_ns(json_object_get(e, "ts"));
		cr_assert_eq(b, T_MONO(want[n].b), "slice %zu begins at %llu", n,
			     (unsigned long long)b);
		cr_assert_eq(chrome_ns(json_object_get(e, "dur")), want[n].e - want[n].b, "%zu", n);
		json_t *cpu = json_object_get(args, "cpu");
		if (want[n].cpu < 0)
			cr_assert_null(cpu, "slice %zu has no CPU", n);
		else
			cr_assert_eq(json_integer_value(cpu), want[n].cpu, "%zu", n);
		cr_assert_eq(json_object_get(args, "cut") != NULL, want[n].cut, "%zu", n);
		cr_assert_eq(json_object_size(args), (size_t)((want[n].cpu >= 0) + want[n].cut));
		n++;
	}
	cr_assert_eq(n, sizeof(want) / sizeof(want[0]));
	json_decref(doc);
	unlink(path);
}

/* Each switch out or in as a context switch record: the thread by its OS
 * tid in the trace's process, the other side the idle thread (process 0,
 * koid 0, priority 0); blocked as Zircon's blocked (3), preempted as
 * running (1: still runnable); follows and losses write none, and the
 * streams are no threads of the FXT. */
Test(fxt, sched_switches_are_context_switch_records)
{
	const char *path = trace_path();
	size_t len = 0;
	uint8_t *bytes = t_export("--fxt", path, &len);
	static struct fxt f;
	read_fxt(&f, bytes, len);
	free(bytes);
	static const struct {
		uint64_t ns, koid;
		int in;
		unsigned cpu, state;
	} want[] = {
		{ 2000, 101, 0, 1, 3 }, { 3000, 103, 1, 1, 1 }, { 5000, 103, 0, 0, 3 },
		{ 6000, 101, 1, 0, 1 }, { 8000, 101, 0, 0, 1 }, { 9000, 101, 1, 1, 1 },
	};
	cr_assert_eq(f.nsw, 6);
	for (int i = 0; i < f.nsw; i++) {
		const struct fxt_switch *s = &f.sw[i];
		cr_assert_eq(s->ts, T_MONO(want[i].ns), "switch %d", i);
		cr_assert_eq(s->cpu, want[i].cpu, "switch %d", i);
		cr_assert_eq(s->out_state, want[i].state, "switch %d", i);
		uint64_t thread[2] = { 4242, want[i].koid }, idle[2] = { 0, 0 };
		const uint64_t *o = want[i].in ? idle : thread, *n = want[i].in ? thread : idle;
		cr_assert_eq(s->out_pid, o[0], "switch %d", i);
		cr_assert_eq(s->out_koid, o[1], "switch %d", i);
		cr_assert_eq(s->in_pid, n[0], "switch %d", i);
		cr_assert_eq(s->in_koid, n[1], "switch %d", i);
		cr_assert_eq(s->out_prio, want[i].in ? 0u : 16u, "switch %d", i);
		cr_assert_eq(s->in_prio, want[i].in ? 16u : 0u, "switch %d", i);
	}
	cr_assert_eq(f.nthread_names, 2, "main and worker; no stream");
	cr_assert_str_eq(koid_name(&f, 101), "main");
	cr_assert_str_eq(koid_name(&f, 103), "worker");
	unlink(path);
}

/* `katra report -o` of @in: the page's data block, parsed. */
static json_t *report_data(const char *in)
{
	char out[160];
	snprintf(out, sizeof(out), "/tmp/katra-schedviews-%d.html", (int)getpid());
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "report", in, "-o", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	char *page;
	json_t *data = t_page_data(out, &page);
	unlink(out);
	cr_assert_not_null(strstr(page, "function states()"), "the page draws the lanes");
	free(page);
	return data;
}

static void expect_bins(json_t *lane, const char *key, const long long *want, size_t n)
{
	json_t *a = json_object_get(lane, key);
	cr_assert_eq(json_array_size(a), n, "%s: %zu bins", key, json_array_size(a));
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(json_integer_value(json_array_get(a, i)), want[i], "%s bin %zu: %lld", key,
			     i, (long long)json_integer_value(json_array_get(a, i)));
}

/* Each followed thread's lane: per bin of the timeline (1024 ns from the
 * first record, main's follow at 500), the ns it ran, blocked, was
 * preempted or waited; an interval split exactly at the bins' edges. */
Test(report, sched_lanes_split_states_over_the_bins)
{
	const char *path = trace_path();
	json_t *data = report_data(path), *tl = json_object_get(data, "timeline");
	cr_assert_eq(json_integer_value(json_object_get(tl, "origin_ns")), (json_int_t)T_MONO(500));
	cr_assert_eq(json_integer_value(json_object_get(tl, "width_ns")), 1024);
	json_t *s = json_object_get(tl, "sched");
	cr_assert(json_is_true(json_object_get(s, "present")));
	json_t *th = json_object_get(s, "threads");
	cr_assert_eq(json_array_size(th), 2);
	json_t *m = json_array_get(th, 0), *w = json_array_get(th, 1);
	cr_assert_str_eq(json_string_value(json_object_get(m, "name")), "main");
	cr_assert_eq(json_integer_value(json_object_get(m, "id")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(w, "name")), "worker");
	static const long long m_run[] = { 1024, 476, 0, 0, 0, 644, 1024, 332, 716, 1024, 260 };
	static const long long m_blk[] = { 0, 548, 1024, 1024, 1024, 380, 0, 0, 0, 0, 0 };
	static const long long m_pre[] = { 0, 0, 0, 0, 0, 0, 0, 692, 308, 0, 0 };
	static const long long zero[11] = { 0 };
	static const long long w_run[] = { 0, 0, 572, 428, 0, 0, 0, 0, 0, 0, 0 };
	static const long long w_wait[] = { 524, 1024, 452, 0, 0, 0, 0, 0, 0, 0, 0 };
	expect_bins(m, "running", m_run, 11);
	expect_bins(m, "blocked", m_blk, 11);
	expect_bins(m, "preempted", m_pre, 11);
	expect_bins(m, "waiting", zero, 11);
	expect_bins(w, "running", w_run, 11);
	expect_bins(w, "blocked", zero, 11);
	expect_bins(w, "waiting", w_wait, 11);
	json_decref(data);
	unlink(path);
}

/* Refused: the lanes say absent and why; not asked: no lanes (null). */
Test(report, sched_absent_is_said_and_none_asked_is_null)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-schedviews-abs-%d.katra", (int)getpid());
	for (int asked = 0; asked < 2; asked++) {
		unlink(path);
		kt_header h;
		t_header(&h);
		static const char *const notes[] = { "sched: absent: perf_event_open: EACCES" };
		h.flags = asked ? KT_HDR_SCHED_ABSENT : 0;
		h.run_id = h.capture_id = NULL;
		h.epoch = 0;
		h.note_count = 1;
		h.notes = notes;
		kt_writer *w;
		cr_assert_eq(kt_writer_open(path, &h, &w), 0);
		cr_assert_eq(kt_writer_name(w, 1, "frame", 5), 0);
		struct t_synth s = { 0 };
		t_synth_zone(&s, 1, 1000, 500);
		t_synth_flush(w, 1, "main", &s);
		t_synth_close(w);
		json_t *data = report_data(path);
		json_t *sc = json_object_get(json_object_get(data, "timeline"), "sched");
		if (!asked) {
			cr_assert(json_is_null(sc));
		} else {
			cr_assert(json_is_false(json_object_get(sc, "present")));
			cr_assert_str_eq(json_string_value(json_object_get(sc, "why")),
					 "perf_event_open: EACCES");
		}
		json_decref(data);
	}
	unlink(path);
}

/* `katra diff` of two traces with scheduler records: per zone, the mean
 * off-CPU time of each side's covered zones, its change and the shares
 * (main's frame: 4000 blocked + 1000 preempted of 10000 in A, twice each
 * in B); a zone never covered (worker's work, ended after a loss) has
 * none.  Against a trace without them: not compared, and null. */
Test(diff, offcpu_per_zone_when_both_sides_have_scheduler_data)
{
	char a[64], b[64];
	snprintf(a, sizeof(a), "/tmp/katra-schedviews-a-%d.katra", (int)getpid());
	snprintf(b, sizeof(b), "/tmp/katra-schedviews-b-%d.katra", (int)getpid());
	unlink(a);
	unlink(b);
	t_sched_trace(a, 1);
	t_sched_trace(b, 2);
	struct proc p;
	run_katra(&p, (const char *const[]){ "diff", "--json", a, b, NULL });
	cr_assert(p.status == 0 || p.status == 3, "%.*s", (int)p.err_len, p.err);
	json_t *o = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(o);
	json_t *rows = json_object_get(o, "offcpu");
	cr_assert_eq(json_array_size(rows), 2);
	json_t *f = json_array_get(rows, 0), *fa = json_object_get(f, "a"),
	       *fb = json_object_get(f, "b");
	cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "frame");
	static const char *const keys[] = { "zones", "on_cpu_ns", "blocked_ns", "preempted_ns" };
	static const json_int_t va[] = { 1, 5000, 4000, 1000 }, vb[] = { 1, 10000, 8000, 2000 };
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(json_integer_value(json_object_get(fa, keys[i])), va[i], "A %s", keys[i]);
		cr_assert_eq(json_integer_value(json_object_get(fb, keys[i])), vb[i], "B %s", keys[i]);
	}
	cr_assert(json_real_value(json_object_get(fa, "off_cpu_mean_ns")) == 5000.0);
	cr_assert(json_real_value(json_object_get(fb, "off_cpu_mean_ns")) == 10000.0);
	cr_assert(json_real_value(json_object_get(fa, "off_cpu_share")) == 0.5);
	cr_assert(json_real_value(json_object_get(f, "off_cpu_mean_change")) == 1.0);
	json_t *w = json_array_get(rows, 1);
	cr_assert_str_eq(json_string_value(json_object_get(w, "name")), "work");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(w, "a"), "zones")), 0);
	cr_assert(json_is_null(json_object_get(json_object_get(w, "a"), "off_cpu_mean_ns")));
	cr_assert(json_is_null(json_object_get(w, "off_cpu_mean_change")));
	json_decref(o);
	run_katra(&p, (const char *const[]){ "diff", a, b, NULL });
	cr_assert_not_null(strstr(p.out, "frame                            1         1           5000"
					 "          10000   +100.0%     50.0%     50.0%"), "%s", p.out);
	/* Against the golden trace of version 4, which has none. */
	run_katra(&p, (const char *const[]){ "diff", "--json", a, "golden_v4.katra", NULL });
	o = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(o, "%.*s", (int)p.err_len, p.err);
	cr_assert(json_is_null(json_object_get(o, "offcpu")));
	json_decref(o);
	run_katra(&p, (const char *const[]){ "diff", a, "golden_v4.katra", NULL });
	cr_assert_not_null(strstr(p.out, "off-CPU per zone: not compared (no scheduler records in B)"),
			   "%s", p.out);
	unlink(a);
	unlink(b);
}

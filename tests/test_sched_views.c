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
		cr_assert_eq(json_object_size(args), (want[n].cpu >= 0) + want[n].cut);
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

/*
 * Self time in `katra stats` (text and JSON), and `katra report`: one
 * self-contained HTML page whose numbers are those of `katra stats --json`
 * of the same trace.
 */
#include "helpers.h"
#include "cli.h"
#include "synth.h"
#include "tmp_path.h"

#include <jansson.h>
#include <criterion/criterion.h>

/* `katra stats --json` of @path, parsed. */
static json_t *stats_of(const char *path)
{
	struct proc p;
	const char *args[] = { "stats", "--json", path, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	json_error_t err;
	json_t *o = json_loadb(p.out, p.out_len, 0, &err);
	cr_assert_not_null(o, "%s", err.text);
	return o;
}

/* The element of array @arr whose "name" is @name. */
static json_t *named_in(json_t *arr, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(arr, i, n)
		if (!strcmp(json_string_value(json_object_get(n, "name")), name))
			return n;
	cr_assert_fail("no name %s", name);
	return NULL;
}

static json_t *zone_of(json_t *stats, const char *name)
{
	return json_object_get(named_in(json_object_get(stats, "names"), name), "zone");
}

static uint64_t zint(json_t *zone, const char *key)
{
	json_t *v = json_object_get(zone, key);
	cr_assert(json_is_integer(v), "no %s", key);
	return (uint64_t)json_integer_value(v);
}

static const char *const nested_names[] = { "frame", "draw", "wait", "semi" };

/* Thread 1: frame [0,12000) holds draw [1000,6000) (holding wait
 * [2000,4000)), draw [7000,8000) and semi [9000,10000); frame [20000,25000)
 * ends while wait (opened at 21000) is still open.  Thread 2: draw
 * [40000,43000). */
static void write_nested(const char *path)
{
	kt_writer *w = t_synth_open(path, nested_names, 4, NULL, 0);
	struct t_synth a = { 0 }, b = { 0 };
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 1, 0, 0);
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 2, 1000, 0);
	t_synth_zone(&a, 3, 2000, 2000);
	t_synth_add(&a, KT_EV_ZONE_END, 2, 6000, 0);
	t_synth_zone(&a, 2, 7000, 1000);
	t_synth_zone(&a, 4, 9000, 1000);
	t_synth_add(&a, KT_EV_ZONE_END, 1, 12000, 0);
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 1, 20000, 0);
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 3, 21000, 0);
	t_synth_add(&a, KT_EV_ZONE_END, 1, 25000, 0);
	t_synth_zone(&b, 2, 40000, 3000);
	t_synth_flush(w, 1, "main", &a);
	t_synth_flush(w, 2, "render", &b);
	t_synth_close(w);
}

Test(stats_self, self_times_are_exact_and_sum_to_the_root_zones)
{
	char path[128];
	tmp_path(path, sizeof(path), "nested.katra");
	write_nested(path);
	json_t *o = stats_of(path);
	/* frame: 12000 - (5000 + 1000 + 1000) + 5000 (wait never ended: its
	 * time stays in the frame); draw: 5000 - 2000 + 1000 + 3000. */
	struct { const char *name; uint64_t total, self; } want[] = {
		{ "frame", 17000, 10000 }, { "draw", 9000, 7000 },
		{ "wait", 2000, 2000 }, { "semi", 1000, 1000 },
	};
	uint64_t self = 0;
	for (size_t i = 0; i < 4; i++) {
		json_t *z = zone_of(o, want[i].name);
		cr_assert_eq(zint(z, "total_ns"), want[i].total, "%s total", want[i].name);
		cr_assert_eq(zint(z, "self_ns"), want[i].self, "%s self", want[i].name);
		self += zint(z, "self_ns");
	}
	json_t *ths = json_object_get(o, "threads");
	uint64_t t1 = zint(json_array_get(ths, 0), "zones_ns");
	uint64_t t2 = zint(json_array_get(ths, 1), "zones_ns");
	cr_assert_eq(t1, 17000);
	cr_assert_eq(t2, 3000);
	cr_assert_eq(self, t1 + t2, "self times sum to the threads' root zones");
	json_decref(o);
	unlink(path);
}

Test(stats_self, text_has_total_and_self_columns)
{
	char path[128];
	tmp_path(path, sizeof(path), "nestedtxt.katra");
	write_nested(path);
	struct proc p;
	const char *args[] = { "stats", path, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_not_null(strstr(p.out, "        total         self\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "\nframe                             2       5000       "
					 "5000       5000      12000        17000        10000\n"),
			   "%s", p.out);
	unlink(path);
}

/* ---- katra report -------------------------------------------------------- */

/* `katra report @in -o OUT`, with @opt and @val when not NULL, expected
 * to exit @status (its stderr into @err, @err_len bytes, when not NULL):
 * when 0, the data the page embeds, parsed, and the page's bytes in
 * *@html (free() it) when not NULL; else NULL, and no page. */
static json_t *report_with(const char *in, const char *opt, const char *val, int status,
			   char *err, size_t err_len, char **html)
{
	char out[160];
	snprintf(out, sizeof(out), "/tmp/katra-report-%d.html", (int)getpid());
	unlink(out);
	struct proc p;
	const char *args[] = { "report", in, "-o", out, opt, val, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, status, "exit %d: %.*s", p.status, (int)p.err_len, p.err);
	if (err)
		snprintf(err, err_len, "%.*s", (int)p.err_len, p.err);
	if (status) {
		cr_assert_neq(access(out, F_OK), 0, "a page of a refused report");
		return NULL;
	}
	char *page;
	json_t *data = t_page_data(out, &page);
	unlink(out);
	/* Nothing is fetched: no URL, no source to load. */
	cr_assert_null(strstr(page, "http://"));
	cr_assert_null(strstr(page, "https://"));
	cr_assert_null(strstr(page, " src="));
	if (html)
		*html = page;
	else
		free(page);
	return data;
}

/* `katra report @in` into a page, and the data it embeds, parsed; the
 * page's bytes in *@html (free() it) when not NULL. */
static json_t *report_of(const char *in, char **html)
{
	return report_with(in, NULL, NULL, 0, NULL, 0, html);
}

/* The sum over @arr of each element's @key, or (@key NULL) its item 2:
 * a flame node's self time. */
static uint64_t sum_of(json_t *arr, const char *key)
{
	uint64_t sum = 0;
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
		sum += key ? zint(e, key) : (uint64_t)json_integer_value(json_array_get(e, 2));
	return sum;
}

static uint64_t flame_total(json_t *data)
{
	return sum_of(json_object_get(data, "flame"), NULL);
}

/* The page's numbers against `katra stats --json` of the same file. */
static void check_against_stats(const char *path, json_t *data)
{
	json_t *st = stats_of(path), *mine = json_object_get(data, "stats");
	json_t *fr = json_object_get(st, "frames");
	cr_assert(json_equal(json_object_get(mine, "frames"), fr), "frames differ");
	cr_assert(json_equal(json_object_get(mine, "names"), json_object_get(st, "names")),
		  "zone rows differ");
	json_t *slow = json_object_get(json_object_get(data, "frames"), "slowest");
	if (zint(fr, "count"))
		cr_assert_eq((uint64_t)json_integer_value(json_array_get(json_array_get(slow, 0), 1)),
			     zint(fr, "max_ns"), "the slowest frame");
	cr_assert_eq(flame_total(data), sum_of(json_object_get(st, "threads"), "zones_ns"), "the flame graph's root total");
	json_decref(st);
}

static const char *const frame_names[] = { "frame", "draw", "</script><script>alert(1)</script>",
					   "fps" };

/* 50 frames on thread 1, frame k lasting 1000 + 10 k us (the 50th: 1490),
 * each holding a draw of half its length with the hostile name inside, and
 * a counter per frame. */
static void write_frames(const char *path)
{
	kt_writer *w = t_synth_open(path, frame_names, 4, NULL, 0);
	struct t_synth s = { 0 };
	uint64_t t = 0;
	for (int k = 0; k <= 50; k++) {
		t_synth_add(&s, KT_EV_FRAME, 1, t, k);
		if (k == 50)
			break;
		uint64_t len = (1000 + 10 * (uint64_t)k) * 1000;
		t_synth_add(&s, KT_EV_ZONE_BEGIN, 2, t + 10, 0);
		t_synth_zone(&s, 3, t + 20, 1000);
		t_synth_add(&s, KT_EV_ZONE_END, 2, t + 10 + len / 2, 0);
		t_synth_add(&s, KT_EV_COUNTER_I64, 4, t + 5, 60 - k);
		t += len;
	}
	t_synth_flush(w, 1, "main", &s);
	t_synth_close(w);
}

Test(report, numbers_match_stats_json_for_frames_zones_and_flame)
{
	char path[128];
	tmp_path(path, sizeof(path), "frames.katra");
	write_frames(path);
	char *html;
	json_t *data = report_of(path, &html);
	check_against_stats(path, data);
	json_t *frames = json_object_get(data, "frames");
	cr_assert_eq(json_array_size(json_object_get(frames, "points")), 50);
	json_t *slow = json_array_get(json_object_get(frames, "slowest"), 0);
	cr_assert_eq(json_integer_value(json_array_get(slow, 1)), 1490000);
	/* The zone table has the draw and the hostile name, whose bytes came
	 * back whole from the page but never appear raw in it. */
	cr_assert_eq(json_array_size(json_object_get(json_object_get(data, "stats"), "names")), 4);
	cr_assert_null(strstr(html, "<script>alert(1)"));
	cr_assert_not_null(strstr(html, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));
	json_t *flame = json_object_get(data, "flame");
	cr_assert_str_eq(json_string_value(json_array_get(json_array_get(flame, 0), 1)), "main");
	cr_assert_str_eq(json_string_value(json_array_get(json_array_get(flame, 2), 1)),
			 frame_names[2]);
	json_t *counters = json_object_get(json_object_get(data, "timeline"), "counters");
	cr_assert_eq(json_array_size(counters), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(counters, 0), "name")),
			 "fps");
	/* Its values over time: 60 down to the last frame's 11. */
	json_t *v = json_object_get(json_array_get(counters, 0), "v");
	cr_assert_eq(json_real_value(json_array_get(v, 0)), 60);
	size_t last = json_array_size(v);
	while (last > 0 && json_is_null(json_array_get(v, last - 1)))
		last--;
	cr_assert_gt(last, 1);
	cr_assert_eq(json_real_value(json_array_get(v, last - 1)), 11);
	json_decref(data);
	free(html);
	unlink(path);
}

/* The report of @path agrees with its stats and its flame graph's root
 * total is @ns; @path is removed. */
static void flame_is(const char *path, uint64_t ns)
{
	json_t *data = report_of(path, NULL);
	check_against_stats(path, data);
	cr_assert_eq(flame_total(data), ns);
	json_decref(data);
	unlink(path);
}

Test(report, nested_zones_and_the_golden_trace_match_stats)
{
	char path[128];
	tmp_path(path, sizeof(path), "nestedrep.katra");
	write_nested(path);
	flame_is(path, 20000);
	json_t *data = report_of(KT_TEST_DATA "/golden_v1.katra", NULL);
	check_against_stats(KT_TEST_DATA "/golden_v1.katra", data);
	json_t *h = json_object_get(data, "header");
	cr_assert_str_eq(json_string_value(json_object_get(h, "workload")), "unit test");
	cr_assert_str_eq(json_string_value(json_object_get(h, "run_id")), "run-1");
	json_decref(data);
}

/* What a dropped end leaves.  Thread 1: loop [0, ...) never ends, and
 * every later zone nests inside it; the zones that ended count (loop
 * [10000,15000), self 4000; update 2000 and 1000), 7000 ns, where the
 * outermost zones' time would be 0.  Thread 2: loop [20000,30000) closes
 * update (opened at 21000, its end lost) with it, and wait [22000,25000)
 * inside update counts once: loop's self is 10000 - 3000.  Stats, self
 * times and flame graph all say 17000 ns. */
Test(report, a_zone_that_never_ended_leaves_stats_and_flame_agreeing)
{
	static const char *const names[] = { "loop", "update", "wait" };
	char path[128];
	tmp_path(path, sizeof(path), "unended.katra");
	kt_writer *w = t_synth_open(path, names, 3, NULL, 0);
	struct t_synth a = { 0 }, b = { 0 };
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 1, 0, 0);
	t_synth_zone(&a, 2, 1000, 2000);
	t_synth_add(&a, KT_EV_ZONE_BEGIN, 1, 10000, 0);
	t_synth_zone(&a, 2, 11000, 1000);
	t_synth_add(&a, KT_EV_ZONE_END, 1, 15000, 0);
	t_synth_add(&b, KT_EV_ZONE_BEGIN, 1, 20000, 0);
	t_synth_add(&b, KT_EV_ZONE_BEGIN, 2, 21000, 0);
	t_synth_zone(&b, 3, 22000, 3000);
	t_synth_add(&b, KT_EV_ZONE_END, 1, 30000, 0);
	t_synth_flush(w, 1, "main", &a);
	t_synth_flush(w, 2, "side", &b);
	t_synth_close(w);
	json_t *st = stats_of(path), *ths = json_object_get(st, "threads");
	cr_assert_eq(zint(json_array_get(ths, 0), "zones_ns"), 7000);
	cr_assert_eq(zint(json_array_get(ths, 1), "zones_ns"), 10000);
	cr_assert_eq(zint(zone_of(st, "loop"), "self_ns"), 4000 + 7000);
	cr_assert_eq(zint(zone_of(st, "update"), "self_ns"), 3000);
	cr_assert_eq(zint(zone_of(st, "wait"), "self_ns"), 3000);
	json_decref(st);
	flame_is(path, 17000);
}

/* A capture's sidecar beside the trace: its window and head loss reach the
 * page's header, its strings as data; one that is a symbolic link, or not
 * a capture's, is not read. */
Test(report, the_sidecar_is_read_as_hostile)
{
	char path[128], side[160], other[160];
	tmp_path(path, sizeof(path), "side.katra");
	write_nested(path);
	snprintf(side, sizeof(side), "%s.json", path);
	snprintf(other, sizeof(other), "%s.other", path);
	FILE *f = fopen(other, "w");
	cr_assert_not_null(f);
	fputs("{\"schema\":\"katra.capture-status/v1\",\"state\":\"</script><b>x\","
	      "\"head_loss_ns\":1500,\"complete\":false,\"sha256\":\"ignored\"}", f);
	fclose(f);
	cr_assert_eq(symlink(other, side), 0);
	json_t *data = report_of(path, NULL);
	cr_assert(json_is_null(json_object_get(json_object_get(data, "header"), "sidecar")),
		  "a link is not followed");
	json_decref(data);
	unlink(side);
	cr_assert_eq(rename(other, side), 0);
	char *html;
	data = report_of(path, &html);
	json_t *sc = json_object_get(json_object_get(data, "header"), "sidecar");
	cr_assert_str_eq(json_string_value(json_object_get(sc, "state")), "</script><b>x");
	cr_assert_eq(json_integer_value(json_object_get(sc, "head_loss_ns")), 1500);
	cr_assert_null(json_object_get(sc, "sha256"), "only the fields the page shows");
	cr_assert_null(strstr(html, "<b>x"));
	json_decref(data);
	free(html);
	unlink(side);
	unlink(path);
}

#ifdef KT_EXAMPLE
#include "example.h"

/* The report of the examples/ program: its numbers are those of stats. */
Test(report, the_examples_programs_page_matches_its_stats)
{
	char path[128];
	tmp_path(path, sizeof(path), "particles.katra");
	t_run_example(path, 120, 80);
	char *html;
	json_t *data = report_of(path, &html);
	check_against_stats(path, data);
	/* 120 frame marks: 119 frames between them. */
	json_t *frames = json_object_get(data, "frames");
	cr_assert_eq(json_array_size(json_object_get(frames, "points")), 119);
	json_decref(data);
	free(html);
	unlink(path);
}
#endif

/* The last non-null value of series @v and the highest. */
static void series_last_max(json_t *v, double *last, double *max)
{
	size_t i;
	json_t *x;
	*last = *max = -1;
	json_array_foreach(v, i, x) {
		if (json_is_null(x))
			continue;
		*last = json_real_value(x);
		*max = *last > *max ? *last : *max;
	}
}

/* tests/data/mem_v5.katra (test_mem.c): a series of live bytes per pool,
 * whose highest bin is the pool's peak and whose last its end - but for
 * meshes, whose two allocations (64, then 32 bytes live) share a bin of
 * 1024 ns: the bin keeps the higher. */
Test(report, memory_per_pool_over_time)
{
	char *html;
	json_t *data = report_of(KT_TEST_DATA "/mem_v5.katra", &html);
	json_t *mem = json_object_get(json_object_get(data, "timeline"), "memory");
	static const char *const names[] = { "default", "textures", "meshes" };
	static const double peak[] = { 400, 9216, 64 }, end[] = { 350, 0, 64 };
	cr_assert_eq(json_array_size(mem), 3);
	for (size_t k = 0; k < 3; k++) {
		json_t *s = json_array_get(mem, k);
		cr_assert_str_eq(json_string_value(json_object_get(s, "name")), names[k]);
		double last, max;
		series_last_max(json_object_get(s, "v"), &last, &max);
		cr_assert_eq(max, peak[k], "%s", names[k]);
		cr_assert_eq(last, end[k], "%s", names[k]);
	}
	cr_assert_eq(json_array_size(json_object_get(json_object_get(data, "stats"), "memory")), 3);
	cr_assert_not_null(strstr(html, "Memory per pool over time"));
	json_decref(data);
	free(html);
}

/* ---- a trace of several processes (issue #30) ----------------------------- */

#include "synth_procs.h"

/* Process @p's zone row of @name. */
static json_t *pzone(json_t *p, const char *name)
{
	return named_in(json_object_get(p, "zones"), name);
}

/* The zone row @z is (count, total, self, max). */
static void pzone_is(json_t *z, uint64_t count, uint64_t total, uint64_t self, uint64_t max)
{
	cr_assert(zint(z, "count") == count && zint(z, "total_ns") == total &&
		  zint(z, "self_ns") == self && zint(z, "max_ns") == max,
		  "%s: %llu %llu %llu %llu", json_string_value(json_object_get(z, "name")),
		  (unsigned long long)zint(z, "count"), (unsigned long long)zint(z, "total_ns"),
		  (unsigned long long)zint(z, "self_ns"), (unsigned long long)zint(z, "max_ns"));
}

/* A section per process: its entry, its one thread, its events and drops,
 * its zones, "work" a row in each process that has it. */
Test(report_procs, a_section_per_process_of_a_merged_trace)
{
	char path[128], err[1024];
	tmp_path(path, sizeof(path), "procs.katra");
	t_procs_merge(path, t_four_procs, 4);
	char *html;
	json_t *data = report_with(path, NULL, NULL, 0, err, sizeof(err), &html);
	json_t *ps = json_object_get(data, "processes");
	cr_assert_not_null(strstr(html, "<section id=\"procsec\" hidden><h2>Processes</h2>"));
	cr_assert_not_null(strstr(html, "header(); processes(); frames();"));
	free(html);
	cr_assert_eq(json_array_size(ps), 4);
	cr_assert(json_is_null(json_object_get(data, "filter")));
	static const struct { uint64_t pid, parent, events, dropped; const char *name, *thread; }
	want[] = { { 500, 1, 6, 3, "server", "main" }, { 501, 500, 4, 0, "client", "main" },
		   { 502, 500, 2, 0, "client", "main" }, { 503, 500, 2, 0, "helper", "helper" } };
	for (size_t i = 0; i < 4; i++) {
		json_t *p = json_array_get(ps, i), *th = json_object_get(p, "threads");
		cr_assert(zint(p, "id") == i + 1 && zint(p, "pid") == want[i].pid &&
			  zint(p, "parent_pid") == want[i].parent && zint(p, "start_ns") == 1000 &&
			  zint(p, "events") == want[i].events && zint(p, "dropped") == want[i].dropped,
			  "process %zu", i);
		cr_assert_str_eq(json_string_value(json_object_get(p, "name")), want[i].name);
		cr_assert(json_is_true(json_object_get(p, "complete")) &&
			  json_is_false(json_object_get(p, "recovered")));
		cr_assert_eq(json_array_size(json_object_get(p, "cmdline")), 0);
		cr_assert_eq(json_array_size(th), 1);
		cr_assert_eq(zint(json_array_get(th, 0), "tid"), i + 1);
		cr_assert_str_eq(json_string_value(json_object_get(json_array_get(th, 0), "name")),
				 want[i].thread);
	}
	/* server: work 4000 (1000 of it parse's) and 2000. */
	cr_assert_eq(json_array_size(json_object_get(json_array_get(ps, 0), "zones")), 2);
	pzone_is(pzone(json_array_get(ps, 0), "work"), 2, 6000, 5000, 4000);
	pzone_is(pzone(json_array_get(ps, 0), "parse"), 1, 1000, 1000, 1000);
	pzone_is(pzone(json_array_get(ps, 1), "work"), 2, 2000, 2000, 1500);
	pzone_is(pzone(json_array_get(ps, 2), "work"), 1, 700, 700, 700);
	pzone_is(pzone(json_array_get(ps, 3), "idle"), 1, 300, 300, 300);
	cr_assert_eq(zint(pzone(json_array_get(ps, 2), "work"), "p50_ns"), 700);
	json_decref(data);
	/* A trace of one process has no section. */
	data = report_with(KT_TEST_DATA "/golden_v4.katra", NULL, NULL, 0, err, sizeof(err), NULL);
	cr_assert(json_is_null(json_object_get(data, "processes")));
	json_decref(data);
	unlink(path);
}

/* --pid and --process keep those processes' threads: every count, table
 * and graph of the page is theirs; a pid or name not there is refused,
 * the trace's processes said. */
Test(report_procs, the_process_filter)
{
	char path[128], err[1024];
	tmp_path(path, sizeof(path), "procsf.katra");
	t_procs_merge(path, t_four_procs, 4);
	json_t *data = report_with(path, "--pid", "501", 0, err, sizeof(err), NULL);
	json_t *st = json_object_get(data, "stats"), *ps = json_object_get(data, "processes");
	cr_assert_eq(zint(json_object_get(data, "filter"), "pid"), 501);
	cr_assert(json_array_size(ps) == 1 && zint(json_array_get(ps, 0), "pid") == 501);
	cr_assert(zint(st, "events") == 4 && zint(st, "dropped") == 0);
	cr_assert(json_array_size(json_object_get(st, "threads")) == 1 &&
		  zint(json_array_get(json_object_get(st, "threads"), 0), "tid") == 2);
	cr_assert_eq(json_array_size(json_object_get(st, "processes")), 1);
	cr_assert_eq(json_array_size(json_object_get(st, "names")), 1);
	cr_assert_eq(flame_total(data), 2000);
	json_decref(data);
	/* Both clients, by name: a "work" row of each process's name id. */
	data = report_with(path, "--process", "client", 0, err, sizeof(err), NULL);
	st = json_object_get(data, "stats");
	ps = json_object_get(data, "processes");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(data, "filter"),
							   "process")), "client");
	cr_assert(json_array_size(ps) == 2 && zint(json_array_get(ps, 0), "pid") == 501 &&
		  zint(json_array_get(ps, 1), "pid") == 502);
	cr_assert(zint(st, "events") == 6 && json_array_size(json_object_get(st, "names")) == 2);
	cr_assert_eq(flame_total(data), 2700);
	json_decref(data);
	/* The server's drops are its own. */
	data = report_with(path, "--pid", "500", 0, err, sizeof(err), NULL);
	st = json_object_get(data, "stats");
	cr_assert(zint(st, "events") == 6 && zint(st, "dropped") == 3);
	cr_assert_eq(flame_total(data), 6000);
	json_decref(data);
	report_with(path, "--pid", "999", 2, err, sizeof(err), NULL);
	cr_assert(strstr(err, ": no process of pid 999 in the trace; its processes: pid 500 "
			      "(server), pid 501 (client), pid 502 (client), pid 503 (helper)\n"),
		  "%s", err);
	report_with(path, "--process", "nobody", 2, err, sizeof(err), NULL);
	cr_assert(strstr(err, ": no process named 'nobody' in the trace; its processes: pid 500 "),
		  "%s", err);
	report_with(path, "--pid", "0", 2, err, sizeof(err), NULL);
	cr_assert(strstr(err, "--pid wants a process id, not '0'"), "%s", err);
	unlink(path);
}

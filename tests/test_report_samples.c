/*
 * Sampled call stacks' readers (issue #31): `katra report`'s flame graph
 * of the samples inside the slowest frames (its JSON, exact, and the
 * page's section), what it says when there are none, and `katra stats
 * --json`'s samples section, the text's figures.  On tests/synth_samples.h's
 * trace, whose addresses no map names: every name and count is known.
 */
#include "helpers.h"
#include "cli.h"
#include "synth_samples.h"

#include <jansson.h>
#include <criterion/criterion.h>
#include "tmp_path.h"

/* `katra report @in`'s data, and its page in *@html. */
static json_t *report_of(const char *in, char **html)
{
	char out[160];
	tmp_path(out, sizeof(out), "page.html");
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "report", in, "-o", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_t *data = t_page_data(out, html);
	unlink(out);
	return data;
}

static json_t *parsed(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	cr_assert_not_null(o, "%s: %s", err.text, text);
	return o;
}

static uint64_t zint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	cr_assert(json_is_integer(v), "%s", key);
	return (uint64_t)json_integer_value(v);
}

Test(report_samples, the_slowest_frames_samples_as_a_flame_graph)
{
	char path[128];
	tmp_path(path, sizeof(path), "s.katra");
	t_smp_write(path, NULL);
	char *html;
	json_t *data = report_of(path, &html);
	json_t *s = json_object_get(data, "samples");
	cr_assert_eq(zint(s, "total"), 5);
	cr_assert_eq(zint(s, "in_frames"), 4); /* frame 0's is not a slowest frame's */
	cr_assert_eq(zint(s, "unknown"), 0);
	cr_assert_eq(zint(s, "folded"), 0);
	cr_assert(json_is_null(json_object_get(s, "why")));
	/* Roots: thread "main" in slowest frame #2 (window 1, frame 10, first
	 * in time) and #1 (window 0, frame 11); then zones, then functions
	 * outermost first; counts where a stack ends. */
	json_t *want = parsed("[[-1,\"main\",0,1,1],[0,\"0x2000\",0,null,null],"
			      "[1,\"0x3000\",1,null,null],[-1,\"main\",0,1,0],"
			      "[3,\"draw\",0,null,null],[4,\"0x2000\",0,null,null],"
			      "[5,\"0x1000\",2,null,null],[3,\"0x2000\",0,null,null],"
			      "[7,\"0x3000\",1,null,null]]");
	json_t *got = json_object_get(s, "flame");
	char *g = json_dumps(got, JSON_COMPACT);
	cr_assert(json_equal(got, want), "%s", g);
	free(g);
	/* The frames they are in: #1 is frame 11, #2 frame 10. */
	json_t *slow = json_object_get(json_object_get(data, "frames"), "slowest");
	cr_assert_eq(json_integer_value(json_array_get(json_array_get(slow, 0), 1)), 2100000);
	cr_assert_eq(json_integer_value(json_array_get(json_array_get(slow, 1), 1)), 2000000);
	/* The page's section and its drawing (report_chromium.sh sees it drawn). */
	static const char *const page_has[] = { "<div id=\"smflame\"></div>",
						"function samples() {", " samples(); timeline();" };
	for (size_t i = 0; i < sizeof(page_has) / sizeof(page_has[0]); i++)
		cr_assert_not_null(strstr(html, page_has[i]), "%s", page_has[i]);
	free(html);
	json_decref(want);
	json_decref(data);
	unlink(path);
}

Test(report_samples, no_samples_and_refused_samples_say_so)
{
	char path[128];
	tmp_path(path, sizeof(path), "none.katra");
	/* No samples, no note: total 0, no reason. */
	t_smp_write(path, "second note");
	char *html;
	json_t *data = report_of(path, &html);
	json_t *s = json_object_get(data, "samples");
	cr_assert_eq(zint(s, "total"), 0);
	cr_assert_eq(zint(s, "in_frames"), 0);
	cr_assert(json_is_null(json_object_get(s, "why")));
	cr_assert_eq(json_array_size(json_object_get(s, "flame")), 0);
	cr_assert_not_null(strstr(html, "No sampled call stacks in this trace"));
	free(html);
	json_decref(data);
	/* The session asked and the kernel refused: the note's reason. */
	t_smp_write(path, "samples: absent: perf_event_open: Permission denied");
	data = report_of(path, NULL);
	s = json_object_get(data, "samples");
	cr_assert_eq(zint(s, "total"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(s, "why")),
			 "perf_event_open: Permission denied");
	json_decref(data);
	unlink(path);
}

/* `katra stats` of @path, text or JSON, into @p. */
static void stats(struct proc *p, const char *path, int json)
{
	run_katra(p, json ? (const char *const[]){ "stats", "--json", path, NULL }
			  : (const char *const[]){ "stats", path, NULL });
	cr_assert_eq(p->status, 0, "%.*s", (int)p->err_len, p->err);
	cr_assert_lt(p->out_len, sizeof(p->out));
	p->out[p->out_len] = 0;
}

Test(stats_samples, json_has_the_text_s_top_functions_per_zone)
{
	char path[128];
	tmp_path(path, sizeof(path), "st.katra");
	t_smp_write(path, NULL);
	struct proc p;
	stats(&p, path, 0);
	cr_assert_not_null(strstr(p.out, "\nsamples: 5 (0 of no known stack); per zone, its top "
					 "functions (innermost frame):\n"
					 "  (no zone): 3 samples\n"
					 "     66.7%        2  0x3000\n"
					 "     33.3%        1  0x1000\n"
					 "  draw: 2 samples\n"
					 "    100.0%        2  0x1000\n"),
			   "%s", p.out);
	stats(&p, path, 1);
	json_t *o = parsed(p.out), *s = json_object_get(o, "samples");
	json_t *want = parsed("{\"samples\":5,\"unknown\":0,\"zones\":["
			      "{\"zone\":null,\"samples\":3,\"functions\":["
			      "{\"name\":\"0x3000\",\"samples\":2,\"percent\":66.666666666666671},"
			      "{\"name\":\"0x1000\",\"samples\":1,\"percent\":33.333333333333336}]},"
			      "{\"zone\":\"draw\",\"samples\":2,\"functions\":["
			      "{\"name\":\"0x1000\",\"samples\":2,\"percent\":100.0}]}]}");
	char *g = json_dumps(s, JSON_COMPACT);
	cr_assert(json_equal(s, want), "%s", g);
	free(g);
	json_decref(want);
	json_decref(o);
	/* A trace without samples has no section, in either. */
	t_smp_write(path, "second note");
	stats(&p, path, 1);
	o = parsed(p.out);
	cr_assert_null(json_object_get(o, "samples"));
	json_decref(o);
	unlink(path);
}

/* tests/data/samples_v5.katra is this trace (KT_REGEN_GOLDEN=1 writes it),
 * for the tests that take a fixture of tests/data: exports_golden.sh and
 * report_chromium.sh's page of it. */
Test(report_samples, the_fixture_in_tests_data_is_this_trace)
{
	char path[128];
	tmp_path(path, sizeof(path), "fx.katra");
	t_smp_write(path, NULL);
	size_t len = 0, glen = 0;
	uint8_t *mine = t_slurp(path, &len);
	cr_assert_not_null(mine);
	uint8_t *golden = t_golden(KT_SRC_DIR "/tests/data/samples_v5.katra", mine, len, &glen);
	cr_assert_not_null(golden, "no tests/data/samples_v5.katra");
	cr_assert_eq(glen, len);
	cr_assert_eq(memcmp(golden, mine, len), 0);
	free(mine);
	free(golden);
	unlink(path);
}

/* `katra export --chrome @path`, parsed. */
static json_t *chrome_of(const char *path)
{
	char out[128];
	tmp_path(out, sizeof(out), "c.json");
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--chrome", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_error_t err;
	json_t *o = json_load_file(out, 0, &err);
	cr_assert_not_null(o, "%s", err.text);
	unlink(out);
	return o;
}

Test(chrome_samples, samples_and_stack_frames_after_the_events)
{
	char path[128];
	tmp_path(path, sizeof(path), "ch.katra");
	t_smp_write(path, NULL);
	json_t *o = chrome_of(path);
	/* Every sample on its thread's row (OS tid 101), in time order, its
	 * "sf" the frame its stack ends in; the frames are samples.h's tree
	 * less the thread's root. */
	json_t *want = parsed(
		"[{\"pid\":4242,\"tid\":101,\"ts\":123457.0003,\"name\":\"sample\",\"sf\":2,\"weight\":1},"
		"{\"pid\":4242,\"tid\":101,\"ts\":137957.0003,\"name\":\"sample\",\"sf\":3,\"weight\":1},"
		"{\"pid\":4242,\"tid\":101,\"ts\":139957.0003,\"name\":\"sample\",\"sf\":6,\"weight\":1},"
		"{\"pid\":4242,\"tid\":101,\"ts\":139958.0003,\"name\":\"sample\",\"sf\":6,\"weight\":1},"
		"{\"pid\":4242,\"tid\":101,\"ts\":140556.0003,\"name\":\"sample\",\"sf\":3,\"weight\":1}]");
	char *g = json_dumps(json_object_get(o, "samples"), JSON_COMPACT);
	cr_assert(json_equal(json_object_get(o, "samples"), want), "%s", g);
	free(g);
	json_decref(want);
	want = parsed("{\"1\":{\"name\":\"0x2000\",\"category\":\"function\"},"
		      "\"2\":{\"name\":\"0x1000\",\"category\":\"function\",\"parent\":\"1\"},"
		      "\"3\":{\"name\":\"0x3000\",\"category\":\"function\",\"parent\":\"1\"},"
		      "\"4\":{\"name\":\"draw\",\"category\":\"zone\"},"
		      "\"5\":{\"name\":\"0x2000\",\"category\":\"function\",\"parent\":\"4\"},"
		      "\"6\":{\"name\":\"0x1000\",\"category\":\"function\",\"parent\":\"5\"}}");
	g = json_dumps(json_object_get(o, "stackFrames"), JSON_COMPACT);
	cr_assert(json_equal(json_object_get(o, "stackFrames"), want), "%s", g);
	free(g);
	json_decref(want);
	/* No sample record as an event of its own (a nameless instant, which
	 * Tracy's importer cannot read). */
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(o, "traceEvents"), i, e)
		cr_assert(json_is_string(json_object_get(e, "name")), "event %zu", i);
	json_decref(o);
	/* No samples: neither member. */
	t_smp_write(path, "second note");
	o = chrome_of(path);
	cr_assert_null(json_object_get(o, "samples"));
	cr_assert_null(json_object_get(o, "stackFrames"));
	cr_assert_eq(json_object_size(o), 2); /* displayTimeUnit, traceEvents */
	json_decref(o);
	unlink(path);
}

/*
 * `katra diff` on synthetic traces with known effects: a zone made 10%
 * slower is slower (exit 4 with --fail-on slower), runs of one distribution
 * drawn with different seeds show no change in at least 95 of 100 trials,
 * also with zones that run 1, 2 and 5 times and every verdict failing, a
 * doubled count of cheaper zones is a count change, a frame-time
 * regression is found, and captures pair by run id and epoch.  The --html
 * page embeds the very object --json prints.  The comparison itself
 * (tools/analysis/diff.h): its verdict rule, exactly; its work, a number of draws
 * that does not grow with the samples.
 */
#include "helpers.h"
#include "cli.h"
#include "synth.h"
#include "tmp_path.h"
#include "tools/analysis/diff.h"

#include <inttypes.h>
#include <math.h>

#include <jansson.h>
#include <criterion/criterion.h>

/* @x within @eps of @y (cr_assert_float_eq, which the TSan stand-in lacks). */
#define assert_near(x, y, eps) \
	cr_assert(fabs((double)(x) - (double)(y)) <= (eps), "%s = %.15g, not %.15g", #x, \
		  (double)(x), (double)(y))

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* About N(1, 0.06): the mean of four uniforms in [0.8, 1.2]. */
static double noise(uint64_t *s)
{
	double sum = 0;
	for (int i = 0; i < 4; i++)
		sum += 0.8 + 0.4 * (double)(rng_next(s) >> 11) / 9007199254740992.0;
	return sum / 4;
}

struct run_spec {
	uint64_t seed;
	double zone_scale, frame_scale;
	const char *run_id;
	uint64_t epoch;
	int per_frame;   /* "work" zones per frame; 0: 4 */
	int rare;        /* also zones "once", "twice" and "five" that run so often */
};

static const char *const names[] = { "work", "frame_mark", "once", "twice", "five" };

/* 200 frames of ~20 us on thread 1, each holding four zones of ~1 us named
 * @zone[0] ("work"), the frames @zone[1]; with @r->rare, then 1, 2 and 5
 * zones of ~50 us named @zone[2], [3] and [4]. */
static void write_named_run(const char *path, const struct run_spec *r,
			    const char *const *zone)
{
	kt_writer *w = t_synth_open(path, zone, r->rare ? 5 : 2, r->run_id, r->epoch);
	struct t_synth s = { 0 };
	uint64_t rng = r->seed * 2654435761u + 1, t = 1000;
	int per_frame = r->per_frame ? r->per_frame : 4;
	for (int f = 0; f < 200; f++) {
		t_synth_add(&s, KT_EV_FRAME, 2, t, f);
		uint64_t z = t + 100;
		for (int k = 0; k < per_frame; k++) {
			uint64_t d = (uint64_t)(1000 * r->zone_scale * noise(&rng));
			t_synth_zone(&s, 1, z, d);
			z += d + 200;
		}
		t += (uint64_t)(20000 * r->frame_scale * noise(&rng));
	}
	t_synth_add(&s, KT_EV_FRAME, 2, t, 200);
	static const int rare[] = { 1, 2, 5 };
	for (int k = 0; r->rare && k < 3; k++)
		for (int i = 0; i < rare[k]; i++) {
			uint64_t d = (uint64_t)(50000 * r->zone_scale * noise(&rng));
			t_synth_zone(&s, (uint32_t)(3 + k), t += 1000, d);
			t += d;
		}
	t_synth_flush(w, 1, "main", &s);
	t_synth_close(w);
}

static void write_run(const char *path, const struct run_spec *r)
{
	write_named_run(path, r, names);
}

/* Write runs @ra to @a and @rb to @b, named after @tag. */
static void write_pair(char *a, char *b, size_t size, const char *tag, const struct run_spec *ra,
		       const struct run_spec *rb)
{
	tmp_path(a, size, "%s-a.katra", tag);
	tmp_path(b, size, "%s-b.katra", tag);
	write_run(a, ra);
	write_run(b, rb);
}

/* Run katra with @args and parse its stdout as JSON (it must be). */
static json_t *run_json(struct proc *p, const char *const *args)
{
	run_katra(p, args);
	json_error_t err;
	json_t *o = json_loadb(p->out, p->out_len, 0, &err);
	cr_assert_not_null(o, "exit %d: %s", p->status, p->err);
	return o;
}

static const char *verdict_of(json_t *row)
{
	return json_string_value(json_object_get(row, "verdict"));
}

static json_t *zone_row(json_t *o, const char *name)
{
	size_t i;
	json_t *z;
	json_array_foreach(json_object_get(o, "zones"), i, z)
		if (!strcmp(json_string_value(json_object_get(z, "name")), name))
			return z;
	cr_assert_fail("no zone %s", name);
	return NULL;
}

static double change_of(json_t *row, const char *stat, const char *key)
{
	return json_real_value(json_object_get(json_object_get(row, stat), key));
}

Test(diff, a_zone_ten_percent_slower_is_slower_and_fails)
{
	char a[128], b[128];
	write_pair(a, b, sizeof(a), "slow", &(struct run_spec){ 1, 1.0, 1.0, NULL, 0, 0, 0 },
		   &(struct run_spec){ 2, 1.1, 1.0, NULL, 0, 0, 0 });
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", "--fail-on", "slower", "--threshold", "5%",
			       NULL };
	json_t *o = run_json(&p, args);
	cr_assert_eq(p.status, 4, "exit %d: %s", p.status, p.err);
	json_t *work = zone_row(o, "work");
	cr_assert_str_eq(verdict_of(work), "slower");
	double c = change_of(work, "p50", "change"), lo = change_of(work, "p50", "lo");
	cr_assert(c > 0.07 && c < 0.13, "p50 change %f", c);
	cr_assert(lo > 0.05, "interval's low end %f above the threshold", lo);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(work, "a"), "count")), 800);
	cr_assert_str_eq(verdict_of(json_object_get(o, "frames")), "no change");
	cr_assert_str_eq(json_string_value(json_object_get(o, "verdict")), "slower");
	json_decref(o);
	/* Without --fail-on the same verdict exits 0; the text says it too. */
	const char *text[] = { "diff", a, b, NULL };
	run_katra(&p, text);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_not_null(strstr(p.out, "\nverdict: slower (1 slower, 0 faster, 1 no change, 0 too "
				   "few); count: 0 more, 0 fewer; total: 0 more, 0 less\n"), "%s", p.out);
	unlink(a);
	unlink(b);
}

Test(diff, one_distribution_shows_no_change_in_95_of_100_trials)
{
	char a[128], b[128];
	int same = 0;
	for (uint64_t trial = 0; trial < 100; trial++) {
		write_pair(a, b, sizeof(a), "same", &(struct run_spec){ 1000 + 2 * trial, 1.0, 1.0, NULL, 0, 0, 0 },
			   &(struct run_spec){ 1001 + 2 * trial, 1.0, 1.0, NULL, 0, 0, 0 });
		struct proc p;
		const char *args[] = { "diff", a, b, "--json", "--fail-on", "change", NULL };
		json_t *o = run_json(&p, args);
		const char *v = json_string_value(json_object_get(o, "verdict"));
		same += !strcmp(v, "no change");
		cr_assert_eq(p.status, strcmp(v, "no change") ? 4 : 0);
		json_decref(o);
	}
	cr_log_info("no change in %d of 100 trials", same);
	cr_assert_geq(same, 95, "no change in only %d of 100 trials", same);
	unlink(a);
	unlink(b);
}

Test(diff, a_frame_time_regression_is_found)
{
	char a[128], b[128];
	write_pair(a, b, sizeof(a), "frames", &(struct run_spec){ 5, 1.0, 1.0, NULL, 0, 0, 0 },
		   &(struct run_spec){ 6, 1.0, 1.1, NULL, 0, 0, 0 });
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", "--fail-on", "slower", NULL };
	json_t *o = run_json(&p, args);
	cr_assert_eq(p.status, 4);
	json_t *fr = json_object_get(o, "frames");
	cr_assert_str_eq(verdict_of(fr), "slower");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(fr, "b"), "count")), 200);
	cr_assert_gt(change_of(fr, "mean", "lo"), 0);
	cr_assert_str_eq(verdict_of(zone_row(o, "work")), "no change");
	json_decref(o);
	unlink(a);
	unlink(b);
}

Test(diff, captures_pair_by_run_id_and_epoch)
{
	char a1[128], a2[128], b1[128], b2[128];
	tmp_path(a1, sizeof(a1), "cap-a1.katra");
	tmp_path(a2, sizeof(a2), "cap-a2.katra");
	tmp_path(b1, sizeof(b1), "cap-b1.katra");
	tmp_path(b2, sizeof(b2), "cap-b2.katra");
	write_run(a1, &(struct run_spec){ 7, 1.0, 1.0, "base", 1, 0, 0 });
	write_run(a2, &(struct run_spec){ 8, 1.0, 1.0, "base", 2, 0, 0 });
	write_run(b1, &(struct run_spec){ 9, 1.0, 1.0, "new", 1, 0, 0 });
	write_run(b2, &(struct run_spec){ 10, 1.0, 1.0, "new", 2, 0, 0 });
	struct proc p;
	/* Given out of order: the text pairs them by epoch. */
	const char *args[] = { "diff", a2, a1, "--", b2, b1, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_not_null(strstr(p.out, "\npairs: base.1 -> new.1, base.2 -> new.2\n"), "%s",
			   p.out);
	/* Both sides pool two runs: 1600 zones and 400 frame times each. */
	cr_assert_not_null(strstr(p.out, "\n(frame time)                   400       400 "), "%s",
			   p.out);
	/* The same capture twice on one side would count its zones twice. */
	const char *twice[] = { "diff", a1, a1, "--", b1, NULL };
	run_katra(&p, twice);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "are the same capture (run base, epoch 1) on one side"),
			   "%s", p.err);
	/* On both sides, it is said and compared. */
	const char *both[] = { "diff", a1, b1, a1, "--", b2, NULL };
	run_katra(&p, both);
	cr_assert_eq(p.status, 2, "a1 twice on side A: %s", p.err);
	const char *across[] = { "diff", a1, a1, NULL };
	run_katra(&p, across);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_not_null(strstr(p.err, "warning: "), "%s", p.err);
	cr_assert_not_null(strstr(p.out, "\nverdict: no change (0 slower, 0 faster, 2 no change, 0 "
				   "too few); count: 0 more, 0 fewer; total: 0 more, 0 less\n"), "%s",
			   p.out);
	unlink(a1);
	unlink(a2);
	unlink(b1);
	unlink(b2);
}

Test(diff, usage_errors)
{
	static const struct {
		const char *args[8], *err;
	} cases[] = {
		{ { "diff", "a.katra", NULL }, "give two traces A B, or A1 ... -- B1 ..." },
		{ { "diff", "a", "b", "--threshold", "lots", NULL },
		  "--threshold wants a percentage (5%), not 'lots'" },
		{ { "diff", "a", "b", "--fail-on", "slower,often", NULL },
		  "--fail-on wants slower, faster, change, count or total, not 'slower,often'" },
		{ { "diff", "a", "b", "--fail-on", "slower,", NULL }, "not 'slower,'" },
		{ { "diff", "a", "b", "--min-count", "1", NULL },
		  "--min-count wants a whole number from 2 to 2048, not '1'" },
		{ { "diff", "a", "b", "--only", "", NULL }, "--only wants a pattern" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc p;
		run_katra(&p, cases[i].args);
		cr_assert_eq(p.status, 2, "%zu", i);
		cr_assert_not_null(strstr(p.err, cases[i].err), "%zu: %s", i, p.err);
	}
}

/* Write 200 "outer" zones of 2 us, each holding an "inner" of @inner ns. */
static void write_nested_run(const char *path, uint64_t inner)
{
	static const char *const nested[] = { "outer", "inner" };
	kt_writer *w = t_synth_open(path, nested, 2, NULL, 0);
	struct t_synth s = { 0 };
	for (uint64_t k = 0; k < 200; k++) {
		uint64_t t = 1000 + k * 5000;
		t_synth_add(&s, KT_EV_ZONE_BEGIN, 1, t, 0);
		t_synth_zone(&s, 2, t + 100, inner);
		t_synth_add(&s, KT_EV_ZONE_END, 1, t + 2000, 0);
	}
	t_synth_flush(w, 1, "main", &s);
	t_synth_close(w);
}

Test(diff, self_time_moves_when_a_child_grows)
{
	char a[128], b[128];
	tmp_path(a, sizeof(a), "self-a.katra");
	tmp_path(b, sizeof(b), "self-b.katra");
	write_nested_run(a, 1000);
	write_nested_run(b, 1500);
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", NULL };
	json_t *o = run_json(&p, args);
	json_t *outer = zone_row(o, "outer"), *inner = zone_row(o, "inner");
	/* The outer zone lasts as long; its own time halves, 1000 -> 500 ns. */
	cr_assert_str_eq(verdict_of(outer), "no change");
	cr_assert_eq(json_real_value(json_object_get(json_object_get(outer, "a"), "self_mean_ns")),
		     1000);
	cr_assert_eq(json_real_value(json_object_get(json_object_get(outer, "b"), "self_mean_ns")),
		     500);
	cr_assert_eq(json_real_value(json_object_get(outer, "self_mean_change")), -0.5);
	cr_assert_str_eq(verdict_of(inner), "slower");
	cr_assert_eq(json_real_value(json_object_get(inner, "self_mean_change")), 0.5);
	json_decref(o);
	unlink(a);
	unlink(b);
}

/* The data block of the page at @path, parsed; the page's bytes in *@page. */
static json_t *page_data(const char *path, char **page)
{
	return t_page_data(path, page);
}

Test(diff, html_page_embeds_the_json_numbers)
{
	static const char *const hostile[] = { "</script><script>alert(1)//", "frame_mark" };
	char a[128], b[128], out[128];
	tmp_path(a, sizeof(a), "html-a.katra");
	tmp_path(b, sizeof(b), "html-b.katra");
	write_named_run(a, &(struct run_spec){ 1, 1.0, 1.0, NULL, 0, 0, 0 }, hostile);
	write_named_run(b, &(struct run_spec){ 2, 1.1, 1.1, NULL, 0, 0, 0 }, hostile);
	snprintf(out, sizeof(out), "/tmp/katra-diff-%d.html", (int)getpid());
	unlink(out);
	struct proc p;
	const char *html[] = { "diff", a, b, "--html", out, "--fail-on", "slower", NULL };
	run_katra(&p, html);
	cr_assert_eq(p.status, 4, "exit %d: %s", p.status, p.err);
	cr_assert_not_null(strstr(p.out, "\nverdict: slower (2 slower, 0 faster, 0 no change, 0 too "
				   "few); count: 0 more, 0 fewer; total: 0 more, 0 less\n"),
			   "the text still goes to stdout: %s", p.out);
	char *page;
	json_t *data = page_data(out, &page);
	const char *json[] = { "diff", a, b, "--json", NULL };
	json_t *o = run_json(&p, json);
	cr_assert(json_equal(data, o), "the page's data differs from --json");
	/* The numbers are there, not two empty objects. */
	json_t *fr = json_object_get(data, "frames"), *z = json_array_get(json_object_get(data, "zones"), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(fr, "b"), "count")), 200);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(z, "a"), "count")), 800);
	cr_assert_str_eq(json_string_value(json_object_get(z, "name")), hostile[0]);
	cr_assert_str_eq(verdict_of(fr), "slower");
	cr_assert(json_real_value(json_object_get(json_object_get(z, "p50"), "lo")) > 0);
	/* The name cannot end the data block; nothing can be fetched. */
	cr_assert_null(strstr(page, "<script>alert"));
	cr_assert_not_null(strstr(page, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)//"));
	cr_assert_not_null(strstr(page, "content=\"default-src 'none';"));
	cr_assert_null(strstr(page, "http://"));
	cr_assert_null(strstr(page, "https://"));
	cr_assert_null(strstr(page, " src="));
	free(page);
	json_decref(o);
	json_decref(data);
	/* Never over an input; a directory is refused. */
	const char *over[] = { "diff", a, b, "--html", b, NULL };
	run_katra(&p, over);
	cr_assert_eq(p.status, 1, "%s", p.err);
	cr_assert_not_null(strstr(p.err, "is the input file"), "%s", p.err);
	const char *dir[] = { "diff", a, b, "--html", "/tmp", NULL };
	run_katra(&p, dir);
	cr_assert_eq(p.status, 1, "%s", p.err);
	unlink(out);
	unlink(a);
	unlink(b);
}

Test(diff, a_run_that_cannot_be_read_fails_the_diff)
{
	char a[128], b[128];
	write_pair(a, b, sizeof(a), "fail", &(struct run_spec){ 3, 1.0, 1.0, NULL, 0, 0, 0 },
		   &(struct run_spec){ 4, 1.0, 1.0, NULL, 0, 0, 0 });
	struct proc p;
	/* Read two at a time: the missing one fails the whole diff, said once. */
	const char *args[] = { "diff", a, "/nonexistent/katra-diff", "--", b, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 1, "exit %d: %s", p.status, p.err);
	cr_assert_not_null(strstr(p.err, "/nonexistent/katra-diff"), "%s", p.err);
	cr_assert_eq(p.out_len, 0, "%s", p.out);
	unlink(a);
	unlink(b);
}

static void unlink_pair(const char *a, const char *b)
{
	unlink(a);
	unlink(b);
}

/* Two runs written and compared: their files, the process, its JSON. */
struct pair {
	char a[128], b[128];
	struct proc p;
	json_t *o;
};

/* Write runs @ra and @rb (named after @tag) into @x's files, and run
 * "diff A B --json" with the @extra words (NULL-terminated, at most 8). */
static json_t *diff_pair(struct pair *x, const char *tag, const struct run_spec *ra,
			 const struct run_spec *rb, const char *const *extra)
{
	write_pair(x->a, x->b, sizeof(x->a), tag, ra, rb);
	const char *args[13] = { "diff", x->a, x->b, "--json" };
	for (size_t i = 0; extra[i]; i++) {
		cr_assert_lt(i, 8);
		args[4 + i] = extra[i];
	}
	return x->o = run_json(&x->p, args);
}

/* "diff A B --fail-on @fail_on" on @x's files exits @status and prints @want. */
static void expect_text(struct pair *x, const char *fail_on, int status, const char *want)
{
	const char *args[] = { "diff", x->a, x->b, "--fail-on", fail_on, NULL };
	run_katra(&x->p, args);
	cr_assert_eq(x->p.status, status, "--fail-on %s: %s", fail_on, x->p.out);
	cr_assert_not_null(strstr(x->p.out, want), "%s", x->p.out);
}

/* The row of @name's verdicts and whether its p50 interval is given. */
static void expect_row(json_t *o, const char *name, const char *verdict, const char *count,
		       const char *total)
{
	json_t *z = name ? zone_row(o, name) : json_object_get(o, "frames");
	cr_assert_str_eq(verdict_of(z), verdict, "%s", name);
	cr_assert_str_eq(json_string_value(json_object_get(z, "count_verdict")), count, "%s", name);
	cr_assert_str_eq(json_string_value(json_object_get(z, "total_verdict")), total, "%s", name);
	int judged = strcmp(verdict, "too few") != 0;
	json_t *lo = json_object_get(json_object_get(z, "p50"), "lo");
	cr_assert(judged ? json_is_real(lo) : json_is_null(lo), "%s: an interval only when judged",
		  name);
}

Test(diff, one_distribution_with_zones_run_1_2_and_5_times_exits_0_in_95_of_100)
{
	struct pair x;
	int passed = 0;
	for (uint64_t trial = 0; trial < 100; trial++) {
		json_t *o = diff_pair(&x, "rare", &(struct run_spec){ 3000 + 2 * trial, 1.0, 1.0,
				      NULL, 0, 0, 1 }, &(struct run_spec){ 3001 + 2 * trial, 1.0, 1.0,
				      NULL, 0, 0, 1 }, (const char *[]){ "--fail-on",
				      "change,count,total", NULL });
		passed += x.p.status == 0;
		cr_assert(x.p.status == 0 || x.p.status == 4, "exit %d: %s", x.p.status, x.p.err);
		/* The rare zones, 1, 2 and 5 a run, are never judged. */
		expect_row(o, "once", "too few", "no change", "too few");
		expect_row(o, "twice", "too few", "no change", "too few");
		expect_row(o, "five", "too few", "no change", "too few");
		cr_assert_eq(json_integer_value(json_object_get(o, "too_few")), 3);
		json_decref(o);
	}
	cr_log_info("exit 0 in %d of 100 trials", passed);
	cr_assert_geq(passed, 95, "exit 0 in only %d of 100 trials", passed);
	unlink_pair(x.a, x.b);
}

Test(diff, a_zone_run_once_that_moved_fifty_percent_is_too_few_not_slower)
{
	struct pair x;
	json_t *o = diff_pair(&x, "once", &(struct run_spec){ 11, 1.0, 1.0, NULL, 0, 0, 1 },
			      &(struct run_spec){ 12, 1.5, 1.0, NULL, 0, 0, 1 },
			      (const char *[]){ "--fail-on", "slower", "--only", "once",
			      "--min-count", "2", NULL });
	cr_assert_eq(x.p.status, 0, "one sample never fails: %s", x.p.out);
	json_t *once = zone_row(o, "once");
	expect_row(o, "once", "too few", "no change", "too few");
	double c = change_of(once, "p50", "change");
	cr_assert(c > 0.3 && c < 0.7, "the change is still shown: %f", c);
	cr_assert(json_is_null(json_object_get(json_object_get(once, "p50"), "hi")));
	/* --only kept "once" alone; the frame time, "(frame time)", too is left out. */
	cr_assert_eq(json_array_size(json_object_get(o, "zones")), 1);
	cr_assert(json_is_null(json_object_get(o, "frames")));
	cr_assert_eq(json_integer_value(json_object_get(o, "left_out")), 3, "zone names");
	json_decref(o);
	/* The same without the least count: "work" (800 zones, 50% slower) decides. */
	expect_text(&x, "slower", 4, "(1 slower, 0 faster, 1 no change, 3 too few)");
	unlink_pair(x.a, x.b);
}

Test(diff, a_doubled_count_of_cheaper_zones_is_a_count_change)
{
	/* B runs twice the "work" zones, each half as long: the total is as A's. */
	struct pair x;
	json_t *o = diff_pair(&x, "count", &(struct run_spec){ 13, 1.0, 1.0, NULL, 0, 4, 0 },
			      &(struct run_spec){ 14, 0.5, 1.0, NULL, 0, 8, 0 },
			      (const char *[]){ "--fail-on", "count", NULL });
	cr_assert_eq(x.p.status, 4, "a count change fails --fail-on count: %s", x.p.err);
	json_t *work = zone_row(o, "work");
	expect_row(o, "work", "faster", "more", "no change");
	cr_assert_eq(change_of(work, "count_change", "change"), 1.0);
	cr_assert_gt(change_of(work, "count_change", "lo"), 0.5);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(work, "b"), "count")), 1600);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "counts"), "more")), 1);
	json_decref(o);
	/* Cheaper zones are not slower. */
	expect_text(&x, "slower", 0, "count: 1 more, 0 fewer; total: 0 more, 0 less\n");
	const char *list[] = { "diff", x.a, x.b, "--fail-on", "slower,total", "--fail-on", "count",
			       NULL };
	run_katra(&x.p, list);
	cr_assert_eq(x.p.status, 4, "%s", x.p.err);
	/* Two runs of A against one of B: counts compare per run. */
	const char *runs[] = { "diff", x.a, x.a, "--", x.b, "--json", NULL };
	o = run_json(&x.p, runs);
	cr_assert_eq(change_of(zone_row(o, "work"), "count_change", "change"), 1.0);
	json_decref(o);
	unlink_pair(x.a, x.b);
}

Test(diff, a_side_of_eight_runs_keeps_1024_values_of_each)
{
	struct pair x;
	json_t *o = diff_pair(&x, "pool", &(struct run_spec){ 17, 1.0, 1.0, NULL, 0, 8, 0 },
			      &(struct run_spec){ 18, 1.0, 1.0, NULL, 0, 8, 0 },
			      (const char *[]){ NULL });
	json_t *w = zone_row(o, "work");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(w, "a"), "sampled")), 1600);
	json_decref(o);
	/* 1600 "work" zones a run: eight runs keep DIFF_POOL / 8 = 1024 each. */
	const char *eight[] = { "diff", x.a, x.a, x.a, x.a, x.a, x.a, x.a, x.a, "--", x.b, "--json",
				NULL };
	o = run_json(&x.p, eight);
	w = zone_row(o, "work");
	json_t *a = json_object_get(w, "a"), *b = json_object_get(w, "b");
	cr_assert_eq(json_integer_value(json_object_get(a, "count")), 8 * 1600);
	cr_assert_eq(json_integer_value(json_object_get(a, "sampled")), 8 * 1024);
	cr_assert_eq(json_integer_value(json_object_get(b, "sampled")), 1600);
	cr_assert_str_eq(json_string_value(json_object_get(w, "count_verdict")), "no change");
	json_decref(o);
	unlink_pair(x.a, x.b);
}

Test(diff, patterns_choose_the_rows)
{
	struct pair x;
	json_t *o = diff_pair(&x, "pat", &(struct run_spec){ 15, 1.0, 1.0, NULL, 0, 0, 1 },
			      &(struct run_spec){ 16, 1.0, 1.0, NULL, 0, 0, 1 },
			      (const char *[]){ "--exclude", "[tf]*", "--exclude", "work", NULL });
	cr_assert_eq(json_array_size(json_object_get(o, "zones")), 1); /* "once" */
	zone_row(o, "once");
	cr_assert(json_is_object(json_object_get(o, "frames")));
	cr_assert_eq(json_integer_value(json_object_get(o, "left_out")), 3);
	json_decref(o);
	const char *only[] = { "diff", x.a, x.b, "--only", "t?ice", "--only", "f*", NULL };
	run_katra(&x.p, only);
	cr_assert_eq(x.p.status, 0, "%s", x.p.err);
	cr_assert_not_null(strstr(x.p.out, "\n2 zone names left out by --only and --exclude\n"), "%s",
			   x.p.out);
	cr_assert_not_null(strstr(x.p.out, "\ntwice "), "%s", x.p.out);
	cr_assert_not_null(strstr(x.p.out, "\nfive "), "%s", x.p.out);
	cr_assert_null(strstr(x.p.out, "\nwork "), "%s", x.p.out);
	cr_assert_null(strstr(x.p.out, "\n(frame time) "), "%s", x.p.out);
	unlink_pair(x.a, x.b);
}

/* ---- the comparison itself ------------------------------------------------ */

Test(diff, the_verdict_is_an_interval_off_zero_and_a_point_past_the_threshold)
{
	/* The issue's row: +30% [+4.6%, +45.1%] against 5%. */
	struct diff_change issue = { 0.30, 0.046, 0.451 };
	cr_assert_eq(diff_decide(&issue, 0.05), DIFF_SLOWER);
	cr_assert_eq(diff_decide(&issue, 0.30), DIFF_SAME, "the point must pass the threshold");
	cr_assert_eq(diff_decide(&issue, 0.35), DIFF_SAME);
	cr_assert_eq(diff_decide(&(struct diff_change){ 0.30, -0.01, 0.6 }, 0.05), DIFF_SAME,
		     "an interval holding 0 is no change");
	cr_assert_eq(diff_decide(&(struct diff_change){ 0.04, 0.01, 0.08 }, 0.05), DIFF_SAME,
		     "a real change under the threshold is no change");
	cr_assert_eq(diff_decide(&(struct diff_change){ -0.30, -0.451, -0.046 }, 0.05), DIFF_FASTER);
	cr_assert_eq(diff_decide(&(struct diff_change){ -0.30, -0.451, 0.001 }, 0.05), DIFF_SAME);
	cr_assert_eq(diff_decide(&(struct diff_change){ 0.001, 0.0005, 0.002 }, 0), DIFF_SLOWER);
}

Test(diff, a_thirty_percent_zone_with_a_wide_interval_is_slower_at_five_percent)
{
	/* 20 values 1000, 1040, ... 1760 ns against each 30% longer. */
	uint64_t a[20], b[20];
	for (int i = 0; i < 20; i++) {
		a[i] = 1000 + 40 * (uint64_t)i;
		b[i] = a[i] * 13 / 10;
	}
	struct diff_row r;
	cr_assert_eq(diff_compare(a, 20, b, 20, 0.99, 0.05, DIFF_MIN_COUNT, &r), 0);
	assert_near(r.p50.point, 0.30, 1e-12);
	/* The interval's low end lies under the threshold, above 0: the old
	 * rule (the whole interval past the threshold) called it no change. */
	cr_assert(r.p50.lo > 0 && r.p50.lo < 0.05, "lo %f", r.p50.lo);
	cr_assert_eq(r.verdict, DIFF_SLOWER);
	cr_assert_eq(diff_compare(a, 20, b, 20, 0.99, 0.35, DIFF_MIN_COUNT, &r), 0);
	cr_assert_eq(r.verdict, DIFF_SAME);
}

/* @n values around 1000 ns into @v. */
static void fill(uint64_t *v, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (uint64_t)(1000 * noise(&seed));
}

Test(diff, a_comparison_draws_as_many_numbers_whatever_its_samples_size)
{
	/* D4: the old bootstrap drew 1000 numbers per sampled value, 262
	 * million here, and `diff` of a trace at the caps took 28 s. */
	size_t big = (size_t)64 * DIFF_SAMPLE;
	uint64_t *a = malloc(big * sizeof(*a)), *b = malloc(big * sizeof(*b));
	cr_assert(a && b);
	uint64_t draws[2];
	size_t sizes[2] = { 16, big };
	for (int k = 0; k < 2; k++) {
		fill(a, sizes[k], 21);
		fill(b, sizes[k], 22);
		struct diff_row r;
		cr_assert_eq(diff_compare(a, sizes[k], b, sizes[k], 0.99, 0, DIFF_MIN_COUNT, &r), 0);
		cr_assert_eq(r.verdict, DIFF_SAME);
		cr_assert(r.p50.lo < 0 && r.p50.hi > 0, "[%f, %f]", r.p50.lo, r.p50.hi);
		draws[k] = r.draws;
	}
	/* Ten Gamma draws a resample, each a normal and a uniform or so. */
	for (int k = 0; k < 2; k++)
		cr_assert(draws[k] >= 20 * DIFF_RESAMPLES && draws[k] < 30 * DIFF_RESAMPLES,
			  "%zu values: %" PRIu64 " draws", sizes[k], draws[k]);
	free(a);
	free(b);
}

Test(diff, one_value_gives_no_interval)
{
	uint64_t a[2] = { 1000, 1010 }, b[2] = { 1500, 1490 };
	struct diff_row r;
	cr_assert_eq(diff_compare(a, 1, b, 1, 0.99, 0, 2, &r), 0);
	cr_assert_eq(r.verdict, DIFF_TOO_FEW);
	assert_near(r.p50.point, 0.5, 1e-12);
	cr_assert(isnan(r.p50.lo) && isnan(r.p50.hi) && isnan(r.mean.lo));
	cr_assert_eq(r.draws, 0);
	cr_assert_eq(diff_compare(a, 2, b, 2, 0.99, 0, 2, &r), 0);
	cr_assert_neq(r.verdict, DIFF_TOO_FEW);
	cr_assert(r.p50.hi > r.p50.lo, "[%f, %f]", r.p50.lo, r.p50.hi);
}

Test(diff, count_and_total_intervals)
{
	/* 1000 zones a run of mean 1000 ns and sd 0 against 2000: log 2
	 * +- z * sqrt(1/1000 + 1/2000); the totals the same. */
	struct diff_row r = { .a = { .count = 1000, .runs = 1, .total = 1e6, .sumsq = 1e9 },
			      .b = { .count = 2000, .runs = 1, .total = 2e6, .sumsq = 2e9 } };
	diff_counts(&r, 0.99, 0.05, DIFF_MIN_COUNT);
	double z = diff_normal_quantile(0.995), se = sqrt(1.0 / 1000 + 1.0 / 2000);
	assert_near(z, 2.5758293035489, 1e-9);
	assert_near(r.count.point, 1.0, 1e-12);
	assert_near(r.count.lo, 2 * exp(-z * se) - 1, 1e-12);
	assert_near(r.count.hi, 2 * exp(z * se) - 1, 1e-12);
	assert_near(r.total.lo, r.count.lo, 1e-12);
	cr_assert_eq(r.count_verdict, DIFF_SLOWER);
	cr_assert_eq(r.total_verdict, DIFF_SLOWER);
	/* One zone against two: never a change; and too few for the total. */
	struct diff_row few = { .a = { .count = 1, .runs = 1, .total = 1e3, .sumsq = 1e6 },
				.b = { .count = 2, .runs = 1, .total = 2e3, .sumsq = 2e6 } };
	diff_counts(&few, 0.99, 0, DIFF_MIN_COUNT);
	cr_assert_eq(few.count_verdict, DIFF_SAME);
	cr_assert_eq(few.total_verdict, DIFF_TOO_FEW);
}

/* ---- rows per process (issue #30) ---------------------------------------- */

#include "synth_procs.h"

/* The row of @name of process @process (NULL: a row of no process). */
static json_t *proc_row(json_t *o, const char *name, const char *process)
{
	size_t i;
	json_t *z;
	json_array_foreach(json_object_get(o, "zones"), i, z) {
		const char *p = json_string_value(json_object_get(z, "process"));
		if (!strcmp(json_string_value(json_object_get(z, "name")), name) &&
		    (process ? p && !strcmp(p, process) : !p))
			return z;
	}
	cr_assert_fail("no zone %s of %s", name, process ? process : "no process");
	return NULL;
}

/* Row @r's count and total on side @side ("a" or "b"). */
static void side_is(json_t *r, const char *side, json_int_t count, double total)
{
	json_t *s = json_object_get(r, side);
	cr_assert_eq(json_integer_value(json_object_get(s, "count")), count, "%s count", side);
	assert_near(json_real_value(json_object_get(s, "total_ns")), total, 1e-9);
}

/* "work" of the server and of its clients, in one merged trace: a row per
 * process name (the two clients' one row), on both sides; "parse" and
 * "idle", each of one process, a row of no process.  Against a file of
 * one client, the client's row is compared and the server's is only in
 * A; two files of one process each, named apart, are one row. */
Test(diff_procs, a_zone_name_of_two_processes_is_a_row_each)
{
	char path[4][128], *a = path[0], *b = path[1], *c = path[2], *d = path[3];
	for (int i = 0; i < 4; i++)
		tmp_path(path[i], sizeof(path[i]), "p%c.katra", "abcd"[i]);
	t_procs_merge(a, t_four_procs, 4);
	struct t_pfile slower[4];
	memcpy(slower, t_four_procs, sizeof(slower));
	static const struct t_pzone c1[] = { { 1, 3000, 1000 }, { 1, 5000, 3000 } };
	slower[1].zones = c1; /* client 501's work twice as long */
	t_procs_merge(b, slower, 4);
	struct proc p;
	json_t *o = run_json(&p, (const char *const[]){ "diff", a, b, "--json", NULL });
	cr_assert_eq(p.status, 0, "exit %d: %s", p.status, p.err);
	cr_assert_eq(json_array_size(json_object_get(o, "zones")), 4);
	json_t *w = proc_row(o, "work", "client");
	side_is(w, "a", 3, 2700);
	side_is(w, "b", 3, 4700);
	side_is(proc_row(o, "work", "server"), "b", 2, 6000);
	side_is(proc_row(o, "parse", NULL), "a", 1, 1000);
	side_is(proc_row(o, "idle", NULL), "b", 1, 300);
	json_decref(o);
	/* --exclude matches the zone name: both rows out, one name. */
	o = run_json(&p, (const char *const[]){ "diff", a, b, "--json", "--exclude", "work", NULL });
	cr_assert_eq(json_array_size(json_object_get(o, "zones")), 2);
	cr_assert_eq(json_integer_value(json_object_get(o, "left_out")), 1);
	json_decref(o);
	run_katra(&p, (const char *const[]){ "diff", a, b, NULL });
	cr_assert(strstr(p.out, "\nwork [client]                    3         3") &&
		  strstr(p.out, "\nwork [server]                    2         2"), "%s", p.out);
	/* One client's own file as B. */
	t_pfile_write(c, &t_four_procs[1]);
	o = run_json(&p, (const char *const[]){ "diff", a, c, "--json", NULL });
	side_is(proc_row(o, "work", "client"), "b", 2, 2000);
	cr_assert_str_eq(verdict_of(proc_row(o, "work", "server")), "only in A");
	json_decref(o);
	/* The server's file against the client's: no run has "work" twice. */
	t_pfile_write(d, &t_four_procs[0]);
	o = run_json(&p, (const char *const[]){ "diff", d, c, "--json", NULL });
	w = proc_row(o, "work", NULL);
	side_is(w, "a", 2, 6000);
	side_is(w, "b", 2, 2000);
	json_decref(o);
	for (int i = 0; i < 4; i++)
		unlink(path[i]);
}

/*
 * `katra diff` on synthetic traces with known effects: a zone made 10%
 * slower is slower (exit 4 with --fail-on slower), runs of one distribution
 * drawn with different seeds show no change in at least 95 of 100 trials,
 * a frame-time regression is found, and captures pair by run id and epoch.
 * The --html page embeds the very object --json prints.
 */
#include "helpers.h"
#include "cli.h"
#include "synth.h"

#include <jansson.h>
#include <criterion/criterion.h>

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
};

static const char *const names[] = { "work", "frame_mark" };

/* 200 frames of ~20 us on thread 1, each holding four zones of ~1 us named
 * @zone[0] ("work"), the frames @zone[1]. */
static void write_named_run(const char *path, const struct run_spec *r,
			    const char *const *zone)
{
	kt_writer *w = t_synth_open(path, zone, 2, r->run_id, r->epoch);
	struct t_synth s = { 0 };
	uint64_t rng = r->seed * 2654435761u + 1, t = 1000;
	for (int f = 0; f < 200; f++) {
		t_synth_add(&s, KT_EV_FRAME, 2, t, f);
		uint64_t z = t + 100;
		for (int k = 0; k < 4; k++) {
			uint64_t d = (uint64_t)(1000 * r->zone_scale * noise(&rng));
			t_synth_zone(&s, 1, z, d);
			z += d + 200;
		}
		t += (uint64_t)(20000 * r->frame_scale * noise(&rng));
	}
	t_synth_add(&s, KT_EV_FRAME, 2, t, 200);
	t_synth_flush(w, 1, "main", &s);
	t_synth_close(w);
}

static void write_run(const char *path, const struct run_spec *r)
{
	write_named_run(path, r, names);
}

static void tmp_path(char *buf, size_t size, const char *what)
{
	snprintf(buf, size, "/tmp/katra-diff-%d-%s.katra", (int)getpid(), what);
}

/* Write runs @ra to @a and @rb to @b, named after @tag. */
static void write_pair(char *a, char *b, size_t size, const char *tag, const struct run_spec *ra,
		       const struct run_spec *rb)
{
	char what[64];
	snprintf(what, sizeof(what), "%s-a", tag);
	tmp_path(a, size, what);
	snprintf(what, sizeof(what), "%s-b", tag);
	tmp_path(b, size, what);
	write_run(a, ra);
	write_run(b, rb);
}

/* Run katra with @args and parse its stdout as JSON (NULL when it is not). */
static json_t *run_json(struct proc *p, const char *const *args)
{
	run_katra(p, args);
	json_error_t err;
	return json_loadb(p->out, p->out_len, 0, &err);
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
	write_pair(a, b, sizeof(a), "slow", &(struct run_spec){ 1, 1.0, 1.0, NULL, 0 },
		   &(struct run_spec){ 2, 1.1, 1.0, NULL, 0 });
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", "--fail-on", "slower", "--threshold", "5%",
			       NULL };
	json_t *o = run_json(&p, args);
	cr_assert_not_null(o, "exit %d: %s", p.status, p.err);
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
	cr_assert_not_null(strstr(p.out, "\nverdict: slower (1 slower, 0 faster, 1 no change)\n"),
			   "%s", p.out);
	unlink(a);
	unlink(b);
}

Test(diff, one_distribution_shows_no_change_in_95_of_100_trials)
{
	char a[128], b[128];
	int same = 0;
	for (uint64_t trial = 0; trial < 100; trial++) {
		write_pair(a, b, sizeof(a), "same", &(struct run_spec){ 1000 + 2 * trial, 1.0, 1.0, NULL, 0 },
			   &(struct run_spec){ 1001 + 2 * trial, 1.0, 1.0, NULL, 0 });
		struct proc p;
		const char *args[] = { "diff", a, b, "--json", "--fail-on", "change", NULL };
		json_t *o = run_json(&p, args);
		cr_assert_not_null(o, "exit %d: %s", p.status, p.err);
		const char *v = json_string_value(json_object_get(o, "verdict"));
		same += !strcmp(v, "no change");
		cr_assert_eq(p.status, strcmp(v, "no change") ? 4 : 0);
		json_decref(o);
	}
	cr_assert_geq(same, 95, "no change in only %d of 100 trials", same);
	unlink(a);
	unlink(b);
}

Test(diff, a_frame_time_regression_is_found)
{
	char a[128], b[128];
	write_pair(a, b, sizeof(a), "frames", &(struct run_spec){ 5, 1.0, 1.0, NULL, 0 },
		   &(struct run_spec){ 6, 1.0, 1.1, NULL, 0 });
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", "--fail-on", "slower", NULL };
	json_t *o = run_json(&p, args);
	cr_assert_not_null(o, "exit %d: %s", p.status, p.err);
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
	tmp_path(a1, sizeof(a1), "cap-a1");
	tmp_path(a2, sizeof(a2), "cap-a2");
	tmp_path(b1, sizeof(b1), "cap-b1");
	tmp_path(b2, sizeof(b2), "cap-b2");
	write_run(a1, &(struct run_spec){ 7, 1.0, 1.0, "base", 1 });
	write_run(a2, &(struct run_spec){ 8, 1.0, 1.0, "base", 2 });
	write_run(b1, &(struct run_spec){ 9, 1.0, 1.0, "new", 1 });
	write_run(b2, &(struct run_spec){ 10, 1.0, 1.0, "new", 2 });
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
	cr_assert_not_null(strstr(p.out, "\nverdict: no change (0 slower, 0 faster, 2 no change)\n"),
			   "%s", p.out);
	unlink(a1);
	unlink(a2);
	unlink(b1);
	unlink(b2);
}

Test(diff, usage_errors)
{
	struct proc p;
	const char *one[] = { "diff", "a.katra", NULL };
	run_katra(&p, one);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "give two traces A B, or A1 ... -- B1 ..."), "%s", p.err);
	const char *bad[] = { "diff", "a", "b", "--threshold", "lots", NULL };
	run_katra(&p, bad);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "--threshold wants a percentage (5%), not 'lots'"), "%s",
			   p.err);
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
	tmp_path(a, sizeof(a), "self-a");
	tmp_path(b, sizeof(b), "self-b");
	write_nested_run(a, 1000);
	write_nested_run(b, 1500);
	struct proc p;
	const char *args[] = { "diff", a, b, "--json", NULL };
	json_t *o = run_json(&p, args);
	cr_assert_not_null(o, "exit %d: %s", p.status, p.err);
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
	size_t len = 0;
	char *s = (char *)t_slurp(path, &len);
	cr_assert_not_null(s, "no page %s", path);
	s = realloc(s, len + 1);
	s[len] = 0;
	static const char open[] = "<script type=\"application/json\" id=\"data\">";
	char *from = strstr(s, open), *to = from ? strstr(from, "</script>") : NULL;
	cr_assert(from && to, "no data block");
	from += strlen(open);
	json_error_t err;
	json_t *data = json_loadb(from, (size_t)(to - from), 0, &err);
	cr_assert_not_null(data, "%s", err.text);
	*page = s;
	return data;
}

Test(diff, html_page_embeds_the_json_numbers)
{
	static const char *const hostile[] = { "</script><script>alert(1)//", "frame_mark" };
	char a[128], b[128], out[128];
	tmp_path(a, sizeof(a), "html-a");
	tmp_path(b, sizeof(b), "html-b");
	write_named_run(a, &(struct run_spec){ 1, 1.0, 1.0, NULL, 0 }, hostile);
	write_named_run(b, &(struct run_spec){ 2, 1.1, 1.1, NULL, 0 }, hostile);
	snprintf(out, sizeof(out), "/tmp/katra-diff-%d.html", (int)getpid());
	unlink(out);
	struct proc p;
	const char *html[] = { "diff", a, b, "--html", out, "--fail-on", "slower", NULL };
	run_katra(&p, html);
	cr_assert_eq(p.status, 4, "exit %d: %s", p.status, p.err);
	cr_assert_not_null(strstr(p.out, "\nverdict: slower (2 slower, 0 faster, 0 no change)\n"),
			   "the text still goes to stdout: %s", p.out);
	char *page;
	json_t *data = page_data(out, &page);
	const char *json[] = { "diff", a, b, "--json", NULL };
	json_t *o = run_json(&p, json);
	cr_assert_not_null(o, "exit %d: %s", p.status, p.err);
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
	write_pair(a, b, sizeof(a), "fail", &(struct run_spec){ 3, 1.0, 1.0, NULL, 0 },
		   &(struct run_spec){ 4, 1.0, 1.0, NULL, 0 });
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

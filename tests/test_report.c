/*
 * Self time in `katra stats` (text and JSON), and `katra report`: one
 * self-contained HTML page whose numbers are those of `katra stats --json`
 * of the same trace.
 */
#include "helpers.h"
#include "cli.h"
#include "synth.h"

#include <jansson.h>
#include <criterion/criterion.h>

static void tmp_path(char *buf, size_t size, const char *what)
{
	snprintf(buf, size, "/tmp/katra-report-%d-%s.katra", (int)getpid(), what);
}

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

static json_t *zone_of(json_t *stats, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(stats, "names"), i, n)
		if (!strcmp(json_string_value(json_object_get(n, "name")), name))
			return json_object_get(n, "zone");
	cr_assert_fail("no name %s", name);
	return NULL;
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
	tmp_path(path, sizeof(path), "nested");
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
	tmp_path(path, sizeof(path), "nestedtxt");
	write_nested(path);
	struct proc p;
	const char *args[] = { "stats", path, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_not_null(strstr(p.out, "        total         self\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "\nframe                             4       5000       "
					 "5056       5056      12000        17000        10000\n"),
			   "%s", p.out);
	unlink(path);
}

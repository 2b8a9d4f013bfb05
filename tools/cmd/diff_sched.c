/*
 * diff_sched.c - off-CPU time per zone in `katra diff`; diff_sched.h
 * says what.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/diff_run.h"
#include "tools/cmd/diff_sched.h"
#include "tools/pipeline/text.h"

int diff_sched_take(struct diff_sched *d, const struct stats *s)
{
	struct stats_offcpu *rows = malloc(DIFF_NAMES * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	size_t all = stats_offcpu(s, &d->present, rows, DIFF_NAMES);
	size_t n = all < DIFF_NAMES ? all : DIFF_NAMES;
	d->left_out = all - n;
	if (n && !(d->z = calloc(n, sizeof(*d->z))))
		return free(rows), -ENOMEM;
	for (size_t i = 0; i < n; i++, d->n++) {
		size_t len = 1;
		const char *b = rows[i].name ? tables_name(stats_tables(s), rows[i].name, &len) : NULL;
		if (!b) {
			b = "?";
			len = 1;
		}
		char *name = malloc(len ? len : 1);
		if (!name)
			return free(rows), -ENOMEM;
		memcpy(name, b, len);
		d->z[i] = (struct diff_offcpu){ name, len, rows[i].zones, rows[i].on_ns,
						rows[i].blocked_ns, rows[i].preempted_ns, 0 };
	}
	free(rows);
	return 0;
}

static int by_name(const void *x, const void *y)
{
	const struct diff_offcpu *a = x, *b = y;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->name, b->name, n);
	return c ? c : a->len != b->len ? (a->len < b->len ? -1 : 1) : a->side - b->side;
}

/* Every run's rows, sorted by name then side, into *@out (free() it):
 * the count, or -1 when out of memory; 0 rows when some run has none. */
static long gather(const struct diff_run *runs, size_t n, struct diff_offcpu **out)
{
	size_t total = 0;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!runs[i].sched.present)
			return 0;
		total += runs[i].sched.n;
	}
	struct diff_offcpu *all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < runs[i].sched.n; j++) {
			all[k] = runs[i].sched.z[j];
			all[k++].side = runs[i].side;
		}
	qsort(all, total, sizeof(*all), by_name);
	*out = all;
	return (long)total;
}

/* The rows of one name from @r[*@at] on, summed per side into @s[2]. */
static void fold(const struct diff_offcpu *r, size_t nr, size_t *at, struct diff_offcpu s[2])
{
	memset(s, 0, 2 * sizeof(*s));
	s[0].name = s[1].name = r[*at].name;
	s[0].len = s[1].len = r[*at].len;
	const struct diff_offcpu *first = &r[*at];
	for (; *at < nr && r[*at].len == first->len && !memcmp(r[*at].name, first->name, first->len);
	     ++*at) {
		struct diff_offcpu *x = &s[r[*at].side];
		x->zones += r[*at].zones;
		x->on_ns += r[*at].on_ns;
		x->blocked_ns += r[*at].blocked_ns;
		x->preempted_ns += r[*at].preempted_ns;
	}
}

static double mean_off(const struct diff_offcpu *x)
{
	return x->zones ? (double)(x->blocked_ns + x->preempted_ns) / (double)x->zones : NAN;
}

static double share(const struct diff_offcpu *x)
{
	uint64_t off = x->blocked_ns + x->preempted_ns, all = off + x->on_ns;
	return all ? (double)off / (double)all : NAN;
}

static double change(const struct diff_offcpu s[2])
{
	double a = mean_off(&s[0]), b = mean_off(&s[1]);
	return a > 0 && b == b ? b / a - 1 : NAN;
}

static const char *sides_missing(const struct diff_run *runs, size_t n)
{
	int miss[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++)
		miss[runs[i].side] |= !runs[i].sched.present;
	return miss[0] && miss[1] ? "A and B" : miss[0] ? "A" : "B";
}

int diff_sched_text(FILE *f, const struct diff_run *runs, size_t n)
{
	struct diff_offcpu *r, s[2];
	long nr = gather(runs, n, &r);
	if (nr < 0)
		return -ENOMEM;
	int any = 0;
	for (size_t i = 0; i < n; i++)
		any |= runs[i].sched.present;
	if (!r && any)
		fprintf(f, "\noff-CPU per zone: not compared (no scheduler records in %s)\n",
			sides_missing(runs, n));
	if (!r)
		return 0;
	fprintf(f, "\noff-CPU per zone (scheduler records in every run; totals, no interval)\n"
		   "%-24s %9s %9s %14s %14s %9s %9s %9s\n", "zone", "zones A", "zones B",
		"off mean A ns", "off mean B ns", "change", "share A", "share B");
	for (size_t at = 0; at < (size_t)nr;) {
		fold(r, (size_t)nr, &at, s);
		char *e = text_escape(s[0].name, s[0].len);
		if (!e)
			return free(r), -ENOMEM;
		fprintf(f, "%-24s %9" PRIu64 " %9" PRIu64 " %14.0f %14.0f %+8.1f%% %8.1f%% %8.1f%%\n",
			e, s[0].zones, s[1].zones, mean_off(&s[0]), mean_off(&s[1]),
			100 * change(s), 100 * share(&s[0]), 100 * share(&s[1]));
		free(e);
	}
	free(r);
	return 0;
}

static json_t *num(double v)
{
	return v == v ? json_real(v) : json_null();
}

static json_t *side_json(const struct diff_offcpu *x)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "zones", text_json_u64(x->zones),
			 "on_cpu_ns", text_json_u64(x->on_ns), "blocked_ns",
			 text_json_u64(x->blocked_ns), "preempted_ns",
			 text_json_u64(x->preempted_ns), "off_cpu_mean_ns", num(mean_off(x)),
			 "off_cpu_share", num(share(x)));
}

json_t *diff_sched_json(const struct diff_run *runs, size_t n)
{
	struct diff_offcpu *r, s[2];
	long nr = gather(runs, n, &r);
	if (nr < 0)
		return NULL;
	if (!r)
		return json_null();
	json_t *a = json_array();
	for (size_t at = 0; a && at < (size_t)nr;) {
		fold(r, (size_t)nr, &at, s);
		json_t *row = json_pack("{s:o,s:o,s:o,s:o}", "name",
					text_json_string(s[0].name, s[0].len), "a", side_json(&s[0]),
					"b", side_json(&s[1]), "off_cpu_mean_change", num(change(s)));
		if (json_array_append_new(a, row))
			a = (json_decref(a), NULL);
	}
	free(r);
	return a;
}

void diff_sched_free(struct diff_sched *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->z[i].name);
	free(d->z);
	memset(d, 0, sizeof(*d));
}

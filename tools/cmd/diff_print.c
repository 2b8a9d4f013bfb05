/*
 * diff_print.c - `katra diff`'s result as text or JSON (the JSON is also
 * the data of the --html page, diff_page.c).  Names and run ids
 * come from the files: escaped as tools/pipeline/text.h says.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/diff_out.h"
#include "tools/pipeline/text.h"

/* ---- text ---------------------------------------------------------------- */

/* A change as "+10.2% [+8.1%, +12.3%]", in @w columns; without an
 * interval (too few values) "+10.2%" alone. */
static void put_change(FILE *f, const struct diff_change *c, int w)
{
	char s[96];
	if (isnan(c->lo))
		snprintf(s, sizeof(s), "%+.1f%%", c->point * 100);
	else
		snprintf(s, sizeof(s), "%+.1f%% [%+.1f%%, %+.1f%%]", c->point * 100, c->lo * 100,
			 c->hi * 100);
	fprintf(f, " %-*s", w, s);
}

static void put_run(FILE *f, const struct diff_run *r)
{
	fputs(r->side ? "B: " : "A: ", f);
	text_puts(f, r->path);
	if (r->captured) {
		fputs(" (run ", f);
		text_puts(f, r->run_id);
		fprintf(f, ", epoch %" PRIu64 ")", r->epoch);
	}
	if (r->dropped)
		fprintf(f, ", %" PRIu64 " events dropped", r->dropped);
	if (r->truncated)
		fputs(", truncated", f);
	if (r->unsampled)
		fprintf(f, ", %" PRIu64 " zones of names past %d not compared", r->unsampled,
			DIFF_NAMES);
	fputc('\n', f);
}

/* The pairs, when both sides have as many captures. */
static void put_pairs(FILE *f, const struct diff_run *runs, size_t n)
{
	size_t na = 0;
	for (size_t i = 0; i < n; i++)
		na += !runs[i].side;
	for (size_t i = 0; i < n; i++)
		if (!runs[i].captured || na * 2 != n)
			return;
	fputs("pairs:", f);
	for (size_t i = 0; i < na; i++) {
		fputs(i ? ", " : " ", f);
		text_puts(f, runs[i].run_id);
		fprintf(f, ".%" PRIu64 " -> ", runs[i].epoch);
		text_puts(f, runs[na + i].run_id);
		fprintf(f, ".%" PRIu64, runs[na + i].epoch);
	}
	fputc('\n', f);
}

static int put_row(FILE *f, const struct diff_result *r)
{
	if (r->left_out)
		return 0;
	char *e = r->name ? text_escape(r->name, r->len) : NULL;
	char *pe = r->process ? text_escape(r->process, r->plen) : NULL;
	char *both = pe && e ? malloc(strlen(e) + strlen(pe) + 4) : NULL;
	if ((r->name && !e) || (r->process && !both)) {
		free(e);
		free(pe);
		return -ENOMEM;
	}
	if (both) /* a row per process: "NAME [PROCESS]" */
		sprintf(both, "%s [%s]", e, pe);
	fprintf(f, "%-24s %9" PRIu64 " %9" PRIu64, both ? both : e ? e : DIFF_FRAME_NAME,
		r->row.a.count, r->row.b.count);
	free(e);
	free(pe);
	free(both);
	if (r->only || !r->row.a.count) {
		fprintf(f, "  %s\n", r->only == 1 ? "only in A" : r->only == 2 ? "only in B" : "none");
		return 0;
	}
	put_change(f, &r->row.count, 26);
	fprintf(f, " %10.0f %10.0f", r->row.a.p50, r->row.b.p50);
	put_change(f, &r->row.p50, 26);
	put_change(f, &r->row.p99, 26);
	put_change(f, &r->row.mean, 26);
	put_change(f, &r->row.total, 26);
	if (r->name)
		fprintf(f, " %+10.1f%%", r->row.self_change * 100);
	else
		fprintf(f, " %11s", "-");
	fprintf(f, " %-9s %-9s %s\n", diff_verdict_name(r->row.verdict),
		diff_count_name(r->row.count_verdict), diff_total_name(r->row.total_verdict));
	return 0;
}

/* The rows' verdicts counted: @k[v] of the time's, @kc of the counts',
 * @kt of the totals'.  The overall verdict: the time's. */
static const char *overall(const struct diff_result *res, size_t nres, size_t k[4],
			   size_t kc[4], size_t kt[4])
{
	for (int i = 0; i < 4; i++)
		k[i] = kc[i] = kt[i] = 0;
	for (size_t i = 0; i < nres; i++)
		if (!res[i].left_out && !res[i].only && res[i].row.a.count) {
			k[res[i].row.verdict]++;
			kc[res[i].row.count_verdict]++;
			kt[res[i].row.total_verdict]++;
		}
	return k[DIFF_SLOWER] ? "slower" : k[DIFF_FASTER] ? "faster" : "no change";
}

int diff_print_text(FILE *f, const struct diff_run *runs, size_t n,
		    const struct diff_result *res, size_t nres, const struct diff_opts *o,
		    size_t dropped)
{
	for (size_t i = 0; i < n; i++)
		put_run(f, &runs[i]);
	put_pairs(f, runs, n);
	fprintf(f, "bootstrap of the median, p99 and mean: %d resamples of up to %d durations "
		   "per name per run, %g%% intervals, threshold %g%%; a side with fewer than %zu "
		   "is too few to judge\n", DIFF_RESAMPLES, DIFF_SAMPLE, o->confidence * 100,
		o->threshold * 100, o->min_count);
	if (dropped)
		fprintf(f, "%zu zone names left out by --only and --exclude\n", dropped);
	fprintf(f, "\n%-24s %9s %9s %-26s %10s %10s %-26s %-26s %-26s %-26s %11s %-9s %-9s %s\n",
		"zone", "count A", "count B", " count change per run", "p50 A ns", "p50 B ns",
		" p50 change [interval]", " p99 change", " mean change", " total change per run",
		"self mean", "verdict", "count", "total");
	for (size_t i = 0; i < nres; i++)
		if (put_row(f, &res[i]))
			return -ENOMEM;
	size_t k[4], kc[4], kt[4];
	const char *v = overall(res, nres, k, kc, kt);
	fprintf(f, "\nverdict: %s (%zu slower, %zu faster, %zu no change, %zu too few); "
		   "count: %zu more, %zu fewer; total: %zu more, %zu less\n", v, k[DIFF_SLOWER],
		k[DIFF_FASTER], k[DIFF_SAME], k[DIFF_TOO_FEW], kc[DIFF_SLOWER], kc[DIFF_FASTER],
		kt[DIFF_SLOWER], kt[DIFF_FASTER]);
	if (diff_sched_text(f, runs, n))
		return -ENOMEM;
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *json_change(const struct diff_change *c)
{
	return json_pack("{s:o,s:o,s:o}", "change", json_num(c->point), "lo", json_num(c->lo),
			 "hi", json_num(c->hi));
}

static json_t *json_side(const struct diff_side *s)
{
	return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "count",
		(json_int_t)(s->count > INT64_MAX ? INT64_MAX : s->count), "runs", (json_int_t)s->runs,
		"sampled", (json_int_t)s->sampled, "p50_ns", json_num(s->p50), "p99_ns",
		json_num(s->p99), "mean_ns", json_num(s->mean), "total_ns", json_num(s->total),
		"self_mean_ns", json_num(s->self_mean));
}

static json_t *json_row(const struct diff_result *r)
{
	if (r->left_out)
		return json_null();
	const char *only = r->only == 1 ? "only in A" : "only in B";
	json_t *j = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:s}", "a",
			      json_side(&r->row.a), "b", json_side(&r->row.b), "count_change",
			      json_change(&r->row.count), "p50", json_change(&r->row.p50), "p99",
			      json_change(&r->row.p99), "mean", json_change(&r->row.mean),
			      "total_change", json_change(&r->row.total), "self_mean_change",
			      json_num(r->row.self_change), "verdict",
			      r->only ? only : diff_verdict_name(r->row.verdict), "count_verdict",
			      r->only ? only : diff_count_name(r->row.count_verdict),
			      "total_verdict", r->only ? only : diff_total_name(r->row.total_verdict));
	if (j && r->name && json_object_set_new(j, "name", text_json_string(r->name, r->len)))
		return json_decref(j), NULL;
	if (j && r->process &&
	    json_object_set_new(j, "process", text_json_string(r->process, r->plen)))
		return json_decref(j), NULL;
	return j;
}

static json_t *json_run(const struct diff_run *r)
{
	json_t *j = json_pack("{s:o,s:s,s:I,s:b}", "file", text_json_string(r->path,
			      strlen(r->path)), "side", r->side ? "b" : "a", "dropped",
			      (json_int_t)(r->dropped > INT64_MAX ? INT64_MAX : r->dropped),
			      "truncated", r->truncated);
	if (j && r->captured &&
	    (json_object_set_new(j, "run_id", text_json_string(r->run_id, strlen(r->run_id))) ||
	     json_object_set_new(j, "epoch", json_integer((json_int_t)(r->epoch > INT64_MAX
				 ? INT64_MAX : r->epoch)))))
		return json_decref(j), NULL;
	return j;
}

json_t *diff_json(const struct diff_run *runs, size_t n, const struct diff_result *res,
		  size_t nres, const struct diff_opts *o, size_t dropped)
{
	size_t k[4], kc[4], kt[4];
	json_t *rs = json_array(), *zs = json_array();
	const char *v = overall(res, nres, k, kc, kt);
	json_t *top = json_pack("{s:s,s:i,s:i,s:f,s:f,s:I,s:I,s:o,s:o,s:o,s:s,s:I,s:{s:I,s:I},"
				"s:{s:I,s:I}}", "method", "bootstrap", "resamples", DIFF_RESAMPLES,
				"sample", DIFF_SAMPLE, "confidence", o->confidence, "threshold",
				o->threshold, "min_count", (json_int_t)o->min_count, "left_out",
				(json_int_t)dropped, "runs", rs, "frames", json_row(&res[0]), "zones",
				zs, "verdict", v, "too_few", (json_int_t)k[DIFF_TOO_FEW], "counts",
				"more", (json_int_t)kc[DIFF_SLOWER], "fewer", (json_int_t)kc[DIFF_FASTER],
				"totals", "more", (json_int_t)kt[DIFF_SLOWER], "less",
				(json_int_t)kt[DIFF_FASTER]);
	int ok = top && rs && zs && json_object_size(top) == 14;
	for (size_t i = 0; ok && i < n; i++)
		ok = !json_array_append_new(rs, json_run(&runs[i]));
	for (size_t i = 1; ok && i < nres; i++)
		ok = !json_array_append_new(zs, json_row(&res[i]));
	ok = ok && !json_object_set_new(top, "offcpu", diff_sched_json(runs, n));
	if (!ok)
		json_decref(top);
	return ok ? top : NULL;
}

int diff_print_json(FILE *f, const json_t *data)
{
	return text_json_print(f, data, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

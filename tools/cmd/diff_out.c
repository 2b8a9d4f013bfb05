/*
 * diff_out.c - the sides of `katra diff` paired, pooled, compared and
 * printed; diff_out.h says what each step does.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/diff_out.h"
#include "tools/cmd/diff_procs.h"
#include "tools/pipeline/grow.h"

int diff_sides_check(const struct diff_run *runs, size_t n, int dashes)
{
	size_t b = 0;
	for (size_t i = 0; i < n; i++)
		b += runs[i].side;
	if ((!dashes && n != 2) || !b || b == n) {
		usage_error("diff: give two traces A B, or A1 ... -- B1 ...");
		return -1;
	}
	return 0;
}

static int by_run(const void *x, const void *y)
{
	const struct diff_run *a = x, *b = y;
	if (a->side != b->side)
		return a->side - b->side;
	if (a->captured != b->captured)
		return b->captured - a->captured;
	int c = a->captured ? strcmp(a->run_id, b->run_id) : 0;
	if (c)
		return c;
	if (a->captured && a->epoch != b->epoch)
		return a->epoch < b->epoch ? -1 : 1;
	return a->order - b->order; /* as given */
}

/* Are @a and @b the same capture (run id, epoch and capture id)? */
static int same_capture(const struct diff_run *a, const struct diff_run *b)
{
	return a->captured && b->captured && !strcmp(a->run_id, b->run_id) &&
	       a->epoch == b->epoch && !strcmp(a->capture_id, b->capture_id);
}

int diff_pairs(struct diff_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			const struct diff_run *a = &runs[i], *b = &runs[j];
			if (!same_capture(a, b))
				continue;
			if (a->side != b->side) {
				say("diff: warning: %s and %s are the same capture (run %s, epoch %"
				    PRIu64 ")", a->path, b->path, a->run_id, a->epoch);
				continue;
			}
			usage_error("diff: %s and %s are the same capture (run %s, epoch %" PRIu64
				    ") on one side", a->path, b->path, a->run_id, a->epoch);
			return EXIT_USAGE;
		}
	qsort(runs, n, sizeof(*runs), by_run);
	return 0;
}

static int by_name(const void *x, const void *y)
{
	const struct pool_entry *a = x, *b = y;
	int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->side - b->side;
}

/* Every run's sampled names, sorted by name (and process, where a name is
 * a row per process: diff_procs.h) then side.  NULL: no memory. */
static struct pool_entry *pool_entries(const struct diff_run *runs, size_t n, size_t *count)
{
	size_t total = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		total += runs[i].nnames;
	struct pool_entry *e = malloc((total ? total : 1) * sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < runs[i].nnames; j++) {
			const struct diff_name *dn = &runs[i].names[j];
			e[k] = (struct pool_entry){ .name = dn->name, .len = dn->len,
						    .process = dn->process, .plen = dn->plen,
						    .side = runs[i].side, .run = i, .s = &dn->s };
			k++;
		}
	qsort(e, total, sizeof(*e), by_name);
	if (diff_procs_key(e, total)) {
		free(e);
		return NULL;
	}
	*count = total;
	return e;
}

/* What a comparison needs besides the samples. */
struct ctx {
	const struct diff_opts *o;
	size_t runs[2];      /* runs on each side */
	size_t dropped;      /* zone names the patterns left out */
};

/* Pool @n samples (of one side) into one array, and sum their exact
 * counts and totals into @side.  NULL: no memory. */
static uint64_t *pool(const struct diff_sample *const *s, size_t n, size_t *len,
		      struct diff_side *side, double *self)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += s[i]->n;
	uint64_t *v = malloc((total ? total : 1) * sizeof(*v)), *p = v;
	*len = total;
	*self = 0;
	for (size_t i = 0; v && i < n; i++) {
		side->count += s[i]->seen;
		side->total += s[i]->sum;
		side->sumsq += s[i]->sumsq;
		*self += s[i]->self_sum;
		if (!s[i]->n)
			continue; /* no values, and no array to copy from */
		memcpy(p, s[i]->v, s[i]->n * sizeof(*v));
		p += s[i]->n;
	}
	return v;
}

/* Compare @na samples of A (@s) with the @nb after them.  0 or -ENOMEM. */
static int compare(const struct diff_sample *const *s, size_t na, size_t nb,
		   const struct ctx *c, struct diff_result *r)
{
	const struct diff_opts *o = c->o;
	size_t la, lb;
	double sa, sb;
	struct diff_side a = { .runs = c->runs[0] }, b = { .runs = c->runs[1] };
	uint64_t *va = pool(s, na, &la, &a, &sa), *vb = pool(s + na, nb, &lb, &b, &sb);
	/* Too few by the exact counts: a side of many runs samples each less. */
	size_t least = a.count < o->min_count || b.count < o->min_count ? SIZE_MAX : 2;
	int rc = va && vb ? diff_compare(va, la, vb, lb, o->confidence, o->threshold, least,
					 &r->row) : -ENOMEM;
	struct diff_side *side[2] = { &r->row.a, &r->row.b }, *from[2] = { &a, &b };
	double self[2] = { sa, sb };
	for (int k = 0; k < 2; k++) {
		side[k]->count = from[k]->count;
		side[k]->runs = from[k]->runs;
		side[k]->total = from[k]->total;
		side[k]->sumsq = from[k]->sumsq;
		side[k]->self_mean = from[k]->count ? self[k] / (double)from[k]->count : 0;
	}
	r->row.self_change = r->row.a.self_mean > 0 ? r->row.b.self_mean / r->row.a.self_mean - 1 : 0;
	r->only = !la && lb ? 2 : la && !lb ? 1 : 0;
	if (!r->only && la)
		diff_counts(&r->row, o->confidence, o->threshold, o->min_count);
	free(va);
	free(vb);
	return rc;
}

/* The frame times of every run, A's first. */
static int compare_frames(const struct diff_run *runs, size_t n, const struct ctx *c,
			  struct diff_result *r)
{
	r->name = NULL;
	if (!diff_wanted(c->o, DIFF_FRAME_NAME, strlen(DIFF_FRAME_NAME))) {
		r->left_out = 1;
		return 0;
	}
	const struct diff_sample **s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	size_t na = 0;
	for (size_t i = 0; i < n; i++) {
		s[i] = &runs[i].frames;
		na += !runs[i].side;
	}
	int rc = compare(s, na, n - na, c, r);
	free(s);
	return rc;
}

int diff_wanted(const struct diff_opts *o, const char *name, size_t len)
{
	char buf[256], *z = len < sizeof(buf) ? buf : malloc(len + 1);
	if (!z)
		return -1;
	memcpy(z, name, len);
	z[len] = 0;
	int nul = memchr(name, 0, len) != NULL, keep = !o->nonly;
	for (size_t i = 0; !nul && !keep && i < o->nonly; i++)
		keep = !fnmatch(o->only[i], z, 0);
	for (size_t i = 0; !nul && keep && i < o->nexclude; i++)
		keep = fnmatch(o->exclude[i], z, 0) != 0;
	if (z != buf)
		free(z);
	return keep;
}

/* Each name's entries (consecutive in @e) the patterns keep compared into
 * @out[*nres]. */
static int compare_names(struct pool_entry *e, size_t ne, struct ctx *c,
			 struct diff_result *out, size_t *nres)
{
	const struct diff_sample **s = malloc((ne ? ne : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0, j; i < ne && !rc; i = j) {
		size_t na = 0;
		for (j = i; j < ne && diff_procs_same_row(&e[j], &e[i]); j++) {
			s[j - i] = e[j].s;
			na += !e[j].side;
		}
		int keep = diff_wanted(c->o, e[i].name, e[i].len);
		if (keep <= 0) {
			rc = keep < 0 ? -ENOMEM : 0;
			/* A name of a row per process counted once. */
			c->dropped += !keep && (!i || !e[i].keyed || e[i - 1].len != e[i].len ||
						memcmp(e[i - 1].name, e[i].name, e[i].len));
			continue;
		}
		struct diff_result *r = &out[(*nres)++];
		r->name = e[i].name;
		r->len = e[i].len;
		r->process = e[i].keyed ? e[i].process : NULL;
		r->plen = e[i].plen;
		rc = compare(s, na, j - i - na, c, r);
	}
	free(s);
	return rc;
}

/* Every row: the frame time first, then the names.  NULL: no memory. */
static struct diff_result *compare_all(const struct diff_run *runs, size_t n, struct ctx *c,
				       size_t *nres)
{
	size_t ne = 0;
	for (size_t i = 0; i < n; i++)
		c->runs[runs[i].side]++;
	struct pool_entry *e = pool_entries(runs, n, &ne);
	struct diff_result *out = e ? calloc(ne + 1, sizeof(*out)) : NULL;
	*nres = 1;
	if (!out || compare_frames(runs, n, c, &out[0]) || compare_names(e, ne, c, out, nres)) {
		free(out);
		out = NULL;
	}
	free(e);
	return out;
}

/* The page of @data into @of, committed.  0, or -1 after saying why not. */
static int write_page(outfile *of, const char *path, const json_t *data)
{
	FILE *f = fdopen(of->fd, "w");
	int rc = f ? 0 : -errno, err = f ? 0 : errno;
	if (f) {
		of->fd = -1; /* the stream owns it now */
		rc = diff_page(f, data);
		errno = 0;
		if (fflush(f) != 0 || rc == -EIO)
			err = errno ? errno : EIO;
		if (fclose(f) != 0 && !err)
			err = errno;
	}
	if (err)
		say("%s: write failed: %s", path, strerror(err));
	else if (rc)
		say("diff: out of memory");
	else if ((rc = outfile_commit(of)) < 0)
		say("%s: %s", path, reason(rc, NULL));
	return err || rc ? -1 : 0;
}

/* The results to stdout, and to the page when @html.  0, or EXIT_BAD
 * after saying why. */
static int write_out(const struct diff_run *runs, size_t n, const struct diff_result *res,
		     size_t nres, const struct ctx *c, outfile *html)
{
	const struct diff_opts *o = c->o;
	json_t *data = o->json || html ? diff_json(runs, n, res, nres, o, c->dropped) : NULL;
	if ((o->json || html) && !data) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	int rc = o->json ? diff_print_json(stdout, data)
			 : diff_print_text(stdout, runs, n, res, nres, o, c->dropped);
	if (rc == -ENOMEM)
		say("diff: out of memory");
	if (!rc && html && write_page(html, o->html, data))
		rc = -1;
	json_decref(data);
	return rc ? EXIT_BAD : 0;
}

/* Does @r hold a verdict @fail_on names? */
static int fails(const struct diff_result *r, int fail_on)
{
	enum diff_verdict v = r->row.verdict, cv = r->row.count_verdict, tv = r->row.total_verdict;
	if (r->left_out || r->only)
		return 0;
	return (v == DIFF_SLOWER && (fail_on & DIFF_FAIL_SLOWER)) ||
	       (v == DIFF_FASTER && (fail_on & DIFF_FAIL_FASTER)) ||
	       ((cv == DIFF_SLOWER || cv == DIFF_FASTER) && (fail_on & DIFF_FAIL_COUNT)) ||
	       ((tv == DIFF_SLOWER || tv == DIFF_FASTER) && (fail_on & DIFF_FAIL_TOTAL));
}

int diff_report(const struct diff_run *runs, size_t n, const struct diff_opts *o,
		outfile *html)
{
	size_t nres = 0;
	struct ctx c = { .o = o };
	struct diff_result *res = compare_all(runs, n, &c, &nres);
	if (!res) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	int failed = 0;
	for (size_t i = 0; i < nres; i++)
		failed |= fails(&res[i], o->fail_on);
	int rc = write_out(runs, n, res, nres, &c, html);
	free(res);
	return rc ? rc : failed ? EXIT_DIFF : EXIT_OK;
}

/*
 * diff_out.c - the sides of `katra diff` paired, pooled, compared and
 * printed; diff_out.h says what each step does.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/diff_out.h"
#include "tools/grow.h"

/* One run's sample of one name, to be pooled with the same name's. */
struct pool_entry {
	const char *name;
	size_t len;
	int side;
	const struct diff_sample *s;
};

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

/* Every run's sampled names, sorted by name then side.  NULL: no memory. */
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
			e[k].name = diff_run_name(&runs[i], dn->id, &e[k].len);
			e[k].side = runs[i].side;
			e[k++].s = &dn->s;
		}
	qsort(e, total, sizeof(*e), by_name);
	*count = total;
	return e;
}

/* Pool @n samples (of one side) into one array.  NULL: no memory. */
static uint64_t *pool(const struct diff_sample *const *s, size_t n, size_t *len, uint64_t *count,
		      double *self_mean)
{
	double self = 0;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += s[i]->n;
	uint64_t *v = malloc((total ? total : 1) * sizeof(*v)), *p = v;
	*len = total;
	*count = 0;
	for (size_t i = 0; v && i < n; i++) {
		if (!s[i]->n)
			continue; /* no values, and no array to copy from */
		memcpy(p, s[i]->v, s[i]->n * sizeof(*v));
		for (uint32_t k = 0; k < s[i]->n; k++)
			self += (double)s[i]->self[k];
		p += s[i]->n;
		*count += s[i]->seen;
	}
	*self_mean = total ? self / (double)total : 0;
	return v;
}

/* Compare @na samples of A (@s) with the @nb after them.  0 or -ENOMEM. */
static int compare(const struct diff_sample *const *s, size_t na, size_t nb,
		   const struct diff_opts *o, struct diff_result *r)
{
	size_t la, lb;
	uint64_t ca, cb;
	double sa, sb;
	uint64_t *a = pool(s, na, &la, &ca, &sa), *b = pool(s + na, nb, &lb, &cb, &sb);
	int rc = a && b ? diff_compare(a, la, b, lb, o->confidence, o->threshold, &r->row)
			: -ENOMEM;
	r->row.a.count = ca;
	r->row.b.count = cb;
	r->row.a.self_mean = sa;
	r->row.b.self_mean = sb;
	r->row.self_change = sa > 0 ? sb / sa - 1 : 0;
	r->only = !la && lb ? 2 : la && !lb ? 1 : 0;
	free(a);
	free(b);
	return rc;
}

/* The frame times of every run, A's first. */
static int compare_frames(const struct diff_run *runs, size_t n, const struct diff_opts *o,
			  struct diff_result *r)
{
	const struct diff_sample **s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	size_t na = 0;
	for (size_t i = 0; i < n; i++) {
		s[i] = &runs[i].frames;
		na += !runs[i].side;
	}
	r->name = NULL;
	int rc = compare(s, na, n - na, o, r);
	free(s);
	return rc;
}

/* Each name's entries (consecutive in @e) compared into @out[*nres]. */
static int compare_names(struct pool_entry *e, size_t ne, const struct diff_opts *o,
			 struct diff_result *out, size_t *nres)
{
	const struct diff_sample **s = malloc((ne ? ne : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0, j; i < ne && !rc; i = j) {
		size_t na = 0;
		for (j = i; j < ne && e[j].len == e[i].len && !memcmp(e[j].name, e[i].name, e[i].len);
		     j++) {
			s[j - i] = e[j].s;
			na += !e[j].side;
		}
		struct diff_result *r = &out[(*nres)++];
		r->name = e[i].name;
		r->len = e[i].len;
		rc = compare(s, na, j - i - na, o, r);
	}
	free(s);
	return rc;
}

/* Every row: the frame time first, then the names.  NULL: no memory. */
static struct diff_result *compare_all(const struct diff_run *runs, size_t n,
				  const struct diff_opts *o, size_t *nres)
{
	size_t ne = 0;
	struct pool_entry *e = pool_entries(runs, n, &ne);
	struct diff_result *out = e ? calloc(ne + 1, sizeof(*out)) : NULL;
	*nres = 1;
	if (!out || compare_frames(runs, n, o, &out[0]) || compare_names(e, ne, o, out, nres)) {
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
		     size_t nres, const struct diff_opts *o, outfile *html)
{
	json_t *data = o->json || html ? diff_json(runs, n, res, nres, o) : NULL;
	if ((o->json || html) && !data) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	int rc = o->json ? diff_print_json(stdout, data)
			 : diff_print_text(stdout, runs, n, res, nres, o);
	if (rc == -ENOMEM)
		say("diff: out of memory");
	if (!rc && html && write_page(html, o->html, data))
		rc = -1;
	json_decref(data);
	return rc ? EXIT_BAD : 0;
}

int diff_report(const struct diff_run *runs, size_t n, const struct diff_opts *o,
		outfile *html)
{
	size_t nres = 0;
	struct diff_result *res = compare_all(runs, n, o, &nres);
	if (!res) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	int fails = 0;
	for (size_t i = 0; i < nres; i++) {
		enum diff_verdict v = res[i].row.verdict;
		fails |= (v == DIFF_SLOWER && (o->fail_on & DIFF_FAIL_SLOWER)) ||
			 (v == DIFF_FASTER && (o->fail_on & DIFF_FAIL_FASTER));
	}
	int rc = write_out(runs, n, res, nres, o, html);
	free(res);
	return rc ? rc : fails ? EXIT_DIFF : EXIT_OK;
}

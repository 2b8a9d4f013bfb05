/*
 * diff.c - samples and bootstrap comparisons for `katra diff`; diff.h says
 * what and why.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/diff.h"
#include "tools/grow.h"

/* splitmix64: a full-period 64-bit generator, enough for sampling. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A uniform index below @n (multiply-shift; the bias is below n / 2^64). */
static uint64_t below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)next_random(state) * n) >> 64);
}

int diff_sample_add(struct diff_sample *s, uint64_t v, uint64_t self)
{
	if (!s->seen)
		s->rng = DIFF_SEED;
	if (s->n < DIFF_SAMPLE) {
		size_t cap = s->cap, cap2 = s->cap;
		if (grow_array((void **)&s->v, &cap, (size_t)s->n + 1, sizeof(*s->v)) ||
		    grow_array((void **)&s->self, &cap2, (size_t)s->n + 1, sizeof(*s->self)))
			return -ENOMEM;
		s->cap = (uint32_t)cap;
		s->self[s->n] = self;
		s->v[s->n++] = v;
	} else {
		uint64_t j = below(&s->rng, s->seen + 1);
		if (j < DIFF_SAMPLE) {
			s->v[j] = v;
			s->self[j] = self;
		}
	}
	s->seen++;
	return 0;
}

void diff_sample_free(struct diff_sample *s)
{
	free(s->v);
	free(s->self);
	memset(s, 0, sizeof(*s));
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* The rank (from 1) of the value at fraction @p of @n values, as hist.h's. */
static uint64_t rank_of(double p, size_t n)
{
	return (uint64_t)(p * (double)(n - 1)) + 1;
}

/* The p50, p99 and mean of a resample given as counts per sorted value. */
static void resample_stats(const uint64_t *v, const uint32_t *count, size_t n, double out[3])
{
	uint64_t w50 = rank_of(0.5, n), w99 = rank_of(0.99, n), seen = 0;
	double sum = 0;
	out[0] = out[1] = (double)v[n - 1];
	int have50 = 0, have99 = 0;
	for (size_t i = 0; i < n; i++) {
		if (!count[i])
			continue;
		seen += count[i];
		sum += (double)count[i] * (double)v[i];
		if (!have50 && seen >= w50) {
			out[0] = (double)v[i];
			have50 = 1;
		}
		if (!have99 && seen >= w99) {
			out[1] = (double)v[i];
			have99 = 1;
		}
	}
	out[2] = sum / (double)n;
}

/* One bootstrap resample of sorted @v into @out (p50, p99, mean). */
static void resample(const uint64_t *v, size_t n, uint32_t *count, uint64_t *rng, double out[3])
{
	memset(count, 0, n * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		count[below(rng, n)]++;
	resample_stats(v, count, n, out);
}

static void side_of(const uint64_t *v, size_t n, struct diff_side *s)
{
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	s->sampled = n;
	s->p50 = (double)v[rank_of(0.5, n) - 1];
	s->p99 = (double)v[rank_of(0.99, n) - 1];
	s->mean = sum / (double)n;
}

static double ratio(double b, double a)
{
	return a > 0 ? b / a - 1 : b > 0 ? INFINITY : 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* The interval of the @k-th statistic's changes over the resamples. */
static void interval(double *changes, double confidence, struct diff_change *c)
{
	qsort(changes, DIFF_RESAMPLES, sizeof(*changes), cmp_double);
	double tail = (1 - confidence) / 2 * DIFF_RESAMPLES;
	size_t lo = (size_t)floor(tail), hi = DIFF_RESAMPLES - 1 - lo;
	c->lo = changes[lo];
	c->hi = changes[hi];
}

/* Resample both sides DIFF_RESAMPLES times: the changes of the three
 * statistics into @changes[k * DIFF_RESAMPLES + i]. */
static int bootstrap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double *changes)
{
	uint32_t *count = malloc((na > nb ? na : nb) * sizeof(*count));
	if (!count)
		return -ENOMEM;
	uint64_t rng = DIFF_SEED;
	for (size_t i = 0; i < DIFF_RESAMPLES; i++) {
		double sa[3], sb[3];
		resample(a, na, count, &rng, sa);
		resample(b, nb, count, &rng, sb);
		for (int k = 0; k < 3; k++)
			changes[k * DIFF_RESAMPLES + i] = ratio(sb[k], sa[k]);
	}
	free(count);
	return 0;
}

int diff_compare(uint64_t *a, size_t na, uint64_t *b, size_t nb, double confidence,
		 double threshold, struct diff_row *row)
{
	memset(row, 0, sizeof(*row));
	if (!na || !nb)
		return 0;
	qsort(a, na, sizeof(*a), cmp_u64);
	qsort(b, nb, sizeof(*b), cmp_u64);
	side_of(a, na, &row->a);
	side_of(b, nb, &row->b);
	double *changes = malloc(3 * DIFF_RESAMPLES * sizeof(*changes));
	if (!changes || bootstrap(a, na, b, nb, changes)) {
		free(changes);
		return -ENOMEM;
	}
	struct diff_change *c[3] = { &row->p50, &row->p99, &row->mean };
	double pa[3] = { row->a.p50, row->a.p99, row->a.mean };
	double pb[3] = { row->b.p50, row->b.p99, row->b.mean };
	for (int k = 0; k < 3; k++) {
		c[k]->point = ratio(pb[k], pa[k]);
		interval(changes + k * DIFF_RESAMPLES, confidence, c[k]);
	}
	free(changes);
	row->verdict = row->p50.lo > threshold ? DIFF_SLOWER
		     : row->p50.hi < -threshold ? DIFF_FASTER : DIFF_SAME;
	return 0;
}

const char *diff_verdict_name(enum diff_verdict v)
{
	return v == DIFF_SLOWER ? "slower" : v == DIFF_FASTER ? "faster" : "no change";
}

/*
 * diff.c - samples and bootstrap comparisons for `katra diff`; diff.h says
 * what and why.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/diff.h"
#include "tools/pipeline/grow.h"

/* The comparisons' random numbers, counted (diff_row's draws). */
struct rng {
	uint64_t state, draws;
	double spare;      /* the polar method's second normal */
	int have_spare;
};

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

/* Uniform in (0, 1), never 0 or 1 (a log of it is finite). */
static double uniform(struct rng *r)
{
	r->draws++;
	return ((double)(next_random(&r->state) >> 11) + 0.5) * 0x1p-53;
}

/* Standard normal (Marsaglia's polar method: a pair per accepted try). */
static double normal(struct rng *r)
{
	if (r->have_spare) {
		r->have_spare = 0;
		return r->spare;
	}
	double u, v, q;
	do {
		u = 2 * uniform(r) - 1;
		v = 2 * uniform(r) - 1;
		q = u * u + v * v;
	} while (q >= 1 || q == 0);
	double m = sqrt(-2 * log(q) / q);
	r->spare = v * m;
	r->have_spare = 1;
	return u * m;
}

/* Gamma(@shape, 1), @shape >= 1 (Marsaglia and Tsang's squeeze; it accepts
 * over 95% of its tries at any such shape, so a draw is O(1)). */
static double gamma_draw(struct rng *r, double shape)
{
	double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
	for (;;) {
		double x = normal(r), t = 1 + c * x;
		if (t <= 0)
			continue;
		double v = t * t * t, u = uniform(r);
		if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
			return d * v;
	}
}

int diff_sample_add(struct diff_sample *s, uint64_t v, uint64_t self)
{
	if (!s->seen)
		s->rng = DIFF_SEED;
	uint32_t limit = s->limit ? s->limit : DIFF_SAMPLE;
	if (s->n < limit) {
		size_t cap = s->cap;
		if (grow_array((void **)&s->v, &cap, (size_t)s->n + 1, sizeof(*s->v)))
			return -ENOMEM;
		s->cap = (uint32_t)cap;
		s->v[s->n++] = v;
	} else {
		uint64_t j = below(&s->rng, s->seen + 1);
		if (j < limit)
			s->v[j] = v;
	}
	s->seen++;
	s->sum += (double)v;
	s->sumsq += (double)v * (double)v;
	s->self_sum += (double)self;
	return 0;
}

void diff_sample_free(struct diff_sample *s)
{
	free(s->v);
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

/*
 * One side's resample laws: the k-th smallest of a resample of sorted
 * v[n] is v[floor(U n)], U ~ Beta(k, n - k + 1) (diff.h); its mean, the
 * Gamma law with the bootstrap mean's first three moments.
 */
struct law {
	const uint64_t *v;
	size_t n;
	uint64_t k50, k99;
	double mu, sd, alpha, sign; /* the mean's: sd of the mean; alpha 0: normal */
};

static void law_of(const uint64_t *v, size_t n, struct law *l)
{
	double mu = 0, m2 = 0, m3 = 0;
	for (size_t i = 0; i < n; i++)
		mu += (double)v[i];
	mu /= (double)n;
	for (size_t i = 0; i < n; i++) {
		double d = (double)v[i] - mu;
		m2 += d * d;
		m3 += d * d * d;
	}
	m2 /= (double)n;
	m3 /= (double)n;
	*l = (struct law){ .v = v, .n = n, .k50 = rank_of(0.5, n), .k99 = rank_of(0.99, n),
			   .mu = mu, .sd = sqrt(m2 / (double)n), .sign = m3 < 0 ? -1 : 1 };
	/* The skewness of the mean is g / sqrt(n), that of Gamma(alpha)
	 * 2 / sqrt(alpha); past 1e8 the Gamma is the normal to 1e-4.  A
	 * sample's |g| is below sqrt(n), so alpha > 4: gamma_draw()'s
	 * shape is at least 1 as it needs. */
	double g = m2 > 0 ? fabs(m3) / (m2 * sqrt(m2)) : 0;
	double alpha = g > 0 ? 4 * (double)n / (g * g) : 0;
	l->alpha = alpha < 1e8 ? alpha : 0;
}

/* The k-th smallest value of a resample of @l. */
static double order_draw(const struct law *l, uint64_t k, struct rng *r)
{
	double x = gamma_draw(r, (double)k), y = gamma_draw(r, (double)(l->n - k + 1));
	size_t i = (size_t)(x / (x + y) * (double)l->n);
	return (double)l->v[i < l->n ? i : l->n - 1];
}

/* The mean of a resample of @l, within the sample's range as it must be. */
static double mean_draw(const struct law *l, struct rng *r)
{
	if (l->sd == 0)
		return l->mu;
	double z = l->alpha > 0 ? (gamma_draw(r, l->alpha) - l->alpha) / sqrt(l->alpha) : normal(r);
	double m = l->mu + l->sign * l->sd * z;
	double lo = (double)l->v[0], hi = (double)l->v[l->n - 1];
	return m < lo ? lo : m > hi ? hi : m;
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

/* The @k-th smallest of @v[@n], @v reordered (selection with a three-way
 * partition about the middle of three: O(n) expected, no sort). */
static double select_kth(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* [lo, hi) holds the k-th */
	while (hi - lo > 1) {
		double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
		double pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		size_t lt = lo, i = lo, gt = hi; /* [lo,lt) <, [lt,i) ==, [gt,hi) > */
		while (i < gt) {
			double t = v[i];
			if (t < pivot) {
				v[i++] = v[lt];
				v[lt++] = t;
			} else if (t > pivot) {
				v[i] = v[--gt];
				v[gt] = t;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[lo];
}

/* The interval of one statistic's changes over the resamples. */
static void interval(double *changes, double confidence, struct diff_change *c)
{
	double tail = (1 - confidence) / 2 * DIFF_RESAMPLES;
	size_t lo = (size_t)floor(tail), hi = DIFF_RESAMPLES - 1 - lo;
	c->lo = select_kth(changes, DIFF_RESAMPLES, lo);
	c->hi = select_kth(changes, DIFF_RESAMPLES, hi);
}

/* Resample both sides DIFF_RESAMPLES times: the changes of the three
 * statistics into @changes[k * DIFF_RESAMPLES + i]; the draws made. */
static uint64_t bootstrap(const struct law *a, const struct law *b, double *changes)
{
	struct rng r = { .state = DIFF_SEED };
	for (size_t i = 0; i < DIFF_RESAMPLES; i++) {
		double a50 = order_draw(a, a->k50, &r), b50 = order_draw(b, b->k50, &r);
		double a99 = order_draw(a, a->k99, &r), b99 = order_draw(b, b->k99, &r);
		double am = mean_draw(a, &r), bm = mean_draw(b, &r);
		changes[i] = ratio(b50, a50);
		changes[DIFF_RESAMPLES + i] = ratio(b99, a99);
		changes[2 * DIFF_RESAMPLES + i] = ratio(bm, am);
	}
	return r.draws;
}

enum diff_verdict diff_decide(const struct diff_change *c, double threshold)
{
	return c->lo > 0 && c->point > threshold ? DIFF_SLOWER
	     : c->hi < 0 && c->point < -threshold ? DIFF_FASTER : DIFF_SAME;
}

int diff_compare(uint64_t *a, size_t na, uint64_t *b, size_t nb, double confidence,
		 double threshold, size_t min_count, struct diff_row *row)
{
	memset(row, 0, sizeof(*row));
	if (!na || !nb)
		return 0;
	qsort(a, na, sizeof(*a), cmp_u64);
	qsort(b, nb, sizeof(*b), cmp_u64);
	side_of(a, na, &row->a);
	side_of(b, nb, &row->b);
	struct diff_change *c[3] = { &row->p50, &row->p99, &row->mean };
	double pa[3] = { row->a.p50, row->a.p99, row->a.mean };
	double pb[3] = { row->b.p50, row->b.p99, row->b.mean };
	for (int k = 0; k < 3; k++) {
		c[k]->point = ratio(pb[k], pa[k]);
		c[k]->lo = c[k]->hi = NAN;
	}
	if (na < min_count || nb < min_count) {
		row->verdict = DIFF_TOO_FEW;
		return 0;
	}
	double *changes = malloc(3 * DIFF_RESAMPLES * sizeof(*changes));
	if (!changes)
		return -ENOMEM;
	struct law la, lb;
	law_of(a, na, &la);
	law_of(b, nb, &lb);
	row->draws = bootstrap(&la, &lb, changes);
	for (int k = 0; k < 3; k++)
		interval(changes + k * DIFF_RESAMPLES, confidence, c[k]);
	free(changes);
	row->verdict = diff_decide(&row->p50, threshold);
	return 0;
}

double diff_normal_quantile(double p)
{
	double lo = -40, hi = 40;
	for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 * erfc(-mid / M_SQRT2) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* The change of per-run @b over per-run @a, with the log's standard error
 * @se; no interval (NAN) where either is 0. */
static void log_change(double a, double b, double se, double z, struct diff_change *c)
{
	c->point = ratio(b, a);
	c->lo = c->hi = NAN;
	if (a > 0 && b > 0) {
		double l = log(b / a);
		c->lo = exp(l - z * se) - 1;
		c->hi = exp(l + z * se) - 1;
	}
}

void diff_counts(struct diff_row *row, double confidence, double threshold, size_t min_count)
{
	const struct diff_side *a = &row->a, *b = &row->b;
	double z = diff_normal_quantile(1 - (1 - confidence) / 2);
	double ra = a->runs ? (double)a->runs : 1, rb = b->runs ? (double)b->runs : 1;
	double ca = (double)a->count, cb = (double)b->count;
	log_change(ca / ra, cb / rb, ca > 0 && cb > 0 ? sqrt(1 / ca + 1 / cb) : 0, z, &row->count);
	double va = a->total > 0 ? a->sumsq / (a->total * a->total) : 0;
	double vb = b->total > 0 ? b->sumsq / (b->total * b->total) : 0;
	log_change(a->total / ra, b->total / rb, sqrt(va + vb), z, &row->total);
	row->count_verdict = diff_decide(&row->count, threshold);
	row->total_verdict = a->count < min_count || b->count < min_count
			   ? DIFF_TOO_FEW : diff_decide(&row->total, threshold);
}

const char *diff_verdict_name(enum diff_verdict v)
{
	return v == DIFF_SLOWER ? "slower" : v == DIFF_FASTER ? "faster"
	     : v == DIFF_TOO_FEW ? "too few" : "no change";
}

const char *diff_count_name(enum diff_verdict v)
{
	return v == DIFF_SLOWER ? "more" : v == DIFF_FASTER ? "fewer"
	     : v == DIFF_TOO_FEW ? "too few" : "no change";
}

const char *diff_total_name(enum diff_verdict v)
{
	return v == DIFF_SLOWER ? "more" : v == DIFF_FASTER ? "less"
	     : v == DIFF_TOO_FEW ? "too few" : "no change";
}

/*
 * diff.h - the statistics of `katra diff`: a bounded uniform sample of
 * each zone's durations per run, and the change between two sides' samples
 * with a bootstrap confidence interval.
 *
 * Why a bootstrap of the sample (and not a rank test): it gives an interval
 * for each number a reader wants - the change of the median, of the p99
 * and of the mean, as a ratio - with one method and no assumption on the
 * shape of the durations (they are skewed and multi-modal); a Mann-Whitney
 * U test would give only a p-value for "the distributions differ", and its
 * Hodges-Lehmann shift only a location change.  The resampling uses a fixed
 * seed, so the same inputs always give the same intervals and verdicts.
 *
 * Cost: a resample is never drawn value by value.  The k-th smallest of
 * n values drawn with replacement from sorted v[] is v[floor(U n)] where U
 * is the k-th smallest of n uniforms, which has the law Beta(k, n-k+1):
 * so the p50 and p99 of a resample are each one Beta draw (two Gamma
 * draws), exactly the bootstrap's law.  The mean of a resample has the
 * sample's mean, variance / n and skewness / sqrt(n) as its first three
 * moments; it is drawn from the Gamma law with those three (normal when
 * the skewness is 0), clamped to the sample's range.  A comparison thus
 * costs O(DIFF_RESAMPLES) draws whatever the samples' sizes (diff_row's
 * draws counts them), plus the sort of its samples: where the old
 * value-by-value bootstrap cost DIFF_RESAMPLES draws per sampled value.
 *
 * Memory: a sample holds at most DIFF_SAMPLE durations (reservoir
 * sampling, Algorithm R, with a fixed seed), so a zone costs at most
 * 16 KiB per run whatever the trace's length, and a side's runs together
 * at most DIFF_POOL values (64 KiB) when the side has more than four; its
 * count, total and self total are exact.  The p50, p99 and mean are the sample's: a mean over
 * every zone would swing with the rare long zone (a preemption) that its
 * interval, from the sample, could not show.
 *
 * Verdicts (diff_decide): a change is "up" when its interval lies wholly
 * above 0 and its point estimate above +threshold, "down" when wholly below
 * 0 and below -threshold: the change must be real (the interval excludes
 * 0) and as large as the threshold (the best estimate is).  So
 * +30% [+4.6%, +45.1%] is slower against 5% and no change against 35%.
 *
 * Not shared: one thread per sample and per comparison.
 */
#ifndef KT_TOOLS_DIFF_H
#define KT_TOOLS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#define DIFF_SAMPLE 2048      /* durations kept per zone per run */
#define DIFF_POOL 8192        /* per zone per side: a side of more than 4 runs
			       * keeps DIFF_POOL / runs of each run */
#define DIFF_RESAMPLES 1000   /* bootstrap resamples per comparison */
#define DIFF_SEED UINT64_C(0x6b61747261646966) /* the reservoir's and the bootstrap's */

#define DIFF_MIN_COUNT 10  /* the default least count per side to judge a row */

struct diff_sample {
	uint64_t *v;          /* up to limit values, in arrival order */
	uint32_t n, cap;
	uint32_t limit;       /* values kept at most, 1 to DIFF_SAMPLE; 0: DIFF_SAMPLE */
	uint64_t seen;        /* every value offered */
	double sum, sumsq;    /* of every value offered */
	double self_sum;      /* of the self times offered with them */
	uint64_t rng;
};

/* diff_sample_add - offer @v, with its self time @self, to @s (the self
 * time is only summed).  Returns 0 or -ENOMEM (@s unchanged). */
int diff_sample_add(struct diff_sample *s, uint64_t v, uint64_t self);

void diff_sample_free(struct diff_sample *s);

/* A relative change, B / A - 1, and its interval. */
struct diff_change {
	double point, lo, hi;
};

/* SLOWER and FASTER are "up" and "down": more and fewer for a count, more
 * and less for a total.  TOO_FEW: a side has fewer values than the least
 * count; no interval, never a failure. */
enum diff_verdict { DIFF_SAME = 0, DIFF_SLOWER = 1, DIFF_FASTER = 2, DIFF_TOO_FEW = 3 };

/* One side's numbers: its pooled sample's, but the count and totals. */
struct diff_side {
	uint64_t count;       /* values offered, over every run */
	size_t runs;          /* runs on the side */
	size_t sampled;       /* values in the pooled sample */
	double p50, p99, mean;
	double total;         /* exact sum of every value offered, per run */
	double sumsq;         /* exact sum of their squares, per run */
	double self_mean;     /* exact mean self time; 0 for frame times */
};

struct diff_row {
	struct diff_side a, b;
	struct diff_change p50, p99, mean;
	struct diff_change count, total; /* per run; see diff_counts() */
	double self_change;        /* of the self means (no interval) */
	enum diff_verdict verdict; /* the p50's, see diff_compare() */
	enum diff_verdict count_verdict, total_verdict;
	uint64_t draws;            /* random numbers drawn: O(DIFF_RESAMPLES) */
};

/*
 * diff_compare - compare the pooled samples @a (@na values) and @b: sort
 * them (in place), the p50, p99 and mean of each, and their changes with a
 * @confidence (0.5 to 0.999) interval from DIFF_RESAMPLES resamples of
 * each side.  The verdict is diff_decide() of the p50's change, or
 * TOO_FEW when either side has fewer than @min_count values (then no
 * interval: lo and hi are NAN).  Only the p50 to p99 and mean fields,
 * verdict and draws are set; the rest is left 0 (the caller knows them).
 *
 * Returns 0, or -ENOMEM (@row unset).  Either side empty: SAME, zeros.
 */
int diff_compare(uint64_t *a, size_t na, uint64_t *b, size_t nb, double confidence,
		 double threshold, size_t min_count, struct diff_row *row);

/*
 * diff_counts - the count and total changes of @row, whose sides' count,
 * runs, total and sumsq are set, per run (B's per run over A's, so sides
 * of unequal runs compare), with @confidence intervals: the count as a
 * Poisson count (the log of the ratio of two Poisson counts has variance
 * 1/ca + 1/cb), the total as a compound Poisson sum (a sum of a Poisson
 * number of values has variance count * E[X^2]: the log of the total has
 * variance sumsq / total^2).  Each gets its diff_decide() verdict; the
 * total's is TOO_FEW when either count is below @min_count (the count's is
 * always judged: its interval already widens as counts shrink, and 1
 * against 2 is never a change).
 */
void diff_counts(struct diff_row *row, double confidence, double threshold, size_t min_count);

/*
 * diff_decide - the verdict of change @c against @threshold (a fraction,
 * 0.05 for 5%): SLOWER when c->lo > 0 and c->point > threshold, FASTER
 * when c->hi < 0 and c->point < -threshold, else SAME.
 */
enum diff_verdict diff_decide(const struct diff_change *c, double threshold);

/* diff_normal_quantile - z with P(Z < z) = @p, 0 < @p < 1. */
double diff_normal_quantile(double p);

/* diff_verdict_name - "slower", "faster", "no change" or "too few";
 * diff_count_name - "more", "fewer", ...; diff_total_name - "more", "less", .... */
const char *diff_verdict_name(enum diff_verdict v);
const char *diff_count_name(enum diff_verdict v);
const char *diff_total_name(enum diff_verdict v);

#endif

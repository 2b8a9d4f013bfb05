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
 * Memory: a sample holds at most DIFF_SAMPLE durations and their self
 * times (reservoir sampling, Algorithm R, with a fixed seed), so a zone
 * costs at most 32 KiB per run whatever the trace's length; its count is
 * exact.  Every statistic, the mean and self mean too, is the sample's: a
 * mean over every zone would swing with the rare long zone (a preemption)
 * that its interval, from the sample, could not show.
 *
 * Not shared: one thread per sample and per comparison.
 */
#ifndef KT_TOOLS_DIFF_H
#define KT_TOOLS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#define DIFF_SAMPLE 2048      /* durations kept per zone per run */
#define DIFF_RESAMPLES 1000   /* bootstrap resamples per comparison */
#define DIFF_SEED UINT64_C(0x6b61747261646966) /* the reservoir's and the bootstrap's */

struct diff_sample {
	uint64_t *v;          /* up to DIFF_SAMPLE values, in arrival order */
	uint64_t *self;       /* the self time that came with each value */
	uint32_t n, cap;
	uint64_t seen;        /* every value offered */
	uint64_t rng;
};

/* diff_sample_add - offer @v, with its self time @self, to @s.  Returns 0
 * or -ENOMEM (@s unchanged). */
int diff_sample_add(struct diff_sample *s, uint64_t v, uint64_t self);

void diff_sample_free(struct diff_sample *s);

/* A relative change, B / A - 1, and its interval. */
struct diff_change {
	double point, lo, hi;
};

enum diff_verdict { DIFF_SAME = 0, DIFF_SLOWER = 1, DIFF_FASTER = 2 };

/* One side's numbers: from its pooled sample. */
struct diff_side {
	uint64_t count;       /* values offered, over every run */
	size_t sampled;       /* values in the pooled sample */
	double p50, p99, mean;
	double self_mean;     /* of the sample's self times; 0 for frame times */
};

struct diff_row {
	struct diff_side a, b;
	struct diff_change p50, p99, mean;
	double self_change;        /* of the self means (no interval) */
	enum diff_verdict verdict; /* from the p50's interval, see diff_compare() */
};

/*
 * diff_compare - compare the pooled samples @a (@na values) and @b: sort
 * them (in place), the p50, p99 and mean of each, and their changes with a
 * @confidence (0.5 to 0.999) interval from DIFF_RESAMPLES resamples of
 * each side.  The verdict is SLOWER when the p50 change's whole interval
 * lies above +@threshold (a fraction, 0.05 for 5%), FASTER when it lies
 * below -@threshold, else SAME.  The sides' counts are left 0 (the
 * caller knows them).
 *
 * Returns 0, or -ENOMEM (@row unset).  Either side empty: SAME, zeros.
 */
int diff_compare(uint64_t *a, size_t na, uint64_t *b, size_t nb, double confidence,
		 double threshold, struct diff_row *row);

/* diff_verdict_name - "slower", "faster" or "no change". */
const char *diff_verdict_name(enum diff_verdict v);

#endif

/*
 * hist.h - histograms of durations for `katra stats`.
 *
 * Exact up to HIST_EXACT values: they are kept, and a percentile is one
 * of them.  Past that, log-linear buckets: 32 per power of two (about 3%
 * wide), so percentiles of any number of values take fixed memory, each
 * the middle of its bucket, within HIST_ERROR of a value of that rank
 * (half a bucket over the bucket's lower end: 2^-6); min and max are kept
 * exactly.
 * A trace may hold millions of names with a zone or two each, so a
 * histogram starts sparse (the buckets it has seen, sorted, at most
 * HIST_SPARSE of them) and turns dense (every bucket) only once it has
 * seen that many different buckets: its memory stays within a few bytes
 * per value it was given, and at most HIST_BUCKETS counters.
 *
 * Not shared: one thread per histogram.
 */
#ifndef KT_TOOLS_HIST_H
#define KT_TOOLS_HIST_H

#include <stdint.h>

#define HIST_BUCKETS (64 * 32)
#define HIST_SPARSE 256
#define HIST_EXACT 4096
#define HIST_ERROR (1.0 / 64) /* a bucketed percentile's relative error, at most */

struct hist_cell {
	uint32_t bucket;
	uint64_t count;
};

struct hist {
	uint64_t n, min, max;
	struct hist_cell *sparse; /* sorted by bucket, while dense is NULL */
	uint32_t nsparse, cap;
	uint64_t *dense;          /* HIST_BUCKETS counters, or NULL */
	uint64_t *exact;          /* every value while n <= HIST_EXACT, then NULL;
				   * sorted by hist_finish() */
	uint32_t nexact, exact_cap;
	int bucketed;             /* past HIST_EXACT: percentiles from buckets */
};

/* hist_add - count @v.  Returns 0 or -ENOMEM (@h unchanged). */
int hist_add(struct hist *h, uint64_t v);

/* hist_finish - after the last hist_add(): sort the exact values. */
void hist_finish(struct hist *h);

/* hist_pct - the value at fraction @p (0..1) of the values (rank
 * p * (n - 1) + 1 of n): exact while hist_exact(), else the middle of its
 * bucket clamped to [min, max]; 0 for an empty histogram.  After
 * hist_finish(). */
uint64_t hist_pct(const struct hist *h, double p);

/* hist_exact - whether hist_pct() gives values, not buckets' middles. */
static inline int hist_exact(const struct hist *h)
{
	return !h->bucketed;
}

/*
 * hist_next - walk the non-empty buckets in increasing order: start with
 * *@pos = 0; each call gives the next bucket's middle value in *@v and its
 * count in *@count and returns 1, or returns 0 after the last.
 */
int hist_next(const struct hist *h, uint32_t *pos, uint64_t *v, uint64_t *count);

/* hist_free - release the buckets; @h is then empty. */
void hist_free(struct hist *h);

#endif

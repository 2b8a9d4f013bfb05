/*
 * hist.h - histograms of durations for `katra stats`.
 *
 * Log-linear buckets: 32 per power of two (about 3% wide), so percentiles
 * of any number of values take fixed memory; min and max are kept exactly.
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

struct hist_cell {
	uint32_t bucket;
	uint64_t count;
};

struct hist {
	uint64_t n, min, max;
	struct hist_cell *sparse; /* sorted by bucket, while dense is NULL */
	uint32_t nsparse, cap;
	uint64_t *dense;          /* HIST_BUCKETS counters, or NULL */
};

/* hist_add - count @v.  Returns 0 or -ENOMEM (@h unchanged). */
int hist_add(struct hist *h, uint64_t v);

/* hist_pct - the value at fraction @p (0..1) of the values, as the middle
 * of its bucket clamped to [min, max]; 0 for an empty histogram. */
uint64_t hist_pct(const struct hist *h, double p);

/*
 * hist_next - walk the non-empty buckets in increasing order: start with
 * *@pos = 0; each call gives the next bucket's middle value in *@v and its
 * count in *@count and returns 1, or returns 0 after the last.
 */
int hist_next(const struct hist *h, uint32_t *pos, uint64_t *v, uint64_t *count);

/* hist_free - release the buckets; @h is then empty. */
void hist_free(struct hist *h);

#endif

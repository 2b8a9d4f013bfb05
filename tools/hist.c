/*
 * hist.c - sparse-then-dense log-linear histograms; hist.h says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bsearch.h"
#include "tools/hist.h"

static uint32_t bucket_of(uint64_t v)
{
	if (v < 32)
		return (uint32_t)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* v >= 2^e */
	return ((e - 4) << 5) | (uint32_t)((v >> (e - 5)) & 31);
}

static uint64_t value_of(uint32_t i)
{
	if (i < 32)
		return i;
	unsigned e = (i >> 5) + 4;
	/* The middle of the bucket. */
	return ((uint64_t)(32 | (i & 31)) << (e - 5)) + ((uint64_t)1 << (e - 5)) / 2;
}

static int go_dense(struct hist *h)
{
	uint64_t *d = calloc(HIST_BUCKETS, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nsparse; i++)
		d[h->sparse[i].bucket] = h->sparse[i].count;
	free(h->sparse);
	h->sparse = NULL;
	h->nsparse = h->cap = 0;
	h->dense = d;
	return 0;
}

/* Count bucket @b in the sparse form; 0 or -ENOMEM. */
static int sparse_add(struct hist *h, uint32_t b)
{
	size_t lo = lower_bound_u32(h->sparse, h->nsparse, sizeof(*h->sparse), b);
	if (lo < h->nsparse && h->sparse[lo].bucket == b) {
		h->sparse[lo].count++;
		return 0;
	}
	if (h->nsparse == HIST_SPARSE) {
		if (go_dense(h))
			return -ENOMEM;
		h->dense[b]++;
		return 0;
	}
	if (h->nsparse == h->cap) {
		uint32_t n = h->cap ? h->cap * 2 : 4;
		void *p = realloc(h->sparse, n * sizeof(*h->sparse));
		if (!p)
			return -ENOMEM;
		h->sparse = p;
		h->cap = n;
	}
	memmove(h->sparse + lo + 1, h->sparse + lo, (h->nsparse - lo) * sizeof(*h->sparse));
	h->sparse[lo] = (struct hist_cell){ b, 1 };
	h->nsparse++;
	return 0;
}

int hist_add(struct hist *h, uint64_t v)
{
	uint32_t b = bucket_of(v);
	if (h->dense)
		h->dense[b]++;
	else if (sparse_add(h, b))
		return -ENOMEM;
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	return 0;
}

int hist_next(const struct hist *h, uint32_t *pos, uint64_t *v, uint64_t *count)
{
	if (!h->dense) {
		if (*pos >= h->nsparse)
			return 0;
		*v = value_of(h->sparse[*pos].bucket);
		*count = h->sparse[(*pos)++].count;
		return 1;
	}
	while (*pos < HIST_BUCKETS && !h->dense[*pos])
		++*pos;
	if (*pos == HIST_BUCKETS)
		return 0;
	*v = value_of(*pos);
	*count = h->dense[(*pos)++];
	return 1;
}

uint64_t hist_pct(const struct hist *h, double p)
{
	if (!h->n)
		return 0;
	uint64_t want = (uint64_t)(p * (double)(h->n - 1)) + 1, seen = 0, v, count;
	uint32_t pos = 0;
	while (hist_next(h, &pos, &v, &count)) {
		seen += count;
		if (seen >= want)
			return v < h->min ? h->min : v > h->max ? h->max : v;
	}
	return h->max;
}

void hist_free(struct hist *h)
{
	free(h->sparse);
	free(h->dense);
	memset(h, 0, sizeof(*h));
}

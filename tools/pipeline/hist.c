/*
 * hist.c - sparse-then-dense log-linear histograms; hist.h says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/bsearch.h"
#include "tools/pipeline/hist.h"

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

/* One more element of @size bytes in @*p, of @*cap: doubling from 4, as a
 * name with a zone or two must cost a few bytes (hist.h).  0 or -ENOMEM. */
static int grow(void **p, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	uint32_t c = *cap ? *cap * 2 : 4;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
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
	if (grow((void **)&h->sparse, h->nsparse, &h->cap, sizeof(*h->sparse)))
		return -ENOMEM;
	memmove(h->sparse + lo + 1, h->sparse + lo, (h->nsparse - lo) * sizeof(*h->sparse));
	h->sparse[lo] = (struct hist_cell){ b, 1 };
	h->nsparse++;
	return 0;
}

/* Keep @v while the values are few enough to keep: 0 or -ENOMEM.  Past
 * HIST_EXACT they go, and percentiles come from the buckets. */
static int exact_add(struct hist *h, uint64_t v)
{
	if (h->bucketed)
		return 0;
	if (h->nexact == HIST_EXACT) {
		free(h->exact);
		h->exact = NULL;
		h->nexact = h->exact_cap = 0;
		h->bucketed = 1;
		return 0;
	}
	if (grow((void **)&h->exact, h->nexact, &h->exact_cap, sizeof(*h->exact)))
		return -ENOMEM;
	h->exact[h->nexact++] = v;
	return 0;
}

int hist_add(struct hist *h, uint64_t v)
{
	uint32_t b = bucket_of(v);
	if (exact_add(h, v))
		return -ENOMEM;
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

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void hist_finish(struct hist *h)
{
	if (h->nexact > 1)
		qsort(h->exact, h->nexact, sizeof(*h->exact), by_value);
}

uint64_t hist_pct(const struct hist *h, double p)
{
	if (!h->n)
		return 0;
	uint64_t want = (uint64_t)(p * (double)(h->n - 1)) + 1, seen = 0, v, count;
	if (!h->bucketed && h->nexact == h->n)
		return h->exact[want - 1];
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
	free(h->exact);
	memset(h, 0, sizeof(*h));
}

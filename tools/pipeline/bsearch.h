/*
 * bsearch.h - binary search over arrays sorted by a leading uint32_t key
 * (an id, a bucket): the tools' tables, summary rows and histograms.
 *
 * Any thread; no state.
 */
#ifndef KT_TOOLS_BSEARCH_H
#define KT_TOOLS_BSEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The index of the first of the @n elements of @size bytes at @base whose
 * key is not below @key: @n when every key is. */
static inline size_t lower_bound_u32(const void *base, size_t n, size_t size, uint32_t key)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t k;
		memcpy(&k, b + mid * size, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif

/* A sorted array keyed by a leading uint32_t: the per-thread tables of the
 * reader, the writer and the flusher. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"

void *kt__idtab_get(void **arr, size_t *len, size_t *cap, size_t size, uint32_t key,
		    size_t max)
{
	uint8_t *base = *arr;
	size_t lo = 0, hi = *len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t k;
		memcpy(&k, base + mid * size, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *len) {
		uint32_t k;
		memcpy(&k, base + lo * size, sizeof(k));
		if (k == key)
			return base + lo * size;
	}
	if (*len >= max)
		return NULL;
	if (*len == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		void *p = realloc(base, n * size);
		if (!p)
			return NULL;
		*arr = base = p;
		*cap = n;
	}
	memmove(base + (lo + 1) * size, base + lo * size, (*len - lo) * size);
	memset(base + lo * size, 0, size);
	memcpy(base + lo * size, &key, sizeof(key));
	(*len)++;
	return base + lo * size;
}

int kt__idset_add(uint32_t **set, size_t *len, size_t *cap, uint32_t id)
{
	size_t before = *len;
	if (!kt__idtab_get((void **)set, len, cap, sizeof(**set), id, SIZE_MAX))
		return -ENOMEM;
	return *len != before;
}

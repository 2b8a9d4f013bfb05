/*
 * grow.h - room for more elements in an array that doubles, for the
 * tools' tables that grow with what a file holds.  Any thread that owns
 * the array.
 */
#ifndef KT_TOOLS_GROW_H
#define KT_TOOLS_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Grow @*p (of @*cap elements of @size bytes) to hold @need, doubling from
 * 64; 0 or -ENOMEM (also when the bytes would overflow a size_t). */
static inline int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / size)
		return -ENOMEM;
	void *q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

#endif

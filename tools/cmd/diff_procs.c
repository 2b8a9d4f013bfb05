/*
 * diff_procs.c - `katra diff`'s rows per process; diff_procs.h says when a
 * zone name is one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/diff_procs.h"

/* Bytes, then length: the order of names and process names. */
static int bytes_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	return c ? c : la != lb ? (la < lb ? -1 : 1) : 0;
}

static int by_run_process(const void *x, const void *y)
{
	const struct pool_entry *const *a = x, *const *b = y;
	if ((*a)->run != (*b)->run)
		return (*a)->run < (*b)->run ? -1 : 1;
	return bytes_cmp((*a)->process, (*a)->plen, (*b)->process, (*b)->plen);
}

/* Does one run hold the @n entries' name in two processes of other names?
 * @tmp: room for @n pointers. */
static int clashes(struct pool_entry *e, size_t n, const struct pool_entry **tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = &e[i];
	qsort(tmp, n, sizeof(*tmp), by_run_process);
	for (size_t i = 1; i < n; i++)
		if (tmp[i]->run == tmp[i - 1]->run &&
		    bytes_cmp(tmp[i]->process, tmp[i]->plen, tmp[i - 1]->process, tmp[i - 1]->plen))
			return 1;
	return 0;
}

static int by_row(const void *x, const void *y)
{
	const struct pool_entry *a = x, *b = y;
	int c = bytes_cmp(a->name, a->len, b->name, b->len);
	if (!c && a->keyed)
		c = bytes_cmp(a->process, a->plen, b->process, b->plen);
	return c ? c : a->side - b->side;
}

int diff_procs_key(struct pool_entry *e, size_t n)
{
	const struct pool_entry **tmp = malloc((n ? n : 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	int any = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !bytes_cmp(e[j].name, e[j].len, e[i].name, e[i].len); j++)
			;
		int k = j - i > 1 && clashes(e + i, j - i, tmp);
		for (size_t m = i; m < j; m++)
			e[m].keyed = k;
		any |= k;
	}
	free(tmp);
	if (any)
		qsort(e, n, sizeof(*e), by_row);
	return 0;
}

int diff_procs_same_row(const struct pool_entry *a, const struct pool_entry *b)
{
	return !bytes_cmp(a->name, a->len, b->name, b->len) &&
	       (!a->keyed || !bytes_cmp(a->process, a->plen, b->process, b->plen));
}

/*
 * memstats.c - memory per pool; memstats.h says what is counted and how
 * it stays bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/text.h"

void memstats_init(struct memstats *m)
{
	memset(m, 0, sizeof(*m));
	idmap_init(&m->ids);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The pool of @id, added when new; NULL past MEM_POOLS or out of memory
 * (*@err set). */
static struct mem_pool *pool_of(struct memstats *m, uint32_t id, int *err)
{
	uint32_t *v = idmap_find(&m->ids, id);
	if (v)
		return &m->pools[*v];
	if (m->n == MEM_POOLS)
		return NULL;
	int added;
	if (grow_array((void **)&m->pools, &m->cap, m->n + 1, sizeof(*m->pools)) ||
	    !(v = idmap_slot(&m->ids, id, (uint32_t)m->n, &added))) {
		*err = -ENOMEM;
		return NULL;
	}
	struct mem_pool *p = &m->pools[m->n++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	idmap_init(&p->ptrs);
	return p;
}

/* Keep the allocation of @size at @ptr among the pool's MEM_TOP largest,
 * largest first, an equal size keeping the earlier one ahead: each pointer
 * once (memstats.h). */
static void top_add(struct mem_pool *p, uint64_t size, uint64_t ptr, uint64_t ns)
{
	size_t n = p->ntop, at = 0;
	while (at < n && p->top[at].ptr != ptr)
		at++;
	if (at < n && size <= p->top[at].size) {
		p->top[at].count += size == p->top[at].size;
		return;
	}
	if (at < n) {
		/* Larger at a listed pointer: it moves up from where it was. */
		memmove(&p->top[at], &p->top[at + 1], (n - at - 1) * sizeof(p->top[0]));
		n--;
	} else if (n == MEM_TOP && size <= p->top[n - 1].size) {
		return;
	}
	size_t i = n < MEM_TOP ? n++ : n - 1;
	while (i > 0 && p->top[i - 1].size < size) {
		p->top[i] = p->top[i - 1];
		i--;
	}
	p->top[i] = (struct mem_top){ size, ptr, ns, 1 };
	p->ntop = n;
}

static int on_alloc(struct memstats *m, struct mem_pool *p, uint64_t ptr, uint64_t size,
		    uint64_t ns)
{
	p->allocs++;
	p->bytes = sat_add(p->bytes, size);
	top_add(p, size, ptr, ns);
	uint32_t *v = idmap_find(&p->ptrs, ptr);
	if (!v) {
		if (m->nptrs == MEM_POINTERS) {
			m->untracked++;
			return 0;
		}
		int added;
		if (grow_array((void **)&m->ptrs, &m->capptrs, m->nptrs + 1, sizeof(*m->ptrs)) ||
		    !(v = idmap_slot(&p->ptrs, ptr, (uint32_t)m->nptrs, &added)))
			return -ENOMEM;
		m->ptrs[m->nptrs++] = (struct mem_ptr){ 0, 0 };
	}
	struct mem_ptr *e = &m->ptrs[*v];
	if (e->live) {
		p->replaced++;
		p->live = p->live > e->size ? p->live - e->size : 0;
	}
	*e = (struct mem_ptr){ size, 1 };
	p->live = sat_add(p->live, size);
	if (p->live > p->peak) {
		p->peak = p->live;
		p->peak_ns = ns;
	}
	return 0;
}

static void on_free(struct memstats *m, struct mem_pool *p, uint64_t ptr)
{
	uint32_t *v = idmap_find(&p->ptrs, ptr);
	struct mem_ptr *e = v ? &m->ptrs[*v] : NULL;
	p->frees++;
	if (!e || !e->live) {
		p->unknown_frees++;
		return;
	}
	p->live = p->live > e->size ? p->live - e->size : 0;
	e->live = 0;
}

int memstats_event(struct memstats *m, const kt_event *ev, uint64_t ns,
		   const struct mem_pool **pool)
{
	*pool = NULL;
	kt_value v;
	if (!kt_event_get_value(ev, &v) || (v.kind != KT_VALUE_ALLOC && v.kind != KT_VALUE_FREE))
		return 0;
	int err = 0;
	struct mem_pool *p = pool_of(m, ev->name_id, &err);
	if (!p) {
		m->other_pools += !err;
		return err;
	}
	if (v.kind == KT_VALUE_FREE)
		on_free(m, p, v.ptr);
	else if ((err = on_alloc(m, p, v.ptr, v.size, ns)))
		return err;
	*pool = p;
	return 0;
}

static int by_pool_id(const void *a, const void *b)
{
	const struct mem_pool *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

void memstats_sort(struct memstats *m)
{
	/* The id map's indexes go stale: sorting is for printing, last. */
	if (m->n > 1)
		qsort(m->pools, m->n, sizeof(*m->pools), by_pool_id);
}

void memstats_free(struct memstats *m)
{
	for (size_t i = 0; i < m->n; i++)
		idmap_free(&m->pools[i].ptrs);
	free(m->pools);
	free(m->ptrs);
	idmap_free(&m->ids);
	memset(m, 0, sizeof(*m));
}

/* ---- output -------------------------------------------------------------- */

/* A pool's name, escaped for a terminal: "default" for 0, "?" when the
 * file does not name it.  Malloc'd; NULL when out of memory. */
static char *pool_label(const struct tables *t, uint32_t id)
{
	size_t n = 0;
	const char *s = id ? tables_name(t, id, &n) : "default";
	if (!id)
		n = strlen(s);
	return s ? text_escape(s, n) : strdup("?");
}

static int text_pool(FILE *f, const struct mem_pool *p, const struct tables *t)
{
	char *name = pool_label(t, p->id);
	if (!name)
		return -ENOMEM;
	fprintf(f, "%-20s %10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64
		   " %8" PRIu64 "\n",
		name, p->allocs, p->frees, p->bytes, p->peak, p->live, p->unknown_frees);
	free(name);
	fputs("  largest:", f);
	for (size_t i = 0; i < p->ntop; i++) {
		fprintf(f, " %" PRIu64 " @0x%" PRIx64, p->top[i].size, p->top[i].ptr);
		if (p->top[i].count > 1)
			fprintf(f, " x%" PRIu64, p->top[i].count);
	}
	fputs("\n", f);
	if (p->replaced)
		fprintf(f, "  %" PRIu64 " allocations of a live pointer (its free was lost)\n",
			p->replaced);
	return 0;
}

int memstats_text(FILE *f, const struct memstats *m, const struct tables *t)
{
	if (!m->n && !m->other_pools)
		return 0;
	fprintf(f, "\n%-20s %10s %10s %14s %14s %14s %8s\n", "memory pool", "allocs", "frees",
		"bytes", "peak live", "live at end", "unknown");
	for (size_t i = 0; i < m->n; i++)
		if (text_pool(f, &m->pools[i], t))
			return -ENOMEM;
	if (m->other_pools)
		fprintf(f, "memory: %" PRIu64 " records of pools past the first %u not counted\n",
			m->other_pools, MEM_POOLS);
	if (m->untracked)
		fprintf(f, "memory: %" PRIu64 " allocations past %u pointers not tracked\n",
			m->untracked, MEM_POINTERS);
	return ferror(f) ? -EIO : 0;
}

static json_t *u64j(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *json_pool(const struct mem_pool *p, const struct tables *t)
{
	size_t n = 0;
	const char *name = p->id ? tables_name(t, p->id, &n) : NULL;
	json_t *top = json_array();
	for (size_t i = 0; top && i < p->ntop; i++)
		/* The pointer in hex, as dump has it: a string, since JSON
		 * readers lose integers past 2^53. */
		if (json_array_append_new(top, json_pack("{s:o,s:o,s:o,s:o}", "size",
							 u64j(p->top[i].size), "ptr",
							 json_sprintf("0x%" PRIx64, p->top[i].ptr),
							 "ns", u64j(p->top[i].ns), "allocations",
							 u64j(p->top[i].count)))) {
			json_decref(top);
			return NULL;
		}
	return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", (json_int_t)p->id,
			 "name", name ? text_json_string(name, n) : json_null(), "allocs",
			 u64j(p->allocs), "frees", u64j(p->frees), "unknown_frees",
			 u64j(p->unknown_frees), "replaced", u64j(p->replaced), "bytes",
			 u64j(p->bytes), "peak_live", u64j(p->peak), "peak_ns", u64j(p->peak_ns),
			 "live_at_end", u64j(p->live), "largest", top);
}

json_t *memstats_json(const struct memstats *m, const struct tables *t)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < m->n; i++)
		if (json_array_append_new(a, json_pool(&m->pools[i], t))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * memstats.h - memory per pool from a trace's allocation and free records
 * (SPEC §4.2, types 14 and 15), for `katra stats` and what is built on it.
 *
 * Per pool (a record's name; 0 is the default pool): allocations, frees,
 * bytes allocated, bytes live now and at the peak (and when), the largest
 * allocations (each pointer once: a buffer freed and allocated again at
 * the same address and size, frame after frame, is one row with its count
 * of allocations and the time of the first; allocated again larger, the
 * row takes the larger size, its count starting again; smaller, it is not
 * a row of its own), and frees of pointers with no live allocation in the pool
 * (unknown frees: the allocation came before the trace, was dropped, or
 * the file is hostile).  An allocation of a pointer already live replaces
 * it (its free was lost): the old size leaves the live bytes and it is
 * counted.
 *
 * Bounded whatever the file: MEM_POOLS pools (records of others are only
 * counted), MEM_POINTERS distinct (pool, pointer) pairs remembered over
 * the whole pass (allocations past it are counted as untracked and never
 * live; their frees then count as unknown), each lookup O(1) expected
 * (tools/pipeline/idmap.h, seeded so a file cannot choose collisions): time linear
 * in the events.  Sizes and byte counts saturate at 2^64 - 1.
 *
 * One thread per struct memstats.
 */
#ifndef KT_TOOLS_MEMSTATS_H
#define KT_TOOLS_MEMSTATS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

#define MEM_POOLS 256
#define MEM_POINTERS (1u << 20)
#define MEM_TOP 5

/* One of a pool's largest allocations: a pointer, its size, when it was
 * first allocated at that size and how many times. */
struct mem_top {
	uint64_t size, ptr, ns, count;
};

struct mem_pool {
	uint32_t id;               /* the pool's name id, 0 = default */
	uint64_t allocs, frees, unknown_frees, replaced;
	uint64_t bytes;            /* allocated in all */
	uint64_t live, peak, peak_ns;
	struct mem_top top[MEM_TOP]; /* largest first */
	size_t ntop;
	struct idmap ptrs;         /* pointer -> index in memstats.ptrs */
};

/* A remembered (pool, pointer): its size while live. */
struct mem_ptr {
	uint64_t size;
	int live;
};

struct memstats {
	struct mem_pool *pools;
	size_t n, cap;
	struct idmap ids;          /* pool id -> index in pools */
	struct mem_ptr *ptrs;      /* per remembered (pool, pointer) */
	size_t nptrs, capptrs;
	uint64_t other_pools;      /* records of pools past MEM_POOLS */
	uint64_t untracked;        /* allocations past MEM_POINTERS */
	int failed;                /* for a caller that goes on after -ENOMEM */
};

/* memstats_init - an empty memstats. */
void memstats_init(struct memstats *m);

/*
 * memstats_event - count @ev at @ns when it is an allocation or a free
 * (other events are ignored; a record whose payload is missing, as a
 * pass without payloads gives it, too).  *@pool is set to the pool whose
 * live bytes the event changed, else NULL.  Returns 0 or -ENOMEM.
 */
int memstats_event(struct memstats *m, const kt_event *ev, uint64_t ns,
		   const struct mem_pool **pool);

/* memstats_sort - the pools in id order, for printing (after the pass). */
void memstats_sort(struct memstats *m);

/* memstats_text - the memory section of `katra stats`, nothing when the
 * trace has no memory records.  0, -ENOMEM or -EIO. */
int memstats_text(FILE *f, const struct memstats *m, const struct tables *t);

/* memstats_json - the "memory" array of `katra stats --json`; NULL when out
 * of memory. */
json_t *memstats_json(const struct memstats *m, const struct tables *t);

/* memstats_free - release @m's memory; @m is then empty. */
void memstats_free(struct memstats *m);

#endif

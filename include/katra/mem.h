/*
 * katra/mem.h - memory events: allocations and frees (included by
 * katra.h; needs its emit path).
 *
 * An allocation is one record of 32 bytes (SPEC §4.2, type 14: the
 * pointer and the size), a free one of 24 (type 15: the pointer); the
 * record's name is the pool, an interned id (kt_name("textures")), 0 for
 * the default pool.  Each costs what kt_counter() costs.  katra stores the
 * pointer as a number and never dereferences it; readers match a free to
 * its allocation by pool and pointer.
 *
 * A null pointer records nothing: a failed allocation allocated nothing
 * and free(NULL) frees nothing.
 *
 * Threads: any thread, and async-signal-safe as katra.h's emits are.  An
 * allocation and its free may come from different threads; a reader
 * orders them by timestamp.
 */
#ifndef KATRA_MEM_H
#define KATRA_MEM_H

/* The emit path: katra.h includes this file at its end, so included first
 * it is katra.h, whole. */
#include <katra/katra.h>

#ifdef __cplusplus
extern "C" {
#endif

/** kt_alloc_pool - @size bytes at @ptr were allocated from pool @pool_id
 * (a kt_name() id, 0 = the default pool). */
static inline void kt_alloc_pool(uint32_t pool_id, const void *ptr, size_t size)
{
	uint64_t pl[2] = { (uint64_t)(uintptr_t)ptr, (uint64_t)size };
	if (kt__on() && ptr)
		kt__emit(KT_EV_ALLOC, pool_id, 0, pl, sizeof(pl));
}

/** kt_free_pool - the allocation at @ptr in pool @pool_id was freed. */
static inline void kt_free_pool(uint32_t pool_id, const void *ptr)
{
	uint64_t p = (uint64_t)(uintptr_t)ptr;
	if (kt__on() && ptr)
		kt__emit(KT_EV_FREE, pool_id, 0, &p, 8);
}

/** kt_alloc - @size bytes at @ptr were allocated from the default pool. */
static inline void kt_alloc(const void *ptr, size_t size)
{
	kt_alloc_pool(0, ptr, size);
}

/** kt_free - the default pool's allocation at @ptr was freed. */
static inline void kt_free(const void *ptr)
{
	kt_free_pool(0, ptr);
}

#ifdef __cplusplus
}
#endif
#endif /* KATRA_MEM_H */

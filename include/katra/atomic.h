/*
 * katra/atomic.h - katra's memory orders, each behind a name that says its
 * role.
 *
 * Fields that threads share are plain integers, not _Atomic: these
 * accessors are the GCC/Clang __atomic builtins over them, so the headers
 * that use them (the inline fast path in katra.h) compile as C and C++
 * alike.  Every shared access in katra goes through one of them, and every
 * call site says what it orders against what, or why no order is needed.
 * ring/ring.h draws how the ring's accesses pair up.
 *
 * Each macro takes a pointer to an integer (or pointer) field and works for
 * any such width; none allocates, locks or calls.  Any thread, and signal
 * handlers too where the field is lock-free (every field katra uses is).
 */
#ifndef KATRA_ATOMIC_H
#define KATRA_ATOMIC_H

/* ---- acquire and release: a value that publishes other memory ----------- */

/* Load *@p; what its writer stored before its release is visible after. */
#define kt__load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

/* Store @v in *@p; everything this thread wrote before is visible to a
 * thread whose acquire load sees @v. */
#define kt__store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* *@p += @v as one step, releasing as kt__store_release(); returns the old
 * value. */
#define kt__add_release(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELEASE)

/* ---- relaxed: the value alone, ordered against nothing ------------------ */

/* Load a field only this thread writes (others may read it): its own last
 * store is what it reads, so no order is needed. */
#define kt__load_own(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* Load a value of which a stale copy is fine: nothing is read through it,
 * and a late view costs at most a spare or a late turn. */
#define kt__load_stale(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* Store a value that publishes nothing else (a counter, a flag whose
 * readers order themselves, a field no other thread can see yet). */
#define kt__store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Load a word another thread may be overwriting at this moment (ring
 * bytes a seqlock-style check validates afterwards): read exactly once, so
 * a bound checked on the value read is the bound used.  No order. */
#define kt__load_racy(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* Read-modify-write counters: one step, so nested or concurrent updates
 * are never lost, and no order.  Each returns the old value. */
#define kt__add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define kt__sub_relaxed(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
#define kt__exchange_relaxed(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)

/* If *@p equals *@expected, store @desired; else load *@p into *@expected.
 * Returns whether it stored.  No order. */
#define kt__cas_relaxed(p, expected, desired)                                        \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_RELAXED, \
				    __ATOMIC_RELAXED)

/* ---- sequentially consistent: a store, then a load of another field ---- */

/*
 * For two threads that each store one flag and then load the other's
 * (a sleeper's "I sleep" and a waker's "there is work"): with these, at
 * least one of them sees the other's store.  Acquire and release alone
 * would let both loads miss.
 */
#define kt__store_seq_cst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define kt__load_seq_cst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define kt__add_seq_cst(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

/* ---- fences: a seqlock's order over relaxed fields ---------------------- */

/* Stores after this fence are not seen before stores ahead of it, by a
 * thread that orders its loads with kt__fence_acquire(). */
#define kt__fence_release() __atomic_thread_fence(__ATOMIC_RELEASE)

/* Loads ahead of this fence that saw a store after a kt__fence_release()
 * make everything before that fence visible to loads after this one. */
#define kt__fence_acquire() __atomic_thread_fence(__ATOMIC_ACQUIRE)

/* ---- this thread and its signal handlers -------------------------------- */

/* Keep the compiler from moving memory accesses across this point, and
 * nothing more: a signal handler runs on this thread, in program order. */
#define kt__signal_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)

#endif /* KATRA_ATOMIC_H */

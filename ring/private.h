/*
 * ring/private.h - private to ring/: the ring struct, which is its page
 * (ring.h, KT__PAGE_*), and what ring's files share.  No other room
 * includes this; they use ring.h's functions.
 */
#ifndef KATRA_RING_PRIVATE_H
#define KATRA_RING_PRIVATE_H

#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include "ring/ring.h"

#define KT__CACHELINE 64

/* Zero-copy writes in flight per ring, at most; more take the copy path. */
#define KT__RING_REFS 32

/* Flight mode: the producer raises its bound a sub-buffer (1/KT__FL_SUBS
 * of the ring) at a time, leaving a mark each time; KT__FL_MARKS marks
 * cover two laps, so the last lap's are never overwritten. */
#define KT__FL_SUBS 16u
#define KT__FL_MARKS 32u

struct kt__ring {
	/* Producer line: written only by the owning thread. */
	alignas(KT__CACHELINE) struct kt__ring_prod prod;
	uint64_t size;
	uint64_t pending;          /* lost since the last drop marker */
	uint64_t gen;              /* session generation of the pending state */
	uint64_t refused_base;     /* refused_total when this session began */
	/* Time range of the pending loss; the consumer reads them at stop for
	 * losses no marker carried.  Relaxed: producer-written, read late. */
	uint64_t pending_first;
	uint64_t pending_last;
	/* Read by the consumer at stop: events lost and not yet in a marker,
	 * events refused as too large.  Relaxed: only the totals matter and
	 * stop reads them after the producers are done. */
	uint64_t lost_total;
	uint64_t refused_total;
	uint64_t refused_first;    /* time range of refusals this session */
	uint64_t refused_last;
	/* WAIT policy: the ns this thread may still wait for room, and when
	 * that was last brought up to date (0: never).  Plain: only the
	 * owning thread's slow path, which the re-entry mark keeps to one at
	 * a time, touches them. */
	uint64_t wait_credit;
	uint64_t wait_stamp;

	/* Consumer line: written only by the consumer. */
	alignas(KT__CACHELINE) uint64_t tail;
	uint32_t tail_seq;         /* futex word: bumped when tail moves */
	uint32_t waiters;          /* BLOCK-policy producers asleep on it */
	uint64_t lost_base;        /* lost_total when the session started */
	uint64_t marked;           /* losses the consumer has accounted */
	/* Zero-copy writes: the consumer has read up to read_pos, but bytes
	 * still being written straight from the ring stay held until their
	 * write completes; tail then moves past them (in order). */
	uint64_t read_pos;
	struct kt__ring_ref {
		struct kt__ring *ring;
		uint64_t start;
		int done;
	} refs[KT__RING_REFS];
	unsigned ref_head, ref_len;
	uint64_t refused_seen;     /* refusals the consumer has accounted */
	int settled;               /* the consumer accounted it after it
				    * retired: only then may it be recycled */
	/* Bytes tail may pass: read_pos at once, or, with crash files, only
	 * once the frames made from them are written (kt__ring_done()). */
	uint64_t done_pos;
	/* Crash files: what the trace file holds of this ring, as of the last
	 * pass whose writes all completed.  Two slots so a process killed
	 * mid-update leaves the previous one whole; ck_seq names the good one. */
	struct kt__ring_ckpt {
		uint64_t tail;     /* read_pos then */
		uint64_t events;   /* the thread's events in the file then */
		uint64_t marked;   /* losses in drop frames then */
		uint64_t refused;  /* refused_seen then */
	} ck[2];
	uint64_t ck_seq;

	/* Registry: under the registry lock. */
	alignas(KT__CACHELINE) struct kt__ring *next;
	int retired;               /* the thread exited; release-stored */
	uint32_t thread_id;
	uint32_t os_tid;
	char *name;                /* thread name or NULL */

	/* Flight mode (ring/flight.c), written only by the producer's slow
	 * path, read by snapshots: fl_bound is a ring position the producer
	 * writes nothing at or past before raising it, and fl_mark[] keeps
	 * record starts, one per raise, so a reader can start where a record
	 * does.  Atomic: a snapshot reads them while the producer runs. */
	alignas(KT__CACHELINE) uint64_t fl_bound;
	uint64_t fl_mark[KT__FL_MARKS];
	/* Events overwritten, counted by the same slow path as each raise
	 * lets it overwrite them (flight.c's count_overwritten()): every
	 * event of the session that starts below counted, a record start,
	 * is in n, its timestamps in [first, last].  The counts are of the
	 * session whose first position is origin.  Two slots, the whole one
	 * fl_cnt[(fl_seq >> 1) & 1]: fl_seq is odd while the other is
	 * written, so a snapshot reads one as a seqlock's reader does while
	 * the producer runs, and a process killed mid-update leaves the last
	 * whole one in its crash file.  Atomic: snapshots read them while the
	 * producer runs. */
	uint64_t fl_seq;
	struct kt__ring_flcount {
		uint64_t origin, counted, n, first, last;
	} fl_cnt[2];

	/* WAIT policy: the ns this thread waited for room in all (for the
	 * live page, flush/live.c), and that total when the session began.
	 * waited_ns is written only by the owning thread's slow path and read
	 * by the consumer now and then: a line of its own, so that the read
	 * moves no line the producer's fast path writes. */
	alignas(KT__CACHELINE) uint64_t waited_ns;
	uint64_t waited_base;     /* the consumer's */
};

/* The page's layout that ring.h promises, taken from the struct. */
_Static_assert(offsetof(struct kt__ring, prod.head) == KT__PAGE_HEAD, "page layout");
_Static_assert(offsetof(struct kt__ring, size) == KT__PAGE_SIZE, "page layout");
_Static_assert(offsetof(struct kt__ring, pending_first) == KT__PAGE_PENDING_FIRST, "page layout");
_Static_assert(offsetof(struct kt__ring, pending_last) == KT__PAGE_PENDING_LAST, "page layout");
_Static_assert(offsetof(struct kt__ring, lost_total) == KT__PAGE_LOST, "page layout");
_Static_assert(offsetof(struct kt__ring, refused_total) == KT__PAGE_REFUSED, "page layout");
_Static_assert(offsetof(struct kt__ring, refused_first) == KT__PAGE_REFUSED_FIRST, "page layout");
_Static_assert(offsetof(struct kt__ring, refused_last) == KT__PAGE_REFUSED_LAST, "page layout");
_Static_assert(offsetof(struct kt__ring, tail) == KT__PAGE_TAIL, "page layout");
_Static_assert(offsetof(struct kt__ring, lost_base) == KT__PAGE_LOST_BASE, "page layout");
_Static_assert(offsetof(struct kt__ring, ck) == KT__PAGE_CK, "page layout");
_Static_assert(sizeof(struct kt__ring_ckpt) == 32, "page layout");
_Static_assert(offsetof(struct kt__ring, ck_seq) == KT__PAGE_CK_SEQ, "page layout");
_Static_assert(offsetof(struct kt__ring, thread_id) == KT__PAGE_THREAD, "page layout");
_Static_assert(offsetof(struct kt__ring, os_tid) == KT__PAGE_OS_TID, "page layout");
_Static_assert(offsetof(struct kt__ring, fl_bound) == KT__PAGE_FL_BOUND, "page layout");
_Static_assert(offsetof(struct kt__ring, fl_mark) == KT__PAGE_FL_MARK, "page layout");
_Static_assert(KT__FL_MARKS == KT__PAGE_FL_MARKS, "page layout");
_Static_assert(offsetof(struct kt__ring, fl_seq) == KT__PAGE_FL_SEQ, "page layout");
_Static_assert(offsetof(struct kt__ring, fl_cnt) == KT__PAGE_FL_COUNT, "page layout");
_Static_assert(sizeof(struct kt__ring_flcount) == 40, "page layout");
_Static_assert(sizeof(struct kt__ring) <= KT__PAGE_END, "a backing's bytes follow the struct");

/* The calling thread's ring, or NULL: prod is the first member, so the TLS
 * pointer is the ring itself. */
static inline struct kt__ring *kt__tls_full_ring(void)
{
	return (struct kt__ring *)(void *)kt__tls_ring;
}

/* ---- ring/ring.c: the registry ----------------------------------------- */

/* A ring for the calling thread (its first emit, or kt_thread_name()), or
 * NULL when none can be had now. */
struct kt__ring *kt__ring_register(void);
/* The generation of the last session started.  Relaxed everywhere: a
 * producer that sees a stale value only keeps a pending loss count one
 * session too long. */
extern uint64_t kt__session_gen;

/* ---- ring/produce.c: the slow path ------------------------------------- */

/* @n records refused at @ts: counted, with their time, for the consumer. */
void kt__ring_refuse_at(struct kt__ring *r, uint64_t n, uint64_t ts);

/* ---- ring/flight.c: flight mode's producer half ------------------------ */

/* Non-zero while a flight session runs (kt__ring_set_flight()). */
extern int kt__flight;
/* The producer is about to write ring bytes up to @end from @head:
 * raise the bound past @end first, if needed.  Returns the limit the
 * fast path may run to. */
uint64_t kt__flight_reserve(struct kt__ring *r, uint64_t head, uint64_t end);

/* ---- ring/consume.c ----------------------------------------------------- */

/* Wake the consumer if it sleeps: a producer crossed a high watermark or
 * lost an event. */
void kt__ring_nudge_consumer(void);
/* The child of a fork() has no consumer. */
void kt__ring_consumer_forget(void);

/* ---- ring/memory.c: mapping a ring onto its backing --------------------- */

/* The default backing: one memfd per ring, the page private. */
extern const kt__backing kt__memfd_backing;
/* A new ring of @size bytes on @b, its page zeroed but for the mapping. */
struct kt__ring *kt__ring_map(const kt__backing *b, uint64_t size);
/* A ring of size 0 that refuses every record: see memory.c. */
struct kt__ring *kt__ring_map_stub(void);
void kt__ring_unmap(struct kt__ring *r);
/* Move @r onto @b in place; see kt__registry_set_backing(). */
int kt__ring_rebind(struct kt__ring *r, const kt__backing *b);
/* Reach every page @r's producer stores to, so its first store to each
 * does not pay for the page's mapping; see memory.c. */
void kt__ring_touch(const struct kt__ring *r);
/* In a fork()ed child: give @r private memory to finish an emit in. */
void kt__ring_make_private(struct kt__ring *r);

/* A table's fork() handler: @phase 0, before the fork, takes @lock so no
 * other thread holds it mid-change; 1 (the parent) and 2 (the child) let
 * it go, the child's table whole. */
/* @lock, with cancellation off while it is held, for a lock under which a
 * backing's log writes: write() is a cancellation point, and a thread
 * cancelled there would keep the lock for ever.  Return: the cancel state
 * to give kt__unlock_nocancel(). */
static inline int kt__lock_nocancel(pthread_mutex_t *lock)
{
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(lock);
	return cancel;
}

static inline void kt__unlock_nocancel(pthread_mutex_t *lock, int cancel)
{
	pthread_mutex_unlock(lock);
	pthread_setcancelstate(cancel, NULL);
}

/* A table's log (the crash files' copy of categories or tracks): its
 * callback, stored as the generic function type and called as the
 * table's own, and the callback's context. */
struct kt__log {
	void (*fn)(void);
	void *ctx;
};

/* Install @fn and @ctx as the log of the table behind @lock, then
 * @replay(i) each of its *@n entries, under the lock (cancellation off):
 * the log misses no entry and hears none twice. */
static inline void kt__log_set(pthread_mutex_t *lock, struct kt__log *log, void (*fn)(void),
			       void *ctx, const uint32_t *n, void (*replay)(uint32_t i))
{
	int cancel = kt__lock_nocancel(lock);
	*log = (struct kt__log){ fn, ctx };
	for (uint32_t i = 0; i < *n; i++)
		replay(i);
	kt__unlock_nocancel(lock, cancel);
}

static inline void kt__fork_lock(pthread_mutex_t *lock, int phase)
{
	if (phase == 0)
		pthread_mutex_lock(lock);
	else
		pthread_mutex_unlock(lock);
}

/* ---- ring/names.c -------------------------------------------------------- */

/* Call @fn for every name so far, then for each new one as it is interned,
 * under the names lock; NULL stops it. */
void kt__names_set_log(kt__name_fn fn, void *ctx);
/* fork() handlers of the name table, called by the registry's (ring.c):
 * @phase 0 before the fork (takes its lock), 1 in the parent after it and
 * 2 in the child (release it).  The registry's child handler then stops
 * the logs: the parent's session owns them. */
void kt__names_fork(int phase);

/* ---- ring/track.c -------------------------------------------------------- */

/* As kt__names_set_log(), for tracks: @fn is called under the table's lock
 * for each track there is, then for each one created and after each
 * calibration that kept its pair, with the track as it is then.  A fork()ed
 * child starts with none (ring.c's fork_child()): the parent's session owns
 * it. */
void kt__tracks_set_log(void (*fn)(void *ctx, const kt_track_def *t), void *ctx);

/* ---- ring/site.c --------------------------------------------------------- */

/* As kt__names_set_log(), for categories: @fn is called under the
 * categories' lock with each one's slot, name id and KT_CATEGORY_ON_*
 * flags, then again whenever they change.  None in a fork()ed child. */
void kt__categories_set_log(void (*fn)(void *ctx, uint32_t index, uint32_t id, uint32_t flags),
			    void *ctx);

#endif /* KATRA_RING_PRIVATE_H */

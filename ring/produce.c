/*
 * The producer's slow path: the out-of-line half of an emit.
 *
 * The inline fast path in katra.h handles the common case.  Everything else
 * lands here: a thread's first event (registration, ring.c), a record that
 * does not fit below the ring's limit (refresh the tail, drop or block,
 * write a pending drop marker, wake the consumer at the high watermark),
 * records too large for the ring, and emits nested in another on the same
 * thread (a signal handler's), which are refused.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#include "ring/private.h"

/* BLOCK and WAIT policies: wait until the flusher frees space, the session
 * ends or 1 ms passes. */
static void block_wait(struct kt__ring *r, uint64_t need)
{
	for (int spin = 0; spin < 2048; spin++) {
		/* Acquire pairs with the flusher's release of tail (D). */
		uint64_t tail = kt__load_acquire(&r->tail);
		uint64_t head = kt__load_own(&r->prod.head);
		if (head + need - tail <= r->size)
			return;
		cpu_relax();
	}
	kt__ring_nudge_consumer();
	/* Acquire: pairs with the flusher's release bump of tail_seq. */
	uint32_t seq = kt__load_acquire(&r->tail_seq);
	/* seq_cst: the flusher's load of waiters must not be ordered before
	 * our increment, or both could miss each other. */
	kt__add_seq_cst(&r->waiters, 1);
	/* Acquire tail as at (A); relaxed head: this thread writes it. */
	uint64_t tail = kt__load_acquire(&r->tail);
	uint64_t head = kt__load_own(&r->prod.head);
	if (head + need - tail > r->size) {
		struct timespec ts = { 0, 1000000 }; /* re-check at least every 1 ms */
		syscall(SYS_futex, &r->tail_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
	}
	/* Relaxed: a stale count only costs the flusher one spare wake. */
	kt__sub_relaxed(&r->waiters, 1);
}

/*
 * WAIT policy (kt_overflow): one wait's bookkeeping.  @start is when it
 * began (0: not yet), @tail the flusher's tail last seen and @moved when
 * it last moved.
 */
struct wait {
	uint64_t start, tail, moved;
};

/* Earn credit for the time since it was last counted: half of it, up to
 * the cap.  Half, not less: with a parallel build on the other core of a
 * 2-core machine, a thread at 60M events/s and its flusher need more
 * than their share of the cores, and a quarter ran out (1.3% dropped)
 * where half dropped nothing (bench/RESULTS.md). */
static void wait_earn(struct kt__ring *r, uint64_t now)
{
	uint64_t earned = r->wait_stamp ? (now - r->wait_stamp) / 2 : KT_WAIT_CREDIT_NS;
	r->wait_credit = earned >= KT_WAIT_CREDIT_NS - r->wait_credit
				 ? KT_WAIT_CREDIT_NS
				 : r->wait_credit + earned;
	r->wait_stamp = now;
}

/* Charge the time waited since @w began against the credit. */
static void wait_charge(struct kt__ring *r, const struct wait *w, uint64_t now)
{
	uint64_t spent = now - w->start;
	r->wait_credit -= spent < r->wait_credit ? spent : r->wait_credit;
	/* Relaxed: a running total for the live page, read late. */
	kt__store_relaxed(&r->waited_ns, kt__load_own(&r->waited_ns) + spent);
}

/*
 * WAIT policy, no room at @tail: whether to wait once more.  Not while
 * a loss is pending (this thread gave up on the flusher until its
 * records fit again, so a stalled flusher costs one wait, not one per
 * record), not once the flusher has freed nothing for KT_WAIT_STALL_NS,
 * and not past the thread's credit; nor does a wait start on less than
 * 1 ms of credit, the longest block_wait() may sleep.
 */
static int wait_more(struct kt__ring *r, struct wait *w, uint64_t tail)
{
	if (r->pending)
		return 0;
	uint64_t now = kt__mono_ns();
	if (!w->start) {
		wait_earn(r, now);
		if (r->wait_credit < 1000000)
			return 0;
		*w = (struct wait){ now, tail, now };
	} else if (tail != w->tail) {
		w->tail = tail;
		w->moved = now;
	}
	if (now - w->start < r->wait_credit && now - w->moved < KT_WAIT_STALL_NS)
		return 1;
	wait_charge(r, w, now);
	return 0;
}

/* Losses and refusals from an earlier session belong to that session.
 * Relaxed: see kt__session_gen. */
static void sync_gen(struct kt__ring *r)
{
	uint64_t gen = kt__load_stale(&kt__session_gen);
	if (r->gen != gen) {
		r->pending = 0;
		r->gen = gen;
		/* Relaxed: this thread's own counter. */
		r->refused_base = kt__load_own(&r->refused_total);
	}
}

/*
 * @n records refused at @ts: counted, with their time, for the flusher's
 * drop frame.  A signal handler's nested emit may land here in the middle
 * of another refusal on the same thread, so the count is a read-modify-
 * write (relaxed: the flusher reads it when it settles the ring, after the
 * thread exits or at stop) and nothing else is updated in two steps.
 */
void kt__ring_refuse_at(struct kt__ring *r, uint64_t n, uint64_t ts)
{
	uint64_t before = kt__add_relaxed(&r->refused_total, n);
	if (before == r->refused_base)
		kt__store_relaxed(&r->refused_first, ts);
	kt__store_relaxed(&r->refused_last, ts);
}

static void refuse(struct kt__ring *r)
{
	kt__ring_refuse_at(r, 1, kt_now());
}

/*
 * The slow path's half of the re-entry mark (see kt__ring_prod.limit):
 * the limit to restore on leaving, or KT__LIMIT_BUSY when this call
 * interrupted an emit of its own thread (a signal handler's) and must not
 * touch the ring.  A handler that runs between the load and the store
 * finishes before this call goes on, so what follows reads its results.
 */
static uint64_t enter(struct kt__ring *r)
{
	uint64_t limit = kt__load_own(&r->prod.limit);
	if (limit == KT__LIMIT_BUSY)
		return limit;
	kt__store_relaxed(&r->prod.limit, KT__LIMIT_BUSY);
	kt__signal_fence();
	return limit;
}

static void leave(struct kt__ring *r, uint64_t limit)
{
	kt__signal_fence();
	kt__store_relaxed(&r->prod.limit, limit);
}

KT_API void kt__refuse(void)
{
	struct kt__ring *r = kt__tls_full_ring();
	if (!r && !(r = kt__ring_register()))
		return;
	uint64_t limit = enter(r);
	if (limit != KT__LIMIT_BUSY)
		sync_gen(r);
	refuse(r);
	if (limit != KT__LIMIT_BUSY)
		leave(r, limit);
}

/* DROP policy, no room: count the loss and come back to the slow path
 * (limit 0) to write a marker with the next record.  Relaxed: only stop
 * reads these, after producers end. */
static void lose(struct kt__ring *r, uint64_t ts)
{
	if (!r->pending++)
		kt__store_relaxed(&r->pending_first, ts);
	kt__store_relaxed(&r->pending_last, ts);
	kt__store_relaxed(&r->lost_total, kt__load_own(&r->lost_total) + 1);
	kt__ring_nudge_consumer();
}

/* The fast path's limit: none without the TSC, whose read the inline path
 * makes unconditionally (every record must then come through here). */
static uint64_t clock_limit(uint64_t limit)
{
#if defined(__x86_64__) || defined(__i386__)
	if (!kt__clock_tsc)
		return 0;
#endif
	return limit;
}

/*
 * Below half full the fast path may run to the half mark, where the next
 * slow call wakes the flusher once; past it, up to the end.
 */
static uint64_t next_limit(struct kt__ring *r, uint64_t head, uint64_t tail)
{
	uint64_t limit = tail + r->size / 2;
	if (head - tail >= r->size / 2) {
		kt__ring_nudge_consumer();
		limit = tail + r->size;
	}
	return clock_limit(limit);
}

/* Write the pending drop marker, if any, and the record at @head, then
 * publish them.  Returns the new head. */
static uint64_t put_publish(struct kt__ring *r, uint64_t head, uint64_t ts, uint8_t type,
			    uint32_t id, uint8_t flags, const void *payload, size_t len)
{
	uint8_t *p = r->prod.base + (head & r->prod.mask);
	if (r->pending) {
		/* Relaxed: this thread wrote them. */
		uint64_t mark[3] = {
			r->pending,
			kt__load_own(&r->pending_first),
			kt__load_own(&r->pending_last),
		};
		/* The marker names its session (low bits of the generation):
		 * a producer that saw a stale generation must not have the
		 * next session count these losses again. */
		kt__put_record(p, ts, KT__EV_DROP_MARK, (uint32_t)r->gen, 0, mark, sizeof(mark));
		p += KT__DROP_MARK_SIZE;
		head += KT__DROP_MARK_SIZE;
		r->pending = 0;
	}
	kt__put_record(p, ts, type, id, flags, payload, len);
	head += kt_event_size(len);
	/* Release: pairs with the flusher's acquire of head (B pairs C). */
	kt__store_release(&r->prod.head, head);
	return head;
}

/* The slow path proper, marked busy: returns the limit to leave behind. */
static uint64_t emit_marked(struct kt__ring *r, uint64_t limit, uint8_t type, uint32_t id,
			    uint8_t flags, const void *payload, size_t len)
{
	size_t size = kt_event_size(len);
	sync_gen(r);
	if (len > KT_REC_MAX_PAYLOAD || size > r->size / 4) {
		refuse(r);
		return limit;
	}
	uint64_t ts = kt_now();
	/* Relaxed: head is written only by this thread. */
	uint64_t head = kt__load_own(&r->prod.head);
	uint64_t tail;
	struct wait w = { 0 };
	for (;;) {
		size_t need = size + (r->pending ? KT__DROP_MARK_SIZE : 0);
		/* Relaxed: a stale mode costs this one record the other
		 * policy (both keep the bytes a reader may read intact); read
		 * on every pass, so a BLOCK wait never outlasts it. */
		if (kt__load_stale(&kt__flight)) {
			/* Flight mode overwrites the oldest bytes: no tail to
			 * wait for, only the bound a snapshot checks against. */
			limit = kt__flight_reserve(r, head, head + need);
			put_publish(r, head, ts, type, id, flags, payload, len);
			return clock_limit(limit);
		}
		/* Acquire pairs with the flusher's release of tail (D): the
		 * span we are about to overwrite has been read. */
		tail = kt__load_acquire(&r->tail);
		if (head + need - tail <= r->size)
			break;
		int policy = kt__overflow_policy();
		if (policy == KT_OVERFLOW_DROP ||
		    (policy == KT_OVERFLOW_WAIT && !wait_more(r, &w, tail))) {
			lose(r, ts);
			return 0;
		}
		/* Relaxed: a stale "active" only delays noticing the stop by
		 * one wait, which has a timeout. */
		if (!kt__load_stale(&kt__active))
			return limit;
		block_wait(r, need);
		ts = kt_now();
	}
	if (w.start)
		wait_charge(r, &w, kt__mono_ns());
	head = put_publish(r, head, ts, type, id, flags, payload, len);
	return next_limit(r, head, tail);
}

KT_API void kt__emit_slow(uint8_t type, uint32_t id, uint8_t flags, const void *payload,
			  size_t len)
{
	struct kt__ring *r = kt__tls_full_ring();
	if (!r && !(r = kt__ring_register()))
		return;
	uint64_t limit = enter(r);
	if (limit == KT__LIMIT_BUSY) {
		/* A signal handler's emit inside another emit of its thread:
		 * the ring is that one's until it returns.  Refused, counted. */
		refuse(r);
		return;
	}
	leave(r, emit_marked(r, limit, type, id, flags, payload, len));
}

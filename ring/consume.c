/*
 * The consumer's half of the ring protocol (ring.h: C and D): what a
 * session's flusher calls to read a ring and give its space back, to hold
 * bytes a zero-copy write still reads, to account for what the producer
 * lost, and to sleep until there is work.  One consumer per ring at a time.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/private.h"

/* The consumer's wake-up word: producers bump it on crossing a ring's high
 * watermark (or on a loss) while the consumer sleeps on it. */
static uint32_t wake_word;
static int consumer_sleeping;

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* ---- reading ----------------------------------------------------------- */

int kt__ring_peek(struct kt__ring *r, kt__span *out)
{
	/* Acquire pairs with the producer's release of head (C pairs B):
	 * every record below head is complete. */
	uint64_t head = kt__load_acquire(&r->prod.head);
	out->from = r->read_pos;
	out->to = head;
	/* A stub ring (no memory: every record refused) has no base, and
	 * never anything to read. */
	out->bytes = head != r->read_pos ? r->prod.base + (r->read_pos & r->prod.mask) : NULL;
	return head != r->read_pos;
}

void kt__ring_iter_init(kt__ring_iter *it, struct kt__ring *r, const kt__span *span)
{
	it->ring = r;
	it->span = *span;
	it->pos = span->from;
	/* Relaxed: the generation changes only at a session's start, when no
	 * consumer runs. */
	it->gen = (uint32_t)kt__load_stale(&kt__session_gen);
}

void kt__ring_marker(kt__ring_iter *it, kt__ring_rec *rec)
{
	/* A marker from an earlier session carries losses that session
	 * already counted at its stop. */
	rec->stale = rec->marker_gen != it->gen;
	if (!rec->stale)
		it->ring->marked += rec->count;
}

void kt__ring_read(struct kt__ring *r, uint64_t to)
{
	r->read_pos = to;
}

void kt__ring_done(struct kt__ring *r)
{
	r->done_pos = r->read_pos;
}

void kt__ring_release(struct kt__ring *r)
{
	while (r->ref_len && r->refs[r->ref_head].done) {
		r->ref_head = (r->ref_head + 1) % KT__RING_REFS;
		r->ref_len--;
	}
	uint64_t to = r->ref_len && r->refs[r->ref_head].start < r->done_pos
			      ? r->refs[r->ref_head].start
			      : r->done_pos;
	/* Relaxed: only the consumer, this thread, writes tail. */
	if (to == kt__load_own(&r->tail))
		return;
	/* Release pairs with the producer's acquire of tail (D pairs A): our
	 * reads of the span, and the kernel's, are done before the producer
	 * may overwrite it. */
	kt__store_release(&r->tail, to);
	/* Release: a producer woken by the new sequence also sees the tail
	 * stored before it.  seq_cst on waiters would be the textbook pairing;
	 * the producer re-checks tail with a timeout, so a lost wake-up costs
	 * at most that timeout, never a hang. */
	kt__add_release(&r->tail_seq, 1);
	if (kt__load_seq_cst(&r->waiters))
		futex(&r->tail_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* ---- holds: zero-copy writes in flight ---------------------------------- */

struct kt__ring_ref *kt__ring_hold(struct kt__ring *r, uint64_t pos)
{
	if (r->ref_len == KT__RING_REFS)
		return NULL;
	struct kt__ring_ref *ref = &r->refs[(r->ref_head + r->ref_len) % KT__RING_REFS];
	ref->ring = r;
	ref->start = pos;
	ref->done = 0;
	r->ref_len++;
	return ref;
}

void kt__ring_unhold(struct kt__ring_ref *h)
{
	h->done = 1;
	kt__ring_release(h->ring);
}

/* ---- what the ring holds beside its records ----------------------------- */

uint64_t kt__ring_waited_ns(const struct kt__ring *r)
{
	/* Relaxed: a total that a late view only shows late. */
	return kt__load_stale(&r->waited_ns) - r->waited_base;
}

uint32_t kt__ring_thread_id(const struct kt__ring *r)
{
	return r->thread_id;
}

uint32_t kt__ring_os_tid(const struct kt__ring *r)
{
	return r->os_tid;
}

int kt__ring_retired(struct kt__ring *r)
{
	/* Acquire pairs with the exit's release: a retired ring drained after
	 * this load holds nothing more. */
	return kt__load_acquire(&r->retired);
}

void kt__ring_settle(struct kt__ring *r, int retired, kt__ring_losses *out)
{
	*out = (kt__ring_losses){ 0 };
	/* Only a ring settled after it retired may be recycled. */
	r->settled = retired;
	/* Relaxed: the ring's thread has exited, or the session is stopping
	 * and the caller promised its producers are done. */
	uint64_t lost = kt__load_stale(&r->lost_total);
	uint64_t unmarked = lost - r->lost_base - r->marked;
	if (unmarked && (unmarked >> 63) == 0) {
		r->marked += unmarked;
		out->lost = unmarked;
		out->lost_first = kt__load_stale(&r->pending_first);
		out->lost_last = kt__load_stale(&r->pending_last);
	}
	/* Relaxed, as above: a counter read after its writer is done. */
	uint64_t refused = kt__load_stale(&r->refused_total);
	if (refused > r->refused_seen) {
		out->refused = refused - r->refused_seen;
		r->refused_seen = refused;
		out->refused_first = kt__load_stale(&r->refused_first);
		out->refused_last = kt__load_stale(&r->refused_last);
	}
}

void kt__ring_checkpoint(struct kt__ring *r, uint64_t events)
{
	/* Relaxed: only the consumer writes ck_seq. */
	uint64_t seq = kt__load_own(&r->ck_seq) + 1;
	r->ck[seq & 1] = (struct kt__ring_ckpt){ r->read_pos, events, r->marked, r->refused_seen };
	/* Release: the slot's stores come before the index naming it, so a
	 * process killed between them leaves the index on the older, whole
	 * slot (the mapping keeps stores in the order they were made). */
	kt__store_release(&r->ck_seq, seq);
}

/* ---- sleeping and waking ------------------------------------------------ */

uint32_t kt__ring_sleep_begin(void)
{
	/* seq_cst store then load: a producer that bumps the word after our
	 * load makes the wait return at once; one that read the flag as 0
	 * just before costs at most one period. */
	kt__store_seq_cst(&consumer_sleeping, 1);
	return kt__load_acquire(&wake_word);
}

void kt__ring_sleep(uint32_t seen, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000u),
			       (long)(timeout_ns % 1000000000u) };
	futex(&wake_word, FUTEX_WAIT_PRIVATE, seen, &ts);
}

void kt__ring_sleep_end(void)
{
	/* Relaxed: a producer that still sees 1 only makes a spare wake. */
	kt__store_relaxed(&consumer_sleeping, 0);
}

int kt__ring_consumer_asleep(void)
{
	/* Relaxed: a flag read for its value alone; nothing rides on it. */
	return kt__load_stale(&consumer_sleeping);
}

void kt__ring_wake_consumer(void)
{
	/* Release: the consumer that sees the new word sees what we stored
	 * before it (the session's stop flag). */
	kt__add_release(&wake_word, 1);
	futex(&wake_word, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void kt__ring_nudge_consumer(void)
{
	/* Relaxed load: a missed wake-up costs at most one flush period, the
	 * consumer's timeout.  The bump is release so the consumer, seeing the
	 * new word, also sees the records that crossed the watermark. */
	if (kt__load_stale(&consumer_sleeping)) {
		kt__add_release(&wake_word, 1);
		futex(&wake_word, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}

void kt__ring_consumer_forget(void)
{
	/* Relaxed: the child of a fork() has one thread. */
	kt__store_relaxed(&consumer_sleeping, 0);
}

/*
 * Flight mode: rings that overwrite their oldest bytes instead of dropping
 * the newest, and the copy a snapshot takes of one while its producer runs.
 *
 * The producer never waits for a consumer here; what keeps a reader safe
 * is a bound.  The producer writes nothing at or past fl_bound before it
 * raises fl_bound (a relaxed store, then a release fence, then the
 * record's stores), and raises it a whole sub-buffer at a time, so the
 * fast path stays as it is and the slow path runs once per sub-buffer.
 * Each raise also leaves a mark: the position of the record being
 * written, a record start.  A reader then works like a seqlock's:
 *
 *   h = load_acquire(head)       every record below h is complete
 *   copy [start, h)               racing the producer's next lap
 *   fence(acquire)
 *   L = load(fl_bound)            the producer wrote nothing past L before
 *                                 any store the copy could have seen
 *
 * Bytes at positions below L - size may have been overwritten while they
 * were copied (position p and p + size share memory): they are the lapped
 * head, discarded, and the copy starts again at the first mark at or past
 * L - size, a record start whose bytes up to h are intact.
 *
 * A snapshot copies in pieces, newest first: [m_0, h), then [m_1, m_0),
 * ..., where the m_i are the record starts it knows (the marks, the
 * session's start, the end of the producer's count), each piece checked
 * as above right after its own copy.  A piece that passed stays good: the
 * check only says that its bytes were read before the producer's next lap
 * reached them, and later overwrites do not change the copy.  The first
 * piece that fails keeps its part from the first record start at or past
 * L - size, and the copy ends there.  Copying towards the producer's
 * overwrites, rather than away from them, copies nothing they reach first.
 */
#include <sched.h>

#include "ring/private.h"

int kt__flight;

void kt__ring_set_flight(int on)
{
	/* Relaxed: set before the session is switched on (a release store
	 * of kt__active); a producer that reads it stale writes that one
	 * record under the other policy, which is safe for both. */
	kt__store_relaxed(&kt__flight, on);
}

/* The count of overwritten events as the producer publishes it. */
typedef struct kt__ring_flcount over_count;

/*
 * Publish @c in the slot not in use, then name it: fl_seq is odd while it
 * is written (a seqlock's writer), and fl_cnt[(fl_seq >> 1) & 1] is the
 * whole slot at every moment, also to a reader of a killed process's
 * crash file, which no seqlock can help (recover/'s flight window).
 */
static void put_count(struct kt__ring *r, const over_count *c)
{
	/* Relaxed: this thread alone writes the sequence. */
	uint64_t seq = kt__load_own(&r->fl_seq);
	struct kt__ring_flcount *to = &r->fl_cnt[((seq >> 1) + 1) & 1];
	kt__store_relaxed(&r->fl_seq, seq + 1);
	/* Release fence: a reader that sees any store below sees the odd
	 * sequence too (pairs with the acquire fence in read_count()). */
	kt__fence_release();
	/* Relaxed: ordered by the sequence's fence and release store. */
	kt__store_relaxed(&to->origin, c->origin);
	kt__store_relaxed(&to->counted, c->counted);
	kt__store_relaxed(&to->n, c->n);
	kt__store_relaxed(&to->first, c->first);
	kt__store_relaxed(&to->last, c->last);
	/* Release: a reader that acquires the even sequence sees them all. */
	kt__store_release(&r->fl_seq, seq + 2);
}

/*
 * Count the events that start below @upto, which the bound being raised
 * lets this thread overwrite: its own records of a lap ago, whole and
 * valid, walked by header (the lines the emits that follow write).  Once
 * per sub-buffer, so the fast path is untouched.  A ring whose session
 * changed (tail is each session's first position) counts from zero.
 */
static void count_overwritten(struct kt__ring *r, uint64_t upto)
{
	/* Relaxed: the fields are this thread's; tail is set before the
	 * session starts (or at the ring's registration), not moved in it. */
	const struct kt__ring_flcount *cur = &r->fl_cnt[(kt__load_own(&r->fl_seq) >> 1) & 1];
	over_count c = { kt__load_stale(&r->tail), kt__load_own(&cur->counted),
			 kt__load_own(&cur->n), kt__load_own(&cur->first), kt__load_own(&cur->last) };
	int fresh = kt__load_own(&cur->origin) != c.origin;
	if (fresh)
		c = (over_count){ .origin = c.origin, .counted = c.origin };
	uint64_t pos = c.counted;
	kt__ring_rec rec;
	while (pos < upto &&
	       kt__ring_decode(r->prod.base + (pos & r->prod.mask), (size_t)r->size, pos, &rec) == 1) {
		if (rec.bytes) {
			c.first = c.n++ ? c.first : rec.ts;
			c.last = rec.ts;
		}
		pos += rec.size;
	}
	if (pos == c.counted && !fresh)
		return;
	c.counted = pos;
	put_count(r, &c);
}

uint64_t kt__flight_reserve(struct kt__ring *r, uint64_t head, uint64_t end)
{
	/* Relaxed: this thread alone writes the bound. */
	uint64_t bound = kt__load_own(&r->fl_bound);
	if (end <= bound)
		return bound;
	uint64_t sub = r->size / KT__FL_SUBS;
	bound = (end + sub - 1) & ~(sub - 1);
	if (bound > r->size)
		count_overwritten(r, bound - r->size);
	/* Relaxed: a mark is a record start whenever it is read. */
	kt__store_relaxed(&r->fl_mark[(bound / sub) % KT__FL_MARKS], head);
	/* Release: the count and the mark are stored before the bound that
	 * lets the bytes they describe be overwritten, so a crash file never
	 * holds a bound past them (recover/'s flight window relies on it). */
	kt__store_release(&r->fl_bound, bound);
	/* Release fence: the new bound is visible before any store that
	 * follows (this record's, the next fast-path records'), so a reader
	 * that saw one of them sees the bound that covers it (pairs with the
	 * acquire fence in kt__ring_flight_copy()). */
	kt__fence_release();
	return bound;
}

/* The first record start in [@lo, @h]: a mark, the ring's start in this
 * session (@origin), the first record its thread has not counted as
 * overwritten (@counted: the marks may be a sub-buffer later), or @h
 * (nothing). */
static uint64_t first_start(struct kt__ring *r, uint64_t lo, uint64_t h, uint64_t origin,
			    uint64_t counted)
{
	uint64_t best = h;
	if (origin >= lo && origin < best)
		best = origin;
	if (counted >= lo && counted < best)
		best = counted;
	for (unsigned i = 0; i < KT__FL_MARKS; i++) {
		/* Relaxed: any value read is a record start; its bytes are
		 * checked against the bound like the rest. */
		uint64_t m = kt__load_stale(&r->fl_mark[i]);
		if (m >= lo && m < best)
			best = m;
	}
	return best;
}

/*
 * The copy itself races the producer's stores by design; the bound check
 * afterwards decides what of it is kept.  ThreadSanitizer would report the
 * race it is built to tolerate, so under it the copy is made with
 * uninstrumented volatile loads (which the compiler cannot turn back into
 * an intercepted memcpy).
 */
#if defined(__SANITIZE_THREAD__)
#define KT__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KT__TSAN 1
#endif
#endif
#ifdef KT__TSAN
__attribute__((no_sanitize("thread"))) static void copy_part(uint8_t *dst, const uint8_t *src,
							      size_t n)
{
	/* Records are 8-byte aligned and sized, so are spans of them. */
	const volatile uint64_t *s = (const volatile uint64_t *)(const void *)src;
	uint64_t *d = (uint64_t *)(void *)dst;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = s[i];
}
#else
static void copy_part(uint8_t *dst, const uint8_t *src, size_t n)
{
	memcpy(dst, src, n);
}
#endif

void (*kt__flight_copy_hook)(void);

static uint64_t lapped_below(struct kt__ring *r, uint64_t bound)
{
	return bound > r->size ? bound - r->size : 0;
}

/* Tries of read_count(): a try fails only when the producer wrote the
 * count twice while it ran (a sub-buffer apart each), so past the first
 * few this thread yields and tries again rather than give a count of 0,
 * which would leave the events below the copy neither counted nor kept. */
#define COUNT_TRIES 1024

/* The producer's count, read whole (put_count()'s slot named by the
 * sequence, checked as a seqlock's reader checks: the producer writes
 * that slot again only from the sequence two past the even one before
 * it): 0 when it is of an earlier session or changing under every try. */
static int read_count(struct kt__ring *r, uint64_t origin, over_count *c)
{
	for (int i = 0; i < COUNT_TRIES; i++) {
		if (i >= 4)
			sched_yield(); /* the snapshot's thread, never a producer */
		uint64_t s1 = kt__load_acquire(&r->fl_seq);
		const struct kt__ring_flcount *from = &r->fl_cnt[(s1 >> 1) & 1];
		/* Relaxed: checked by the sequence, as in any seqlock. */
		*c = (over_count){ kt__load_stale(&from->origin), kt__load_stale(&from->counted),
				   kt__load_stale(&from->n), kt__load_stale(&from->first),
				   kt__load_stale(&from->last) };
		/* Acquire fence: pairs with put_count()'s release fence. */
		kt__fence_acquire();
		if (kt__load_stale(&r->fl_seq) < (s1 | 1) + 2)
			return c->origin == origin;
	}
	return 0;
}

void kt__ring_flight_over(struct kt__ring *r, kt__flight_span *out)
{
	over_count c;
	/* Relaxed: tail does not move while the session runs. */
	if (!read_count(r, kt__load_stale(&r->tail), &c) || !c.n)
		return;
	out->over = c.n;
	out->over_first = c.first;
	out->over_last = c.last;
}

/* The record starts the copy can begin a piece at, in [@lo, @h): the
 * marks, the session's start and the first record not counted, into
 * @c->starts, newest first, without repeats. */
static void piece_starts(struct kt__ring *r, kt__flight_copy *c, uint64_t lo, uint64_t h,
			 uint64_t counted)
{
	uint64_t cand[KT__FL_MARKS + 2];
	unsigned n = 0;
	cand[n++] = c->span.origin;
	cand[n++] = counted;
	for (unsigned i = 0; i < KT__FL_MARKS; i++)
		/* Relaxed: any value read is a record start; the bytes of
		 * each piece are checked against the bound after its copy. */
		cand[n++] = kt__load_stale(&r->fl_mark[i]);
	c->nstarts = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t m = cand[i];
		unsigned j = c->nstarts;
		if (m < lo || m >= h)
			continue;
		while (j && c->starts[j - 1] < m)
			j--;
		if (j && c->starts[j - 1] == m)
			continue;
		memmove(&c->starts[j + 1], &c->starts[j], (c->nstarts - j) * sizeof(m));
		c->starts[j] = m;
		c->nstarts++;
	}
}

/* Copy the piece [@a, the copy's oldest byte) and check it against the
 * bound: 1 when all of it is intact, 0 when the producer's overwrites
 * reached into it (its intact records, from the first record start past
 * them, are kept) and the copy ends. */
static int copy_piece(kt__flight_copy *c, uint64_t a)
{
	struct kt__ring *r = c->ring;
	uint64_t b = c->span.from;
	copy_part(c->buf + (a - c->buf_at), r->prod.base + (a & r->prod.mask), (size_t)(b - a));
	/* Acquire fence: pairs with kt__flight_reserve()'s release fence.  A
	 * byte at p copied above that held the producer's next lap (p + size)
	 * makes the bound read here more than p + size: bytes at or past
	 * bound - size were read before they were overwritten.  Pieces
	 * copied earlier were checked after their own copy; what the
	 * producer writes over them since does not matter. */
	kt__fence_acquire();
	uint64_t lo = lapped_below(r, kt__load_stale(&r->fl_bound));
	uint64_t keep = lo <= a ? a : first_start(r, lo, b, c->span.origin, c->counted);
	c->span.bytes = c->buf + (keep - c->buf_at);
	c->span.len = (size_t)(c->span.len + (b - keep));
	c->span.from = keep;
	c->span.whole = keep == c->span.origin;
	/* Once the copy ends: what the producer overwrote before the copy
	 * reached it (and the tries before this one lost). */
	c->span.lapped = c->retried + (keep - c->base);
	return keep == a;
}

/* Where the piece [@a, @b) is read in place: the ring's bytes (mapped
 * twice, so a piece that wraps is contiguous), or under ThreadSanitizer a
 * copy of them (the read races the producer by design, as the copy does;
 * the check after it decides the same way). */
static const uint8_t *in_place(kt__flight_copy *c, uint64_t a, uint64_t b)
{
	const uint8_t *p = c->ring->prod.base + (a & c->ring->prod.mask);
#ifdef KT__TSAN
	copy_part(c->buf, p, (size_t)(b - a));
	p = c->buf;
#else
	(void)b;
#endif
	return p;
}

/* Read the piece [@a, the copy's oldest byte) in place through c->read
 * and check it against the bound as copy_piece() checks a copy: 1 when it
 * was intact and read without fault.  Else what was read is dropped, the
 * intact part is copied (from the first record start past the lapped
 * bytes) and read from the copy, and the copy ends (0). */
static int read_piece(kt__flight_copy *c, uint64_t a)
{
	struct kt__ring *r = c->ring;
	uint64_t b = c->span.from;
	if (!c->read)
		return copy_piece(c, a);
	int bad = c->read(c->ctx, in_place(c, a, b), a, b);
	/* Acquire fence: pairs with kt__flight_reserve()'s release fence, as
	 * in copy_piece(): the bytes read at or past bound - size were read
	 * before the producer's next lap reached them. */
	kt__fence_acquire();
	uint64_t lo = lapped_below(r, kt__load_stale(&r->fl_bound));
	if (lo <= a && !bad) {
		c->span.bytes = NULL; /* read, not copied */
		c->span.len = (size_t)(c->span.len + (b - a));
		c->span.from = a;
		c->span.whole = a == c->span.origin;
		c->span.lapped = c->retried + (a - c->base);
		return 1;
	}
	c->drop(c->ctx);
	/* A fault on intact bytes (no memory, say) is read again from a copy,
	 * where it is the reader's to report. */
	uint64_t keep = lo <= a ? a : first_start(r, lo, b, c->span.origin, c->counted);
	/* At the buffer's start: the buffer's pages that snapshots touch stay
	 * few, whatever part of the ring is lapped. */
	c->buf_at = keep;
	if (keep < b)
		copy_piece(c, keep);
	if (c->span.from < b)
		c->read(c->ctx, c->span.bytes, c->span.from, b);
	else
		c->span.lapped = c->retried + (b - c->base);
	return 0;
}

/* One try of kt__ring_flight_begin(): 0 when the producer lapped all of
 * the newest piece, and another try may do better. */
static int begin_once(struct kt__ring *r, kt__flight_copy *c)
{
	/* Relaxed: tail is the session's first position here, set before the
	 * session started (or at the ring's registration), never moved. */
	uint64_t origin = kt__load_stale(&r->tail);
	/* The count first: every event it counts starts below c.counted, and
	 * the copy starts no lower, so none is both counted and kept. */
	over_count n = { .counted = origin };
	if (!read_count(r, origin, &n))
		n = (over_count){ .counted = origin };
	/* The bound before head: a bound read late, after the producer ran
	 * on, would put the start past head (a stale one only starts the
	 * copy early, and the checks after each piece cut it). */
	uint64_t lo = lapped_below(r, kt__load_stale(&r->fl_bound));
	/* Acquire pairs with the producer's release of head: every record
	 * below it is whole. */
	uint64_t h = kt__load_acquire(&r->prod.head);
	/* A stale bound may be a lap or more behind head: the copy never
	 * takes more than the ring (nor more than the buffer holds). */
	if (lo < lapped_below(r, h))
		lo = lapped_below(r, h);
	lo = lo > origin ? lo : origin;
	lo = lo > n.counted ? lo : n.counted;
	uint64_t start = first_start(r, lo, h, origin, n.counted);
	c->base = start;
	c->buf_at = start;
	c->counted = n.counted;
	c->next = 0;
	c->span = (kt__flight_span){ .origin = origin, .from = h, .whole = start == origin,
				     .over = n.n, .over_first = n.first, .over_last = n.last,
				     .lapped = c->retried };
	c->span.bytes = c->buf + (h - start);
	piece_starts(r, c, start, h, n.counted);
	if (start == h || !r->prod.base) {
		c->nstarts = 0;
		return 1;
	}
	c->next = 1;
	int whole = read_piece(c, c->starts[0]);
	/* Relaxed: set by a test before any snapshot. */
	void (*hook)(void) = kt__load_stale(&kt__flight_copy_hook);
	if (hook)
		hook();
	if (!whole)
		c->nstarts = 0;
	return c->span.len > 0;
}

int kt__ring_flight_begin(struct kt__ring *r, uint8_t *buf, kt__flight_copy *c)
{
	/* A newest piece lapped whole (the caller was descheduled in the
	 * middle of it) is tried again, a few times: only this thread
	 * waits. */
	c->ring = r;
	c->buf = buf;
	c->retried = 0;
	for (int i = 0; i < 4 && !begin_once(r, c); i++)
		c->retried = c->span.lapped;
	return c->next < c->nstarts;
}

int kt__ring_flight_older(kt__flight_copy *c)
{
	if (c->next >= c->nstarts)
		return 0;
	if (!read_piece(c, c->starts[c->next++]))
		c->nstarts = 0;
	return c->next < c->nstarts;
}

void kt__ring_flight_discard(struct kt__ring *r)
{
	/* Acquire, as for a drain: the records skipped are complete. */
	uint64_t h = kt__load_acquire(&r->prod.head);
	kt__ring_read(r, h);
	kt__ring_done(r);
	kt__ring_release(r);
}

uint64_t kt__ring_bytes(const struct kt__ring *r)
{
	return r->size;
}

/*
 * ring/ring.h - internal: per-thread rings, the thread registry, name
 * interning and the clock; the door through which flush/ and recover/
 * reach ring/.  Nothing here knows about files: where a ring's memory
 * lives is a backing's business (ring/backing.h).
 *
 * One ring has one producer (its thread) and one consumer (the session's
 * flusher).  Positions are byte counts that only grow; a position p lives at
 * base + (p & mask).  The memory is mapped twice back to back, so the bytes
 * [p, p + n) are contiguous at base + (p & mask) for any n <= size: no
 * record and no drained span ever wraps.
 *
 *   producer (katra.h, ring/produce.c)        consumer (ring/consume.c)
 *   ----------------------------------        -------------------------
 *   (A) t = load_acquire(tail)                (C) h = load_acquire(head)
 *       if h + n - t > size: slow path            read records in [tail, h)
 *       write record bytes at h                   write them to the file
 *   (B) store_release(head, h + n)            (D) store_release(tail, h)
 *
 *   B pairs with C: every byte of a record is visible before the head that
 *   covers it.  D pairs with A: the flusher has finished reading a span
 *   before the producer may overwrite it.
 *
 * head is written only by the producer, tail only by the consumer; each
 * owner reads its own field with kt__load_own().  They sit on separate
 * cache lines so the two threads never write the same line.  The
 * producer's half is katra.h's inline path and ring/produce.c; the
 * consumer's half is the functions below, which are all the flusher sees
 * of a ring: spans, records and holds, never the struct (ring/private.h).
 */
#ifndef KATRA_RING_RING_H
#define KATRA_RING_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <katra/katra.h>
#include "ring/backing.h"

/* A ring; its fields are private to ring/ (ring/private.h). */
struct kt__ring;

/* A ring-only record type: the producer's note that it lost events.  The
 * consumer turns it into a drop frame; it never reaches a file as a
 * record.  Its name id holds the low 32 bits of its session's generation;
 * its payload is three u64: events lost, first and last timestamp. */
#define KT__EV_DROP_MARK 0xFE
#define KT__DROP_MARK_SIZE (KT_REC_HEAD + 24)

/*
 * A ring's page as another process may read it, where a backing keeps the
 * page in a file (recover/'s crash files): the offsets of what it holds,
 * each a little-endian u64 unless said.  ring/private.h checks them
 * against the struct; a change here changes the crash files' format.
 */
#define KT__PAGE_HEAD 0              /* bytes published */
#define KT__PAGE_SIZE 32             /* ring bytes, a power of two */
#define KT__PAGE_PENDING_FIRST 64    /* time range of losses not yet */
#define KT__PAGE_PENDING_LAST 72     /*   in a drop marker */
#define KT__PAGE_LOST 80             /* events lost, ever */
#define KT__PAGE_REFUSED 88          /* records refused, ever */
#define KT__PAGE_REFUSED_FIRST 96
#define KT__PAGE_REFUSED_LAST 104
#define KT__PAGE_TAIL 128            /* bytes the consumer gave back */
#define KT__PAGE_LOST_BASE 144       /* LOST when the session began */
#define KT__PAGE_CK 968              /* 2 x {u64 tail, events, marked,
				      * refused}: see kt__ring_checkpoint() */
#define KT__PAGE_CK_SEQ 1032         /* CK[seq & 1] is the good one */
#define KT__PAGE_THREAD 1100         /* u32: katra's thread id */
#define KT__PAGE_OS_TID 1104         /* u32 */
/* Flight mode (ring/flight.c says how they are kept): */
#define KT__PAGE_FL_BOUND 1152       /* the producer writes nothing at or
				      * past it before raising it */
#define KT__PAGE_FL_MARK 1160        /* KT__PAGE_FL_MARKS record starts,
				      * one per raise of the bound */
#define KT__PAGE_FL_MARKS 32
#define KT__PAGE_FL_SEQ 1416         /* COUNT[(SEQ >> 1) & 1] is whole */
#define KT__PAGE_FL_COUNT 1424       /* 2 x {u64 origin, counted, n, first,
				      * last}: the n events of the session
				      * starting at origin that lie below
				      * counted (a record start) were
				      * overwritten, stamped first to last */
#define KT__PAGE_END 2048            /* the struct ends before: a backing
				      * may keep its own bytes from here */

/*
 * kt__ring_page - the size of the page each ring struct has to itself: a
 * page of the ring's backing, mapped private (the default) or shared (a
 * backing whose file must hold head, tail and the checkpoint when the
 * process dies).  A ring moves between backings in place (the page is
 * mapped over), so the producer's pointer to it never changes.
 */
size_t kt__ring_page(void);

/* ---- configuration and the registry (ring/ring.c) --------------------- */

/* Configuration and state shared by ring/ and flush/. */
int kt__ensure_init(void);
/* kt__init_with - as kt__ensure_init(), and then, where non-zero, the ring
 * size and overflow policy set as
 * kt_init() sets them, the clock kept.  0, -EINVAL, KT_EBUSY (a session
 * runs), or -EAGAIN.  Any thread; takes the registry lock. */
int kt__init_with(size_t ring_size, int overflow);
uint64_t kt__ring_size(void);
int kt__overflow_policy(void);

/* What a session's flusher needs from the ring layer. */
typedef struct kt__ring_list {
	struct kt__ring **rings;
	size_t len, cap;
} kt__ring_list;

/* Make rings of the configured size for up to @n threads to come (at most
 * 16 kept): how many are ready. */
unsigned kt__registry_spare(unsigned n);
/* Snapshot every registered ring (retired or not) into @out. */
int kt__registry_snapshot(kt__ring_list *out);
/* Recycle every retired ring that is fully drained; returns how many. */
size_t kt__registry_reap(void);
/* Mark the registry as having (or not) a session; with none, exiting
 * threads recycle their rings themselves. */
void kt__registry_set_session(int running);
/* A malloc'd copy of thread @r's name, taken under the registry lock;
 * NULL when it has none (or without memory). */
char *kt__ring_name_dup(struct kt__ring *r);
/* Start a new session generation: every ring is emptied (tail = head) and
 * its loss counters rebased.  Called with no consumer running.  Returns
 * the new generation, whose low 32 bits the session's drop markers carry. */
uint64_t kt__registry_reset_for_session(void);

/* ---- the consumer side (ring/consume.c) -------------------------------- */

/* Threads: a ring's one consumer (a session's flusher thread) calls these,
 * one at a time; kt__ring_wake_consumer() and kt__ring_decode() any
 * thread. */

/* Published bytes the consumer has not read yet: ring positions
 * [@from, @to), contiguous at @bytes (the ring is mapped twice). */
typedef struct kt__span {
	const uint8_t *bytes;
	uint64_t from, to;
} kt__span;

/*
 * kt__ring_peek - the span from what the consumer has read to head (C:
 * an acquire load of head).  Return: non-zero when it is not empty.
 */
int kt__ring_peek(struct kt__ring *r, kt__span *out);

/* One record found in a ring: an event (its bytes, SPEC §4.2) or a drop
 * marker (count and time range). */
typedef struct kt__ring_rec {
	uint64_t pos;               /* ring position */
	const uint8_t *bytes;       /* the event record; NULL for a marker */
	size_t size;                /* the bytes it takes in the ring */
	uint64_t ts;                /* events: the timestamp */
	uint32_t marker_gen;        /* markers: low bits of their session */
	uint64_t count, first_ts, last_ts; /* markers: events lost, when */
	int stale;                  /* markers (kt__ring_next() only): of an
				     * earlier session, which counted them */
} kt__ring_rec;

/*
 * kt__ring_decode - the record at @p, at ring position @pos, of which @left
 * bytes are at hand.  Checks only the ring's own encoding (a drop marker's
 * shape); an event's payload rules are the format's (kt__event_check()).
 * Return: 1 with *@rec filled; 0 when @left bytes do not hold it whole;
 * -1 for a drop marker katra never writes.  Any thread; bytes only.
 */
static inline int kt__ring_decode(const uint8_t *p, size_t left, uint64_t pos, kt__ring_rec *rec)
{
	uint16_t len;
	if (left < KT_REC_HEAD)
		return 0;
	memcpy(&len, p + KT_REC_LEN, 2);
	rec->pos = pos;
	if (p[KT_REC_TYPE] == KT__EV_DROP_MARK) {
		if (len != KT__DROP_MARK_SIZE - KT_REC_HEAD || p[KT_REC_FLAGS])
			return -1;
		if (left < KT__DROP_MARK_SIZE)
			return 0;
		rec->bytes = NULL;
		rec->size = KT__DROP_MARK_SIZE;
		memcpy(&rec->marker_gen, p + KT_REC_NAME, 4);
		memcpy(&rec->count, p + KT_REC_HEAD, 8);
		memcpy(&rec->first_ts, p + KT_REC_HEAD + 8, 8);
		memcpy(&rec->last_ts, p + KT_REC_HEAD + 16, 8);
		return 1;
	}
	rec->size = kt_event_size(len);
	if (rec->size > left)
		return 0;
	rec->bytes = p;
	memcpy(&rec->ts, p + KT_REC_TS, 8);
	return 1;
}

/* The consumer's walk over a span it peeked. */
typedef struct kt__ring_iter {
	struct kt__ring *ring;
	kt__span span;
	uint64_t pos;
	uint32_t gen;               /* this session's markers carry it */
} kt__ring_iter;

void kt__ring_iter_init(kt__ring_iter *it, struct kt__ring *r, const kt__span *span);
/* A drop marker met by kt__ring_next(): sets @rec->stale, counts it. */
void kt__ring_marker(kt__ring_iter *it, kt__ring_rec *rec);

/*
 * kt__ring_next - the span's next record: an event, or a drop marker whose
 * losses (unless @rec->stale) are now counted as carried, so that
 * kt__ring_settle() does not count them again.  Return: 1, or 0 at the end
 * of the span.  The span's records are the producer's: whole and valid.
 */
static inline int kt__ring_next(kt__ring_iter *it, kt__ring_rec *rec)
{
	if (it->pos == it->span.to)
		return 0;
	kt__ring_decode(it->span.bytes + (it->pos - it->span.from),
			(size_t)(it->span.to - it->pos), it->pos, rec);
	it->pos += rec->size;
	if (!rec->bytes)
		kt__ring_marker(it, rec);
	return 1;
}

/*
 * Giving space back.  kt__ring_read() says the consumer has read the ring
 * up to @to; kt__ring_done() that it is done with every byte read (with
 * crash files, only once the frames made of them are written); and
 * kt__ring_release() moves tail over what is done and held by no write
 * (D: a release store), waking producers the BLOCK policy put to sleep.
 */
void kt__ring_read(struct kt__ring *r, uint64_t to);
void kt__ring_done(struct kt__ring *r);
void kt__ring_release(struct kt__ring *r);

/*
 * kt__ring_hold - keep the bytes from @pos on from being given back until
 * kt__ring_unhold(): a zero-copy write in flight still reads them.  Holds
 * may end in any order; tail passes them in order.  Return: the hold, or
 * NULL when KT__RING_REFS are in flight already (copy the bytes instead).
 */
struct kt__ring_ref *kt__ring_hold(struct kt__ring *r, uint64_t pos);
/* kt__ring_unhold - the write reading @h is complete; its space may go. */
void kt__ring_unhold(struct kt__ring_ref *h);

/* The ring's thread: katra's id and the kernel's. */
uint32_t kt__ring_thread_id(const struct kt__ring *r);
/* kt__ring_waited_ns - the ns @r's thread waited for room this session
 * (WAIT policy).  The consumer. */
uint64_t kt__ring_waited_ns(const struct kt__ring *r);
uint32_t kt__ring_os_tid(const struct kt__ring *r);

/* kt__ring_retired - whether the ring's thread exited (an acquire load):
 * once it did, a drain after this call leaves nothing behind. */
int kt__ring_retired(struct kt__ring *r);

/* Losses a ring holds outside its records: events lost that no marker
 * carried (the thread lost events and emitted nothing after), records
 * refused.  Counts of zero mean none. */
typedef struct kt__ring_losses {
	uint64_t lost, lost_first, lost_last;
	uint64_t refused, refused_first, refused_last;
} kt__ring_losses;

/*
 * kt__ring_settle - what @r lost outside its records since the last call,
 * each loss reported once however often it is called.  @retired: the
 * ring's thread had exited before the consumer's last drain, so the ring
 * may now be recycled (kt__registry_reap()).
 */
void kt__ring_settle(struct kt__ring *r, int retired, kt__ring_losses *out);

/* kt__ring_checkpoint - record in the ring's page that the consumer's
 * output now holds @events of @r's thread and everything it has read of
 * the ring (for a backing that keeps the page: recover/'s crash files). */
void kt__ring_checkpoint(struct kt__ring *r, uint64_t events);

/*
 * Sleeping until there is work: kt__ring_sleep_begin() announces the sleep
 * and returns the wake-up word, kt__ring_sleep() waits while the word
 * still has that value (at most @timeout_ns), kt__ring_sleep_end() ends
 * it.  kt__ring_wake_consumer() wakes the consumer now, asleep or not (the
 * producers wake it only when it sleeps).  kt__ring_consumer_asleep() is
 * for tests.
 */
uint32_t kt__ring_sleep_begin(void);
void kt__ring_sleep(uint32_t seen, uint64_t timeout_ns);
void kt__ring_sleep_end(void);
void kt__ring_wake_consumer(void);
int kt__ring_consumer_asleep(void);

/* ---- flight mode (ring/flight.c) -------------------------------------- */

/* kt__ring_set_flight - whether the rings overwrite their oldest bytes
 * (a flight session) or wait for the consumer.  Set with no session on. */
void kt__ring_set_flight(int on);

/* What a snapshot kept of a ring: @len bytes of whole records at @bytes,
 * ring positions [@from, @from + @len); @lapped bytes before them were
 * overwritten while being copied and discarded.  (A copy that reads its
 * pieces in place, kt__flight_copy's @read, has no such bytes: @bytes is
 * then the last piece copied, or NULL.) */
typedef struct kt__flight_span {
	const uint8_t *bytes;
	size_t len;
	uint64_t from;
	uint64_t lapped;
	uint64_t origin;            /* where the ring's session started: the
				     * bytes in [origin, from) are gone */
	int whole;                  /* it starts where the ring's session
				     * did: nothing of it was overwritten */
	/* Events of the session the thread overwrote before the copy (it
	 * counts them as its bound passes them), and their time range. */
	uint64_t over, over_first, over_last;
} kt__flight_span;

/*
 * A flight copy of one ring, piece by piece from the newest records back:
 * kt__ring_flight_begin() reads the ring's head and copies the newest
 * piece, each kt__ring_flight_older() the piece before the oldest copied,
 * until the producer's overwrites (which climb from the other end) reach
 * a piece or the ring's oldest record is in.  The pieces lie between
 * record starts the producer left (a sub-buffer apart, ring/flight.c);
 * each is checked against the producer's bound right after its copy.
 * Between calls @span holds the intact records copied so far (its
 * @lapped: once the copy ended).  Both never wait and never write to the
 * ring; any thread, one copy of a ring at a time not required.
 */
typedef struct kt__flight_copy {
	kt__flight_span span;
	struct kt__ring *ring;
	uint8_t *buf;               /* position p of the ring at buf[p - buf_at] */
	uint64_t buf_at;            /* base; with @read, the piece copied last */
	uint64_t base;              /* the oldest record start the ring held */
	uint64_t counted;           /* the producer's count ends here */
	uint64_t retried;           /* lapped by tries of the newest piece */
	uint64_t starts[KT__PAGE_FL_MARKS + 2]; /* where pieces start, newest first: a
						 * mark, the session's start or the
						 * count's end */
	unsigned nstarts, next;     /* starts[next] begins the next piece */
	/* Set by the caller before kt__ring_flight_begin() to read each piece
	 * where it lies instead of copying it (NULL: copy): @read is given
	 * the bytes of ring positions [@a, @b) and may find them torn (it
	 * must stay within them and keep nothing until the piece is known
	 * good: kt__ring_flight_begin() and _older() return); @drop then
	 * forgets what the last @read made of them.  A piece found lapped
	 * has its intact part copied into @buf and read again from there. */
	int (*read)(void *ctx, const uint8_t *p, uint64_t a, uint64_t b);
	void (*drop)(void *ctx);
	void *ctx;
} kt__flight_copy;

/* kt__ring_flight_begin - start a copy of @r into @buf (the ring's size in
 * bytes at least; with @c->read set, only pieces found lapped are copied
 * there).  Return: 1 when older pieces remain. */
int kt__ring_flight_begin(struct kt__ring *r, uint8_t *buf, kt__flight_copy *c);
/* kt__ring_flight_older - copy the next older piece.  Return: as
 * kt__ring_flight_begin(); 0 also when it was not (the copy ended). */
int kt__ring_flight_older(kt__flight_copy *c);

/* kt__ring_flight_over - the events @r's thread overwrote this session so
 * far, into @out's over fields (zero when none).  Any thread. */
void kt__ring_flight_over(struct kt__ring *r, kt__flight_span *out);

/* Tests only: called after the newest piece of every flight copy when
 * set. */
extern void (*kt__flight_copy_hook)(void);

/* kt__ring_flight_discard - a flight session ends: the consumer gives
 * every byte back (tail = head), so a retired ring can be recycled.
 * The ring's consumer only. */
void kt__ring_flight_discard(struct kt__ring *r);

/* kt__ring_bytes - the ring's size in bytes. */
uint64_t kt__ring_bytes(const struct kt__ring *r);

/* ---- interned names (ring/names.c) and the clock (ring/clock.c) -------- */

/* Interned names: call @fn for ids (@after, n] under the lock; returns n
 * (or @after).  Cheap when nothing is new.  @loc is NULL for a name from
 * kt_name(), the call site's location for an id from kt_site_id() (its
 * strings live as long as the name). */
typedef void (*kt__name_fn)(void *ctx, uint32_t id, const char *s, size_t len,
			    const kt_srcloc *loc);
uint32_t kt__names_after(uint32_t after, kt__name_fn fn, void *ctx);
/* Intern @len bytes (a name, or a call site's key, which may hold zero
 * bytes): the id, or 0 when memory ran out. */
uint32_t kt__intern(const char *key, size_t len);

/* Categories (ring/site.c): note each one's state as a session starts;
 * call @fn with each one's name id and KT_CATEGORY_ON_* flags. */
void kt__categories_start(void);
void kt__categories_each(void (*fn)(void *ctx, uint32_t id, uint32_t flags), void *ctx);
/* fork(): 0 before (takes the categories' lock, after the names'), 1 in
 * the parent and 2 in the child after (releases it), so a child never
 * inherits it held by a thread it does not have. */
void kt__categories_fork(int phase);

/* Tracks (ring/track.c): call @fn with each track created, its pairs as
 * they are now (valid during the call), under the table's lock. */
void kt__tracks_each(void (*fn)(void *ctx, const kt_track_def *t), void *ctx);
/* fork(): as kt__categories_fork(), for the track table's lock (taken
 * after the categories'). */
void kt__tracks_fork(int phase);

/* The clock. */
int kt__clock_setup(int requested);
void kt__clock_calibrate(kt_clock_calibration *c);
uint64_t kt__mono_ns(void);
uint64_t kt__wall_ns(void);

#endif /* KATRA_RING_RING_H */

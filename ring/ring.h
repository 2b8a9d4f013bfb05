/*
 * ring/ring.h - internal: per-thread rings, the thread registry, name
 * interning and the clock.  Nothing here knows about files.
 *
 * One ring has one producer (its thread) and one consumer (the session's
 * flusher).  Positions are byte counts that only grow; a position p lives at
 * base + (p & mask).  The memory is mapped twice back to back, so the bytes
 * [p, p + n) are contiguous at base + (p & mask) for any n <= size: no
 * record and no drained span ever wraps.
 *
 *   producer                                  flusher
 *   --------                                  -------
 *   (A) t = load_acquire(tail)                (C) h = load_acquire(head)
 *       if h + n - t > size: slow path            read records in [tail, h)
 *       write record bytes at h                   write them to the file
 *   (B) store_release(head, h + n)            (D) store_release(tail, h)
 *
 *   B pairs with C: every byte of a record is visible before the head that
 *   covers it.  D pairs with A: the flusher has finished reading a span
 *   before the producer may overwrite it.
 *
 * head is written only by the producer, tail only by the flusher; each owner
 * reads its own field with a relaxed load.  They sit on separate cache
 * lines so the two threads never write the same line.
 */
#ifndef KATRA_RING_RING_H
#define KATRA_RING_RING_H

#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <katra/katra.h>

#define KT__CACHELINE 64

/* A ring-only record type: the producer's note that it lost events.  The
 * flusher turns it into a drop frame; it never reaches a file as a record. */
#define KT__EV_DROP_MARK 0xFE
#define KT__DROP_MARK_SIZE (16 + 24)

/* Zero-copy writes in flight per ring, at most; more take the copy path. */
#define KT__RING_REFS 32

struct kt__ring {
	/* Producer line: written only by the owning thread. */
	alignas(KT__CACHELINE) struct kt__ring_prod prod;
	uint64_t size;
	uint64_t pending;          /* lost since the last drop marker */
	uint64_t gen;              /* session generation of the pending state */
	uint64_t refused_base;     /* refused_total when this session began */
	/* Time range of the pending loss; the flusher reads them at stop for
	 * losses no marker carried.  Relaxed: producer-written, read late. */
	uint64_t pending_first;
	uint64_t pending_last;
	/* Read by the flusher at stop: events lost and not yet in a marker,
	 * events refused as too large.  Relaxed: only the totals matter and
	 * stop reads them after the producers are done. */
	uint64_t lost_total;
	uint64_t refused_total;
	uint64_t refused_first; /* time range of refusals this session */
	uint64_t refused_last;

	/* Consumer line: written only by the flusher. */
	alignas(KT__CACHELINE) uint64_t tail;
	uint32_t tail_seq;         /* futex word: bumped when tail moves */
	uint32_t waiters;          /* BLOCK-policy producers asleep on it */
	uint64_t lost_base;        /* lost_total when the session started */
	uint64_t marked;           /* losses the flusher has accounted */
	/* Zero-copy writes: the flusher has read up to read_pos, but bytes
	 * still being written straight from the ring stay owned until their
	 * write completes; tail then moves past them (in order). */
	uint64_t read_pos;
	struct kt__ring_ref {
		struct kt__ring *ring;
		uint64_t start;
		int done;
	} refs[KT__RING_REFS];
	unsigned ref_head, ref_len;
	uint64_t refused_seen;     /* refusals the flusher has accounted */
	int settled;               /* the flusher accounted it after retirement:
				    * only then may it be recycled */
	/* Bytes tail may pass: read_pos at once, or, with crash files, only
	 * once the frames made from them are written (see ring/crash.h). */
	uint64_t done_pos;
	/* Crash files: what the trace file holds of this ring, as of the last
	 * pass whose writes all completed.  Two slots so a process killed
	 * mid-update leaves the previous one whole; ck_seq names the good one. */
	struct kt__ring_ckpt {
		uint64_t tail;     /* done_pos then */
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
	int memfd;                 /* the data's file: a memfd, or a crash file */
	char *name;                /* thread name or NULL */
};

/*
 * kt__ring_page - the page each ring struct has to itself: a private page
 * of the ring's memfd, or with crash files the ring's slot in the control
 * file, mapped shared so
 * head, tail and the checkpoint are in the page cache when the process
 * dies.  A ring moves between the two in place (the page is mapped over),
 * so the producer's pointer to it never changes.
 */
size_t kt__ring_page(void);


/* What a session's flusher needs from the ring layer. */
typedef struct kt__ring_list {
	struct kt__ring **rings;
	size_t len, cap;
} kt__ring_list;

/* Configuration and state shared by ring/ and flush/. */
int kt__ensure_init(void);
uint64_t kt__ring_size(void);
int kt__overflow_policy(void);

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
 * its loss counters rebased.  Called with no flusher running.  Returns the
 * new generation, whose low 32 bits the session's drop markers carry. */
uint64_t kt__registry_reset_for_session(void);
/* The generation of the last session started (ring.c; relaxed accesses). */
extern uint64_t kt__session_gen;

struct kt__crash;
/*
 * Back every ring with crash files in @c (NULL: stop creating crash-backed
 * rings; existing ones keep their files).  Existing rings move onto the
 * files in place, so producers' pointers stay valid; their contents are
 * not kept (a session start discards them anyway).  Called with no flusher
 * running.  Return: 0 or the first -errno.
 */
int kt__registry_set_crash(struct kt__crash *c);

/* ---- the consumer side (ring/consume.c) -------------------------------- */

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

/* TODO(record.h): the record's layout (SPEC §4.2), until
 * include/katra/record.h names its offsets. */
#define KT__REC_TS 0
#define KT__REC_NAME 8
#define KT__REC_TYPE 12
#define KT__REC_FLAGS 13
#define KT__REC_LEN 14
#define KT__REC_HEAD 16

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
	if (left < KT__REC_HEAD)
		return 0;
	memcpy(&len, p + KT__REC_LEN, 2);
	rec->pos = pos;
	if (p[KT__REC_TYPE] == KT__EV_DROP_MARK) {
		if (len != KT__DROP_MARK_SIZE - KT__REC_HEAD || p[KT__REC_FLAGS])
			return -1;
		if (left < KT__DROP_MARK_SIZE)
			return 0;
		rec->bytes = NULL;
		rec->size = KT__DROP_MARK_SIZE;
		memcpy(&rec->marker_gen, p + KT__REC_NAME, 4);
		memcpy(&rec->count, p + KT__REC_HEAD, 8);
		memcpy(&rec->first_ts, p + KT__REC_HEAD + 8, 8);
		memcpy(&rec->last_ts, p + KT__REC_HEAD + 16, 8);
		return 1;
	}
	rec->size = kt_event_size(len);
	if (rec->size > left)
		return 0;
	rec->bytes = p;
	memcpy(&rec->ts, p + KT__REC_TS, 8);
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

/* Crash files: record that the file now holds @events of @r's thread and
 * everything the consumer has read of the ring. */
void kt__ring_checkpoint(struct kt__ring *r, uint64_t events);

/*
 * Sleeping until there is work: kt__ring_sleep_begin() announces the sleep
 * and returns the wake-up word, kt__ring_sleep() waits while the word
 * still has that value (at most @timeout_ns), kt__ring_sleep_end() ends
 * it.  kt__ring_wake_consumer() wakes the consumer now, asleep or not; the
 * producers' slow path calls kt__ring_nudge_consumer(), which wakes it
 * only when it sleeps.  kt__ring_consumer_asleep() is for tests.
 */
uint32_t kt__ring_sleep_begin(void);
void kt__ring_sleep(uint32_t seen, uint64_t timeout_ns);
void kt__ring_sleep_end(void);
void kt__ring_wake_consumer(void);
void kt__ring_nudge_consumer(void);
int kt__ring_consumer_asleep(void);
/* The child of a fork() has no consumer. */
void kt__ring_consumer_forget(void);

/* Interned names: copy ids [1, n] under the lock; returns n. */
typedef void (*kt__name_fn)(void *ctx, uint32_t id, const char *s, size_t len);
uint32_t kt__names_each(kt__name_fn fn, void *ctx);
/* The same for the ids above @after only; returns the highest id (or
 * @after).  Cheap when nothing is new. */
uint32_t kt__names_after(uint32_t after, kt__name_fn fn, void *ctx);
/* Call @fn for every name so far, then for each new one as it is interned,
 * under the names lock; NULL stops it. */
void kt__names_set_log(kt__name_fn fn, void *ctx);
void kt__names_free(void);
/* fork() handlers of the name table, called by the registry's (ring.c):
 * @phase 0 before the fork (takes its lock), 1 in the parent after it,
 * 2 in the child (no crash log there: the parent's session owns it). */
void kt__names_fork(int phase);

/* The clock. */
int kt__clock_setup(int requested);
void kt__clock_calibrate(kt_clock_calibration *c);
uint64_t kt__mono_ns(void);
uint64_t kt__wall_ns(void);

#endif /* KATRA_RING_RING_H */

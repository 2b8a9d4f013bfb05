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
/* Wake a producer blocked on @r after its tail moved. */
void kt__ring_tail_moved(struct kt__ring *r);
/* Crash files: record that the file now holds @events of @r's thread and
 * everything below read_pos.  Flusher only. */
void kt__ring_checkpoint(struct kt__ring *r, uint64_t events);

struct kt__crash;
/*
 * Back every ring with crash files in @c (NULL: stop creating crash-backed
 * rings; existing ones keep their files).  Existing rings move onto the
 * files in place, so producers' pointers stay valid; their contents are
 * not kept (a session start discards them anyway).  Called with no flusher
 * running.  Return: 0 or the first -errno.
 */
int kt__registry_set_crash(struct kt__crash *c);

/* The flusher's wake-up word: producers bump it on crossing a ring's high
 * watermark; the flusher sleeps on it between periods. */
extern uint32_t kt__flusher_word;
extern int kt__flusher_sleeping;
/* Sleep while the word still equals @seen, at most @timeout_ns. */
int kt__flusher_wait(uint32_t seen, uint64_t timeout_ns);
/* Wake the flusher now, whether or not it sleeps. */
void kt__flusher_wake(void);

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

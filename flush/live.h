/*
 * flush/live.h - a door: the live figures of a recording session (issue
 * #32, `katra top PID`).  The session's flusher, which reads every record
 * anyway, keeps running totals (zones' count, total and self time with a
 * fixed histogram, frame intervals, counters' last values, per thread
 * events, drops and ring fill) and copies them at most every
 * KT__LIVE_PUBLISH_NS into a shared page: a memfd of the session, under a
 * seqlock.  A viewer finds it among /proc/PID/fd by its name
 * ("/memfd:katra-live") and maps it read-only: the host does no I/O for
 * it, leaves no file behind, and a viewer that leaves costs nothing.
 * Opening another process's /proc/PID/fd/N takes the rights ptrace's
 * read mode takes: the same user, as for `katra snapshot`.  Totals only, since the session's
 * start: the viewer takes a window as the difference of two copies.
 *
 * Every figure is a running total of the flusher's (u64 or u32 that wraps);
 * both ends are one machine: host byte order.
 */
#ifndef KATRA_FLUSH_LIVE_H
#define KATRA_FLUSH_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <katra/trace.h>

#define KT__LIVE_MAGIC UINT64_C(0x32766c2d6172746b) /* "ktra-lv2" */
#define KT__LIVE_ZONES 64        /* names timed as zones; more: other_zones */
#define KT__LIVE_THREADS 64      /* threads listed; more: in the totals */
#define KT__LIVE_COUNTERS 32     /* counters' last values */
#define KT__LIVE_NAME 48         /* a name's bytes kept, NUL included */
#define KT__LIVE_BUCKETS 1024    /* kt__live_bucket(): 1/16 octave wide */
#define KT__LIVE_FRAMES 256      /* the last frame intervals, for a graph */
#define KT__LIVE_DEPTH 64        /* open zones per thread; deeper: untimed */
#define KT__LIVE_PUBLISH_NS UINT64_C(100000000)
#define KT__LIVE_MEMFD "katra-live" /* the memfd's name */

struct kt__live_zone {
	uint32_t id;
	uint32_t pad;
	char name[KT__LIVE_NAME];
	uint64_t count, total, self, max; /* ticks */
	uint32_t hist[KT__LIVE_BUCKETS];  /* durations, kt__live_bucket() */
};

struct kt__live_thread {
	uint32_t id, os_tid;
	char name[KT__LIVE_NAME];
	uint64_t events, dropped;
	uint64_t fill, ring_bytes; /* the span unread at the last drain, its ring's size */
	uint64_t waited_ns;        /* waited for room (WAIT policy), in all */
};

struct kt__live_counter {
	uint32_t id;
	uint32_t is_float;
	char name[KT__LIVE_NAME];
	uint64_t ts;
	int64_t i;
	double f;
};

struct kt__live_page {
	uint64_t magic;
	uint32_t size;           /* sizeof(struct kt__live_page) */
	uint32_t seq;            /* seqlock: odd while the flusher copies */
	uint32_t pid;
	uint32_t ended;          /* the session stopped (the last copy) */
	uint32_t nzones, nthreads, ncounters;
	uint32_t frame_head;     /* frames[] written so far, mod KT__LIVE_FRAMES */
	kt_clock_calibration clock; /* the session's start */
	uint64_t published_ns;   /* CLOCK_MONOTONIC of this copy */
	uint64_t last_ts;        /* the newest event seen (ticks) */
	uint64_t events, dropped, bytes, flusher_cpu_ns;
	uint64_t untimed;        /* zones too deep or begun before the session */
	uint64_t skipped;        /* events not walked: the flusher was behind */
	uint64_t other_zones;    /* zone ends of names past the table */
	uint64_t frame_count, frame_total, frame_max, frame_max_end; /* ticks */
	uint32_t frame_hist[KT__LIVE_BUCKETS];
	uint64_t frames[KT__LIVE_FRAMES];     /* intervals, ticks */
	struct kt__live_zone zones[KT__LIVE_ZONES];
	struct kt__live_thread threads[KT__LIVE_THREADS];
	struct kt__live_counter counters[KT__LIVE_COUNTERS];
};

/* The bucket of a duration @v: exact below 32, then 16 per octave.  Pure. */
static inline unsigned kt__live_bucket(uint64_t v)
{
	if (v < 32)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return 32u + (e - 5u) * 16u + (unsigned)((v >> (e - 4u)) & 15u);
}

/* The middle of bucket @b's durations.  Pure. */
static inline uint64_t kt__live_bucket_mid(unsigned b)
{
	if (b < 32)
		return b;
	unsigned e = (b - 32u) / 16u + 5u, sub = (b - 32u) % 16u;
	uint64_t lo = (UINT64_C(16) + sub) << (e - 4u);
	return lo + (UINT64_C(1) << (e - 4u)) / 2;
}

/* ---- the session's side (flusher thread unless said) ------------------- */

struct kt__live;

/*
 * kt__live_start - make the page (a memfd named KT__LIVE_MEMFD, mapped).
 * @c0: the session's start calibration.  The flusher thread, as it
 * starts (SIGXFSZ is blocked there).  Return: the state, or NULL (no
 * memory, no memfd, no directory, a file size limit under the page: the
 * session goes on without live figures).
 */
struct kt__live *kt__live_start(const kt_clock_calibration *c0);

struct kt__ring;

/*
 * Ring @r's drain begins with @unread bytes waiting.  Over a quarter of
 * the ring: the flusher is behind, and this drain's records are counted,
 * not walked (the page's skipped; the thread's open zones forgotten), so
 * that the live figures never cost the host a drop.
 */
void kt__live_ring_begin(struct kt__live *l, struct kt__ring *r, uint64_t unread);

/* The @count records of ring @r, @len bytes at @p, as they go into the
 * file: one chunk's, walked while the flusher has them in cache (no drop
 * marker). */
void kt__live_records(struct kt__live *l, struct kt__ring *r, const uint8_t *p, size_t len,
		      uint64_t count);

/* Ring @r was drained: its thread's drops are @dropped so far. */
void kt__live_ring(struct kt__live *l, struct kt__ring *r, uint64_t dropped);

/* A pass ends: copy the figures to the page if KT__LIVE_PUBLISH_NS went
 * by (or @last), with the session's @bytes so far. */
void kt__live_publish(struct kt__live *l, uint64_t bytes, int last);

/* The session ends: unmap, close.  After the
 * flusher has ended.  NULL: nothing. */
void kt__live_stop(struct kt__live *l);

/* kt__live_fork_child - in a fork()ed child: close the parent's page's
 * memfd (of a recording or a flight session), so no viewer takes the
 * child for the parent.  The mapping stays, the parent's memory. */
void kt__live_fork_child(void);

/* kt__live_wanted - is the page asked for (KATRA_LIVE set, not "0")?
 * Any thread. */
int kt__live_wanted(void);

/* A flight session's look at ring @r begins (flush/live_flight.c): its
 * thread's records are walked, never skipped; @gap: records went by
 * unseen (overwritten), so its open zones are forgotten. */
void kt__live_flight_ring(struct kt__live *l, struct kt__ring *r, int gap);

struct kt__live_flight;

/*
 * kt__live_flight_start - a flight session's live figures: a thread that
 * every KT__LIVE_PUBLISH_NS copies what each ring got since its last look
 * (kt__ring_flight_*(): never waits on, never writes to a ring), walks it
 * and publishes the page.  After the rings were reset for the session.
 * Return: the thread's state, or NULL (KATRA_LIVE off, no memory, no
 * thread: the session goes on without the page).  The session's thread.
 */
struct kt__live_flight *kt__live_flight_start(const kt_clock_calibration *c0);

/* kt__live_flight_stop - a last look, the page's last copy (ended), the
 * thread joined, the page closed: before the rings are given back.  NULL:
 * nothing. */
void kt__live_flight_stop(struct kt__live_flight *f);

/* ---- the viewer's side --------------------------------------------------- */

/*
 * kt__live_find - process @pid's live page: the first of its descriptors
 * (at most 65536 looked at) that links to a memfd named KT__LIVE_MEMFD and
 * is as large as a page, opened read-only.  Not yet checked: map it and
 * kt__live_copy().  Return: the fd; -ENOENT (none); another -errno
 * (/proc/PID/fd not readable: no such process, or not ours).
 */
int kt__live_find(long pid);

/*
 * kt__live_copy - a consistent copy of the page at @src (@len bytes, a
 * mapping of another process's memfd) into @dst, the seqlock retried a
 * bounded number of times, every count and name bounded: nzones and the
 * like clamped, names cut and NUL-terminated.  Return: 0; -EAGAIN (no
 * stable copy); -EPROTO (not a live page, or another version).
 */
int kt__live_copy(struct kt__live_page *dst, const volatile void *src, size_t len);

#endif /* KATRA_FLUSH_LIVE_H */

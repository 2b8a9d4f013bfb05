/*
 * flush/perf_ring.h - private to flush/: a table of per-thread perf
 * buffers, one perf event and its mmap'd ring per traced thread, as
 * sched.c (context switches) and sample.c (sampled call chains) keep
 * theirs.  The table opens a thread's event when its ring is first seen,
 * finds it by the thread's katra id, reads its ring once a look and
 * closes it when the thread's ring is retired; what the records mean is
 * each user's (its own attr, its own decoding of the kernel's records).
 * A table is used by one thread at a time (the flusher, or a flight
 * session's thread under its lock).
 */
#ifndef KATRA_FLUSH_PERF_RING_H
#define KATRA_FLUSH_PERF_RING_H

#include <stddef.h>
#include <stdint.h>

#include "flush/session_impl.h"

struct perf_event_attr;

struct kt__perf_thread {
	uint32_t owner; /* the followed thread's katra id; 0: a free slot */
	uint32_t sid;   /* its records' stream (kt__registry_new_id()) */
	uint32_t tid;   /* its OS tid */
	int fd;
	void *map;     /* the control page, then the data pages */
	uint64_t last; /* the last tick written: the stream's order */
	int seen;      /* its ring was in this look's list, not retired */
	void *own;     /* the user's, malloc()ed: freed as the slot is */
};

struct kt__perf_table {
	struct kt__perf_thread t[KT_SCHED_MAX_THREADS];
	size_t page;  /* bytes of a page (the control page's too) */
	size_t pages; /* data pages of each buffer, a power of two */
};

/* The user's half of a look (kt__perf_look()), each called with @ctx. */
struct kt__perf_ops {
	/* A thread not followed whose ring is live: @f a free slot (follow
	 * it there with kt__perf_attach()), or NULL when the table is full. */
	void (*follow)(void *ctx, struct kt__perf_thread *f, struct kt__ring *r);
	/* Read @f's buffer (kt__perf_drain()). */
	void (*drain)(void *ctx, struct kt__perf_thread *f);
};

/* An empty table of buffers of @pages data pages (a power of two). */
void kt__perf_table_init(struct kt__perf_table *pt, size_t pages);

/* Open perf event @a on thread @tid (close-on-exec): an fd or -errno. */
int kt__perf_open(struct perf_event_attr *a, uint32_t tid);

/*
 * kt__perf_attach - follow ring @r's thread in free slot @f: event @a
 * opened on it, its buffer mapped (MADV_DONTFORK: a fork()ed child has
 * none of the parent's), a new stream id.  0; or -1 with *@why saying
 * why to a user (NULL when there is nothing to say: the thread exited
 * before it was seen), the slot left free.
 */
int kt__perf_attach(struct kt__perf_table *pt, struct kt__perf_thread *f, struct perf_event_attr *a,
                    struct kt__ring *r, const char **why);

/* Let go of @f: its buffer unmapped, its event closed, its own freed. */
void kt__perf_detach(struct kt__perf_table *pt, struct kt__perf_thread *f);

/*
 * kt__perf_look - one look over @rings (a snapshot of the registry):
 * follow the threads new since (ops->follow), read every buffer
 * (ops->drain), let go of the threads whose rings were retired or are
 * gone from the list, after their last read.
 */
void kt__perf_look(struct kt__perf_table *pt, const kt__ring_list *rings,
                   const struct kt__perf_ops *ops, void *ctx);

/* Every followed thread let go, each read a last time first by @drain
 * (with @ctx) unless @drain is NULL. */
void kt__perf_close_all(struct kt__perf_table *pt,
                        void (*drain)(void *ctx, struct kt__perf_thread *f), void *ctx);

/* In a fork()ed child: close the parent's events, touch nothing else
 * (the mappings are not in the child; the memory is the parent's). */
void kt__perf_fork_child(struct kt__perf_table *pt);

/*
 * kt__perf_drain - every record the kernel wrote into @f's buffer since
 * the last read, each copied into @rec (at most @cap bytes of it: a
 * record may wrap the ring's end) and handed to @fn; then the space is
 * given back to the kernel.
 */
void kt__perf_drain(const struct kt__perf_table *pt, struct kt__perf_thread *f, uint8_t *rec,
                    size_t cap, void (*fn)(void *ctx, const uint8_t *rec, size_t n), void *ctx);

/* CLOCK_MONOTONIC @ns as the session's ticks (@c0 its start calibration). */
uint64_t kt__perf_ticks(const kt_clock_calibration *c0, uint64_t ns);

#endif

/*
 * The per-thread perf buffers that sched.c and sample.c read: one event
 * per traced thread (that thread alone: unprivileged at
 * perf_event_paranoid 2), its ring mapped read-write so that the reader
 * can give the space back (data_tail).  Every fd is O_CLOEXEC and every
 * mapping MADV_DONTFORK, as the rings' are.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flush/perf_ring.h"

void kt__perf_table_init(struct kt__perf_table *pt, size_t pages)
{
	memset(pt, 0, sizeof(*pt));
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++)
		pt->t[i].fd = -1;
	pt->page = (size_t)sysconf(_SC_PAGESIZE);
	pt->pages = pages;
}

int kt__perf_open(struct perf_event_attr *a, uint32_t tid)
{
	long fd = syscall(SYS_perf_event_open, a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static size_t map_len(const struct kt__perf_table *pt)
{
	return (1 + pt->pages) * pt->page;
}

int kt__perf_attach(struct kt__perf_table *pt, struct kt__perf_thread *f, struct perf_event_attr *a,
                    struct kt__ring *r, const char **why)
{
	uint32_t tid = kt__ring_os_tid(r);
	int fd = kt__perf_open(a, tid);
	if (fd < 0) {
		/* ESRCH: the thread exited before it was seen; nothing to say. */
		*why = fd == -ESRCH ? NULL : strerror(-fd);
		return -1;
	}
	void *m = mmap(NULL, map_len(pt), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		/* EPERM: past perf_event_mlock_kb and RLIMIT_MEMLOCK. */
		*why = "its buffer past the locked-memory limit (perf_event_mlock_kb)";
		close(fd);
		return -1;
	}
	/* A fork()ed child must not see the parent's threads' records. */
	(void)madvise(m, map_len(pt), MADV_DONTFORK);
	f->owner = kt__ring_thread_id(r);
	f->tid = tid;
	f->fd = fd;
	f->map = m;
	f->last = 0;
	f->seen = 0;
	f->own = NULL;
	f->sid = kt__registry_new_id();
	return 0;
}

void kt__perf_detach(struct kt__perf_table *pt, struct kt__perf_thread *f)
{
	munmap(f->map, map_len(pt));
	close(f->fd);
	free(f->own);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static struct kt__perf_thread *find(struct kt__perf_table *pt, uint32_t owner,
                                    struct kt__perf_thread **free_slot)
{
	*free_slot = NULL;
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++) {
		if (pt->t[i].owner == owner)
			return &pt->t[i];
		if (!pt->t[i].owner && !*free_slot)
			*free_slot = &pt->t[i];
	}
	return NULL;
}

void kt__perf_look(struct kt__perf_table *pt, const kt__ring_list *rings,
                   const struct kt__perf_ops *ops, void *ctx)
{
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++)
		pt->t[i].seen = 0;
	for (size_t i = 0; i < rings->len; i++) {
		struct kt__ring *r = rings->rings[i];
		struct kt__perf_thread *free_slot, *f = find(pt, kt__ring_thread_id(r), &free_slot);
		if (!f && !kt__ring_retired(r)) {
			ops->follow(ctx, free_slot, r);
			f = free_slot;
		}
		/* A retired ring's thread is gone: its last records are read
		 * below, then its slot is free. */
		if (f && f->owner && !kt__ring_retired(r))
			f->seen = 1;
	}
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++) {
		struct kt__perf_thread *f = &pt->t[i];
		if (!f->owner)
			continue;
		ops->drain(ctx, f);
		if (!f->seen)
			kt__perf_detach(pt, f);
	}
}

void kt__perf_close_all(struct kt__perf_table *pt,
                        void (*drain)(void *ctx, struct kt__perf_thread *f), void *ctx)
{
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++)
		if (pt->t[i].owner) {
			if (drain)
				drain(ctx, &pt->t[i]);
			kt__perf_detach(pt, &pt->t[i]);
		}
}

void kt__perf_fork_child(struct kt__perf_table *pt)
{
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++)
		if (pt->t[i].owner && pt->t[i].fd >= 0)
			close(pt->t[i].fd);
}

void kt__perf_drain(const struct kt__perf_table *pt, struct kt__perf_thread *f, uint8_t *rec,
                    size_t cap, void (*fn)(void *ctx, const uint8_t *rec, size_t n), void *ctx)
{
	struct perf_event_mmap_page *pg = f->map; /* page-aligned */
	const uint8_t *data = (const uint8_t *)f->map + pt->page;
	uint64_t size = (uint64_t)pt->pages * pt->page;
	/* Acquire: the records below head are written before it (the
	 * kernel's smp_wmb before its store, documented in perf_event.h). */
	uint64_t head = kt__load_acquire(&pg->data_head);
	uint64_t tail = pg->data_tail;
	while (tail < head && head - tail <= size) {
		size_t off = (size_t)(tail % size);
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		size_t n = h.size < cap ? h.size : cap;
		for (size_t i = 0; i < n; i++)
			rec[i] = data[(off + i) % size];
		fn(ctx, rec, n);
		tail += h.size;
	}
	/* Release: the kernel may reuse the space only after the reads above. */
	kt__store_release(&pg->data_tail, head);
}

/* CLOCK_MONOTONIC @ns as the session's ticks: themselves, or through the
 * start calibration at the TSC's measured rate (what a reader's line
 * through both calibrations differs from by the rate's error: ppm). */
uint64_t kt__perf_ticks(const kt_clock_calibration *c0, uint64_t ns)
{
	if (c0->source != KT_CLOCK_TSC)
		return ns;
	__int128 d = (__int128)ns - (__int128)c0->mono_ns;
	__int128 t = (__int128)c0->ticks + d * (__int128)c0->tick_hz / 1000000000;
	return t < 0 ? 0 : t > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

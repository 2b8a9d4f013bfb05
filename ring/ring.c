/*
 * Rings and the thread registry: the out-of-line half of the producer path.
 *
 * The inline fast path in katra.h handles the common case.  Everything else
 * lands here: a thread's first event (registration, which takes the
 * registry lock), a record that does not fit below the ring's limit (refresh
 * the tail, drop or block, write a pending drop marker, wake the flusher at
 * the high watermark), and records too large for the ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#include "ring/crash.h"
#include "ring/ring.h"

KT_API __thread struct kt__ring_prod *kt__tls_ring __attribute__((tls_model("initial-exec")));
KT_API int kt__active;

/* Set once this thread's key destructor ran: emits from later destructors
 * are ignored rather than registering a ring nobody will retire.  The
 * thread-locals here are read by emits from signal handlers too: initial-
 * exec, so reaching them never allocates. */
static __thread int tls_exiting __attribute__((tls_model("initial-exec")));
/* Non-zero while this thread is in registry code (it may hold reg_lock):
 * an emit from a signal handler then must not register, or it would wait
 * on a lock its own thread holds. */
static __thread int tls_in_registry __attribute__((tls_model("initial-exec")));
/* Emits refused for that reason before the thread had a ring; its ring
 * counts them once it has one.  Atomic: handlers may nest. */
static __thread uint64_t tls_refused_early __attribute__((tls_model("initial-exec")));

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kt__ring *reg_head;     /* every live or retired ring */
static struct kt__ring *free_head;    /* recycled rings, ready for reuse */
static size_t free_count;
static int reg_session;               /* a session is running */
/* Bumped per session start.  Relaxed everywhere: a producer that sees a
 * stale value only keeps a pending loss count one session too long. */
uint64_t kt__session_gen;
static uint32_t next_thread_id = 1;
static pthread_key_t exit_key;
static int initialized;
static kt_config config;
static struct kt__crash *reg_crash;   /* new rings get crash files here */

#define FREE_KEEP 16 /* recycled rings kept mapped; more are unmapped */

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

static void thread_exit(void *arg);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* reg_lock, marking this thread as inside the registry while it is held
 * (the signal fences keep the mark around the lock in program order). */
static void reg_take(void)
{
	tls_in_registry++;
	kt__signal_fence();
	pthread_mutex_lock(&reg_lock);
}

static void reg_drop(void)
{
	pthread_mutex_unlock(&reg_lock);
	kt__signal_fence();
	tls_in_registry--;
}

/* ---- configuration --------------------------------------------------- */

static int apply_config(const kt_config *cfg)
{
	kt_config c = { 0 };
	if (cfg)
		c = *cfg;
	if (!c.ring_size)
		c.ring_size = KT_RING_DEFAULT;
	if (c.ring_size < KT_RING_MIN || c.ring_size > KT_RING_MAX ||
	    (c.ring_size & (c.ring_size - 1)))
		return -EINVAL;
	if (c.overflow != KT_OVERFLOW_DROP && c.overflow != KT_OVERFLOW_BLOCK)
		return -EINVAL;
	if (c.clock < KT_CLOCK_AUTO || c.clock > KT_CLOCK_MONOTONIC)
		return -EINVAL;
	/* The clock is chosen once per process: rings already running with
	 * one must not start stamping with another. */
	int rc = initialized && c.clock != config.clock ? KT_EBUSY : kt__clock_setup(c.clock);
	if (rc)
		return rc;
	if (!initialized) {
		rc = pthread_key_create(&exit_key, thread_exit);
		if (rc)
			return -rc;
		/* Before any ring exists, so no child of a fork() ever sees one
		 * without the handlers that take it away. */
		rc = pthread_atfork(fork_prepare, fork_parent, fork_child);
		if (rc) {
			pthread_key_delete(exit_key);
			return -rc;
		}
		initialized = 1;
	}
	config = c;
	return 0;
}

int kt_init(const kt_config *cfg)
{
	reg_take();
	int rc = reg_session ? KT_EBUSY : apply_config(cfg);
	reg_drop();
	return rc;
}

int kt__ensure_init(void)
{
	reg_take();
	int rc = initialized ? 0 : apply_config(NULL);
	reg_drop();
	return rc;
}

uint64_t kt__ring_size(void)
{
	return config.ring_size;
}

int kt__overflow_policy(void)
{
	return config.overflow;
}

/* ---- ring memory ------------------------------------------------------ */

size_t kt__ring_page(void)
{
	static size_t page;
	if (!page) {
		long n = sysconf(_SC_PAGESIZE);
		page = n >= 4096 ? (size_t)n : 4096;
	}
	return page;
}

/*
 * A ring's page holds a heap pointer (its thread name), and a leak checker
 * scans only the heap, globals and stacks unless told of other roots.
 * Weak: LeakSanitizer's runtime is there only in a program built with it,
 * whether or not libkatra was.
 */
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
extern void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

static void ring_unmap(struct kt__ring *r)
{
	if (__lsan_unregister_root_region)
		__lsan_unregister_root_region(r, kt__ring_page());
	munmap(r->prod.base, 2 * r->size);
	close(r->memfd);
	free(r->name);
	munmap(r, kt__ring_page());
}

/* Map @size bytes of @fd from @off at both halves of the span at @span. */
static int map_halves(uint8_t *span, uint64_t size, int fd, off_t off)
{
	/* MAP_POPULATE pre-faults the pages so a thread's first events do not
	 * take page faults; the second mapping shares the same pages. */
	for (int half = 0; half < 2; half++)
		if (mmap(span + half * size, size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, off) == MAP_FAILED)
			return -errno;
	/* A fork()ed child gets no mapping of the bytes at all: shared, they
	 * would let it write into this process's trace, and copying their
	 * page tables would slow every fork.  The child handler drops the
	 * rings that then point nowhere. */
	if (madvise(span, 2 * size, MADV_DONTFORK) < 0)
		return -errno;
	return 0;
}

/*
 * Create a ring: its struct in a page of its own, and @size bytes mapped
 * twice, back to back, inside one reserved span so nothing else can land
 * between the two halves.  Without crash files one memfd holds both: the
 * page at 0, mapped private so a fork()ed child gets its own head and tail
 * as it did of the heap struct this replaced, then the bytes.  With them,
 * the page is the ring's slot in the control file and the bytes its ring
 * file, both shared.  Under reg_lock.
 */
static struct kt__ring *ring_map(uint64_t size)
{
	int fd = -1, ctl_fd = -1;
	uint64_t ctl_off = 0;
	off_t data_off = 0;
	uint32_t slot = 0;
	if (reg_crash) {
		if (kt__crash_slot(reg_crash, size, &fd, &ctl_fd, &ctl_off, &slot))
			return NULL;
	} else {
		fd = ctl_fd = memfd_create("katra-ring", MFD_CLOEXEC);
		data_off = (off_t)kt__ring_page();
		if (fd < 0)
			return NULL;
		if (ftruncate(fd, data_off + (off_t)size) < 0)
			goto err_fd;
	}
	struct kt__ring *r = mmap(NULL, kt__ring_page(), PROT_READ | PROT_WRITE,
				  reg_crash ? MAP_SHARED : MAP_PRIVATE, ctl_fd, (off_t)ctl_off);
	if (r == MAP_FAILED)
		goto err_fd;
	uint8_t *span = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (span == MAP_FAILED)
		goto err_page;
	if (map_halves(span, size, fd, data_off)) {
		munmap(span, 2 * size);
		goto err_page;
	}
	if (__lsan_register_root_region)
		__lsan_register_root_region(r, kt__ring_page());
	r->size = size;
	r->memfd = fd;
	r->prod.base = span;
	r->prod.mask = size - 1;
	if (reg_crash)
		kt__crash_stamp(r, slot);
	return r;
err_page:
	munmap(r, kt__ring_page());
err_fd:
	close(fd);
	return NULL;
}

/*
 * Under reg_lock, with no flusher running: move @r onto a new crash slot
 * in place.  Its page is copied into the slot and the slot mapped over it;
 * the data file is mapped over both halves.  The producer's pointers stay
 * valid; a record racing this may be lost, as any racing a session start.
 */
static int ring_rebind(struct kt__ring *r)
{
	int fd, ctl_fd;
	uint64_t off;
	uint32_t slot;
	size_t page = kt__ring_page();
	int rc = kt__crash_slot(reg_crash, r->size, &fd, &ctl_fd, &off, &slot);
	if (rc)
		return rc;
	ssize_t n = pwrite(ctl_fd, r, page, (off_t)off);
	if (n != (ssize_t)page) {
		rc = n < 0 ? -errno : -EIO;
		close(fd);
		return rc;
	}
	if (mmap(r, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ctl_fd, (off_t)off) ==
	    MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((rc = map_halves(r->prod.base, r->size, fd, 0))) {
		close(fd);
		return rc;
	}
	close(r->memfd);
	r->memfd = fd;
	kt__crash_stamp(r, slot);
	return 0;
}

/* Under reg_lock: a ring for a new thread, recycled when one fits. */
static struct kt__ring *ring_get(uint64_t size)
{
	struct kt__ring **pp = &free_head;
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->size == size) {
			struct kt__ring *r = *pp;
			*pp = r->next;
			free_count--;
			return r;
		}
	}
	return ring_map(size);
}

/* Under reg_lock: a drained, retired ring goes back to the free list. */
static void ring_put(struct kt__ring *r)
{
	free(r->name);
	r->name = NULL;
	if (free_count >= FREE_KEEP) {
		ring_unmap(r);
		return;
	}
	r->next = free_head;
	free_head = r;
	free_count++;
}

/*
 * Under reg_lock, with no flusher reading @r: nothing of @r is in the file
 * yet.  Relaxed: the registry lock (or, after a crash, the process's end)
 * publishes it.
 */
static void ck_reset(struct kt__ring *r, uint64_t head)
{
	for (int i = 0; i < 2; i++)
		r->ck[i] = (struct kt__ring_ckpt){ head, 0, r->marked, r->refused_seen };
	kt__store_relaxed(&r->ck_seq, 0);
}

/* Under reg_lock: make @r look freshly created for a new thread. */
static void ring_reset(struct kt__ring *r, uint32_t tid)
{
	/* Relaxed: no other thread can see this ring until it is published
	 * under reg_lock, whose release orders these stores. */
	uint64_t head = kt__load_own(&r->prod.head);
	kt__store_relaxed(&r->tail, head);
	r->read_pos = head;
	r->ref_len = 0;
	/* The first emit takes the slow path and sets it. */
	kt__store_relaxed(&r->prod.limit, head);
	r->pending = 0;
	r->gen = kt__load_stale(&kt__session_gen);
	kt__store_relaxed(&r->lost_total, 0);
	kt__store_relaxed(&r->refused_total, 0);
	r->refused_base = 0;
	kt__store_relaxed(&r->retired, 0);
	r->lost_base = 0;
	r->marked = 0;
	r->refused_seen = 0;
	r->settled = 0;
	r->done_pos = head;
	ck_reset(r, head);
	r->thread_id = tid;
	r->os_tid = (uint32_t)gettid();
	r->name = NULL;
}

/* ---- registry --------------------------------------------------------- */

static struct kt__ring *tls_full_ring(void)
{
	/* prod is the first member: the TLS pointer is the ring itself. */
	return (struct kt__ring *)(void *)kt__tls_ring;
}

static void refuse_at(struct kt__ring *r, uint64_t n, uint64_t ts);

/*
 * A ring for the calling thread.  An emit from a signal handler lands
 * here too when its thread has none yet; it may not when the handler
 * interrupted this thread inside the registry (tls_in_registry), where it
 * would take a lock the thread holds or register a second ring: it is
 * refused, and counted once the ring exists.
 */
static struct kt__ring *register_thread(void)
{
	if (tls_exiting)
		return NULL;
	if (tls_in_registry) {
		/* Relaxed: a counter of this thread's, RMW against nesting. */
		kt__add_relaxed(&tls_refused_early, 1);
		return NULL;
	}
	tls_in_registry++;
	kt__signal_fence();
	struct kt__ring *r = NULL;
	if (kt__ensure_init() == 0) {
		reg_take();
		r = ring_get(config.ring_size);
		if (r) {
			ring_reset(r, next_thread_id++);
			r->next = reg_head;
			reg_head = r;
			pthread_setspecific(exit_key, r);
			kt__tls_ring = &r->prod;
		}
		reg_drop();
	}
	kt__signal_fence();
	tls_in_registry--;
	/* Relaxed: this thread's own counter. */
	uint64_t early = kt__exchange_relaxed(&tls_refused_early, 0);
	if (r && early)
		refuse_at(r, early, kt_now());
	return r;
}

static void unlink_ring(struct kt__ring *r)
{
	for (struct kt__ring **pp = &reg_head; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			return;
		}
}

static void thread_exit(void *arg)
{
	struct kt__ring *r = arg;

	tls_exiting = 1;
	kt__tls_ring = NULL;
	reg_take();
	/* Release: every record this thread published is ordered before the
	 * flusher's acquire load of retired, so "retired and drained" means
	 * nothing is left to read. */
	kt__store_release(&r->retired, 1);
	if (!reg_session) {
		unlink_ring(r);
		ring_put(r);
	}
	reg_drop();
}

int kt__registry_snapshot(kt__ring_list *out)
{
	reg_take();
	out->len = 0;
	for (struct kt__ring *r = reg_head; r; r = r->next) {
		if (out->len == out->cap) {
			size_t n = out->cap ? out->cap * 2 : 16;
			void *p = realloc(out->rings, n * sizeof(*out->rings));
			if (!p) {
				reg_drop();
				return -ENOMEM;
			}
			out->rings = p;
			out->cap = n;
		}
		out->rings[out->len++] = r;
	}
	reg_drop();
	return 0;
}

size_t kt__registry_reap(void)
{
	size_t n = 0;
	reg_take();
	struct kt__ring **pp = &reg_head;
	while (*pp) {
		struct kt__ring *r = *pp;
		/* Acquire pairs with thread_exit's release: once retired is
		 * seen, the head loaded below is the thread's last. */
		/* settled: the flusher has counted its losses, refusals and
		 * name since it saw it retired; a ring that retired after the
		 * flusher's look waits for the next pass. */
		if (r->settled && kt__load_acquire(&r->retired) &&
		    /* Acquire: the head read after retired is the thread's last;
		     * relaxed tail: only the flusher, this thread, writes it. */
		    kt__load_acquire(&r->prod.head) == kt__load_own(&r->tail)) {
			*pp = r->next;
			ring_put(r);
			n++;
			continue;
		}
		pp = &r->next;
	}
	reg_drop();
	return n;
}

void kt__registry_set_session(int running)
{
	reg_take();
	reg_session = running;
	reg_drop();
}

uint64_t kt__registry_reset_for_session(void)
{
	reg_take();
	uint64_t gen = kt__add_relaxed(&kt__session_gen, 1) + 1;
	for (struct kt__ring *r = reg_head; r; r = r->next) {
		/* Acquire: the producer's last records are complete before we
		 * skip over them, and release the space back to it. */
		uint64_t head = kt__load_acquire(&r->prod.head);
		/* Release pairs with the producer's acquire of tail.  No write
		 * from a ring is in flight: the last session waited for all. */
		kt__store_release(&r->tail, head);
		r->read_pos = head;
		r->ref_len = 0;
		/* Relaxed: counters; a loss racing the start may land in
		 * either session, and is counted once. */
		r->lost_base = kt__load_stale(&r->lost_total);
		r->marked = 0;
		r->refused_seen = kt__load_stale(&r->refused_total);
		r->done_pos = head;
		ck_reset(r, head);
	}
	reg_drop();
	return gen;
}

int kt__registry_set_crash(struct kt__crash *c)
{
	int rc = 0;
	reg_take();
	reg_crash = c;
	if (c) {
		/* Recycled rings would need slots too; new ones cost as little. */
		while (free_head) {
			struct kt__ring *r = free_head;
			free_head = r->next;
			ring_unmap(r);
		}
		free_count = 0;
		for (struct kt__ring *r = reg_head; r && !rc; r = r->next) {
			rc = ring_rebind(r);
			if (!rc && r->name)
				kt__crash_log_thread(c, r->thread_id, r->name);
		}
	}
	reg_drop();
	return rc;
}

char *kt__ring_name_dup(struct kt__ring *r)
{
	reg_take();
	char *copy = r->name ? strdup(r->name) : NULL;
	reg_drop();
	return copy;
}

int kt_thread_name(const char *name)
{
	if (!name || strlen(name) > KT_MAX_STRING)
		return -EINVAL;
	struct kt__ring *r = tls_full_ring();
	if (!r && !(r = register_thread()))
		return -ENOMEM;
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	reg_take();
	free(r->name);
	r->name = copy;
	if (reg_crash)
		kt__crash_log_thread(reg_crash, r->thread_id, copy);
	reg_drop();
	return 0;
}

int kt_shutdown(void)
{
	reg_take();
	if (reg_session) {
		reg_drop();
		return KT_EBUSY;
	}
	/* Rings of live threads stay: their TLS pointers still name them. */
	while (free_head) {
		struct kt__ring *r = free_head;
		free_head = r->next;
		ring_unmap(r);
	}
	free_count = 0;
	reg_drop();
	kt__names_free();
	return 0;
}

/* ---- fork ------------------------------------------------------------- */

/*
 * A child of fork() has one thread, the one that forked, and no flusher.
 * It must see no session and never write into this process's rings: their
 * bytes are not even mapped there (MADV_DONTFORK, map_halves()), and the
 * handlers below drop every ring from the child's registry, so its threads
 * start afresh, with a session of their own if it starts one.  The locks
 * are taken around the fork so the child's copies of the registry and the
 * name table are whole.  Interned names stay: their ids live on in the
 * child's variables (KT_ZONE's statics).
 */
static void fork_prepare(void)
{
	reg_take();
	kt__names_fork(0);
}

static void fork_parent(void)
{
	kt__names_fork(1);
	reg_drop();
}

/*
 * fork() called from a signal handler that interrupted an emit: after the
 * handler the emit resumes, in the child too, and writes into its ring.
 * Give it private memory to finish in: a copy of the ring's page (with
 * crash files it is a shared page of the control file) and fresh bytes.
 * The ring is then left alone; it is the child's to leak.
 */
static void ring_make_private(struct kt__ring *r)
{
	size_t page = kt__ring_page();
	void *copy = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy != MAP_FAILED) {
		memcpy(copy, r, page);
		mremap(copy, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	}
	mmap(r->prod.base, 2 * r->size, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	close(r->memfd);
}

static void drop_rings(struct kt__ring *list, struct kt__ring *keep)
{
	while (list) {
		struct kt__ring *next = list->next;
		if (list == keep)
			ring_make_private(list);
		else
			ring_unmap(list);
		list = next;
	}
}

static void fork_child(void)
{
	struct kt__ring *mine = tls_full_ring();
	/* Relaxed: this thread's own field. */
	int resumes = mine && kt__load_own(&mine->prod.limit) == KT__LIMIT_BUSY;
	/* Relaxed: the only thread there is. */
	kt__store_relaxed(&kt__active, 0);
	kt__ring_consumer_forget();
	kt__tls_ring = NULL;
	pthread_setspecific(exit_key, NULL);
	drop_rings(reg_head, resumes ? mine : NULL);
	drop_rings(free_head, NULL);
	reg_head = free_head = NULL;
	free_count = 0;
	reg_session = 0;
	reg_crash = NULL;
	kt__names_fork(2);
	reg_drop();
}

/* ---- the slow path ---------------------------------------------------- */

/* BLOCK policy: wait until the flusher frees space or the session ends. */
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
		futex(&r->tail_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
	}
	/* Relaxed: a stale count only costs the flusher one spare wake. */
	kt__sub_relaxed(&r->waiters, 1);
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
static void refuse_at(struct kt__ring *r, uint64_t n, uint64_t ts)
{
	uint64_t before = kt__add_relaxed(&r->refused_total, n);
	if (before == r->refused_base)
		kt__store_relaxed(&r->refused_first, ts);
	kt__store_relaxed(&r->refused_last, ts);
}

static void refuse(struct kt__ring *r)
{
	refuse_at(r, 1, kt_now());
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
	struct kt__ring *r = tls_full_ring();
	if (!r && !(r = register_thread()))
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
#if defined(__x86_64__) || defined(__i386__)
	/* The inline path reads the TSC unconditionally; with another clock
	 * every record must come through here. */
	if (!kt__clock_tsc)
		limit = 0;
#endif
	return limit;
}

/* The slow path proper, marked busy: returns the limit to leave behind. */
static uint64_t emit_marked(struct kt__ring *r, uint64_t limit, uint8_t type, uint32_t id,
			    uint8_t flags, const void *payload, size_t len)
{
	size_t size = 16 + ((len + 7) & ~(size_t)7);
	sync_gen(r);
	if (len > 0xffff || size > r->size / 4) {
		refuse(r);
		return limit;
	}
	uint64_t ts = kt_now();
	/* Relaxed: head is written only by this thread. */
	uint64_t head = kt__load_own(&r->prod.head);
	uint64_t tail;
	for (;;) {
		size_t need = size + (r->pending ? KT__DROP_MARK_SIZE : 0);
		/* Acquire pairs with the flusher's release of tail (D): the
		 * span we are about to overwrite has been read. */
		tail = kt__load_acquire(&r->tail);
		if (head + need - tail <= r->size)
			break;
		if (config.overflow == KT_OVERFLOW_DROP) {
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
	head += size;
	/* Release: pairs with the flusher's acquire of head (B pairs C). */
	kt__store_release(&r->prod.head, head);
	return next_limit(r, head, tail);
}

KT_API void kt__emit_slow(uint8_t type, uint32_t id, uint8_t flags, const void *payload,
			  size_t len)
{
	struct kt__ring *r = tls_full_ring();
	if (!r && !(r = register_thread()))
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

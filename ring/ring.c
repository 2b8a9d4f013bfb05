/*
 * The thread registry: katra's configuration, a ring per thread (made on
 * its first emit in a session, recycled after it exits), thread names
 * (kept without a ring until there is one), the session generation, and
 * what fork() does to them.  Everything here takes the registry lock;
 * nothing runs on the emit path but a thread's first emit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/private.h"

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
/* reg_takes not yet dropped on this thread, and the cancel state the
 * outermost found (restored when the last is dropped). */
static __thread int tls_locks __attribute__((tls_model("initial-exec")));
static __thread int tls_cancel_state __attribute__((tls_model("initial-exec")));
/* Emits refused for that reason before the thread had a ring; its ring
 * counts them once it has one.  Accessed atomically: handlers may nest. */
static __thread uint64_t tls_refused_early __attribute__((tls_model("initial-exec")));
/* This thread's name while it has no ring: kt_thread_name() with no
 * session keeps it here, and the ring its first emit in a session makes
 * takes it.  A program that links katra and traces nothing must cost what
 * it costs untraced, and a ring is 4 MiB or more, pre-faulted.  Changed
 * only inside registry code (tls_in_registry), so a handler's first emit,
 * which registers only outside it, reads it whole.  name_key holds the
 * same pointer, for its destructor. */
static __thread char *tls_name __attribute__((tls_model("initial-exec")));

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kt__ring *reg_head;     /* every live or retired ring */
static struct kt__ring *free_head;    /* recycled rings, ready for reuse */
static size_t free_count;
static int reg_session;               /* a session is running */
/* Bumped per session start (private.h says why relaxed is enough). */
uint64_t kt__session_gen;
static uint32_t next_thread_id = 1;
static pthread_key_t exit_key, name_key;
static int key_made;                  /* exit_key and name_key exist */
static int forks_handled;             /* the pthread_atfork handlers are */
static int initialized;
static kt_config config;
/* Where new rings' memory lives. */
static const kt__backing *reg_backing = &kt__memfd_backing;

#define FREE_KEEP 16 /* recycled rings kept mapped; more are unmapped */

static void thread_exit(void *arg);
static void name_exit(void *arg);
static void retire(struct kt__ring *r);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* reg_lock, marking this thread as inside the registry while it is held
 * (the signal fences keep the mark around the lock in program order). */
static void reg_take(void)
{
	/* No cancellation point may act while reg_lock is held (a crash
	 * slot's open(), a thread name's writev()): the lock would die with
	 * the thread and every later first emit would wait for ever.  A
	 * cancel that arrives meanwhile acts at the thread's next point. */
	if (!tls_locks++)
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &tls_cancel_state);
	tls_in_registry++;
	kt__signal_fence();
	pthread_mutex_lock(&reg_lock);
}

static void reg_drop(void)
{
	pthread_mutex_unlock(&reg_lock);
	kt__signal_fence();
	tls_in_registry--;
	if (!--tls_locks)
		pthread_setcancelstate(tls_cancel_state, NULL);
}

/* ---- configuration --------------------------------------------------- */

/*
 * What must exist before any katra lock is taken, so made at load:
 *
 * - The thread key.  glibc keeps a thread's values of its first 32 keys
 *   inline and calloc()s a block for the others on the thread's first set.
 *   A signal handler's first emit sets katra's key, and the handler may
 *   have interrupted that allocator holding its lock: made before the
 *   host's main can make keys of its own, the key gets a low index.
 * - The fork() handlers.  Registered later, a fork() while another thread
 *   held the names lock (kt_name before any session) or the registry lock
 *   (the first kt_init) gave a child whose katra calls waited forever.
 */
static void load_once(void)
{
	if (!key_made && pthread_key_create(&exit_key, thread_exit) == 0) {
		if (pthread_key_create(&name_key, name_exit) == 0)
			key_made = 1;
		else
			pthread_key_delete(exit_key);
	}
	if (!forks_handled && pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
		forks_handled = 1;
}

/* Priority 101, the first an application may use: a room whose own fork
 * handlers take a lock taken before reg_lock (flush/'s session_lock) must
 * register them after these, so a later priority. */
__attribute__((constructor(101))) static void ring_load(void)
{
	load_once();
}

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
	if (c.overflow < KT_OVERFLOW_WAIT || c.overflow > KT_OVERFLOW_DROP)
		return -EINVAL;
	if (c.clock < KT_CLOCK_AUTO || c.clock > KT_CLOCK_MONOTONIC)
		return -EINVAL;
	/* The clock is chosen once per process: rings already running with
	 * one must not start stamping with another. */
	int rc = initialized && c.clock != config.clock ? KT_EBUSY : kt__clock_setup(c.clock);
	if (rc)
		return rc;
	if (!initialized) {
		/* Only if the load's attempt failed (ENOMEM).  Before any
		 * ring exists, so no child of a fork() ever sees one without
		 * the handlers that take it away. */
		load_once();
		if (!key_made || !forks_handled)
			return -EAGAIN;
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

int kt__init_with(size_t ring_size, int overflow, int set_overflow)
{
	reg_take();
	kt_config c = initialized ? config : (kt_config){ 0 };
	set_overflow = set_overflow || overflow;
	if (ring_size)
		c.ring_size = ring_size;
	if (set_overflow)
		c.overflow = overflow;
	int rc = 0;
	if (!initialized || ring_size || set_overflow)
		rc = reg_session ? KT_EBUSY : apply_config(&c);
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

/* Under reg_lock: a ring for a new thread, recycled when one fits.
 * *@fresh says whether it was mapped now (its pages not yet touched). */
static struct kt__ring *ring_get(uint64_t size, int *fresh)
{
	*fresh = 0;
	struct kt__ring **pp = &free_head;
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->size == size) {
			struct kt__ring *r = *pp;
			*pp = r->next;
			free_count--;
			return r;
		}
	}
	struct kt__ring *r = kt__ring_map(reg_backing, size);
	*fresh = r != NULL;
	return r ? r : kt__ring_map_stub();
}

/*
 * Spare rings of the configured size, made now (their pages faulted in
 * here, MAP_POPULATE) and kept on the free list, so that up to @n threads
 * that register later take one without mapping or faulting anything on
 * their own time.  Only over the default backing: a crash directory's
 * rings are files a recovery reads as threads'.  Best effort: a spare
 * that cannot be made leaves its thread to make its ring itself.
 */
uint32_t kt__registry_new_id(void)
{
	reg_take();
	uint32_t id = next_thread_id++;
	reg_drop();
	return id;
}

unsigned kt__registry_spare(unsigned n)
{
	unsigned have = 0;
	if (kt__ensure_init())
		return 0;
	reg_take();
	for (struct kt__ring *r = free_head; r; r = r->next)
		have += r->size == config.ring_size;
	while (have < n && free_count < FREE_KEEP && reg_backing == &kt__memfd_backing) {
		struct kt__ring *r = kt__ring_map(reg_backing, config.ring_size);
		if (!r)
			break;
		/* On the session starter's time, as the mapping is. */
		kt__ring_touch(r);
		r->next = free_head;
		free_head = r;
		free_count++;
		have++;
	}
	reg_drop();
	return have;
}

/* Under reg_lock: a drained, retired ring goes back to the free list. */
static void ring_put(struct kt__ring *r)
{
	free(r->name);
	r->name = NULL;
	if (free_count >= FREE_KEEP || !r->size) {
		/* Every ring but a stub is the backing's in place: those from
		 * before it were moved onto it (kt__registry_set_backing). */
		if (r->size && reg_backing->retire)
			reg_backing->retire(reg_backing, r);
		kt__ring_unmap(r);
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
	r->waited_base = kt__load_stale(&r->waited_ns);
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

/* Under reg_lock, on @r's thread as it gets @r: the name it was given
 * before it had a ring is @r's now, and the backing hears of it.  The
 * key's value goes first, so its destructor never frees what @r owns (a
 * key made at load: no allocation, also in a handler). */
static void name_adopt(struct kt__ring *r)
{
	if (!tls_name)
		return;
	pthread_setspecific(name_key, NULL);
	r->name = tls_name;
	tls_name = NULL;
	if (reg_backing->name)
		reg_backing->name(reg_backing, KT__NAME_THREAD, r->thread_id, r->name,
				  strlen(r->name), NULL);
}

/* The exit of a thread whose name never got a ring.  Under the lock, as
 * every change of tls_name: a ring that took it meanwhile owns it. */
static void name_exit(void *arg)
{
	reg_take();
	int mine = tls_name == arg;
	if (mine)
		tls_name = NULL;
	reg_drop();
	if (mine)
		free(arg);
}

/*
 * kt_thread_name() on a thread with no ring.  With no session running the
 * name is kept for the ring the thread's first emit in a session makes:
 * 0, or -ENOMEM.  With one running, 1: the caller makes the ring now, so
 * the thread's emits are async-signal-safe from here on, as before.
 */
static int name_keep(const char *name)
{
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	reg_take();
	/* Without the key (its making failed at load) a kept name could not
	 * be freed: the ring is made now, as before names were kept. */
	int rc = reg_session || !key_made;
	if (!rc && pthread_setspecific(name_key, copy)) {
		rc = -ENOMEM;
	} else if (!rc) {
		char *old = tls_name;
		tls_name = copy;
		copy = old;
	}
	reg_drop();
	free(copy);
	return rc;
}

/*
 * A ring for the calling thread.  An emit from a signal handler lands
 * here too when its thread has none yet; it may not when the handler
 * interrupted this thread inside the registry (tls_in_registry), where it
 * would take a lock the thread holds or register a second ring: it is
 * refused, and counted once the ring exists.
 */
struct kt__ring *kt__ring_register(void)
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
	int fresh = 0;
	if (kt__ensure_init() == 0) {
		reg_take();
		r = ring_get(config.ring_size, &fresh);
		if (r) {
			ring_reset(r, next_thread_id++);
			r->next = reg_head;
			reg_head = r;
			name_adopt(r);
		}
		reg_drop();
	}
	/* Outside the lock: should it allocate after all (a key past 32),
	 * no other thread waits on this one. */
	if (r && pthread_setspecific(exit_key, r)) {
		retire(r);
		r = NULL;
	}
	if (r)
		kt__tls_ring = &r->prod;
	kt__signal_fence();
	tls_in_registry--;
	/* Relaxed: this thread's own counter. */
	uint64_t early = kt__exchange_relaxed(&tls_refused_early, 0);
	if (r && early)
		kt__ring_refuse_at(r, early, kt_now());
	/* Outside the lock, so threads registering together do not queue
	 * behind each other's pages; a handler's emit meanwhile goes into
	 * the ring, which only reads here. */
	if (r && fresh)
		kt__ring_touch(r);
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
	tls_exiting = 1;
	kt__tls_ring = NULL;
	retire(arg);
}

/* @r's thread writes to it no more. */
static void retire(struct kt__ring *r)
{
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
		r->waited_base = kt__load_stale(&r->waited_ns);
		r->marked = 0;
		r->refused_seen = kt__load_stale(&r->refused_total);
		r->done_pos = head;
		ck_reset(r, head);
	}
	reg_drop();
	return gen;
}

/* Under reg_lock: tell @b of the threads that have names. */
static void log_threads(const kt__backing *b)
{
	for (struct kt__ring *r = reg_head; r && b->name; r = r->next)
		if (r->name)
			b->name(b, KT__NAME_THREAD, r->thread_id, r->name, strlen(r->name), NULL);
}

/* kt__names_set_log()'s callback when a backing keeps names: a call
 * site's location goes with its name, so a recovered trace locates its
 * zones as a flushed one does (the crash files' sites log, SPEC §10.4). */
static void log_name(void *ctx, uint32_t id, const char *s, size_t len, const kt_srcloc *loc)
{
	const kt__backing *b = ctx;
	b->name(b, KT__NAME_INTERNED, id, s, len, loc);
}

/* kt__tracks_set_log()'s callback when a backing keeps tracks: a trace
 * recovered after a kill converts its track times as one stopped would. */
static void log_track(void *ctx, const kt_track_def *t)
{
	const kt__backing *b = ctx;
	b->track(b, t);
}

/* kt__categories_set_log()'s callback when a backing keeps categories:
 * a recovered trace says which were on, as a stopped one does. */
static void log_category(void *ctx, uint32_t index, uint32_t id, uint32_t flags)
{
	const kt__backing *b = ctx;
	b->category(b, index, id, flags);
}

int kt__registry_set_backing(const kt__backing *b)
{
	int rc = 0;
	kt__names_set_log(b && b->name ? log_name : NULL, (void *)b);
	kt__tracks_set_log(b && b->track ? log_track : NULL, (void *)b);
	kt__categories_set_log(b && b->category ? log_category : NULL, (void *)b);
	reg_take();
	reg_backing = b ? b : &kt__memfd_backing;
	if (b) {
		/* Recycled rings would need new files too; new ones cost as
		 * little. */
		while (free_head) {
			struct kt__ring *r = free_head;
			free_head = r->next;
			kt__ring_unmap(r);
		}
		free_count = 0;
		for (struct kt__ring *r = reg_head; r && !rc; r = r->next)
			rc = kt__ring_rebind(r, b);
		if (!rc)
			log_threads(b);
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
	struct kt__ring *r = kt__tls_full_ring();
	if (!r) {
		int rc = name_keep(name);
		if (rc <= 0)
			return rc;
		if (!(r = kt__ring_register()))
			return -ENOMEM;
	}
	/* Unchanged: nothing to record, and the crash names log would grow
	 * with every call of a worker that names itself per job.  No lock:
	 * only this thread sets its ring's name while it lives. */
	if (r->name && !strcmp(r->name, name))
		return 0;
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	reg_take();
	free(r->name);
	r->name = copy;
	if (reg_backing->name)
		reg_backing->name(reg_backing, KT__NAME_THREAD, r->thread_id, copy, strlen(copy),
				  NULL);
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
		kt__ring_unmap(r);
	}
	free_count = 0;
	reg_drop();
	/* Names stay: kt_name() promises one id per string for the process's
	 * life, and the program keeps ids (KT_ZONE's statics). */
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
	kt__categories_fork(0);
	kt__tracks_fork(0);
}

static void fork_parent(void)
{
	kt__tracks_fork(1);
	kt__categories_fork(1);
	kt__names_fork(1);
	reg_drop();
}

static void drop_rings(struct kt__ring *list, struct kt__ring *keep)
{
	while (list) {
		struct kt__ring *next = list->next;
		if (list == keep)
			kt__ring_make_private(list);
		else
			kt__ring_unmap(list);
		list = next;
	}
}

static void fork_child(void)
{
	struct kt__ring *mine = kt__tls_full_ring();
	/* Relaxed: this thread's own field. */
	int resumes = mine && kt__load_own(&mine->prod.limit) == KT__LIMIT_BUSY;
	/* Relaxed: the only thread there is. */
	kt__store_relaxed(&kt__active, 0);
	kt__ring_consumer_forget();
	kt__tls_ring = NULL;
	pthread_setspecific(exit_key, NULL);
	/* Thread names do not carry over (SECURITY.md), kept ones neither. */
	if (key_made)
		pthread_setspecific(name_key, NULL);
	free(tls_name);
	tls_name = NULL;
	drop_rings(reg_head, resumes ? mine : NULL);
	drop_rings(free_head, NULL);
	reg_head = free_head = NULL;
	free_count = 0;
	reg_session = 0;
	reg_backing = &kt__memfd_backing;
	kt__tracks_fork(2);
	kt__categories_fork(2);
	kt__names_fork(2);
	/* No logs in the child: the parent's session owns their files. */
	kt__names_set_log(NULL, NULL);
	kt__tracks_set_log(NULL, NULL);
	kt__categories_set_log(NULL, NULL);
	reg_drop();
}

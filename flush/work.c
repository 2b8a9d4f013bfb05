/*
 * The work gate: katra's own threads (the flusher, the control thread,
 * the live page's and the scheduler follower's of a flight session) are
 * "awake" while they do work that may allocate, and asleep while they
 * wait (a futex, a timed wait, poll(), accept(), a blocking write).  A
 * fork() waits, in its prepare handler, until none is awake, and keeps
 * them asleep until its parent handler: so none of them is inside
 * malloc() when the process is copied.  An allocator that does not hold
 * its own locks across fork() (clang 14's ASan, some arenas) would
 * otherwise give the child a lock held by a thread the child does not
 * have, and the child's first allocation on that lock waits for ever.
 *
 * Not a mutex held while awake: a thread that blocked in the kernel
 * holding one (a write to a pipe the forking thread reads) would hang
 * the fork; here a thread is asleep, so a fork goes on, exactly while it
 * may block.  A thread that wants to wake while a fork waits lets the
 * fork go first, but only once: the next fork waits for it (one work
 * period), so neither a host that forks in a loop nor a thread that
 * wakes in a loop starves the other.  A thread that forks from inside its own work (a
 * callback katra's thread runs) does not wait for itself.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "flush/session_impl.h"

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
/* All under gate_lock. */
static unsigned awake;   /* threads in a work period */
static unsigned waking;  /* threads waiting in kt__work_begin() */
static unsigned owed;    /* of those, the ones a whole fork() passed by */
static unsigned want;    /* fork()s waiting in their prepare handler */
static unsigned forking; /* fork()s between prepare and parent */
static uint64_t forks;   /* fork()s done (their parent handlers) */
/* This thread is in a work period (only katra's threads ever are). */
static __thread int tls_awake;
/* kt__work_hold() depth: this thread holds a lock a fork takes. */
static __thread int tls_hold;

void kt__work_begin(void)
{
	pthread_mutex_lock(&gate_lock);
	uint64_t seen = forks;
	waking++;
	/* A fork that waits goes first, but only once: a thread that saw one
	 * go by goes before the next (its prepare waits for owed). */
	while (forking || (want && forks == seen))
		pthread_cond_wait(&gate_cond, &gate_lock);
	waking--;
	if (forks != seen)
		owed--;
	awake++;
	tls_awake = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

int kt__work_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	/* Not kt__work_begin(): the caller may hold session_lock, which a
	 * fork waiting at the gate would take next.  A fork already past the
	 * gate still races the new thread's first steps. */
	pthread_mutex_lock(&gate_lock);
	awake++;
	pthread_mutex_unlock(&gate_lock);
	int rc = kt__thread_start(t, fn, arg);
	if (rc) {
		pthread_mutex_lock(&gate_lock);
		awake--;
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate_lock);
	}
	return rc;
}

void kt__work_adopt(void)
{
	tls_awake = 1;
}

void kt__work_end(void)
{
	if (!tls_awake)
		return;
	pthread_mutex_lock(&gate_lock);
	awake--;
	tls_awake = 0;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

void kt__work_hold(int on)
{
	tls_hold += on ? 1 : -1;
}

int kt__work_pause(void)
{
	/* Held: a resume would wait for a fork that waits for that lock. */
	int was = tls_awake && !tls_hold;
	if (was)
		kt__work_end();
	return was;
}

void kt__work_resume(int was)
{
	if (was)
		kt__work_begin();
}

void kt__work_fork(int phase)
{
	if (phase == 2) {
		/* The child has one thread, this one: the others' marks are
		 * gone with them, and a lock or a wait of theirs with them. */
		pthread_mutex_init(&gate_lock, NULL);
		pthread_cond_init(&gate_cond, NULL);
		awake = (unsigned)tls_awake;
		waking = owed = want = forking = 0;
		return;
	}
	pthread_mutex_lock(&gate_lock);
	if (phase == 0) {
		/* Not for itself: a thread of katra's may fork inside its
		 * work (a callback it runs). */
		want++;
		while (awake > (unsigned)tls_awake || owed)
			pthread_cond_wait(&gate_cond, &gate_lock);
		want--;
		forking++;
	} else {
		forking--;
		forks++;
		/* Every thread waiting now saw a fork go by (kt__work_begin()
		 * takes itself off as it wakes). */
		owed = waking;
		pthread_cond_broadcast(&gate_cond);
	}
	pthread_mutex_unlock(&gate_lock);
}

/*
 * The live figures of a flight session (live.h): it has no flusher, so a
 * thread of its own looks at the rings every KT__LIVE_PUBLISH_NS, copies
 * what each got since its last look as a snapshot copies a ring
 * (ring/flight.c: newest pieces first, never waiting on a producer and
 * never writing to the ring), walks those records as the flusher walks a
 * recording session's, and publishes the page.  What the producers
 * overwrote between two looks is not seen: the thread's open zones are
 * forgotten there, so no zone is timed across the gap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flush/flush.h"
#include "flush/live.h"
#include "ring/ring.h"

#define SEEN_MAX 1024 /* rings followed; more: not walked */

/* How far a ring was walked. */
struct seen {
	struct kt__ring *r;
	uint32_t thread;
	uint64_t pos;   /* ring position walked up to (a record's end) */
};

struct kt__live_flight {
	kt_clock_calibration c0;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* CLOCK_MONOTONIC */
	int stop;              /* under lock */
	uint8_t *buf;          /* a ring's copy */
	size_t cap;
	struct seen seen[SEEN_MAX];
	size_t nseen;
};

/* Ring @r's entry (a ring given to another thread is a new one), made
 * if there is room; NULL past the table. */
static struct seen *seen_of(struct kt__live_flight *f, struct kt__ring *r)
{
	uint32_t id = kt__ring_thread_id(r);
	for (size_t i = 0; i < f->nseen; i++)
		if (f->seen[i].r == r) {
			if (f->seen[i].thread != id)
				f->seen[i] = (struct seen){ r, id, 0 };
			return &f->seen[i];
		}
	if (f->nseen == SEEN_MAX)
		return NULL;
	f->seen[f->nseen] = (struct seen){ r, id, 0 };
	return &f->seen[f->nseen++];
}

/* The records ring @r got since the last look, walked. */
static void look_ring(struct kt__live_flight *f, struct kt__live *l, struct kt__ring *r)
{
	size_t need = (size_t)kt__ring_bytes(r);
	struct seen *s = seen_of(f, r);
	if (!s)
		return;
	if (need > f->cap) {
		free(f->buf);
		f->cap = 0;
		if (!(f->buf = malloc(need)))
			return;
		f->cap = need;
	}
	kt__flight_copy cp;
	memset(&cp, 0, sizeof(cp));
	int more = kt__ring_flight_begin(r, f->buf, &cp);
	/* Back only as far as the last look reached. */
	while (more && cp.span.from > s->pos)
		more = kt__ring_flight_older(&cp);
	const kt__flight_span *sp = &cp.span;
	uint64_t end = sp->from + sp->len;
	if (!sp->len || !sp->bytes || end <= s->pos)
		return;
	uint64_t from = s->pos > sp->from ? s->pos : sp->from;
	/* Overwritten since the last look (or never seen whole): a gap. */
	kt__live_flight_ring(l, r, s->pos && s->pos < sp->from);
	kt__live_records(l, r, sp->bytes + (from - sp->from), (size_t)(end - from), 0);
	kt__live_ring(l, r, 0);
	s->pos = end;
}

static void look(struct kt__live_flight *f, struct kt__live *l)
{
	kt__ring_list list = { 0 };
	if (kt__registry_snapshot(&list) == 0)
		for (size_t i = 0; i < list.len; i++)
			look_ring(f, l, list.rings[i]);
	free(list.rings);
}

int kt__period_wait(pthread_mutex_t *lock, pthread_cond_t *cond, const int *stop, uint64_t ns)
{
	struct timespec at;
	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_nsec += (long)(ns % 1000000000u);
	at.tv_sec += (time_t)(ns / 1000000000u) + at.tv_nsec / 1000000000;
	at.tv_nsec %= 1000000000;
	int was = kt__work_pause();
	pthread_mutex_lock(lock);
	while (!*stop && pthread_cond_timedwait(cond, lock, &at) != ETIMEDOUT)
		;
	int stopped = *stop;
	pthread_mutex_unlock(lock);
	kt__work_resume(was);
	return stopped;
}

/* Wait KT__LIVE_PUBLISH_NS or until stopped.  Returns stop. */
static int wait_next(struct kt__live_flight *f)
{
	return kt__period_wait(&f->lock, &f->cond, &f->stop, KT__LIVE_PUBLISH_NS);
}

static void *flight_main(void *arg)
{
	struct kt__live_flight *f = arg;
	kt__work_adopt();
	/* Here, as the flusher does: SIGXFSZ is blocked on this thread. */
	struct kt__live *l = kt__live_start(&f->c0);
	int stop = !l;
	while (!stop) {
		stop = wait_next(f);
		look(f, l);
		kt__live_publish(l, 0, stop);
	}
	kt__live_stop(l);
	kt__work_end();
	return NULL;
}

struct kt__live_flight *kt__live_flight_start(const kt_clock_calibration *c0)
{
	if (!kt__live_wanted())
		return NULL;
	struct kt__live_flight *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	if (!f || pthread_condattr_init(&ca)) {
		free(f);
		return NULL;
	}
	f->c0 = *c0;
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (kt__work_thread_start(&f->thread, flight_main, f)) {
		pthread_cond_destroy(&f->cond);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return NULL;
	}
	return f;
}

void kt__live_flight_stop(struct kt__live_flight *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f->buf);
	free(f);
}

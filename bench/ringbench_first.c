/*
 * ringbench --first-emit N: what a new thread's ring costs it.  N threads,
 * all alive to the end (so none takes another's recycled ring), run one at
 * a time: each times its first emit (the ring made: mapped, populated and
 * its pages reached, ring/memory.c), then the rest of its ring's first
 * pass (ring size / 16 zone begins) and a second pass as long, each the
 * median of its 1000-emit batches in ns per emit.
 * Twice: each thread making its ring, then with kt_session_options'
 * spare_rings = N (made by kt_session_start, on the starter's time).  A
 * flight session, so no pass waits for a flusher: the passes differ by
 * what the pages cost.  Medians over the threads; the library's ring
 * size unless --ring-size.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/katra.h>
#include "bench/ringbench.h"

struct first {
	pthread_mutex_t turn;
	pthread_barrier_t end;
	uint32_t id;
	uint64_t pass; /* records in one pass over the ring */
	double first_ms[MAX_THREADS], rest_ns[MAX_THREADS], second_ns[MAX_THREADS];
	int next;
};

/* Batch costs of the thread whose turn it is (under f->turn). */
#define SAMPLES 65536
static double batch_ns[SAMPLES];

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* @n emits in batches of BATCH: the median batch's ns per emit (not the
 * mean: a pass outlasts the scheduler's slices on a shared machine). */
static double pass_ns(const struct first *f, uint64_t n)
{
	int k = 0;
	for (uint64_t done = 0; done + BATCH <= n; done += BATCH) {
		uint64_t t0 = now_ns();
#pragma GCC unroll 8
		for (int i = 0; i < BATCH; i++)
			kt_zone_begin(f->id);
		if (k < SAMPLES)
			batch_ns[k++] = (double)(now_ns() - t0) / BATCH;
	}
	for (uint64_t i = n / BATCH * BATCH; i < n; i++)
		kt_zone_begin(f->id);
	return k ? median(batch_ns, k) : 0;
}

static void *first_thread(void *arg)
{
	struct first *f = arg;
	pthread_mutex_lock(&f->turn);
	int k = f->next++;
	uint64_t t0 = now_ns();
	kt_zone_begin(f->id);
	f->first_ms[k] = (double)(now_ns() - t0) / 1e6;
	f->rest_ns[k] = pass_ns(f, f->pass - 1);
	f->second_ns[k] = pass_ns(f, f->pass);
	pthread_mutex_unlock(&f->turn);
	pthread_barrier_wait(&f->end);
	return NULL;
}

/* One round of @n threads, with @spare rings made by the session (0:
 * none).  0, or 1 when the session failed. */
static int first_round(struct first *f, int n, unsigned spare)
{
	kt_session *s;
	kt_session_options so = { .mode = KT_SESSION_FLIGHT, .spare_rings = spare };
	if (kt_session_start(NULL, &so, &s)) {
		fprintf(stderr, "ringbench: session: %s\n", kt_session_get_start_error());
		return 1;
	}
	pthread_t t[MAX_THREADS];
	f->next = 0;
	pthread_mutex_init(&f->turn, NULL);
	pthread_barrier_init(&f->end, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, first_thread, f);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&f->end);
	pthread_mutex_destroy(&f->turn);
	kt_summary sum = { 0 };
	int rc = kt_session_stop(s, &sum);
	printf("%-16s %7d %12.2f %15.2f %15.2f %9llu\n", spare ? "spare_rings" : "own_ring", n,
	       median(f->first_ms, n), median(f->rest_ns, n), median(f->second_ns, n),
	       (unsigned long long)sum.events_dropped);
	kt_summary_release(&sum);
	/* The threads' rings go back to the free list: the next round's
	 * threads would take them, so they are unmapped first. */
	kt_shutdown();
	return rc != 0;
}

int first_emit(const struct opts *o, int threads)
{
	static struct first f;
	kt_config cfg = { .ring_size = o->ring_size, .overflow = o->policy };
	if (kt_init(&cfg)) {
		fprintf(stderr, "ringbench: kt_init failed\n");
		return 1;
	}
	f.id = kt_name("first_zone");
	f.pass = (o->ring_size ? o->ring_size : KT_RING_DEFAULT) / 16;
	printf("%-16s %7s %12s %15s %15s %9s\n", "run", "threads", "first ms", "rest of pass ns",
	       "second pass ns", "dropped");
	int rc = first_round(&f, threads, 0) || first_round(&f, threads, (unsigned)threads);
	printf("(medians over the threads; a pass = %llu zone begins, the ring's bytes)\n",
	       (unsigned long long)f.pass);
	return rc;
}

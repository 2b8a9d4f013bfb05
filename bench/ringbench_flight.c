/*
 * ringbench --flight: a flight session under a frame loop at full rate.
 * Producer threads emit zone begin/end pairs as fast as they can while the
 * main thread takes a snapshot every second; the table gives each
 * snapshot's latency and window, the emit cost outside and during
 * snapshots (median and p99 per 1000-event batch), and resident memory
 * before the first snapshot, after it and at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <katra/atomic.h>
#include <katra/katra.h>
#include "bench/ringbench_flight.h"

#define BATCH_PAIRS 500              /* 1000 events per timed batch */
#define BUCKETS 20000                /* cost histogram: 0.01 ns steps to 200 ns */

struct producer {
	pthread_t t;
	uint32_t id;
	uint64_t hist[2][BUCKETS];   /* [during a snapshot][ns/event * 100] */
	uint64_t events;
};

static int stop_flag;
static int snapping;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	/* Relaxed: flags read for their values alone. */
	while (!kt__load_stale(&stop_flag)) {
		int during = kt__load_stale(&snapping);
		uint64_t t0 = mono_ns();
		for (int i = 0; i < BATCH_PAIRS; i++) {
			kt_zone_begin(p->id);
			kt_zone_end(p->id);
		}
		uint64_t dt = mono_ns() - t0;
		during |= kt__load_stale(&snapping);
		uint64_t b = dt * 100 / (2 * BATCH_PAIRS);
		p->hist[during][b < BUCKETS ? b : BUCKETS - 1]++;
		p->events += 2 * BATCH_PAIRS;
	}
	return NULL;
}

/* The @q quantile of every producer's histogram @k, in ns per event. */
static double hist_q(struct producer *p, int n, int k, double q)
{
	uint64_t total = 0, seen = 0;
	for (int i = 0; i < n; i++)
		for (int b = 0; b < BUCKETS; b++)
			total += p[i].hist[k][b];
	for (int b = 0; b < BUCKETS && total; b++) {
		for (int i = 0; i < n; i++)
			seen += p[i].hist[k][b];
		if ((double)seen >= q * (double)total)
			return b / 100.0;
	}
	return 0;
}

/* Resident memory now (VmRSS), in KiB. */
static long rss_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Ticks per ns, measured over the run. */
struct tick_rate {
	uint64_t t0, n0;
};

static double ticks_per_ns(const struct tick_rate *r)
{
	return (double)(kt_now() - r->t0) / (double)(mono_ns() - r->n0);
}

struct shots {
	uint64_t *lat_ns, *cpu_ns, *window; /* window: ticks */
	uint64_t later_max;                 /* latency, the first left out */
	int n;
	uint64_t lapped, head_events, bytes;
};

/* One snapshot a second, @count of them, into a file that is removed. */
static int take_snapshots(kt_session *s, int count, struct shots *sh, long *rss_first)
{
	char path[4096];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/ringbench-flight-%ld.katra", tmp && *tmp ? tmp : "/tmp",
		 (long)getpid());
	for (int i = 0; i < count; i++) {
		struct timespec nap = { 1, 0 };
		nanosleep(&nap, NULL);
		kt_snapshot_result res;
		/* Relaxed: the producers only classify their batches by it. */
		kt__store_relaxed(&snapping, 1);
		uint64_t t0 = mono_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		int rc = kt_session_snapshot(s, path, -1, 0, 0, &res);
		sh->lat_ns[i] = mono_ns() - t0;
		sh->cpu_ns[i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (i && sh->lat_ns[i] > sh->later_max)
			sh->later_max = sh->lat_ns[i];
		kt__store_relaxed(&snapping, 0);
		unlink(path);
		if (rc) {
			fprintf(stderr, "ringbench: snapshot: %s\n", kt_strerror(rc));
			return -1;
		}
		sh->window[i] = res.window_end - res.window_start;
		sh->lapped += res.bytes_lapped;
		sh->head_events += res.events;
		sh->bytes += res.bytes_on_disk;
		sh->n++;
		if (i == 0)
			*rss_first = rss_now();
	}
	return 0;
}

/* Resident memory (KiB) before the first snapshot, after it, at the end. */
struct rss {
	long start, first, end;
};

static void print_table(struct producer *p, int threads, struct shots *sh, double tpn,
			const struct rss *rss, size_t ring, uint64_t secs)
{
	uint64_t events = 0;
	for (int i = 0; i < threads; i++)
		events += p[i].events;
	qsort(sh->lat_ns, (size_t)sh->n, sizeof(uint64_t), cmp_u64);
	qsort(sh->window, (size_t)sh->n, sizeof(uint64_t), cmp_u64);
	qsort(sh->cpu_ns, (size_t)sh->n, sizeof(uint64_t), cmp_u64);
	int n = sh->n;
	printf("flight: %d producers x %zu MiB rings, %d snapshots (1/s), %.1f M events/s\n",
	       threads, ring >> 20, n, (double)events / (double)secs / 1e6);
	/* The first snapshot maps the copies' memory when threads registered
	 * after the session started (as these producers do): apart. */
	printf("  snapshot latency   median %.1f ms, max %.1f ms (after the first %.1f ms)\n",
	       (double)sh->lat_ns[n / 2] / 1e6, (double)sh->lat_ns[n - 1] / 1e6,
	       (double)sh->later_max / 1e6);
	printf("  snapshot CPU       median %.1f ms, max %.1f ms (the snapshot thread's)\n",
	       (double)sh->cpu_ns[n / 2] / 1e6, (double)sh->cpu_ns[n - 1] / 1e6);
	printf("  window length      median %.1f ms, min %.1f ms\n",
	       (double)sh->window[n / 2] / tpn / 1e6, (double)sh->window[0] / tpn / 1e6);
	printf("  events per snapshot %.2f M, file %.1f MiB, lapped %.1f KiB (mean)\n",
	       (double)sh->head_events / n / 1e6, (double)sh->bytes / n / 1048576.0,
	       (double)sh->lapped / n / 1024.0);
	printf("  emit ns/event      outside snapshots median %.2f p99 %.2f; "
	       "during median %.2f p99 %.2f\n",
	       hist_q(p, threads, 0, 0.5), hist_q(p, threads, 0, 0.99), hist_q(p, threads, 1, 0.5),
	       hist_q(p, threads, 1, 0.99));
	printf("  RSS                before the first snapshot %ld KiB, after it %ld KiB, "
	       "at the end %ld KiB\n", rss->start, rss->first, rss->end);
}

int ringbench_flight(size_t ring_size, int threads, int snapshots, int codec)
{
	kt_config cfg = { .ring_size = ring_size };
	int rc = kt_init(&cfg);
	kt_session_options so = { .mode = KT_SESSION_FLIGHT, .codec = codec, .given = KT_GIVEN_CODEC,
				  .listen = 1 };
	kt_session *s = NULL;
	if (rc || (rc = kt_session_start(NULL, &so, &s))) {
		fprintf(stderr, "ringbench: flight session: %s\n", kt_strerror(rc));
		return 1;
	}
	struct producer *p = calloc((size_t)threads, sizeof(*p));
	struct shots sh = { calloc((size_t)snapshots, 8), calloc((size_t)snapshots, 8),
			    calloc((size_t)snapshots, 8), 0, 0, 0, 0, 0 };
	if (!p || !sh.lat_ns || !sh.cpu_ns || !sh.window)
		return 1;
	struct tick_rate tr = { kt_now(), mono_ns() };
	uint32_t id = kt_name("frame_zone");
	for (int i = 0; i < threads; i++) {
		p[i].id = id;
		pthread_create(&p[i].t, NULL, produce, &p[i]);
	}
	uint64_t t0 = mono_ns();
	struct rss rss = { rss_now(), -1, -1 };
	rc = take_snapshots(s, snapshots, &sh, &rss.first);
	rss.end = rss_now();
	/* Relaxed: the producers poll it for its value; pthread_join() orders
	 * what they leave. */
	kt__store_relaxed(&stop_flag, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(p[i].t, NULL);
	uint64_t secs = (mono_ns() - t0) / 1000000000u;
	double tpn = ticks_per_ns(&tr);
	kt_session_stop(s, NULL);
	if (!rc && sh.n)
		print_table(p, threads, &sh, tpn, &rss, ring_size, secs ? secs : 1);
	free(p);
	free(sh.lat_ns);
	free(sh.window);
	free(sh.cpu_ns);
	return rc ? 1 : 0;
}

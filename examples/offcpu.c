/*
 * offcpu - issue #31's program: why a zone was slow.  One thread runs three
 * zones, each about 10 ms, a few rounds: "sleep" sleeps (off-CPU, blocked),
 * "mutex" waits on a mutex another thread holds for 10 ms (off-CPU,
 * blocked on the lock), "spin" spins on the clock (on-CPU all along),
 * "pinned" spins on CPU 0 beside a thread that spins there too (off-CPU,
 * preempted, about half of it).  The
 * session follows its threads' context switches (kt_session_options.sched),
 * so `katra stats` says each zone's on-CPU and off-CPU time.
 *
 *   offcpu [FILE [ROUNDS]]      default offcpu.katra, 5 rounds
 *   katra stats offcpu.katra
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <katra/katra.h>

#define ZONE_NS 10000000L

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held = PTHREAD_COND_INITIALIZER;
static int holding;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void pause_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	while (nanosleep(&ts, &ts))
		;
}

/* The holder: takes the lock, says so, keeps it ZONE_NS, once per round. */
static void *holder(void *arg)
{
	int rounds = *(int *)arg;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&gate);
		while (holding != 1)
			pthread_cond_wait(&held, &gate);
		pthread_mutex_lock(&lock);
		holding = 2;
		pthread_cond_broadcast(&held);
		pthread_mutex_unlock(&gate);
		pause_ns(ZONE_NS);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

/* One round of the mutex zone: ask the holder to take the lock, wait until
 * it has, then time the wait for it inside the zone. */
static void contended(void)
{
	pthread_mutex_lock(&gate);
	holding = 1;
	pthread_cond_broadcast(&held);
	while (holding != 2)
		pthread_cond_wait(&held, &gate);
	holding = 0;
	pthread_mutex_unlock(&gate);
	KT_ZONE("mutex");
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

static void spin_ns(long ns)
{
	long end = now_ns() + ns;
	while (now_ns() < end)
		;
}

/* The hog: spins on CPU 0 for twice a zone's time. */
static void *hog(void *arg)
{
	(void)arg;
	spin_ns(2 * ZONE_NS);
	return NULL;
}

/* One round of the pinned zone: this thread and the hog on CPU 0 alone,
 * the zone spinning 2 zones' time; then this thread's CPUs back.  Where
 * CPU 0 cannot be had the zone only spins. */
static void pinned(void)
{
	cpu_set_t all, zero;
	pthread_t h;
	pthread_attr_t a;
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	if (pthread_attr_init(&a))
		return;
	int got = !sched_getaffinity(0, sizeof(all), &all);
	int ok = got && !sched_setaffinity(0, sizeof(zero), &zero) &&
		 !pthread_attr_setaffinity_np(&a, sizeof(zero), &zero) &&
		 !pthread_create(&h, &a, hog, NULL);
	pthread_attr_destroy(&a);
	{
		KT_ZONE("pinned");
		spin_ns(2 * ZONE_NS);
	}
	if (ok)
		pthread_join(h, NULL);
	if (got)
		sched_setaffinity(0, sizeof(all), &all);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "offcpu.katra";
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	kt_session_options o = { .sched = KT_SCHED_ON };
	kt_session *s;
	pthread_t t;
	if (rounds < 1 || kt_session_start(path, &o, &s)) {
		fprintf(stderr, "offcpu: %s\n", kt_session_get_start_error());
		return 1;
	}
	if (pthread_create(&t, NULL, holder, &rounds))
		return 1;
	kt_thread_name("main");
	KT_MESSAGE("log", "start"); /* the ring first: followed from here */
	pause_ns(50 * 1000000L); /* the flusher follows it (a period, on a loaded machine more) */
	for (int i = 0; i < rounds; i++) {
		{
			KT_ZONE("sleep");
			pause_ns(ZONE_NS);
		}
		contended();
		{
			KT_ZONE("spin");
			spin_ns(ZONE_NS);
		}
		pinned();
		KT_FRAME("round");
	}
	pthread_join(t, NULL);
	return kt_session_stop(s, NULL) != 0;
}

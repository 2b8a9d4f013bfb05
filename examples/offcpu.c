/*
 * offcpu - issue #31's program: why a zone was slow.  One thread runs three
 * zones, each about 10 ms, a few rounds: "sleep" sleeps (off-CPU, blocked),
 * "mutex" waits on a mutex another thread holds for 10 ms (off-CPU,
 * blocked on the lock), "spin" spins on the clock (on-CPU all along).  The
 * session follows its threads' context switches (kt_session_options.sched),
 * so `katra stats` says each zone's on-CPU and off-CPU time.
 *
 *   offcpu [FILE [ROUNDS]]      default offcpu.katra, 5 rounds
 *   katra stats offcpu.katra
 */
#define _GNU_SOURCE
#include <pthread.h>
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
	pause_ns(5 * 1000000L);     /* a flush period or more to be seen */
	for (int i = 0; i < rounds; i++) {
		{
			KT_ZONE("sleep");
			pause_ns(ZONE_NS);
		}
		contended();
		{
			KT_ZONE("spin");
			long end = now_ns() + ZONE_NS;
			while (now_ns() < end)
				;
		}
		KT_FRAME("round");
	}
	pthread_join(t, NULL);
	return kt_session_stop(s, NULL) != 0;
}

/*
 * rss_probe.c - a program shaped like a renderer that ships with katra
 * linked and tracing off: four tile threads that name themselves and run
 * zones, counters and memory events with no session ever started.  It
 * prints its peak and current resident set once every thread has worked
 * and while all still live:
 *
 *     rss_kb N hwm_kb N
 *
 * tests/rss_check.sh runs it built twice, against the library and with
 * KATRA_DISABLE (no library), and requires the two within 1 MiB (issue
 * 25, item 5: a named thread's 4 MiB ring once cost its RSS untraced).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <katra/katra.h>

#define THREADS 4
#define TILE (1u << 20) /* each thread's own work buffer */

static pthread_barrier_t worked, measured;
static volatile unsigned sink; /* the work is read, so no build drops it */

static void *tile(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "tile %d", (int)(long)arg);
	kt_thread_name(name);
	uint32_t pixels = kt_name("pixels"), pool = kt_name("tiles");
	unsigned char *buf = malloc(TILE);
	if (!buf)
		abort();
	kt_alloc_pool(pool, buf, TILE);
	unsigned sum = 0;
	for (int pass = 0; pass < 64; pass++) {
		KT_ZONE("tile");
		memset(buf, pass, TILE);
		for (unsigned i = 0; i < TILE; i += 4096)
			sum += buf[i];
		kt_counter(pixels, (int64_t)sum);
	}
	sink += sum;
	kt_free_pool(pool, buf);
	pthread_barrier_wait(&worked);
	pthread_barrier_wait(&measured);
	free(buf);
	return NULL;
}

/* A field of /proc/self/status in kB, or -1. */
static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

int main(void)
{
	pthread_t th[THREADS];
	kt_thread_name("main");
	pthread_barrier_init(&worked, NULL, THREADS + 1);
	pthread_barrier_init(&measured, NULL, THREADS + 1);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, tile, (void *)i))
			return 1;
	pthread_barrier_wait(&worked);
	printf("rss_kb %ld hwm_kb %ld\n", status_kb("VmRSS"), status_kb("VmHWM"));
	pthread_barrier_wait(&measured);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}

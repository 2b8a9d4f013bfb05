/*
 * readbench - how fast the merged read (kt_reader_next) goes on a trace,
 * alone: no formatting, no output.  Each round opens the file, reads every
 * event in timestamp order and converts its time to ns, and prints the
 * round's wall and CPU time, events per second and the reader's peak
 * buffer bytes; the median round closes the table.
 *
 *   readbench TRACE [ROUNDS]     (default 5 rounds)
 *
 * Run the Release build (build-rel/readbench) on an idle machine; the page
 * cache holds the file after the first round.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <katra/reader.h>

struct round {
	double wall_s, cpu_s;
	uint64_t events, peak_bytes;
};

static double seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass over @path; 0, or the reader's negative code. */
static int one_round(const char *path, struct round *out, uint64_t *checksum)
{
	kt_reader *r;
	kt_reader_error err;
	int rc = kt_reader_open(path, &err, &r);
	if (rc) {
		fprintf(stderr, "readbench: %s: %s\n", path, err.message);
		return rc;
	}
	double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
	kt_event ev;
	uint64_t n = 0, sum = 0;
	while ((rc = kt_reader_next(r, &ev)) == 1) {
		n++;
		sum += kt_reader_get_time_ns(r, ev.ts);
	}
	out->wall_s = seconds(CLOCK_MONOTONIC) - w0;
	out->cpu_s = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
	out->events = n;
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	out->peak_bytes = st.peak_buffer_bytes;
	if (rc < 0)
		fprintf(stderr, "readbench: %s: %s\n", path, kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
	*checksum ^= sum; /* keeps the conversion from being optimized away */
	return rc;
}

static int by_wall(const void *a, const void *b)
{
	double x = ((const struct round *)a)->wall_s, y = ((const struct round *)b)->wall_s;
	return (x > y) - (x < y);
}

static void row(const char *label, const struct round *r)
{
	printf("%-8s %12llu %9.3f %9.3f %10.1f %12llu\n", label, (unsigned long long)r->events,
	       r->wall_s, r->cpu_s, (double)r->events / r->wall_s / 1e6,
	       (unsigned long long)r->peak_bytes);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 ? stderr : stdout, "usage: readbench TRACE [ROUNDS]\n");
		return argc < 2 ? 2 : 0;
	}
	int rounds = argc == 3 ? atoi(argv[2]) : 5;
	if (rounds < 1 || rounds > 100) {
		fprintf(stderr, "readbench: ROUNDS is 1 to 100\n");
		return 2;
	}
	struct round r[100];
	uint64_t checksum = 0;
	printf("%-8s %12s %9s %9s %10s %12s\n", "round", "events", "wall s", "cpu s", "Mevents/s",
	       "peak bytes");
	for (int i = 0; i < rounds; i++) {
		if (one_round(argv[1], &r[i], &checksum))
			return 1;
		char label[16];
		snprintf(label, sizeof(label), "%d", i + 1);
		row(label, &r[i]);
	}
	qsort(r, (size_t)rounds, sizeof(*r), by_wall);
	row("median", &r[rounds / 2]);
	fprintf(stderr, "(checksum %llx)\n", (unsigned long long)checksum);
	return 0;
}

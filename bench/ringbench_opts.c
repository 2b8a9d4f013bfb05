/*
 * ringbench's command line: usage() and the options into a struct opts
 * (bench/ringbench.h), one function per group of options.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/capture.h>
#include <katra/katra.h>
#include "bench/ringbench.h"

void usage(FILE *f)
{
	fprintf(f,
		"usage: ringbench [options]\n"
		"  (no options)        the built-in frame loop: main, render and worker threads,\n"
		"                      ~10M events/s in total for 5 s, written to a trace\n"
		"  --seconds S         run time of the frame loop (default 5)\n"
		"  --rate R|max        total events/s of the frame loop (default 10000000)\n"
		"  --codec C           chunk codec: none, lz4, lz4-delta, compact (the\n"
		"                      default: fields predicted, misses stored) or\n"
		"                      compact-zstd\n"
		"  --policy P          overflow policy: wait (the library's default: a full\n"
		"                      ring waits for the flusher, within bounds), block or\n"
		"                      drop\n"
		"  --io uring|pwrite|auto  I/O backend (default auto: io_uring where allowed)\n"
		"  --ring-size BYTES   per-thread ring, a power of two (default 4 MiB;\n"
		"                      64 MiB with --producer-only)\n"
		"  --out PATH          write the trace here with a plain session instead\n"
		"                      of the capture manager\n"
		"  --threads N         producer threads of the frame loop (default 3; roles\n"
		"                      main, render, worker repeat)\n"
		"  --flight N          a flight session: 2 producers at full rate, N\n"
		"                      snapshots 1 s apart (64 MiB rings unless --ring-size)\n"
		"  --first-emit N      N threads each time their first emit (the ring\n"
		"                      made) and their ring's first and second passes,\n"
		"                      then again with N spare rings\n"		"  --burst N           N bursts of call trees of empty zones at full speed,\n"
		"                      each --burst-ms long (default 500) and then a pause\n"
		"                      as long, one thread, every default of katra\n"
		"  --producer-only     emit cost alone: katra, katra_crashfiles, floor,\n"
		"                      katra_disabled, katra_flight (a flight session) and\n"
		"                      the profiler API's rows\n"
		"  --baselines         those rows plus clock_gettime, mutex_write (a shared\n"
		"                      buffer drained with write()) and fprintf, same run\n"
		"  --recorded          with --producer-only, under `katra record`: the katra\n"
		"                      row emits into the session the environment started\n"
		"                      (katra_record), beside the floor row\n"
		"  --peer lttng        add an LTTng-UST tracepoint row recording to disk (needs\n"
		"                      liblttng-ust-dev at build time and lttng-tools)\n"
		"  --find-max-rate     highest rate held for --seconds (0 drops, and at least\n"
		"                      99%% of the paced events emitted), for 1 and 2\n"
		"                      threads, raw and --codec, io_uring and pwrite; the\n"
		"                      search starts at --rate if given (else 4M), doubling\n"
		"                      until a rate drops, then halving the gap to 8%%\n"
		"  --codec-only        with --find-max-rate, only the --codec rows\n"
		"  --report-rss        print resident memory at 5 s and at the end\n"
		"  --events M          the frame loop stops after M events instead of --seconds;\n"
		"                      with --producer-only, events per row (default 20000000)\n"
		"  --payload B         add a B-byte user record to every unit of the frame loop\n"
		"  --names N           the frame loop's inner zones and user records take N\n"
		"                      names (site_0...), in no short cycle (default: one each)\n"
		"  --workload NAME     a workload of the corpus in place of the frame loop\n"
		"                      (" RB_WORKLOAD_NAMES ": bench/workloads.h), at --rate,\n"
		"                      on its own threads unless --threads; also with\n"
		"                      --find-max-rate (its threads, and one more if 1)\n"
		"  --untraced          with --workload: its records are counted, not emitted\n"
		"                      (the program's own time, to set the traced one against)\n"
		"  --json              print {\"runs\": [...]} (see bench/README.md)\n"
		"capture (the frame loop without --out goes through the capture manager):\n"
		"  --capture-root DIR  where captures are published (default\n"
		"                      $TMPDIR/ringbench-captures, emptied of old ones)\n"
		"  --run-id ID         the run's id (default ringbench)\n"
		"  --epoch N           the run's epoch (default 1)\n"
		"  --duration S        the capture's duration cap, at most 30 (default the\n"
		"                      run's length plus 5 s)\n"
		"  --max-bytes B       the capture's byte cap, 1M..256M (default 256M)\n"
		"  --cap-policy P      stop (output-too-large) or keep-newest (default: the\n"
		"                      oldest segments go, the head loss is reported)\n"
		"  -h, --help          this text\n");
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static const struct option lo[] = {
	{ "seconds", required_argument, NULL, 's' },
	{ "rate", required_argument, NULL, 'r' },
	{ "codec", required_argument, NULL, 'c' },
	{ "policy", required_argument, NULL, 'p' },
	{ "ring-size", required_argument, NULL, 'R' },
	{ "io", required_argument, NULL, 'I' },
	{ "out", required_argument, NULL, 'o' },
	{ "producer-only", no_argument, NULL, 'P' },
	{ "flight", required_argument, NULL, 'W' },
	{ "burst", required_argument, NULL, 'U' },
	{ "burst-ms", required_argument, NULL, 'u' },
	{ "first-emit", required_argument, NULL, 'f' + 256 },
	{ "events", required_argument, NULL, 'e' },
	{ "threads", required_argument, NULL, 't' },
	{ "find-max-rate", no_argument, NULL, 'F' },
	{ "codec-only", no_argument, NULL, 'F' + 256 },
	{ "report-rss", no_argument, NULL, 'M' },
	{ "baselines", no_argument, NULL, 'B' },
	{ "peer", required_argument, NULL, 'L' },
	{ "recorded", no_argument, NULL, 'r' + 256 },
	{ "payload", required_argument, NULL, 'p' + 256 },
	{ "names", required_argument, NULL, 'n' + 256 },
	{ "workload", required_argument, NULL, 'w' + 256 },
	{ "untraced", no_argument, NULL, 'x' + 256 },
	{ "json", no_argument, NULL, 'j' },
	{ "capture-root", required_argument, NULL, 'C' },
	{ "run-id", required_argument, NULL, 'C' + 256 },
	{ "epoch", required_argument, NULL, 'E' },
	{ "duration", required_argument, NULL, 'D' },
	{ "max-bytes", required_argument, NULL, 'X' },
	{ "cap-policy", required_argument, NULL, 'K' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The options of one group: 0, 2 (a bad value, said on stderr), or -1 (not
 * one of the group's).  What is measured and how: --seconds, --rate,
 * --codec, --policy, --ring-size, --io.
 */
static int opt_run(int c, struct opts *o)
{
	char *end;
	switch (c) {
	case 's':
		o->seconds = strtod(optarg, &end);
		if (*end || !(o->seconds > 0 && o->seconds <= 3600)) {
			fprintf(stderr, "ringbench: --seconds wants 0 < S <= 3600, got '%s'\n", optarg);
			return 2;
		}
		return 0;
	case 'r':
		if (!strcmp(optarg, "max")) {
			o->rate = 0;
			return 0;
		}
		o->rate = strtod(optarg, &end);
		o->rate_set = 1;
		if (*end || !(o->rate > 0)) {
			fprintf(stderr, "ringbench: --rate wants events/s or max, got '%s'\n", optarg);
			return 2;
		}
		return 0;
	case 'c':
		o->codec = -1;
		for (int i = 0; i <= KT_CODEC_COMPACT_ZSTD; i++)
			if (!strcmp(optarg, codec_names[i]))
				o->codec = i;
		if (o->codec < 0) {
			fprintf(stderr, "ringbench: --codec wants none, lz4, lz4-delta, compact or "
					"compact-zstd, got '%s'\n", optarg);
			return 2;
		}
		return 0;
	case 'p':
		o->policy = -1;
		for (int p = KT_OVERFLOW_WAIT; p <= KT_OVERFLOW_DROP; p++)
			if (!strcmp(optarg, kt_overflow_name((unsigned)p)))
				o->policy = p;
		if (o->policy < 0) {
			fprintf(stderr, "ringbench: --policy wants wait, block or drop, got '%s'\n",
				optarg);
			return 2;
		}
		return 0;
	case 'R':
		if (parse_size(optarg, &o->ring_size)) {
			fprintf(stderr, "ringbench: --ring-size wants bytes (K/M suffix), got '%s'\n",
				optarg);
			return 2;
		}
		return 0;
	case 'I':
		if (!strcmp(optarg, "uring"))
			o->io = KT_IO_URING;
		else if (!strcmp(optarg, "pwrite"))
			o->io = KT_IO_PWRITE;
		else if (!strcmp(optarg, "auto"))
			o->io = KT_IO_AUTO;
		else {
			fprintf(stderr, "ringbench: --io wants uring, pwrite or auto, got '%s'\n",
				optarg);
			return 2;
		}
		return 0;
	}
	return -1;
}

/* The workload's shape: --burst, --burst-ms, --events, --payload, --names,
 * --threads, --workload, --untraced. */
static int opt_shape(int c, struct opts *o)
{
	char *end;
	switch (c) {
	case 'U':
	case 'u': {
		long v = strtol(optarg, &end, 10);
		if (*end || v < 1 || v > 100000) {
			fprintf(stderr, "ringbench: --%s wants 1 to 100000, got '%s'\n",
				c == 'U' ? "burst" : "burst-ms", optarg);
			return 2;
		}
		if (c == 'U')
			o->bursts = (int)v;
		else
			o->burst_ms = (unsigned)v;
		return 0;
	}
	case 'f' + 256: {
		long v = strtol(optarg, &end, 10);
		if (*end || v < 1 || v > MAX_THREADS) {
			fprintf(stderr, "ringbench: --first-emit wants 1 to %d threads, got '%s'\n",
				MAX_THREADS, optarg);
			return 2;
		}
		o->first_emit = (int)v;
		return 0;
	}
	case 'e':
		o->events = strtoull(optarg, &end, 10);
		if (*end || o->events < 10 * BATCH) {
			fprintf(stderr, "ringbench: --events wants at least %d, got '%s'\n",
				10 * BATCH, optarg);
			return 2;
		}
		o->frame_events = o->events;
		return 0;
	case 'p' + 256: {
		unsigned long v = strtoul(optarg, &end, 10);
		if (*end || v > 4096) {
			fprintf(stderr, "ringbench: --payload wants 0..4096 bytes, got '%s'\n",
				optarg);
			return 2;
		}
		o->payload = (unsigned)v;
		return 0;
	}
	case 'n' + 256: {
		unsigned long v = strtoul(optarg, &end, 10);
		if (*end || v > MAX_NAMES) {
			fprintf(stderr, "ringbench: --names wants 0..%d, got '%s'\n", MAX_NAMES,
				optarg);
			return 2;
		}
		o->names = (unsigned)v;
		return 0;
	}
	case 't':
		o->threads = (int)strtol(optarg, &end, 10);
		if (*end || o->threads < 1 || o->threads > MAX_THREADS) {
			fprintf(stderr, "ringbench: --threads wants 1..%d, got '%s'\n",
				MAX_THREADS, optarg);
			return 2;
		}
		return 0;
	case 'w' + 256:
		if (!(o->workload = rb_workload_find(optarg))) {
			fprintf(stderr, "ringbench: --workload wants %s, got '%s'\n",
				RB_WORKLOAD_NAMES, optarg);
			return 2;
		}
		return 0;
	case 'x' + 256:
		rb_workload_untraced = 1;
		return 0;
	}
	return -1;
}

/* The capture manager's: --epoch, --duration, --max-bytes, --cap-policy;
 * and --peer. */
static int opt_capture(int c, struct opts *o)
{
	char *end;
	switch (c) {
	case 'L':
		if (strcmp(optarg, "lttng")) {
			fprintf(stderr, "ringbench: --peer knows lttng, not '%s'\n", optarg);
			return 2;
		}
		o->peer_lttng = 1;
		o->producer_only = 1;
		return 0;
	case 'E':
		o->epoch = strtoull(optarg, &end, 10);
		if (*end || !*optarg) {
			fprintf(stderr, "ringbench: --epoch wants a whole number, got '%s'\n", optarg);
			return 2;
		}
		return 0;
	case 'D':
		o->duration = strtod(optarg, &end);
		if (*end || !(o->duration > 0 && o->duration <= 30)) {
			fprintf(stderr, "ringbench: --duration wants 0 < S <= 30, got '%s'\n", optarg);
			return 2;
		}
		return 0;
	case 'X': {
		size_t v;
		if (parse_size(optarg, &v) || v < (1u << 20) || v > KT_CAPTURE_MAX_BYTES) {
			fprintf(stderr, "ringbench: --max-bytes wants 1M..256M, got '%s'\n", optarg);
			return 2;
		}
		o->max_bytes = v;
		return 0;
	}
	case 'K':
		if (!strcmp(optarg, "stop"))
			o->cap_policy = KT_CAP_STOP;
		else if (!strcmp(optarg, "keep-newest"))
			o->cap_policy = KT_CAP_KEEP_NEWEST;
		else {
			fprintf(stderr, "ringbench: --cap-policy wants stop or keep-newest, got '%s'\n",
				optarg);
			return 2;
		}
		return 0;
	}
	return -1;
}

int rb_parse_opts(int argc, char **argv, struct opts *o)
{
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; continue;
		case 'P': o->producer_only = 1; continue;
		case 'W': o->flight = atoi(optarg); continue;
		case 'F': o->find_max_rate = 1; continue;
		case 'F' + 256: o->codec_only = 1; continue;
		case 'M': o->report_rss = 1; continue;
		case 'B': o->baselines = 1; o->producer_only = 1; continue;
		case 'r' + 256: o->recorded = 1; o->producer_only = 1; continue;
		case 'j': o->json = 1; continue;
		case 'C': o->capture_root = optarg; continue;
		case 'C' + 256: o->run_id = optarg; continue;
		case 'h': usage(stdout); return 0;
		}
		if ((rc = opt_run(c, o)) < 0 && (rc = opt_shape(c, o)) < 0 &&
		    (rc = opt_capture(c, o)) < 0) {
			usage(stderr);
			return 2;
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "ringbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

/*
 * ringbench - katra's main job and benchmark.
 *
 * With no arguments it runs the built-in workload, a rendering-like frame
 * loop: a main, a render and a worker thread emitting nested zones,
 * counters, a frame mark per frame and flows from main to render, about
 * 10M events/s in total for 5 s, through the producer API, captured by
 * the capture manager (katra/capture.h) into a root directory, which
 * trims, hashes and publishes the trace with its sidecar.
 *
 * --producer-only measures the emit cost alone, in one run and one binary,
 * side by side: `katra` (kt_zone_begin with a session draining),
 * `katra_crashfiles` (the same with the rings backed by crash files),
 * `floor` (rdtsc plus a 16-byte store into a thread-local array) and
 * `katra_disabled` (kt_zone_begin with no session).  Costs come from
 * per-batch timings, so the clock reads do not dominate what is measured.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include <katra/capture.h>
#include <katra/katra.h>
#include <katra/reader.h>
#include "bench/ringbench_api.h"
#include "bench/ringbench_burst.h"
#include "bench/ringbench_flight.h"
#include "bench/ringbench_workloads.h"

struct opts {
	double seconds;
	double rate;           /* events/s in total; 0 = as fast as possible */
	int codec;
	int policy;
	size_t ring_size;
	const char *out;
	int json;
	int producer_only;
	int find_max_rate;
	int rate_set;          /* --rate was given: --find-max-rate starts there */
	int codec_only;        /* --codec-only: --find-max-rate skips the raw rows */
	int report_rss;
	int baselines;
	int peer_lttng;
	uint64_t frame_events;  /* --events for the frame loop: a count, not a time */
	unsigned payload;       /* --payload B */
	unsigned names;         /* --names N: the frame loop's inner zones take N names */
	int threads;           /* 0: the workload's own count (the frame loop: 3) */
	const struct rb_workload *workload; /* --workload: in place of the frame loop */
	int io;                /* kt_io_backend */
	uint64_t events;       /* --events for --producer-only */
	int flight;            /* --flight N: snapshots (ringbench_flight.c) */
	int bursts;            /* --burst N (ringbench_burst.c) */
	unsigned burst_ms;     /* --burst-ms MS */
	/* The capture manager's options (the frame loop without --out). */
	const char *capture_root;
	const char *run_id;
	uint64_t epoch;
	double duration;       /* s; 0: the run's length plus 5 s, at most 30 */
	uint64_t max_bytes;
	int cap_policy;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Per-batch cost samples.  Past RESERVOIR samples each new one replaces a
 * random kept one (reservoir sampling), so a long run keeps an unbiased
 * sample in fixed memory: the benchmark must not grow with run length
 * while it checks that katra does not.
 */
#define RESERVOIR (1u << 18)

struct stats {
	double *v;
	size_t n, cap;
	uint64_t seen;
	uint64_t rng;
};

static void stats_add(struct stats *s, double x)
{
	s->seen++;
	if (s->n == RESERVOIR) {
		s->rng = s->rng * 6364136223846793005u + 1442695040888963407u;
		uint64_t k = (s->rng >> 11) % s->seen;
		if (k < RESERVOIR)
			s->v[k] = x;
		return;
	}
	if (s->n == s->cap) {
		size_t n = s->cap ? s->cap * 2 : 4096;
		double *p = realloc(s->v, n * sizeof(*p));
		if (!p)
			return;
		s->v = p;
		s->cap = n;
	}
	s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(struct stats *s, double p)
{
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	return s->v[(size_t)(p * (double)(s->n - 1) + 0.5)];
}

/* --codec's names, by kt_codec. */
static const char *const codec_names[] = { "none", "lz4", "lz4-delta", "compact",
					   "compact-zstd" };

static const char *codec_name(int codec)
{
	return codec >= 0 && codec <= KT_CODEC_COMPACT_ZSTD ? codec_names[codec] : "?";
}

/* A session's codec for ringbench's @codec: raw is asked for by name (0
 * there is the session's default, compact). */
static int session_codec(int codec)
{
	return codec == KT_CODEC_NONE ? KT_SESSION_CODEC_RAW : codec;
}

static const char *io_name(int io)
{
	return io == KT_IO_URING ? "uring" : io == KT_IO_PWRITE ? "pwrite" : "none";
}

struct row {
	const char *name;
	int threads;
	uint64_t events, dropped;
	double seconds;
	double p50, p99, p999;
	uint64_t bytes;
	const char *codec, *io;
};

/* @capture: the capture's status JSON, put under "capture"; may be NULL. */
static void print_rows(const struct opts *o, const struct row *rows, int n, const char *path,
		       const char *note, const char *capture)
{
	if (o->json) {
		json_t *root = json_object(), *runs = json_array();
		for (int i = 0; i < n; i++) {
			const struct row *r = &rows[i];
			json_t *j = json_object();
			json_object_set_new(j, "name", json_string(r->name));
			json_object_set_new(j, "threads", json_integer(r->threads));
			json_object_set_new(j, "events", json_integer((json_int_t)r->events));
			json_object_set_new(j, "dropped", json_integer((json_int_t)r->dropped));
			json_object_set_new(j, "events_per_s",
					    json_real(r->seconds > 0 ? (double)r->events / r->seconds : 0));
			json_object_set_new(j, "ns_p50", json_real(r->p50));
			json_object_set_new(j, "ns_p99", json_real(r->p99));
			json_object_set_new(j, "ns_p999", json_real(r->p999));
			json_object_set_new(j, "bytes_on_disk", json_integer((json_int_t)r->bytes));
			json_object_set_new(j, "codec", json_string(r->codec));
			json_object_set_new(j, "io", json_string(r->io));
			json_array_append_new(runs, j);
		}
		json_object_set_new(root, "runs", runs);
		if (path)
			json_object_set_new(root, "file", json_string(path));
		json_t *cap = capture ? json_loads(capture, 0, NULL) : NULL;
		if (cap)
			json_object_set_new(root, "capture", cap);
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s)
			puts(s);
		free(s);
		json_decref(root);
		return;
	}
	printf("%-16s %7s %12s %10s %12s %9s %9s %9s %12s\n", "run", "threads", "events",
	       "dropped", "events/s", "ns p50", "ns p99", "ns p99.9", "bytes");
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		printf("%-16s %7d %12" PRIu64 " %10" PRIu64 " %12.0f %9.2f %9.2f %9.2f %12" PRIu64 "\n",
		       r->name, r->threads, r->events, r->dropped,
		       r->seconds > 0 ? (double)r->events / r->seconds : 0, r->p50, r->p99, r->p999,
		       r->bytes);
	}
	if (note)
		printf("%s", note);
}

/* ---- --producer-only ---------------------------------------------------- */

#define BATCH 1000
static _Thread_local uint8_t floor_buf[1 << 16] __attribute__((aligned(64)));

/* Both loops are unrolled alike, so loop overhead is shared, not measured
 * against one of them. */
static void floor_batch(uint32_t id, unsigned *pos)
{
#pragma GCC unroll 8
	for (int i = 0; i < BATCH; i++) {
		uint64_t rec[2] = { __builtin_ia32_rdtsc(), (uint64_t)id | (uint64_t)KT_EV_ZONE_BEGIN << 32 };
		memcpy(floor_buf + (*pos & (sizeof(floor_buf) - 16)), rec, 16);
		*pos += 16;
		/* Keep the stores: the compiler must assume the array is read. */
		__asm__ __volatile__("" ::"r"(floor_buf) : "memory");
	}
}

static void katra_batch(uint32_t id)
{
#pragma GCC unroll 8
	for (int i = 0; i < BATCH; i++)
		kt_zone_begin(id);
}

/* clock_gettime: the same store, stamped by the vDSO clock instead. */
static void clock_batch(uint32_t id, unsigned *pos)
{
#pragma GCC unroll 8
	for (int i = 0; i < BATCH; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t rec[2] = { (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
				    (uint64_t)id | (uint64_t)KT_EV_ZONE_BEGIN << 32 };
		memcpy(floor_buf + (*pos & (sizeof(floor_buf) - 16)), rec, 16);
		*pos += 16;
		__asm__ __volatile__("" ::"r"(floor_buf) : "memory");
	}
}

/*
 * mutex_write: what a tracer without per-thread rings does.  Producers
 * append 16-byte records to one shared buffer under a mutex; a drainer
 * thread write()s each full buffer to a file.
 */
#define MW_BUF (1u << 20)
struct mutex_writer {
	pthread_mutex_t lock;
	pthread_cond_t full, empty;
	uint8_t *buf[2];
	size_t len;          /* bytes in buf[cur] */
	int cur, ready;      /* ready: buf[!cur] waits for the drainer */
	size_t ready_len;
	int fd, stop;
	uint64_t bytes;
};

static void *mw_drain(void *arg)
{
	struct mutex_writer *m = arg;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->ready && !m->stop)
			pthread_cond_wait(&m->full, &m->lock);
		if (!m->ready && m->stop)
			break;
		uint8_t *b = m->buf[!m->cur];
		size_t n = m->ready_len;
		pthread_mutex_unlock(&m->lock);
		if (write(m->fd, b, n) == (ssize_t)n)
			m->bytes += n;
		pthread_mutex_lock(&m->lock);
		m->ready = 0;
		pthread_cond_signal(&m->empty);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void mw_batch(struct mutex_writer *m, uint32_t id)
{
	for (int i = 0; i < BATCH; i++) {
		uint64_t rec[2] = { __builtin_ia32_rdtsc(), (uint64_t)id | (uint64_t)KT_EV_ZONE_BEGIN << 32 };
		pthread_mutex_lock(&m->lock);
		memcpy(m->buf[m->cur] + m->len, rec, 16);
		m->len += 16;
		if (m->len == MW_BUF) {
			while (m->ready)
				pthread_cond_wait(&m->empty, &m->lock);
			m->ready = 1;
			m->ready_len = m->len;
			m->cur = !m->cur;
			m->len = 0;
			pthread_cond_signal(&m->full);
		}
		pthread_mutex_unlock(&m->lock);
	}
}

/* fprintf: a line of text per event through stdio. */
static void fprintf_batch(FILE *f, uint32_t id)
{
	for (int i = 0; i < BATCH; i++)
		fprintf(f, "%llu zone_begin %u\n", (unsigned long long)__builtin_ia32_rdtsc(), id);
}

/* ---- the LTTng peer --------------------------------------------------- */

#ifdef KT_HAVE_LTTNG
#include "bench/lttng_tp.h"

static void lttng_batch(uint32_t id)
{
#pragma GCC unroll 8
	for (int i = 0; i < BATCH; i++)
		tracepoint(katra_bench, zone_begin, id);
}
#endif

/* Run a command through the shell; its output (stdout and stderr) goes to
 * @out.  Returns its exit status, or -1. */
static int shell(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int shell(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	size_t n = 0;
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	if (out && cap) {
		n = fread(out, 1, cap - 1, f);
		out[n] = 0;
	} else {
		char sink[256];
		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	int st = pclose(f);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * An LTTng session recording this process's tracepoint to disk, for the
 * peer row; started before the rounds, stopped after them.
 */
struct lttng_peer {
	int on;
	char name[64], dir[4200];
	long sessiond_pid;   /* a session daemon this run started, or 0 */
	uint64_t discarded;
	uint64_t bytes;
};

static int lttng_peer_start(struct lttng_peer *p, const char *base)
{
	char out[4096];
	memset(p, 0, sizeof(*p));
#ifndef KT_HAVE_LTTNG
	(void)out;
	(void)base;
	fprintf(stderr, "ringbench: --peer lttng: this ringbench was built without lttng-ust "
			"(install liblttng-ust-dev and lttng-tools, then rebuild); skipped\n");
	return 0;
#else
	if (shell(NULL, 0, "command -v lttng >/dev/null 2>&1") != 0) {
		fprintf(stderr, "ringbench: --peer lttng: the lttng command is not installed; skipped\n");
		return 0;
	}
	if (shell(NULL, 0, "lttng list >/dev/null 2>&1") != 0) {
		if (shell(out, sizeof(out), "lttng-sessiond --daemonize 2>&1") != 0) {
			fprintf(stderr, "ringbench: --peer lttng: lttng-sessiond cannot start; skipped\n");
			return 0;
		}
		if (shell(out, sizeof(out), "pgrep -n -x lttng-sessiond") == 0)
			p->sessiond_pid = strtol(out, NULL, 10);
	}
	snprintf(p->name, sizeof(p->name), "katra-ringbench-%ld", (long)getpid());
	snprintf(p->dir, sizeof(p->dir), "%s.lttng", base);
	if (shell(out, sizeof(out), "lttng create %s --output=%s 2>&1", p->name, p->dir) ||
	    shell(out, sizeof(out), "lttng enable-event --userspace --session=%s 'katra_bench:*' 2>&1",
		  p->name) ||
	    shell(out, sizeof(out), "lttng start %s 2>&1", p->name)) {
		fprintf(stderr, "ringbench: --peer lttng: %s; skipped\n", out);
		shell(NULL, 0, "lttng destroy %s >/dev/null 2>&1", p->name);
		return 0;
	}
	/* The application registers with the session daemon asynchronously:
	 * wait until it is listed before measuring. */
	for (int i = 0; i < 50; i++) {
		char pid[32];
		snprintf(pid, sizeof(pid), "PID: %ld", (long)getpid());
		if (shell(out, sizeof(out), "lttng list --userspace 2>&1") == 0 && strstr(out, pid))
			break;
		struct timespec nap = { 0, 100000000 };
		nanosleep(&nap, NULL);
	}
	p->on = 1;
	return 0;
#endif
}

static void lttng_peer_stop(struct lttng_peer *p)
{
	char out[4096];
	if (!p->on)
		return;
	/* lttng stop warns "N events were discarded" when its buffers
	 * overflowed: that is the row's loss. */
	shell(out, sizeof(out), "lttng stop %s 2>&1", p->name);
	const char *w = strstr(out, "events were discarded");
	if (w) {
		while (w > out && w[-1] == ' ')
			w--;
		while (w > out && w[-1] >= '0' && w[-1] <= '9')
			w--;
		p->discarded = strtoull(w, NULL, 10);
	}
	if (shell(out, sizeof(out), "du -sb %s 2>/dev/null", p->dir) == 0)
		p->bytes = strtoull(out, NULL, 10);
	shell(NULL, 0, "lttng destroy %s >/dev/null 2>&1", p->name);
	shell(NULL, 0, "rm -rf '%s'", p->dir);
	if (p->sessiond_pid > 0)
		kill((pid_t)p->sessiond_pid, SIGTERM);
}

enum { ROW_KATRA, ROW_KATRA_CRASH, ROW_FLOOR, ROW_DISABLED, ROW_FLIGHT, ROW_API,
       ROW_CLOCK = ROW_API + API_ROWS,
       ROW_MUTEX, ROW_FPRINTF, ROW_LTTNG, ROWS };
_Static_assert(BATCH == API_BATCH, "the API rows' batches are ringbench's");

static int producer_only(const struct opts *o)
{
	static const char *const names[ROWS] = { "katra", "katra_crashfiles", "floor",
						 "katra_disabled", "katra_flight", API_ROW_NAMES,
						 "clock_gettime", "mutex_write",
						 "fprintf", "lttng" };
	int nrows = o->baselines ? ROW_LTTNG : ROW_CLOCK;
	int want[ROWS];
	for (int k = 0; k < ROWS; k++)
		want[k] = k < nrows;
	struct stats st[ROWS] = { 0 };
	uint64_t events[ROWS] = { 0 };
	double secs[ROWS] = { 0 };
	kt_config cfg = { .ring_size = o->ring_size, .overflow = o->policy };
	int rc = kt_init(&cfg);
	if (rc) {
		fprintf(stderr, "ringbench: kt_init: %s\n", kt_strerror(rc));
		return 1;
	}
	uint32_t id = kt_name("bench_zone");
	char path[4096];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/ringbench-producer-%ld.katra", tmp && *tmp ? tmp : "/tmp",
		 (long)getpid());
	/* The crash row's rings live where KT_CRASH_DIR says (default
	 * /dev/shm); the katra row must not take it from the environment. */
	const char *env = getenv("KT_CRASH_DIR");
	char crash_dir[4096];
	snprintf(crash_dir, sizeof(crash_dir), "%s", env ? env : "");
	unsetenv("KT_CRASH_DIR");
	kt_session_options so = { .codec = session_codec(o->codec), .io = o->io };
	kt_session_options so_crash = so;
	so_crash.crash_dir = crash_dir;
	/* The flight row: the same emits into a flight session's rings, which
	 * overwrite their oldest events and write nothing. */
	kt_session_options so_flight = so;
	so_flight.mode = KT_SESSION_FLIGHT;
	kt_summary sum = { 0 };
	uint64_t dropped[ROWS] = { 0 }, on_disk[ROWS] = { 0 };
	unsigned pos = 0;
	int katra_io = 0;

	/* The baselines write where katra does, to files that are removed. */
	char mw_path[4200], fp_path[4200];
	snprintf(mw_path, sizeof(mw_path), "%s.mutex", path);
	snprintf(fp_path, sizeof(fp_path), "%s.fprintf", path);
	uint64_t base_bytes[ROWS] = { 0 };
	struct lttng_peer peer = { 0 };
	if (o->peer_lttng) {
		lttng_peer_start(&peer, path);
		want[ROW_LTTNG] = peer.on;
	}

	/* Rounds alternate the loops so drift in the machine's state
	 * (frequency, the other core's load) falls on all of them alike. */
	uint64_t per_round = o->events / 10 / BATCH;
	if (per_round == 0)
		per_round = 1;
	for (int round = 0; round < 10; round++) {
		for (int k = 0; k < ROWS; k++) {
			if (!want[k])
				continue;
			kt_session *s = NULL;
			struct mutex_writer mw;
			pthread_t drainer;
			FILE *fp = NULL;
			if (k == ROW_MUTEX) {
				memset(&mw, 0, sizeof(mw));
				pthread_mutex_init(&mw.lock, NULL);
				pthread_cond_init(&mw.full, NULL);
				pthread_cond_init(&mw.empty, NULL);
				mw.buf[0] = malloc(MW_BUF);
				mw.buf[1] = malloc(MW_BUF);
				mw.fd = open(mw_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
				if (!mw.buf[0] || !mw.buf[1] || mw.fd < 0) {
					fprintf(stderr, "ringbench: mutex_write set-up failed\n");
					return 1;
				}
				pthread_create(&drainer, NULL, mw_drain, &mw);
			} else if (k == ROW_FPRINTF) {
				fp = fopen(fp_path, "w");
				if (!fp) {
					fprintf(stderr, "ringbench: %s: %s\n", fp_path, strerror(errno));
					return 1;
				}
			}
			if (k == ROW_KATRA || k == ROW_KATRA_CRASH || k == ROW_FLIGHT ||
			    (k >= ROW_API && k < ROW_CLOCK)) {
				rc = kt_session_start(k == ROW_FLIGHT ? NULL : path,
						      k == ROW_KATRA ? &so
						      : k == ROW_FLIGHT ? &so_flight : &so_crash, &s);
				if (rc) {
					fprintf(stderr, "ringbench: session: %s\n",
						kt_session_get_start_error());
					return 1;
				}
				katra_batch(id); /* register this thread's ring */
			}
			uint64_t t_start = now_ns();
			for (uint64_t b = 0; b < per_round; b++) {
				uint64_t t0 = now_ns();
				switch (k) {
				case ROW_FLOOR: floor_batch(id, &pos); break;
				case ROW_CLOCK: clock_batch(id, &pos); break;
				case ROW_MUTEX: mw_batch(&mw, id); break;
				case ROW_FPRINTF: fprintf_batch(fp, id); break;
#ifdef KT_HAVE_LTTNG
				case ROW_LTTNG: lttng_batch(id); break;
#endif
				case ROW_API ... ROW_CLOCK - 1: api_batch(k - ROW_API, id); break;
				default: katra_batch(id); break;
				}
				uint64_t t1 = now_ns();
				stats_add(&st[k], (double)(t1 - t0) / BATCH);
			}
			if (k == ROW_MUTEX) {
				/* Part of the row's cost: the last buffer's write. */
				pthread_mutex_lock(&mw.lock);
				mw.stop = 1;
				pthread_cond_signal(&mw.full);
				pthread_mutex_unlock(&mw.lock);
				pthread_join(drainer, NULL);
				if (mw.len && write(mw.fd, mw.buf[mw.cur], mw.len) == (ssize_t)mw.len)
					mw.bytes += mw.len;
				close(mw.fd);
				base_bytes[k] += mw.bytes;
				free(mw.buf[0]);
				free(mw.buf[1]);
				pthread_mutex_destroy(&mw.lock);
				pthread_cond_destroy(&mw.full);
				pthread_cond_destroy(&mw.empty);
			} else if (fp) {
				fflush(fp);
				base_bytes[k] += (uint64_t)ftell(fp);
				fclose(fp);
			}
			secs[k] += (double)(now_ns() - t_start) / 1e9;
			events[k] += per_round * BATCH;
			if (s) {
				rc = kt_session_stop(s, &sum);
				if (rc) {
					fprintf(stderr, "ringbench: session stop: %s\n", kt_strerror(rc));
					unlink(path);
					return 1;
				}
				dropped[k] += sum.events_dropped;
				katra_io = sum.io_backend;
				on_disk[k] += sum.bytes_on_disk;
				events[k] += BATCH;
				kt_summary_release(&sum);
			}
		}
	}
	lttng_peer_stop(&peer);
	unlink(path);
	unlink(mw_path);
	unlink(fp_path);
	struct row rows[ROWS];
	int kept = 0;
	for (int k = 0; k < ROWS; k++) {
		if (!want[k])
			continue;
		int traced = k == ROW_KATRA || k == ROW_KATRA_CRASH || k == ROW_FLIGHT ||
			     (k >= ROW_API && k < ROW_CLOCK);
		rows[kept++] = (struct row){ .name = names[k], .threads = 1, .events = events[k],
					.seconds = secs[k], .p50 = pct(&st[k], 0.5),
					.p99 = pct(&st[k], 0.99), .p999 = pct(&st[k], 0.999),
					.codec = traced ? codec_name(o->codec) : "none",
					.io = traced ? io_name(katra_io) : "none",
					.dropped = dropped[k], .bytes = on_disk[k] };
		free(st[k].v);
	}
	for (int k = ROW_CLOCK; k < nrows; k++) {
		rows[k].bytes = base_bytes[k];
		rows[k].io = k == ROW_CLOCK ? "none" : "write";
	}
	if (peer.on) {
		rows[kept - 1].dropped = peer.discarded;
		rows[kept - 1].bytes = peer.bytes;
		rows[kept - 1].io = "lttng";
	}
	nrows = kept;
	char note[1024];
	int n = snprintf(note, sizeof(note), "katra p50 against each row: ");
	for (int k = 1; k < nrows && n > 0 && (size_t)n < sizeof(note); k++)
		n += snprintf(note + n, sizeof(note) - (size_t)n, "%s%s %.2fx", k > 1 ? ", " : "",
			      rows[k].name, rows[ROW_KATRA].p50 / rows[k].p50);
	if (n > 0 && (size_t)n < sizeof(note))
		snprintf(note + n, sizeof(note) - (size_t)n,
			 "\n(per-event cost = one %d-event batch timed with CLOCK_MONOTONIC / %d)\n",
			 BATCH, BATCH);
	print_rows(o, rows, nrows, NULL, note, NULL);
	return 0;
}

/* ---- the default workload ---------------------------------------------- */

enum { MAX_THREADS = 16, MAX_NAMES = 4096 };
static const char *const role_names[3] = { "main", "render", "worker" };

struct ids {
	uint32_t frame, update, physics, draw, submit, job, draw_calls, frame_ms, handoff;
	const uint32_t *many;  /* --names: the inner zones' and records' names */
	unsigned nmany;
	const struct rb_workload *wl; /* --workload: its units in place of unit() */
};

/* The name of unit @n's inner zone: the fixed one, or with --names one of
 * many, in an order that does not repeat in short cycles (a multiplicative
 * hash of @n), as an instrumented program's many call sites would be. */
static uint32_t inner(const struct ids *id, uint32_t fixed, uint64_t n)
{
	if (!id->nmany)
		return fixed;
	return id->many[(uint32_t)((n * 0x9e3779b97f4a7c15u) >> 32) % id->nmany];
}

struct worker {
	int index, threads;
	double rate;           /* this thread's events/s; 0 = unpaced */
	double seconds;
	uint64_t max_events;   /* stop after this many (0: run for seconds) */
	unsigned payload;      /* bytes of a user record per unit, 0: none */
	const struct ids *id;
	uint64_t events;
	struct stats cost;
};

/* One unit of a thread's work: a handful of events, returns how many. */
static unsigned unit(int role, const struct ids *id, uint64_t n)
{
	switch (role) {
	case 0: { /* main: update > physics, then hand a flow to render */
		uint32_t physics = inner(id, id->physics, n);
		kt_zone_begin(id->update);
		kt_zone_begin(physics);
		kt_zone_end(physics);
		kt_zone_end(id->update);
		kt_flow(id->handoff, n, KT_FLOW_BEGIN);
		if (n % 64 == 63) {
			kt_frame(id->frame, n / 64);
			kt_counter_f64(id->frame_ms, 16.0 + (double)(n % 7));
			return 7;
		}
		return 5;
	}
	case 1: { /* render: take the flow, draw with a counter, submit */
		uint32_t draw = inner(id, id->draw, n);
		kt_flow(id->handoff, n, KT_FLOW_END);
		kt_zone_begin(draw);
		kt_counter(id->draw_calls, (int64_t)(n % 977));
		kt_zone_end(draw);
		kt_instant(id->submit);
		return 5;
	}
	default: { /* worker: jobs */
		uint32_t job = inner(id, id->job, n);
		kt_zone_begin(job);
		kt_zone_end(job);
		return 2;
	}
	}
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	int role = w->index % 3;
	const struct rb_workload *wl = w->id->wl;
	kt_thread_name(wl ? wl->thread_name(w->index) : role_names[role]);
	uint64_t start = now_ns(), end = start + (uint64_t)(w->seconds * 1e9);
	uint64_t n = 0;
	static const uint8_t blob[KT_MAX_STRING];
	if (w->max_events)
		end = UINT64_MAX;
	for (uint64_t t = start; t < end && (!w->max_events || w->events < w->max_events);) {
		/* A timed batch of units; then, when pacing, wait for the
		 * schedule to catch up. */
		uint64_t t0 = now_ns(), before = w->events;
		for (int i = 0; i < 64; i++) {
			w->events += wl ? wl->unit(w->index, w->threads, n++) : unit(role, w->id, n++);
			if (w->payload) {
				kt_emit(KT_EV_USER, inner(w->id, w->id->job, n), 0, blob, w->payload);
				w->events++;
			}
		}
		t = now_ns();
		stats_add(&w->cost, (double)(t - t0) / (double)(w->events - before));
		if (w->rate > 0) {
			uint64_t due = start + (uint64_t)((double)w->events / w->rate * 1e9);
			while (t < due && t < end) {
				if (due - t > 200000) {
					struct timespec nap = { 0, 100000 };
					nanosleep(&nap, NULL);
				}
				t = now_ns();
			}
		}
	}
	return NULL;
}

/* The process's peak resident set so far (VmHWM), in KiB. */
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

struct run {
	uint64_t events;
	double seconds;
	kt_summary sum;
	struct stats cost;
	long rss_at_5s, rss_end;
	kt_capture_status cap;  /* with a manager: how the capture ended */
};

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *workload_label(const struct opts *o)
{
	return o->workload ? o->workload->label : "ringbench frame loop";
}

/*
 * One paced run of @threads producers through a session into @path, or,
 * with @m, through a capture of the manager, whose backend (the manager's
 * own) leaves each capture's session summary in *@last.
 */
static int run_loop(const struct opts *o, int threads, double rate, double seconds,
		    const char *path, struct run *out, kt_manager *m, kt_summary *last)
{
	struct ids id = {
		kt_name("frame"), kt_name("update"), kt_name("physics"), kt_name("draw"),
		kt_name("submit"), kt_name("job"), kt_name("draw_calls"),
		kt_name("frame_time_ms"), kt_name("main->render"), NULL, 0, NULL,
	};
	uint32_t many[MAX_NAMES];
	for (unsigned i = 0; i < o->names; i++) {
		char name[32];
		snprintf(name, sizeof(name), "site_%u", i);
		many[i] = kt_name(name);
	}
	id.many = many;
	id.nmany = o->names;
	id.wl = o->workload;
	if (id.wl)
		id.wl->setup();
	kt_session_options so = { .codec = session_codec(o->codec), .io = o->io,
				  .workload = workload_label(o) };
	kt_session *s = NULL;
	memset(out, 0, sizeof(*out));
	int rc = 0;
	if (m) {
		kt_capture_ref r;
		kt_manager_start(m, &(kt_start_request){ .run_id = o->run_id, .epoch = o->epoch,
							 .state = "running", .validity = "valid",
							 .boundary_at = wall_ns() }, &r);
		if (r.state != KT_STATE_CAPTURING) {
			fprintf(stderr, "ringbench: the capture did not start: %s, %s\n",
				kt_capture_state_name(r.state), kt_capture_code_name(r.code));
			return 1;
		}
	} else if ((rc = kt_session_start(path, &so, &s))) {
		/* The message names what failed: the file, the crash
		 * directory, the I/O backend... */
		fprintf(stderr, "ringbench: cannot start a session: %s\n", kt_session_get_start_error());
		return rc;
	}
	struct worker w[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	uint64_t t0 = now_ns();
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .index = i, .threads = threads, .rate = rate / threads,
					.seconds = seconds,
					.max_events = o->frame_events ? o->frame_events / (uint64_t)threads : 0,
					.payload = o->payload, .id = &id };
		pthread_create(&th[i], NULL, run_worker, &w[i]);
	}
	if (o->report_rss) {
		/* Sample while the producers run: at 5 s, and at the end. */
		while (now_ns() - t0 < 5000000000ull && now_ns() - t0 < (uint64_t)(seconds * 1e9)) {
			struct timespec nap = { 0, 50000000 };
			nanosleep(&nap, NULL);
		}
		out->rss_at_5s = rss_kib();
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	/* Before the samples are merged: that copy is the benchmark's
	 * memory, megabytes of it, not the session's. */
	out->rss_end = rss_kib();
	for (int i = 0; i < threads; i++) {
		out->events += w[i].events;
		for (size_t k = 0; k < w[i].cost.n; k++)
			stats_add(&out->cost, w[i].cost.v[k]);
		free(w[i].cost.v);
	}
	out->seconds = (double)(now_ns() - t0) / 1e9;
	if (m) {
		kt_capture_ref t;
		kt_manager_request_stop(m, &(kt_stop_request){ .run_id = o->run_id, .epoch = o->epoch,
							       .reason = "workload-done",
							       .boundary_at = wall_ns() }, &t);
		kt_manager_await(m, &t, UINT64_MAX, &out->cap);
		out->sum = *last;
		memset(last, 0, sizeof(*last));
		if (out->cap.state != KT_STATE_PUBLISHED) {
			fprintf(stderr, "ringbench: the capture ended %s, %s\n",
				kt_capture_state_name(out->cap.state),
				kt_capture_code_name(out->cap.code));
			return 1;
		}
		return 0;
	}
	rc = kt_session_stop(s, &out->sum);
	if (rc)
		fprintf(stderr, "ringbench: writing %s failed: %s\n", path, kt_strerror(rc));
	return rc;
}

/* The katra command built beside this ringbench (build/ or build-rel/),
 * relative to the working directory where it is below it, for the hints
 * printed after a run. */
static void katra_beside(char *out, size_t cap)
{
	char exe[4096], cwd[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
	if (!slash) {
		snprintf(out, cap, "katra");
		return;
	}
	*slash = 0;
	const char *dir = exe;
	size_t cl = getcwd(cwd, sizeof(cwd)) ? strlen(cwd) : 0;
	if (cl && !strncmp(exe, cwd, cl) && exe[cl] == '/')
		dir = exe + cl + 1;
	if ((size_t)snprintf(out, cap, "%s/katra", dir) >= cap)
		snprintf(out, cap, "katra");
}

static void default_path(const struct opts *o, char *path, size_t cap)
{
	if (o->out) {
		snprintf(path, cap, "%s", o->out);
	} else {
		/* One fixed name, overwritten each run, so repeated runs do not
		 * fill the temporary directory. */
		const char *tmp = getenv("TMPDIR");
		snprintf(path, cap, "%s/ringbench-last.katra", tmp && *tmp ? tmp : "/tmp");
	}
}

static int init_katra(const struct opts *o)
{
	kt_config cfg = { .ring_size = o->ring_size, .overflow = o->policy };
	int rc = kt_init(&cfg);
	if (rc)
		fprintf(stderr, "ringbench: kt_init: %s\n", kt_strerror(rc));
	return rc;
}

/*
 * The capture root: --capture-root, or $TMPDIR/ringbench-captures, where
 * earlier ringbench captures are removed first so that repeated runs do
 * not fill the temporary directory.
 */
static int capture_root(const struct opts *o, char *root, size_t cap)
{
	if (o->capture_root) {
		snprintf(root, cap, "%s", o->capture_root);
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(root, cap, "%s/ringbench-captures", tmp && *tmp ? tmp : "/tmp");
	if (mkdir(root, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ringbench: %s: %s\n", root, strerror(errno));
		return -1;
	}
	DIR *d = opendir(root);
	struct dirent *e;
	size_t plen = strlen(o->run_id);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, o->run_id, plen) && e->d_name[plen] == '.' &&
		    (strstr(e->d_name, ".katra")))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	return 0;
}

static int frame_loop(const struct opts *o)
{
	char path[4400], root[4096];
	kt_manager *m = NULL;
	kt_summary last = { 0 };
	if (init_katra(o))
		return 1;
	if (o->out) {
		default_path(o, path, sizeof(path));
	} else {
		if (capture_root(o, root, sizeof(root)))
			return 1;
		kt_session_options so = { .codec = session_codec(o->codec), .io = o->io,
					  .workload = workload_label(o) };
		/* The manager's own backend, keeping the session's summary for
		 * the table (drops, raw bytes, flusher CPU). */
		kt_capture_backend be = kt_manager_session_backend(&last);
		double dur = o->duration > 0 ? o->duration : o->seconds + 5 < 30 ? o->seconds + 5 : 30;
		kt_manager_options mo = { .root = root, .backend = &be, .session = &so,
					  .duration_ns = (uint64_t)(dur * 1e9),
					  .max_bytes = o->max_bytes, .cap_policy = o->cap_policy };
		int rc = kt_manager_new(&mo, &m);
		if (rc) {
			fprintf(stderr, "ringbench: capture root %s: %s\n", root, kt_strerror(rc));
			return 1;
		}
	}
	struct run run;
	int rc = run_loop(o, o->threads, o->rate, o->seconds, path, &run, m, &last);
	kt_manager_close(m);
	if (rc) {
		kt_summary_release(&run.sum);
		return 1;
	}
	kt_summary *sum = &run.sum;
	kt_capture_status *cs = m ? &run.cap : NULL;
	if (cs)
		snprintf(path, sizeof(path), "%s/%s", root, cs->file);
	/* Check what was written, as a user would with `katra verify`. */
	kt_reader *r;
	kt_reader_error err;
	kt_reader_status st = { 0 };
	uint64_t in_file = cs ? cs->events : sum->events_written;
	uint64_t on_disk = cs ? cs->bytes : sum->bytes_on_disk;
	int verified = kt_reader_open(path, &err, &r) == 0;
	if (verified) {
		kt_trace_frame f;
		while (kt_reader_next_frame(r, &f) > 0)
			;
		kt_reader_get_status(r, &st);
		verified = st.complete && !st.error && st.events == in_file;
		kt_reader_close(r);
	}
	struct row row = { .name = "katra", .threads = o->threads, .events = run.events,
			   .dropped = sum->events_dropped, .seconds = run.seconds,
			   .p50 = pct(&run.cost, 0.5), .p99 = pct(&run.cost, 0.99),
			   .p999 = pct(&run.cost, 0.999), .bytes = on_disk,
			   .codec = codec_name(o->codec), .io = io_name(sum->io_backend) };
	free(run.cost.v);
	char *cap_json = cs ? kt_capture_status_json(cs) : NULL;
	if (o->json) {
		print_rows(o, &row, 1, path, NULL, cap_json);
	} else {
		if (o->rate > 0)
			printf("ringbench: %s (%d threads), %.2f s, target %.1fM events/s\n",
			       workload_label(o), o->threads, run.seconds, o->rate / 1e6);
		else
			printf("ringbench: %s (%d threads), %.2f s, target max rate\n",
			       workload_label(o), o->threads, run.seconds);
		print_rows(o, &row, 1, NULL, NULL, NULL);
		printf("\n  written      %" PRIu64 " events, dropped %" PRIu64 "\n", sum->events_written,
		       sum->events_dropped);
		if (cs) {
			printf("  capture      %s%s%s: %" PRIu64 " of the %" PRIu64
			       " events written are in the file\n"
			       "               head loss %.3f s%s, tail excess %.3f s (trimmed)\n",
			       kt_capture_state_name(cs->state), cs->code ? ", " : "",
			       kt_capture_code_name(cs->code), cs->events, sum->events_written,
			       (double)cs->head_loss_ns / 1e9,
			       cs->events < sum->events_written && o->cap_policy == KT_CAP_KEEP_NEWEST
				       ? " (keep-newest: the byte cap let the oldest go)"
				       : " (the capture started after the run)",
			       (double)cs->tail_excess_ns / 1e9);
		}
		printf("  on disk      %" PRIu64 " bytes, %.2f bytes/event", on_disk,
		       in_file ? (double)on_disk / (double)in_file : 0.0);
		if (sum->bytes_on_disk)
			printf(", compression %.2f:1", (double)sum->bytes_raw / (double)sum->bytes_on_disk);
		printf("\n  flusher      %.2f ns CPU per event written\n",
		       sum->events_written ? (double)sum->flusher_cpu_ns / (double)sum->events_written
					   : 0.0);
		if (o->report_rss)
			printf("  peak RSS     %ld KiB by 5 s, %ld KiB when the producers ended (%.0f s)\n",
			       run.rss_at_5s, run.rss_end, run.seconds);
		printf("  file         %s (%s)\n", path, verified ? "verified" : "NOT VALID");
		if (cs)
			printf("  sha256       %s\n  sidecar      %s/%s\n", cs->sha256, root, cs->sidecar);
		char katra[4200];
		katra_beside(katra, sizeof(katra));
		printf("next:\n  %s verify %s\n  %s stats %s\n"
		       "  %s export --chrome %s /tmp/ringbench.json\n", katra, path, katra, path,
		       katra, path);
	}
	free(cap_json);
	kt_summary_release(sum);
	return verified ? 0 : 1;
}

/*
 * The highest paced rate a configuration holds for the run's length with
 * no drop: double from 4M events/s until a run drops, then bisect.
 */
struct maxrate {
	double rate;
	double flusher_ns;      /* flusher CPU per event at that rate */
	double bytes_per_event;
	uint64_t events, bytes;
	int io;
};

/* Write back what earlier probes left dirty in the page cache, so each
 * probe starts from the same state instead of inheriting their throttling. */
static void settle_disk(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		syncfs(fd);
		close(fd);
	}
}

static int find_max_rate(const struct opts *o, int threads, const char *path, struct maxrate *m)
{
	double lo = 0, hi = 0, rate = o->rate_set && o->rate > 0 ? o->rate : 4e6;
	memset(m, 0, sizeof(*m));
	for (int step = 0; step < 12; step++) {
		struct run run;
		settle_disk(path);
		if (run_loop(o, threads, rate, o->seconds, path, &run, NULL, NULL))
			return 1;
		/* Held: nothing dropped and the pace kept (under WAIT a
		 * flusher that cannot follow slows the producers instead). */
		int ok = run.sum.events_dropped == 0 && run.sum.io_error == 0 &&
			 (double)run.events >= 0.99 * rate * o->seconds;
		if (!o->json)
			fprintf(stderr, "  %d thread(s) %s %s: %6.1fM events/s -> %s (%" PRIu64
				" dropped)\n", threads, o->codec ? codec_name(o->codec) : "raw",
				io_name(run.sum.io_backend), rate / 1e6, ok ? "held" : "dropped",
				run.sum.events_dropped);
		if (ok) {
			lo = rate;
			m->rate = (double)run.events / run.seconds;
			m->flusher_ns = (double)run.sum.flusher_cpu_ns / (double)run.sum.events_written;
			m->bytes_per_event = (double)run.sum.bytes_on_disk / (double)run.sum.events_written;
			m->events = run.events;
			m->bytes = run.sum.bytes_on_disk;
			m->io = run.sum.io_backend;
		} else {
			hi = rate;
		}
		kt_summary_release(&run.sum);
		free(run.cost.v);
		if (hi == 0)
			rate *= 2;
		else if (hi - lo <= hi * 0.08)
			break;
		else
			rate = (lo + hi) / 2;
	}
	return 0;
}

static int max_rate_table(const struct opts *o)
{
	char path[4096];
	default_path(o, path, sizeof(path));
	struct opts c = *o;
	if (init_katra(&c))
		return 1;
	struct row rows[8];
	struct maxrate mr[8];
	int n = 0;
	int t0 = o->workload ? o->workload->threads : 1;
	for (int threads = t0; threads <= t0 + (t0 < 2); threads++)
		for (int lz = o->codec_only; lz <= 1; lz++)
			for (int io = KT_IO_URING; io <= KT_IO_PWRITE; io++) {
				/* The compressed rows use the codec a session would:
				 * the one --codec names, or compact. */
				int codec = lz ? (o->codec ? o->codec : KT_CODEC_COMPACT) : KT_CODEC_NONE;
				c.codec = codec;
				c.io = io;
				if (find_max_rate(&c, threads, path, &mr[n]))
					return 1;
				rows[n] = (struct row){
					.name = !codec ? "katra_max_rate_raw"
						: codec >= KT_CODEC_COMPACT ? "katra_max_rate_compact"
									     : "katra_max_rate_lz4",
					.threads = threads, .events = mr[n].events,
					.seconds = mr[n].rate > 0 ? (double)mr[n].events / mr[n].rate : 0,
					.bytes = mr[n].bytes, .codec = codec_name(codec),
					.io = io_name(io),
				};
				n++;
			}
	unlink(path);
	if (o->json) {
		print_rows(o, rows, n, NULL, NULL, NULL);
		return 0;
	}
	printf("highest rate held for %.0f s with 0 drops and the pace kept (%s policy, %zu KiB "
	       "rings)\n", o->seconds, kt_overflow_name((unsigned)o->policy),
	       (o->ring_size ? o->ring_size : KT_RING_DEFAULT) >> 10);
	printf("%-20s %7s %6s %7s %12s %16s %12s\n", "run", "threads", "codec", "io", "events/s",
	       "flusher ns/ev", "bytes/event");
	for (int i = 0; i < n; i++)
		printf("%-20s %7d %6s %7s %12.0f %16.2f %12.2f\n", rows[i].name, rows[i].threads,
		       rows[i].codec, rows[i].io, mr[i].rate, mr[i].flusher_ns, mr[i].bytes_per_event);
	return 0;
}

static void usage(FILE *f)
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
		"  --burst N           N bursts of call trees of empty zones at full speed,\n"
		"                      each --burst-ms long (default 500) and then a pause\n"
		"                      as long, one thread, every default of katra\n"
		"  --producer-only     emit cost alone: katra, katra_crashfiles, floor,\n"
		"                      katra_disabled, katra_flight (a flight session) and\n"
		"                      the profiler API's rows\n"
		"  --baselines         those rows plus clock_gettime, mutex_write (a shared\n"
		"                      buffer drained with write()) and fprintf, same run\n"
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

int main(int argc, char **argv)
{
	struct opts o = { .seconds = 5.0, .rate = 10e6, .codec = KT_CODEC_COMPACT,
			  .policy = KT_OVERFLOW_WAIT, .events = 20000000,
			  .run_id = "ringbench", .epoch = 1, .max_bytes = KT_CAPTURE_MAX_BYTES,
			  .cap_policy = KT_CAP_KEEP_NEWEST };
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
		{ "events", required_argument, NULL, 'e' },
		{ "threads", required_argument, NULL, 't' },
		{ "find-max-rate", no_argument, NULL, 'F' },
		{ "codec-only", no_argument, NULL, 'F' + 256 },
		{ "report-rss", no_argument, NULL, 'M' },
		{ "baselines", no_argument, NULL, 'B' },
		{ "peer", required_argument, NULL, 'L' },
		{ "payload", required_argument, NULL, 'p' + 256 },
		{ "names", required_argument, NULL, 'n' + 256 },
		{ "workload", required_argument, NULL, 'w' + 256 },
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
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.seconds = strtod(optarg, &end);
			if (*end || !(o.seconds > 0 && o.seconds <= 3600)) {
				fprintf(stderr, "ringbench: --seconds wants 0 < S <= 3600, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (!strcmp(optarg, "max")) {
				o.rate = 0;
				break;
			}
			o.rate = strtod(optarg, &end);
			o.rate_set = 1;
			if (*end || !(o.rate > 0)) {
				fprintf(stderr, "ringbench: --rate wants events/s or max, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c':
			o.codec = -1;
			for (int i = 0; i <= KT_CODEC_COMPACT_ZSTD; i++)
				if (!strcmp(optarg, codec_names[i]))
					o.codec = i;
			if (o.codec < 0) {
				fprintf(stderr, "ringbench: --codec wants none, lz4, lz4-delta, compact or "
						"compact-zstd, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			o.policy = -1;
			for (int p = KT_OVERFLOW_WAIT; p <= KT_OVERFLOW_DROP; p++)
				if (!strcmp(optarg, kt_overflow_name((unsigned)p)))
					o.policy = p;
			if (o.policy < 0) {
				fprintf(stderr, "ringbench: --policy wants wait, block or drop, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'R':
			if (parse_size(optarg, &o.ring_size)) {
				fprintf(stderr, "ringbench: --ring-size wants bytes (K/M suffix), got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'I':
			if (!strcmp(optarg, "uring"))
				o.io = KT_IO_URING;
			else if (!strcmp(optarg, "pwrite"))
				o.io = KT_IO_PWRITE;
			else if (!strcmp(optarg, "auto"))
				o.io = KT_IO_AUTO;
			else {
				fprintf(stderr, "ringbench: --io wants uring, pwrite or auto, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'o': o.out = optarg; break;
		case 'P': o.producer_only = 1; break;
		case 'W': o.flight = atoi(optarg); break;
		case 'U':
		case 'u': {
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000) {
				fprintf(stderr, "ringbench: --%s wants 1 to 100000, got '%s'\n",
					c == 'U' ? "burst" : "burst-ms", optarg);
				return 2;
			}
			if (c == 'U')
				o.bursts = (int)v;
			else
				o.burst_ms = (unsigned)v;
			break;
		}
		case 'e':
			o.events = strtoull(optarg, &end, 10);
			if (*end || o.events < 10 * BATCH) {
				fprintf(stderr, "ringbench: --events wants at least %d, got '%s'\n",
					10 * BATCH, optarg);
				return 2;
			}
			o.frame_events = o.events;
			break;
		case 'p' + 256: {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v > 4096) {
				fprintf(stderr, "ringbench: --payload wants 0..4096 bytes, got '%s'\n",
					optarg);
				return 2;
			}
			o.payload = (unsigned)v;
			break;
		}
		case 'n' + 256: {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v > MAX_NAMES) {
				fprintf(stderr, "ringbench: --names wants 0..%d, got '%s'\n", MAX_NAMES,
					optarg);
				return 2;
			}
			o.names = (unsigned)v;
			break;
		}
		case 't':
			o.threads = (int)strtol(optarg, &end, 10);
			if (*end || o.threads < 1 || o.threads > MAX_THREADS) {
				fprintf(stderr, "ringbench: --threads wants 1..%d, got '%s'\n",
					MAX_THREADS, optarg);
				return 2;
			}
			break;
		case 'w' + 256:
			if (!(o.workload = rb_workload_find(optarg))) {
				fprintf(stderr, "ringbench: --workload wants %s, got '%s'\n",
					RB_WORKLOAD_NAMES, optarg);
				return 2;
			}
			break;
		case 'F': o.find_max_rate = 1; break;
		case 'F' + 256: o.codec_only = 1; break;
		case 'M': o.report_rss = 1; break;
		case 'B': o.baselines = 1; o.producer_only = 1; break;
		case 'L':
			if (strcmp(optarg, "lttng")) {
				fprintf(stderr, "ringbench: --peer knows lttng, not '%s'\n", optarg);
				return 2;
			}
			o.peer_lttng = 1;
			o.producer_only = 1;
			break;
		case 'j': o.json = 1; break;
		case 'C': o.capture_root = optarg; break;
		case 'C' + 256: o.run_id = optarg; break;
		case 'E':
			o.epoch = strtoull(optarg, &end, 10);
			if (*end || !*optarg) {
				fprintf(stderr, "ringbench: --epoch wants a whole number, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'D':
			o.duration = strtod(optarg, &end);
			if (*end || !(o.duration > 0 && o.duration <= 30)) {
				fprintf(stderr, "ringbench: --duration wants 0 < S <= 30, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'X': {
			size_t v;
			if (parse_size(optarg, &v) || v < (1u << 20) || v > KT_CAPTURE_MAX_BYTES) {
				fprintf(stderr, "ringbench: --max-bytes wants 1M..256M, got '%s'\n", optarg);
				return 2;
			}
			o.max_bytes = v;
			break;
		}
		case 'K':
			if (!strcmp(optarg, "stop"))
				o.cap_policy = KT_CAP_STOP;
			else if (!strcmp(optarg, "keep-newest"))
				o.cap_policy = KT_CAP_KEEP_NEWEST;
			else {
				fprintf(stderr, "ringbench: --cap-policy wants stop or keep-newest, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ringbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.threads)
		o.threads = o.workload ? o.workload->threads : 3;
	if (o.bursts > 0) {
		char path[4400];
		default_path(&o, path, sizeof(path));
		kt_config cfg = { .ring_size = o.ring_size, .overflow = o.policy };
		return ringbench_burst(path, o.bursts, o.burst_ms ? o.burst_ms : 500, &cfg,
				       o.codec == KT_CODEC_COMPACT ? 0 : session_codec(o.codec));
	}
	if (o.flight > 0)
		return ringbench_flight(o.ring_size ? o.ring_size : 64u << 20, 2, o.flight,
					session_codec(o.codec));
	if (o.producer_only) {
		if (!o.ring_size)
			o.ring_size = 64u << 20;
		return producer_only(&o);
	}
	if (o.find_max_rate)
		return max_rate_table(&o);
	return frame_loop(&o);
}

/*
 * ringbench --producer-only and --baselines: the emit cost alone, each row
 * timed per batch in one process, rounds alternating the rows (see
 * ringbench.c's head), and the baselines a tracer is measured against.
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
#include "bench/ringbench.h"

/* ---- --producer-only ---------------------------------------------------- */

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

static const char *const row_names[ROWS] = { "katra", "katra_crashfiles", "floor",
					     "katra_disabled", "katra_flight", API_ROW_NAMES,
					     "clock_gettime", "mutex_write",
					     "fprintf", "lttng" };

/* One --producer-only run: per row, the cost samples and the totals. */
struct prod {
	const struct opts *o;
	int want[ROWS];
	struct stats st[ROWS];
	uint64_t events[ROWS], dropped[ROWS], on_disk[ROWS], base_bytes[ROWS];
	double secs[ROWS];
	kt_session_options so, so_crash, so_flight;
	char path[4096], crash_dir[4096], mw_path[4200], fp_path[4200];
	uint32_t id;
	unsigned pos;
	int katra_io;
};

static int traced(int k)
{
	return k == ROW_KATRA || k == ROW_KATRA_CRASH || k == ROW_FLIGHT ||
	       (k >= ROW_API && k < ROW_CLOCK);
}

/* A baseline's writer for row @k: the mutex writer's drainer, or the
 * fprintf row's file.  0, or 1 after saying what failed. */
static int baseline_open(struct prod *P, int k, struct mutex_writer *mw, pthread_t *drainer,
			 FILE **fp)
{
	if (k == ROW_MUTEX) {
		memset(mw, 0, sizeof(*mw));
		pthread_mutex_init(&mw->lock, NULL);
		pthread_cond_init(&mw->full, NULL);
		pthread_cond_init(&mw->empty, NULL);
		mw->buf[0] = malloc(MW_BUF);
		mw->buf[1] = malloc(MW_BUF);
		mw->fd = open(P->mw_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (!mw->buf[0] || !mw->buf[1] || mw->fd < 0) {
			fprintf(stderr, "ringbench: mutex_write set-up failed\n");
			return 1;
		}
		pthread_create(drainer, NULL, mw_drain, mw);
	} else if (k == ROW_FPRINTF) {
		*fp = fopen(P->fp_path, "w");
		if (!*fp) {
			fprintf(stderr, "ringbench: %s: %s\n", P->fp_path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

/* The baseline's end, part of its row's cost: the last buffer's write. */
static void baseline_close(struct prod *P, int k, struct mutex_writer *mw, pthread_t drainer,
			   FILE *fp)
{
	if (k == ROW_MUTEX) {
		pthread_mutex_lock(&mw->lock);
		mw->stop = 1;
		pthread_cond_signal(&mw->full);
		pthread_mutex_unlock(&mw->lock);
		pthread_join(drainer, NULL);
		if (mw->len && write(mw->fd, mw->buf[mw->cur], mw->len) == (ssize_t)mw->len)
			mw->bytes += mw->len;
		close(mw->fd);
		P->base_bytes[k] += mw->bytes;
		free(mw->buf[0]);
		free(mw->buf[1]);
		pthread_mutex_destroy(&mw->lock);
		pthread_cond_destroy(&mw->full);
		pthread_cond_destroy(&mw->empty);
	} else if (fp) {
		fflush(fp);
		P->base_bytes[k] += (uint64_t)ftell(fp);
		fclose(fp);
	}
}

/* @per_round batches of row @k, each timed alone. */
static void time_batches(struct prod *P, int k, uint64_t per_round, struct mutex_writer *mw,
			 FILE *fp)
{
	for (uint64_t b = 0; b < per_round; b++) {
		uint64_t t0 = now_ns();
		switch (k) {
		case ROW_FLOOR: floor_batch(P->id, &P->pos); break;
		case ROW_CLOCK: clock_batch(P->id, &P->pos); break;
		case ROW_MUTEX: mw_batch(mw, P->id); break;
		case ROW_FPRINTF: fprintf_batch(fp, P->id); break;
#ifdef KT_HAVE_LTTNG
		case ROW_LTTNG: lttng_batch(P->id); break;
#endif
		case ROW_API ... ROW_CLOCK - 1: api_batch(k - ROW_API, P->id); break;
		default: katra_batch(P->id); break;
		}
		uint64_t t1 = now_ns();
		stats_add(&P->st[k], (double)(t1 - t0) / BATCH);
	}
}

/* One round of row @k: its session or writer, its batches, their end. */
static int run_row(struct prod *P, int k, uint64_t per_round)
{
	kt_session *s = NULL;
	struct mutex_writer mw;
	pthread_t drainer;
	FILE *fp = NULL;
	if (baseline_open(P, k, &mw, &drainer, &fp))
		return 1;
	if (traced(k) && !P->o->recorded) {
		/* Crash files for their row only: a crash session moves the
		 * thread's ring onto new files, whose first pass the API rows
		 * would measure as well (they had it until session 4d). */
		int rc = kt_session_start(k == ROW_FLIGHT ? NULL : P->path,
					  k == ROW_KATRA_CRASH ? &P->so_crash
					  : k == ROW_FLIGHT ? &P->so_flight : &P->so, &s);
		if (rc) {
			fprintf(stderr, "ringbench: session: %s\n", kt_session_get_start_error());
			return 1;
		}
		katra_batch(P->id); /* register this thread's ring */
	}
	uint64_t t_start = now_ns();
	time_batches(P, k, per_round, &mw, fp);
	baseline_close(P, k, &mw, drainer, fp);
	P->secs[k] += (double)(now_ns() - t_start) / 1e9;
	P->events[k] += per_round * BATCH;
	if (s) {
		kt_summary sum = { 0 };
		int rc = kt_session_stop(s, &sum);
		if (rc) {
			fprintf(stderr, "ringbench: session stop: %s\n", kt_strerror(rc));
			unlink(P->path);
			return 1;
		}
		P->dropped[k] += sum.events_dropped;
		P->katra_io = sum.io_backend;
		P->on_disk[k] += sum.bytes_on_disk;
		P->events[k] += BATCH;
		kt_summary_release(&sum);
	}
	return 0;
}

/* The table: the rows run, and katra's p50 against each. */
static void report(struct prod *P, const struct lttng_peer *peer, int nrows)
{
	const struct opts *o = P->o;
	struct row rows[ROWS];
	int kept = 0;
	for (int k = 0; k < ROWS; k++) {
		if (!P->want[k])
			continue;
		rows[kept++] = (struct row){ .name = k == ROW_KATRA && o->recorded ? "katra_record"
										  : row_names[k],
					.threads = 1,
					.events = P->events[k], .seconds = P->secs[k],
					.p50 = pct(&P->st[k], 0.5), .p99 = pct(&P->st[k], 0.99),
					.p999 = pct(&P->st[k], 0.999),
					.codec = traced(k) ? codec_name(o->codec) : "none",
					.io = traced(k) ? io_name(P->katra_io) : "none",
					.dropped = P->dropped[k], .bytes = P->on_disk[k] };
		free(P->st[k].v);
	}
	for (int k = ROW_CLOCK; k < nrows; k++) {
		rows[k].bytes = P->base_bytes[k];
		rows[k].io = k == ROW_CLOCK ? "none" : "write";
	}
	if (peer->on) {
		rows[kept - 1].dropped = peer->discarded;
		rows[kept - 1].bytes = peer->bytes;
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
}

int producer_only(const struct opts *o)
{
	static struct prod P;
	memset(&P, 0, sizeof(P));
	P.o = o;
	int nrows = o->baselines ? ROW_LTTNG : ROW_CLOCK;
	for (int k = 0; k < ROWS; k++)
		P.want[k] = k < nrows;
	if (o->recorded) {
		/* The session is the environment's (`katra record`), started as
		 * the library loaded: its rings are sized already (--ring-size
		 * of katra record), and kt_init() would be refused. */
		if (!getenv("KT_RECORD_DIR")) {
			fprintf(stderr, "ringbench: --recorded: run under katra record\n");
			return 1;
		}
		for (int k = 0; k < ROWS; k++)
			P.want[k] = k == ROW_KATRA || k == ROW_FLOOR;
	}
	kt_config cfg = { .ring_size = o->ring_size, .overflow = o->policy };
	int rc = o->recorded ? 0 : kt_init(&cfg);
	if (rc) {
		fprintf(stderr, "ringbench: kt_init: %s\n", kt_strerror(rc));
		return 1;
	}
	P.id = kt_name("bench_zone");
	if (o->recorded)
		katra_batch(P.id); /* this thread's ring, before any round */
	const char *tmp = getenv("TMPDIR");
	snprintf(P.path, sizeof(P.path), "%s/ringbench-producer-%ld.katra",
		 tmp && *tmp ? tmp : "/tmp", (long)getpid());
	/* The crash row's rings live where KT_CRASH_DIR says (default
	 * /dev/shm); the katra row must not take it from the environment. */
	const char *env = getenv("KT_CRASH_DIR");
	snprintf(P.crash_dir, sizeof(P.crash_dir), "%s", env ? env : "");
	unsetenv("KT_CRASH_DIR");
	P.so = (kt_session_options){ .codec = o->codec, .given = KT_GIVEN_CODEC,
				     .io = o->io };
	P.so_crash = P.so;
	P.so_crash.crash_dir = P.crash_dir;
	/* The flight row: the same emits into a flight session's rings, which
	 * overwrite their oldest events and write nothing. */
	P.so_flight = P.so;
	P.so_flight.mode = KT_SESSION_FLIGHT;
	/* The baselines write where katra does, to files that are removed. */
	snprintf(P.mw_path, sizeof(P.mw_path), "%s.mutex", P.path);
	snprintf(P.fp_path, sizeof(P.fp_path), "%s.fprintf", P.path);
	struct lttng_peer peer = { 0 };
	if (o->peer_lttng) {
		lttng_peer_start(&peer, P.path);
		P.want[ROW_LTTNG] = peer.on;
	}
	/* Rounds alternate the loops so drift in the machine's state
	 * (frequency, the other core's load) falls on all of them alike. */
	uint64_t per_round = o->events / 10 / BATCH;
	if (per_round == 0)
		per_round = 1;
	for (int round = 0; round < 10; round++)
		for (int k = 0; k < ROWS; k++)
			if (P.want[k] && run_row(&P, k, per_round))
				return 1;
	lttng_peer_stop(&peer);
	unlink(P.path);
	unlink(P.mw_path);
	unlink(P.fp_path);
	report(&P, &peer, nrows);
	return 0;
}

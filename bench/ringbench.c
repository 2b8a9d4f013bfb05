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
#include "bench/ringbench.h"

uint64_t now_ns(void)
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


void stats_add(struct stats *s, double x)
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

double pct(struct stats *s, double p)
{
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	return s->v[(size_t)(p * (double)(s->n - 1) + 0.5)];
}

const char *const codec_names[5] = { "none", "lz4", "lz4-delta", "compact",
					   "compact-zstd" };

const char *codec_name(int codec)
{
	return codec >= 0 && codec <= KT_CODEC_COMPACT_ZSTD ? codec_names[codec] : "?";
}

const char *io_name(int io)
{
	return io == KT_IO_URING ? "uring" : io == KT_IO_PWRITE ? "pwrite" : "none";
}


void print_rows(const struct opts *o, const struct row *rows, int n, const char *path,
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

/* ---- the default workload ---------------------------------------------- */

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

/* The run's capture (with @m) or its session into @path (*@s).  0, or
 * 1 or the session's error after saying what failed. */
static int run_start(const struct opts *o, const char *path, kt_manager *m, kt_session **s)
{
	int rc = 0;
	kt_session_options so = { .codec = o->codec, .given = KT_GIVEN_CODEC, .io = o->io,
				  .workload = workload_label(o) };
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
	} else if ((rc = kt_session_start(path, &so, s))) {
		/* The message names what failed: the file, the crash
		 * directory, the I/O backend... */
		fprintf(stderr, "ringbench: cannot start a session: %s\n", kt_session_get_start_error());
		return rc;
	}
	return 0;
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
	kt_session *s = NULL;
	memset(out, 0, sizeof(*out));
	int rc = run_start(o, path, m, &s);
	if (rc)
		return rc;
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

/* The frame loop's table and what a user does next, as text. */
static void print_text(const struct opts *o, const struct run *run, const struct row *row,
		       const kt_capture_status *cs, const char *path, const char *root,
		       int verified)
{
	const kt_summary *sum = &run->sum;
	uint64_t in_file = cs ? cs->events : sum->events_written;
	uint64_t on_disk = row->bytes;
	if (o->rate > 0)
		printf("ringbench: %s (%d threads), %.2f s, target %.1fM events/s\n",
		       workload_label(o), o->threads, run->seconds, o->rate / 1e6);
	else
		printf("ringbench: %s (%d threads), %.2f s, target max rate\n",
		       workload_label(o), o->threads, run->seconds);
	print_rows(o, row, 1, NULL, NULL, NULL);
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
		       run->rss_at_5s, run->rss_end, run->seconds);
	printf("  file         %s (%s)\n", path, verified ? "verified" : "NOT VALID");
	if (cs)
		printf("  sha256       %s\n  sidecar      %s/%s\n", cs->sha256, root, cs->sidecar);
	char katra[4200];
	katra_beside(katra, sizeof(katra));
	printf("next:\n  %s verify %s\n  %s stats %s\n"
	       "  %s export --chrome %s /tmp/ringbench.json\n", katra, path, katra, path,
	       katra, path);
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
		kt_session_options so = { .codec = o->codec, .given = KT_GIVEN_CODEC, .io = o->io,
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
		print_text(o, &run, &row, cs, path, root, verified);
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
int main(int argc, char **argv)
{
	struct opts o = { .seconds = 5.0, .rate = 10e6, .codec = KT_CODEC_COMPACT,
			  .policy = KT_OVERFLOW_WAIT, .events = 20000000,
			  .run_id = "ringbench", .epoch = 1, .max_bytes = KT_CAPTURE_MAX_BYTES,
			  .cap_policy = KT_CAP_KEEP_NEWEST };
	int rc = rb_parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!o.threads)
		o.threads = o.workload ? o.workload->threads : 3;
	if (o.bursts > 0) {
		char path[4400];
		default_path(&o, path, sizeof(path));
		kt_config cfg = { .ring_size = o.ring_size, .overflow = o.policy };
		return ringbench_burst(path, o.bursts, o.burst_ms ? o.burst_ms : 500, &cfg,
				       o.codec);
	}
	if (o.first_emit > 0)
		return first_emit(&o, o.first_emit);
	if (o.flight > 0)
		return ringbench_flight(o.ring_size ? o.ring_size : 64u << 20, 2, o.flight,
					o.codec);
	if (o.producer_only) {
		/* Not the library's 4 MiB: a row's round (2M records of up
		 * to 32 bytes) must fit in the ring, or the rows with the
		 * larger records wait for the flusher and their medians
		 * measure its pace (alloc 1.4x katra at 4 MiB, 1.00x here:
		 * bench/RESULTS.md, session 4d). */
		if (!o.ring_size)
			o.ring_size = 64u << 20;
		return producer_only(&o);
	}
	if (o.find_max_rate)
		return max_rate_table(&o);
	return frame_loop(&o);
}

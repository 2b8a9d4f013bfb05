/*
 * The capture manager: every state and code with an injected clock, id
 * generator and backend, against golden status JSON; two processes sharing
 * a root; exact trimming at the run's boundaries; byte and duration caps
 * with real katra sessions; SIGKILL during publish; path confinement.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <nettle/sha2.h>

#include <katra/capture.h>
#include <katra/katra.h>

#define MS 1000000ull
#define T0 1796014800000000000ull /* 2026-11-30T05:00:00Z */
#define M0 7000000000000ull       /* the synthetic traces' monotonic start */
#define GOLDEN_DIR KT_TEST_DATA "/capture/"

/* ---- injected clock, ids and backend ------------------------------------ */

/* Returns @vals in order, then T0 + 1 ms per call after them. */
struct tclock {
	uint64_t vals[16];
	int n;
	atomic_int i;
};

static uint64_t tclock_now(void *ctx)
{
	struct tclock *c = ctx;
	int k = atomic_fetch_add(&c->i, 1);
	return k < c->n ? c->vals[k] : T0 + (uint64_t)(k + 1) * MS;
}

static int tid_gen(void *ctx, char *buf, size_t size)
{
	atomic_int *n = ctx;
	snprintf(buf, size, "cap-%04d", atomic_fetch_add(n, 1) + 1);
	return 0;
}

/*
 * Writes, at stop, a trace of instants every @step ns of wall time in
 * [@from, @to] on threads 1 and 2, whose header maps T0 to M0, so a wall
 * time w is the tick w - T0 + M0.
 */
struct synth {
	int start_rc, stop_rc;
	int block_stop;
	sem_t release;
	uint64_t from, to, step;
	int fd;
	const kt_session_options *so;
	void (*on_cap)(void *cap_ctx); /* the manager's, from the args */
	void *cap_ctx;
	atomic_int stops;
	/* The flight policy's snapshot: what it answers, and was asked. */
	int snap_rc;
	uint64_t snap_head_loss, snap_trimmed;
	uint64_t snap_age, snap_max_bytes;
	atomic_int snaps;
};

static int synth_start(void *ctx, const kt_backend_args *a, void **handle)
{
	struct synth *s = ctx;
	*handle = s;
	s->fd = a->fd;
	s->so = a->session;
	s->on_cap = a->on_cap;
	s->cap_ctx = a->cap_ctx;
	return s->start_rc;
}

static int synth_write(struct synth *s)
{
	kt_header h;
	kt_header_init(&h);
	h.start_wall_ns = T0;
	h.start_mono_ns = M0;
	h.workload = "synthetic";
	/* Not the library's version: the golden sha256s must not move with it. */
	h.tool_version = "synthetic-backend";
	kt_writer *w;
	int rc = kt_writer_open_fd(s->fd, &h, &w);
	if (rc)
		return rc;
	static uint8_t buf[1 << 16];
	for (uint32_t tid = 1; tid <= 2 && !rc; tid++) {
		size_t n = 0;
		for (uint64_t t = s->from; t <= s->to && !rc; t += s->step) {
			kt_event ev = { .ts = t - T0 + M0, .name_id = 1, .type = KT_EV_INSTANT };
			n += kt_event_encode(buf + n, sizeof(buf) - n, &ev);
			if (n + 64 > sizeof(buf) || t + s->step > s->to) {
				rc = kt_writer_chunk(w, tid, KT_CODEC_NONE, 1, buf, n);
				n = 0;
			}
		}
		if (!rc)
			rc = kt_writer_thread(w, tid, 100 + tid, tid == 1 ? "main" : "render");
	}
	if (!rc)
		rc = kt_writer_name(w, 1, "tick", 4);
	if (!rc)
		rc = kt_writer_finish(w, NULL);
	int crc = kt_writer_close(w);
	return rc ? rc : crc;
}

static int synth_stop(void *ctx, void *handle)
{
	(void)handle;
	struct synth *s = ctx;
	atomic_fetch_add(&s->stops, 1);
	if (s->block_stop)
		sem_wait(&s->release);
	if (s->stop_rc)
		return s->stop_rc;
	/* A flight session's stop writes nothing: its snapshot did. */
	return s->so->mode == KT_SESSION_FLIGHT ? 0 : synth_write(s);
}

/* A flight snapshot: the same trace, its head lost when asked to be (the
 * rings then held events from @from on, the window's first). */
static int synth_snapshot(void *ctx, void *handle, int fd, uint64_t max_age_ns,
			  uint64_t max_bytes, kt_snapshot_result *res)
{
	(void)handle;
	struct synth *s = ctx;
	atomic_fetch_add(&s->snaps, 1);
	s->snap_age = max_age_ns;
	s->snap_max_bytes = max_bytes;
	if (s->snap_rc)
		return s->snap_rc;
	s->fd = fd;
	res->head_loss_ns = s->snap_head_loss;
	res->window_start = s->from - T0 + M0;
	res->events_trimmed = s->snap_trimmed;
	return synth_write(s);
}

/* Failures on demand: the @fsync_fail-th fsync (1-based; 0 never) and
 * every rename when @rename_fail. */
struct faults {
	atomic_int fsyncs;
	int fsync_fail;
	int rename_fail;
};

static int fault_fsync(void *ctx, int fd)
{
	struct faults *f = ctx;
	if (atomic_fetch_add(&f->fsyncs, 1) + 1 == f->fsync_fail)
		return -EIO;
	return fsync(fd) < 0 ? -errno : 0;
}

static int fault_rename(void *ctx, int dirfd, const char *from, const char *to)
{
	struct faults *f = ctx;
	if (f->rename_fail)
		return -EXDEV;
	return renameat(dirfd, from, dirfd, to) < 0 ? -errno : 0;
}

/* One manager over a fresh root, with everything injected. */
struct fx {
	char dir[64];    /* holds root/ and outside/ */
	char root[96];
	char outside[96];
	struct tclock clock;
	atomic_int ids;
	struct synth synth;
	struct faults faults;
	kt_capture_backend backend;
	kt_capture_hooks hooks;
	kt_manager_options mo;
	kt_manager *m;
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/kt-capture-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->root, sizeof(f->root), "%s/root", f->dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
	cr_assert_eq(mkdir(f->root, 0755), 0);
	cr_assert_eq(mkdir(f->outside, 0755), 0);
	f->synth.from = T0 + 10 * MS;
	f->synth.to = T0 + 20 * MS;
	f->synth.step = MS;
	sem_init(&f->synth.release, 0, 0);
	f->backend = (kt_capture_backend){ synth_start, synth_stop, &f->synth, synth_snapshot };
	f->hooks = (kt_capture_hooks){ fault_fsync, fault_rename, &f->faults };
	f->mo.root = f->root;
	f->mo.backend = &f->backend;
	f->mo.hooks = &f->hooks;
	f->mo.now = tclock_now;
	f->mo.now_ctx = &f->clock;
	f->mo.new_id = tid_gen;
	f->mo.id_ctx = &f->ids;
}

static void fx_open(struct fx *f)
{
	cr_assert_eq(kt_manager_new(&f->mo, &f->m), 0);
}

static void rm_tree(const char *path)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

static void fx_fini(struct fx *f)
{
	if (f->m)
		kt_manager_close(f->m);
	f->m = NULL;
	sem_destroy(&f->synth.release);
	rm_tree(f->dir);
}

/* The names in @dir, sorted, joined with spaces ("" when empty). */
static void ls(const char *dir, char *out, size_t size)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);
	cr_assert_geq(n, 0);
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
			size_t l = strlen(out);
			snprintf(out + l, size - l, "%s%s", l ? " " : "", list[i]->d_name);
		}
		free(list[i]);
	}
	free(list);
}

static void check_json(const kt_capture_status *st, const char *name)
{
	char *json = kt_capture_status_json(st);
	cr_assert_not_null(json);
	char path[256];
	snprintf(path, sizeof(path), GOLDEN_DIR "%s.json", name);
	if (getenv("KT_REGEN_GOLDEN")) {
		FILE *g = fopen(path, "wb");
		cr_assert_not_null(g);
		fprintf(g, "%s\n", json);
		fclose(g);
	}
	size_t len = 0;
	char *want = (char *)t_slurp(path, &len);
	cr_assert_not_null(want, "missing %s", path);
	cr_assert_eq(len, strlen(json) + 1, "%s: got %s", name, json);
	cr_assert_eq(memcmp(want, json, len - 1), 0, "%s: got %s\nwant %s", name, json, want);
	free(want);
	free(json);
}

static kt_capture_ref start(struct fx *f, const char *run, uint64_t epoch, uint64_t boundary)
{
	kt_capture_ref r;
	kt_manager_start(f->m,
			 &(kt_start_request){ .run_id = run, .epoch = epoch, .state = "running",
					      .validity = "valid", .boundary_at = boundary },
			 &r);
	return r;
}

static kt_capture_ref stop(struct fx *f, const char *run, uint64_t epoch, uint64_t boundary,
			   int abort)
{
	kt_capture_ref t;
	kt_manager_request_stop(f->m,
				&(kt_stop_request){ .run_id = run, .epoch = epoch, .reason = "run-end",
						    .boundary_at = boundary, .abort = abort },
				&t);
	return t;
}

static kt_capture_status await_final(struct fx *f, const kt_capture_ref *t)
{
	kt_capture_status st;
	cr_assert_eq(kt_manager_await(f->m, t, UINT64_MAX, &st), 0);
	return st;
}

static void sha256_file(const char *path, char hex[65])
{
	size_t len;
	uint8_t *p = t_slurp(path, &len);
	cr_assert_not_null(p, "%s", path);
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&c);
	sha256_update(&c, len, p);
	sha256_digest(&c, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	free(p);
}

/* ---- every state and code ------------------------------------------------- */

Test(states, capturing_then_published)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	kt_capture_ref r = start(&f, "bench-42", 7, T0);
	cr_assert_str_eq(r.run_id, "bench-42");
	cr_assert_eq(r.epoch, 7);
	cr_assert_str_eq(r.capture_id, "cap-0001");
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	cr_assert_eq(r.code, KT_CODE_NONE);
	kt_capture_status st;
	cr_assert_eq(kt_manager_get_status(f.m, "bench-42", 7, &st), 0);
	check_json(&st, "capturing");

	kt_capture_ref t = stop(&f, "bench-42", 7, T0 + 30 * MS, 0);
	cr_assert_str_eq(t.capture_id, "cap-0001");
	cr_assert_eq(t.state, KT_STATE_STOPPING);
	cr_assert_eq(t.code, KT_CODE_NONE);
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.code, KT_CODE_NONE);
	cr_assert_str_eq(st.file, "bench-42.7.cap-0001.katra");
	cr_assert_str_eq(st.sidecar, "bench-42.7.cap-0001.katra.json");
	cr_assert_eq(st.events, 22); /* 11 instants on each of 2 threads */
	check_json(&st, "published");

	/* What is on disk: the trace, its sidecar (the same JSON), the lock. */
	char names[512], path[512], hex[65];
	ls(f.root, names, sizeof(names));
	cr_assert_str_eq(names, ".katra.lock bench-42.7.cap-0001.katra bench-42.7.cap-0001.katra.json");
	snprintf(path, sizeof(path), "%s/%s", f.root, st.file);
	sha256_file(path, hex);
	cr_assert_str_eq(hex, st.sha256);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq((uint64_t)sb.st_size, st.bytes);
	snprintf(path, sizeof(path), "%s/%s", f.root, st.sidecar);
	size_t len = 0;
	char *side = (char *)t_slurp(path, &len);
	char *json = kt_capture_status_json(&st);
	cr_assert_eq(len, strlen(json) + 1);
	cr_assert_eq(memcmp(side, json, len - 1), 0);
	free(side);
	free(json);
	fx_fini(&f);
}

Test(states, replayed_names_the_first_capture)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	cr_assert_eq(start(&f, "run", 1, 0).state, KT_STATE_CAPTURING);
	kt_capture_ref r = start(&f, "run", 1, 0);
	cr_assert_eq(r.state, KT_STATE_REPLAYED);
	cr_assert_eq(r.code, KT_CODE_NONE);
	cr_assert_str_eq(r.capture_id, "cap-0001");
	/* Also once published. */
	kt_capture_ref t = stop(&f, "run", 1, 0, 0);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	r = start(&f, "run", 1, 0);
	cr_assert_eq(r.state, KT_STATE_REPLAYED);
	cr_assert_str_eq(r.capture_id, "cap-0001");
	cr_assert_eq(kt_manager_get_status(f.m, "run", 1, &st), 0);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	fx_fini(&f);
}

/* A start that is refused: its result, and its status against @golden. */
static void start_refused(struct fx *f, const char *run, uint64_t epoch, kt_capture_state state,
			  kt_capture_code code, const char *golden)
{
	kt_capture_ref r = start(f, run, epoch, 0);
	cr_assert_eq(r.state, state);
	cr_assert_eq(r.code, code);
	kt_capture_status st;
	cr_assert_eq(kt_manager_get_status(f->m, run, epoch, &st), 0);
	check_json(&st, golden);
}

Test(states, run_invalid)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	char long_id[130];
	memset(long_id, 'a', 129);
	long_id[129] = 0;
	const char *bad[] = { "", long_id, "a/b", ".hidden", "a..b", "caf\xc3\xa9", "sp ace" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		kt_capture_ref r = start(&f, bad[i], 1, 0);
		cr_assert_eq(r.state, KT_STATE_SKIPPED, "%s", bad[i]);
		cr_assert_eq(r.code, KT_CODE_RUN_INVALID, "%s", bad[i]);
		cr_assert_str_eq(r.capture_id, "");
	}
	/* 128 bytes is still a run id. */
	long_id[128] = 0;
	kt_capture_ref r = start(&f, long_id, 1, 0);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	kt_capture_ref t = stop(&f, long_id, 1, 0, 1);
	cr_assert_eq(t.state, KT_STATE_ABORTED);

	/* Validity other than "valid". */
	kt_manager_start(f.m, &(kt_start_request){ .run_id = "r", .epoch = 5, .validity = "invalid" },
			 &r);
	cr_assert_eq(r.state, KT_STATE_SKIPPED);
	cr_assert_eq(r.code, KT_CODE_RUN_INVALID);
	kt_manager_start(f.m, &(kt_start_request){ .run_id = "r", .epoch = 5 }, &r);
	cr_assert_eq(r.code, KT_CODE_RUN_INVALID);
	/* An epoch older than one seen for the run. */
	cr_assert_eq(start(&f, "r", 6, 0).state, KT_STATE_CAPTURING);
	t = stop(&f, "r", 6, 0, 1);
	start_refused(&f, "r", 4, KT_STATE_SKIPPED, KT_CODE_RUN_INVALID, "skipped-run-invalid");
	fx_fini(&f);
}

/* A run id that starts with '-': the capture's file name would read as
 * options on a command line (`rm -rf.1.abc.katra`). */
Test(states, run_ids_that_read_as_options)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	const char *bad[] = { "-rf", "--help", "-" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		kt_capture_ref r = start(&f, bad[i], 1, 0);
		cr_assert_eq(r.state, KT_STATE_SKIPPED, "%s", bad[i]);
		cr_assert_eq(r.code, KT_CODE_RUN_INVALID, "%s", bad[i]);
		kt_capture_ref t = stop(&f, bad[i], 1, 0, 0);
		cr_assert_eq(t.code, KT_CODE_NO_ACTIVE_CAPTURE);
	}
	/* Inside, a dash is fine. */
	cr_assert_eq(start(&f, "a-b", 1, 0).state, KT_STATE_CAPTURING);
	fx_fini(&f);
}

Test(states, profiler_busy_then_free_again)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	cr_assert_eq(start(&f, "first", 1, 0).state, KT_STATE_CAPTURING);
	start_refused(&f, "second", 1, KT_STATE_SKIPPED, KT_CODE_PROFILER_BUSY,
		      "skipped-profiler-busy");
	kt_capture_ref t = stop(&f, "first", 1, 0, 0);
	await_final(&f, &t);
	/* A skipped start may be tried again with the same epoch. */
	kt_capture_ref r = start(&f, "second", 1, 0);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	cr_assert_str_eq(r.capture_id, "cap-0002");
	fx_fini(&f);
}

Test(states, disk_budget)
{
	struct fx f;
	fx_init(&f);
	f.mo.min_free = UINT64_MAX / 4;
	fx_open(&f);
	start_refused(&f, "run", 1, KT_STATE_SKIPPED, KT_CODE_DISK_BUDGET, "skipped-disk-budget");
	fx_fini(&f);
}

Test(states, artifact_create_failed)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	/* Something already holds the artifact's temporary name. */
	char path[256];
	snprintf(path, sizeof(path), "%s/.katra-tmp-%ld-cap-0001.katra", f.root, (long)getpid());
	cr_assert_eq(mkdir(path, 0755), 0);
	start_refused(&f, "run", 1, KT_STATE_FAILED, KT_CODE_ARTIFACT_CREATE_FAILED,
		      "failed-artifact-create-failed");
	cr_assert_eq(atomic_load(&f.synth.stops), 0);
	/* The profiler is free again. */
	rmdir(path);
	cr_assert_eq(start(&f, "run", 2, 0).state, KT_STATE_CAPTURING);
	fx_fini(&f);
}

Test(states, start_failed)
{
	struct fx f;
	fx_init(&f);
	f.synth.start_rc = -EIO;
	fx_open(&f);
	start_refused(&f, "run", 1, KT_STATE_FAILED, KT_CODE_START_FAILED, "failed-start-failed");
	char names[256];
	ls(f.root, names, sizeof(names));
	cr_assert_str_eq(names, ".katra.lock");
	fx_fini(&f);
}

Test(states, stopping_while_the_backend_drains)
{
	struct fx f;
	fx_init(&f);
	f.synth.block_stop = 1;
	fx_open(&f);
	start(&f, "run", 1, 0);
	kt_capture_ref t = stop(&f, "run", 1, 0, 0);
	cr_assert_eq(t.state, KT_STATE_STOPPING);
	kt_capture_status st;
	cr_assert_eq(kt_manager_await(f.m, &t, 1 * MS, &st), -ETIMEDOUT);
	cr_assert_eq(st.state, KT_STATE_STOPPING);
	check_json(&st, "stopping");
	/* Another start meanwhile: the profiler is still busy. */
	cr_assert_eq(start(&f, "other", 1, 0).code, KT_CODE_PROFILER_BUSY);
	sem_post(&f.synth.release);
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	fx_fini(&f);
}

/* A capture that fails after it started: the code, the JSON, no files. */
static void fails_after_start(struct fx *f, kt_capture_code code, const char *golden)
{
	fx_open(f);
	start(f, "run", 1, 0);
	kt_capture_ref t = stop(f, "run", 1, 0, 0);
	kt_capture_status st = await_final(f, &t);
	cr_assert_eq(st.state, KT_STATE_FAILED);
	cr_assert_eq(st.code, code);
	check_json(&st, golden);
	char names[256];
	ls(f->root, names, sizeof(names));
	cr_assert_str_eq(names, ".katra.lock");
	fx_fini(f);
}

Test(states, stop_failed)
{
	struct fx f;
	fx_init(&f);
	f.synth.stop_rc = -EIO;
	fails_after_start(&f, KT_CODE_STOP_FAILED, "failed-stop-failed");
}

Test(states, publish_failed)
{
	struct fx f;
	fx_init(&f);
	f.faults.rename_fail = 1;
	fails_after_start(&f, KT_CODE_PUBLISH_FAILED, "failed-publish-failed");
}

Test(states, durability_unknown)
{
	/* fsyncs: 1 the trace, 2 the sidecar, 3 the root after the sidecar's
	 * rename, 4 the root after the trace's. */
	for (int fail = 1; fail <= 4; fail++) {
		struct fx f;
		fx_init(&f);
		f.faults.fsync_fail = fail;
		fx_open(&f);
		start(&f, "run", 1, 0);
		kt_capture_ref t = stop(&f, "run", 1, 0, 0);
		kt_capture_status st = await_final(&f, &t);
		cr_assert_eq(st.code, KT_CODE_DURABILITY_UNKNOWN, "fsync %d", fail);
		char names[256];
		ls(f.root, names, sizeof(names));
		if (fail < 4) {
			/* Not known to be on disk: not published. */
			cr_assert_eq(st.state, KT_STATE_FAILED, "fsync %d", fail);
			cr_assert_str_eq(names, ".katra.lock", "fsync %d", fail);
			if (fail == 1)
				check_json(&st, "failed-durability-unknown");
		} else {
			/* In place, but whether it lasts a power cut is unknown. */
			cr_assert_eq(st.state, KT_STATE_PUBLISHED);
			cr_assert_str_eq(names, ".katra.lock run.1.cap-0001.katra run.1.cap-0001.katra.json");
			check_json(&st, "published-durability-unknown");
		}
		fx_fini(&f);
	}
}

Test(states, aborted_removes_everything)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	start(&f, "run", 1, T0);
	kt_capture_ref t = stop(&f, "run", 1, T0 + 5 * MS, 1);
	cr_assert_eq(t.state, KT_STATE_ABORTED);
	cr_assert_eq(t.code, KT_CODE_ABORTED);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_ABORTED);
	check_json(&st, "aborted");
	char names[256];
	ls(f.root, names, sizeof(names));
	cr_assert_str_eq(names, ".katra.lock");
	/* A second stop of the same capture only reports it. */
	t = stop(&f, "run", 1, 0, 0);
	cr_assert_eq(t.state, KT_STATE_ABORTED);
	fx_fini(&f);
}

Test(states, no_active_capture)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	kt_capture_ref t = stop(&f, "nothing", 3, 0, 0);
	cr_assert_eq(t.state, KT_STATE_NONE);
	cr_assert_eq(t.code, KT_CODE_NO_ACTIVE_CAPTURE);
	cr_assert_str_eq(t.run_id, "nothing");
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_SKIPPED);
	check_json(&st, "skipped-no-active-capture");
	/* A skipped start has no capture to stop either. */
	f.mo.min_free = 0;
	kt_capture_ref r;
	kt_manager_start(f.m, &(kt_start_request){ .run_id = "r", .epoch = 1, .validity = "no" }, &r);
	t = stop(&f, "r", 1, 0, 0);
	cr_assert_eq(t.code, KT_CODE_NO_ACTIVE_CAPTURE);
	cr_assert_eq(kt_manager_get_status(f.m, "never", 1, &st), -ENOENT);
	fx_fini(&f);
}

Test(states, duration_complete_and_output_too_large)
{
	struct fx f;
	fx_init(&f);
	f.mo.duration_ns = 50 * MS;
	fx_open(&f);
	start(&f, "run", 1, T0);
	kt_capture_status st;
	kt_capture_ref t = { .run_id = "run", .epoch = 1 };
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.code, KT_CODE_DURATION_COMPLETE);
	cr_assert_str_eq(st.stop_reason, "max-duration");
	check_json(&st, "published-duration-complete");
	/* The backend says the byte cap is reached. */
	f.mo.duration_ns = 0;
	start(&f, "run", 2, T0);
	f.synth.on_cap(f.synth.cap_ctx);
	t.epoch = 2;
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.code, KT_CODE_OUTPUT_TOO_LARGE);
	cr_assert_str_eq(st.stop_reason, "max-bytes");
	cr_assert_eq(st.complete, 0);
	check_json(&st, "published-output-too-large");
	fx_fini(&f);
}

Test(options, out_of_range_and_bad_roots)
{
	struct fx f;
	fx_init(&f);
	kt_manager *m = NULL;
	f.mo.duration_ns = KT_CAPTURE_MAX_DURATION_NS + 1;
	cr_assert_eq(kt_manager_new(&f.mo, &m), -EINVAL);
	f.mo.duration_ns = 0;
	f.mo.max_bytes = KT_CAPTURE_MAX_BYTES + 1;
	cr_assert_eq(kt_manager_new(&f.mo, &m), -EINVAL);
	f.mo.max_bytes = 0;
	f.mo.cap_policy = 7;
	cr_assert_eq(kt_manager_new(&f.mo, &m), -EINVAL);
	f.mo.cap_policy = 0;
	char path[256];
	snprintf(path, sizeof(path), "%s/link", f.dir);
	cr_assert_eq(symlink(f.root, path), 0);
	f.mo.root = path;
	cr_assert_eq(kt_manager_new(&f.mo, &m), -ELOOP);
	snprintf(path, sizeof(path), "%s/file", f.dir);
	close(open(path, O_CREAT | O_WRONLY, 0644));
	cr_assert_eq(kt_manager_new(&f.mo, &m), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/missing", f.dir);
	cr_assert_eq(kt_manager_new(&f.mo, &m), -ENOENT);
	cr_assert_null(m);
	fx_fini(&f);
}

/* ---- trimming ---------------------------------------------------------------- */

/* Events in a published file, per thread, with their wall times' range. */
static void file_events(const char *root, const char *name, uint64_t count[3], uint64_t *lo,
			uint64_t *hi)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, name);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_event ev;
	int rc;
	count[1] = count[2] = 0;
	*lo = UINT64_MAX;
	*hi = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		uint64_t w = ev.ts - M0 + T0;
		count[ev.thread_id]++;
		*lo = w < *lo ? w : *lo;
		*hi = w > *hi ? w : *hi;
	}
	cr_assert_eq(rc, 0);
	kt_reader_close(r);
}

/*
 * The run [+50 ms, +800 ms], published: the clock reads @times (@n of
 * them) and the backend writes events every 10 ms from @held_from to
 * +900 ms on each thread.
 */
static kt_capture_status run_to_800(struct fx *f, const uint64_t *times, int n,
				    uint64_t held_from)
{
	memcpy(f->clock.vals, times, (size_t)n * sizeof(*times));
	f->clock.n = n;
	f->synth.from = held_from;
	f->synth.to = T0 + 900 * MS;
	f->synth.step = 10 * MS;
	fx_open(f);
	start(f, "run", 1, T0 + 50 * MS);
	kt_capture_ref t = stop(f, "run", 1, T0 + 800 * MS, 0);
	kt_capture_status st = await_final(f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	return st;
}

Test(trim, head_loss_and_tail_excess_are_exact)
{
	struct fx f;
	fx_init(&f);
	/* Start asked at +100 ms, recording from +110 ms; stop asked at
	 * +900 ms. */
	uint64_t times[] = { T0 + 100 * MS, T0 + 110 * MS, T0 + 900 * MS, T0 + 950 * MS };
	kt_capture_status st = run_to_800(&f, times, 4, T0 + 110 * MS);
	kt_capture_ref t;
	cr_assert_eq(st.requested_span_ns, 750 * MS);
	cr_assert_eq(st.head_loss_ns, 60 * MS);     /* +50 to +110 */
	cr_assert_eq(st.tail_excess_ns, 100 * MS);  /* +800 to +900 */
	cr_assert_eq(st.capture_span_ns, 690 * MS); /* +110 to +800 */
	cr_assert_eq(st.complete, 0);
	cr_assert_eq(st.events, 140);
	cr_assert_eq(st.events_trimmed, 20);
	uint64_t n[3], lo, hi;
	file_events(f.root, st.file, n, &lo, &hi);
	cr_assert_eq(n[1], 70);
	cr_assert_eq(n[2], 70);
	cr_assert_eq(lo, T0 + 110 * MS);
	cr_assert_eq(hi, T0 + 800 * MS);
	check_json(&st, "published-trimmed");
	kt_manager_close(f.m);
	f.m = NULL;

	/* The run starts after the capture and ends after its stop: the head
	 * is cut at the boundary, nothing is lost, no tail to cut. */
	atomic_store(&f.clock.i, 0);
	fx_open(&f);
	start(&f, "run", 2, T0 + 200 * MS);
	t = stop(&f, "run", 2, T0 + 1000 * MS, 0);
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.requested_span_ns, 800 * MS);
	cr_assert_eq(st.head_loss_ns, 0);
	cr_assert_eq(st.tail_excess_ns, 0);
	cr_assert_eq(st.capture_span_ns, 700 * MS); /* +200 to +900 */
	cr_assert_eq(st.complete, 0);                /* it stopped before the run did */
	file_events(f.root, st.file, n, &lo, &hi);
	cr_assert_eq(n[1], 71);
	cr_assert_eq(n[2], 71);
	cr_assert_eq(lo, T0 + 200 * MS);
	cr_assert_eq(hi, T0 + 900 * MS);
	kt_manager_close(f.m);
	f.m = NULL;

	/* The whole run inside the capture: complete. */
	atomic_store(&f.clock.i, 0);
	fx_open(&f);
	start(&f, "run", 3, T0 + 200 * MS);
	t = stop(&f, "run", 3, T0 + 300 * MS, 0);
	st = await_final(&f, &t);
	cr_assert_eq(st.capture_span_ns, 100 * MS);
	cr_assert_eq(st.tail_excess_ns, 600 * MS);
	cr_assert_eq(st.complete, 1);
	file_events(f.root, st.file, n, &lo, &hi);
	cr_assert_eq(n[1], 11);
	cr_assert_eq(lo, T0 + 200 * MS);
	cr_assert_eq(hi, T0 + 300 * MS);
	fx_fini(&f);
}

/* F16: UINT64_MAX as the run's end is no end (as 0): the capture keeps its
 * events instead of a window that wraps to nothing. */
Test(trim, an_open_end_keeps_the_capture)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	cr_assert_eq(start(&f, "run", 1, T0).state, KT_STATE_CAPTURING);
	kt_capture_ref t = stop(&f, "run", 1, UINT64_MAX, 0);
	cr_assert_eq(t.state, KT_STATE_STOPPING);
	cr_assert_eq(t.code, KT_CODE_NONE);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.events, 22);
	cr_assert_eq(st.events_trimmed, 0);
	cr_assert_eq(st.boundary_finish, 0);
	cr_assert_eq(st.requested_span_ns, 0);
	cr_assert_eq(st.complete, 0, "no end: the run's span is unknown");
	fx_fini(&f);
}

/* F16: an end before the run's start, or past INT64_MAX, is refused and
 * changes nothing; a start past INT64_MAX starts nothing. */
Test(trim, inverted_or_huge_boundaries_are_refused)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	kt_capture_ref r = start(&f, "huge", 1, (1ull << 63) + 5);
	cr_assert_eq(r.state, KT_STATE_SKIPPED);
	cr_assert_eq(r.code, KT_CODE_RUN_INVALID);
	cr_assert_str_eq(r.capture_id, "");

	cr_assert_eq(start(&f, "run", 1, T0 + 15 * MS).state, KT_STATE_CAPTURING);
	const uint64_t bad[] = { T0 + 5 * MS, (1ull << 63) + 5 };
	for (int i = 0; i < 2; i++) {
		kt_capture_ref t = stop(&f, "run", 1, bad[i], 0);
		cr_assert_eq(t.state, KT_STATE_CAPTURING, "bad end %d", i);
		cr_assert_eq(t.code, KT_CODE_RUN_INVALID, "bad end %d", i);
		kt_capture_status st;
		cr_assert_eq(kt_manager_get_status(f.m, "run", 1, &st), 0);
		cr_assert_eq(st.state, KT_STATE_CAPTURING);
		cr_assert_eq(st.boundary_finish, 0);
	}
	kt_capture_ref t = stop(&f, "run", 1, T0 + 20 * MS, 0);
	cr_assert_eq(t.state, KT_STATE_STOPPING);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.requested_span_ns, 5 * MS);
	cr_assert_eq(st.events, 12); /* +15 to +20 ms on each of 2 threads */
	fx_fini(&f);
}

/* ---- close while others wait --------------------------------------------- */

struct closer_waiter {
	kt_manager *m;
	kt_capture_ref t;
	atomic_int tid;
	int rc;
	kt_capture_status st;
};

static void *await_thread(void *arg)
{
	struct closer_waiter *w = arg;
	atomic_store(&w->tid, (int)gettid());
	w->rc = kt_manager_await(w->m, &w->t, UINT64_MAX, &w->st);
	return NULL;
}

/* Wait until thread @tid of this process sleeps (in await's wait). */
static void wait_asleep(int tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (;;) {
		FILE *f = fopen(path, "r");
		cr_assert_not_null(f);
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		const char *paren = strrchr(buf, ')');
		if (paren && paren[1] == ' ' && paren[2] == 'S')
			return;
		sched_yield();
	}
}

/* F17: kt_manager_close() while threads wait in kt_manager_await(): close
 * waits for them to leave before it frees what they wait on (ASan and
 * TSan see the use after free this was). */
Test(close, while_others_await_the_capture, .timeout = 60)
{
	for (int round = 0; round < 20; round++) {
		struct fx f;
		fx_init(&f);
		fx_open(&f);
		kt_capture_ref r = start(&f, "run", 1, 0);
		cr_assert_eq(r.state, KT_STATE_CAPTURING);
		struct closer_waiter w[2] = { { .m = f.m, .t = r }, { .m = f.m, .t = r } };
		pthread_t th[2];
		for (int i = 0; i < 2; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, await_thread, &w[i]), 0);
		for (int i = 0; i < 2; i++) {
			while (!atomic_load(&w[i].tid))
				sched_yield();
			wait_asleep(atomic_load(&w[i].tid));
		}
		kt_manager_close(f.m);
		f.m = NULL;
		for (int i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			cr_assert_eq(w[i].rc, 0);
			cr_assert_eq(w[i].st.state, KT_STATE_ABORTED, "round %d: %s", round,
				     kt_capture_state_name(w[i].st.state));
		}
		fx_fini(&f);
	}
}

/* ---- two processes ------------------------------------------------------- */

static void wait_byte(int fd, char want)
{
	char c = 0;
	cr_assert_eq(read(fd, &c, 1), 1);
	cr_assert_eq(c, want);
}

Test(procs, second_process_gets_profiler_busy_until_the_first_stops, .timeout = 60)
{
	struct fx f;
	fx_init(&f);
	int to_child[2], to_parent[2];
	cr_assert_eq(pipe(to_child), 0);
	cr_assert_eq(pipe(to_parent), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The first process: capture until told, then publish. */
		alarm(50);
		kt_manager *m;
		if (kt_manager_new(&f.mo, &m))
			_exit(10);
		kt_capture_ref r;
		kt_manager_start(m, &(kt_start_request){ .run_id = "one", .epoch = 1, .validity = "valid" },
				 &r);
		if (r.state != KT_STATE_CAPTURING)
			_exit(11);
		char c = 'S';
		if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(12);
		kt_capture_ref t;
		kt_manager_request_stop(m, &(kt_stop_request){ .run_id = "one", .epoch = 1 }, &t);
		kt_capture_status st;
		kt_manager_await(m, &t, UINT64_MAX, &st);
		kt_manager_close(m);
		_exit(st.state == KT_STATE_PUBLISHED ? 0 : 13);
	}
	wait_byte(to_parent[0], 'S');
	fx_open(&f);
	kt_capture_ref r = start(&f, "two", 1, 0);
	cr_assert_eq(r.state, KT_STATE_SKIPPED);
	cr_assert_eq(r.code, KT_CODE_PROFILER_BUSY);
	/* Nothing started: no capture id, in the answer or the status. */
	cr_assert_str_eq(r.capture_id, "");
	kt_capture_status busy;
	cr_assert_eq(kt_manager_get_status(f.m, "two", 1, &busy), 0);
	cr_assert_str_eq(busy.capture_id, "");
	cr_assert_eq(write(to_child[1], "X", 1), 1);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	r = start(&f, "two", 1, 0);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	kt_capture_ref t = stop(&f, "two", 1, 0, 0);
	cr_assert_eq(await_final(&f, &t).state, KT_STATE_PUBLISHED);
	char names[512];
	ls(f.root, names, sizeof(names));
	/* Each process has its own id generator; the refused start used one
	 * id (the owner is asked for a capture id). */
	cr_assert_str_eq(names, ".katra.lock one.1.cap-0001.katra one.1.cap-0001.katra.json "
				"two.1.cap-0002.katra two.1.cap-0002.katra.json");
	fx_fini(&f);
}

/* ---- caps with real katra sessions ---------------------------------------- */

struct producer {
	uint64_t bytes;        /* to write */
	atomic_int done;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint32_t id = kt_name("counter");
	kt_thread_name("producer");
	/* A counter record is 24 bytes. */
	for (uint64_t i = 0; i < p->bytes / 24; i++)
		kt_counter(id, (int64_t)i);
	atomic_store(&p->done, 1);
	return NULL;
}

#define CAPPED_EVENTS ((50u << 20) / 24)

/* The trace at @path says whose it is (SPEC §4.10): one process entry,
 * id 0, of this process's pid and name, whichever segment it begins with. */
static void has_own_process(const char *path)
{
	char comm[64] = "";
	FILE *cf = fopen("/proc/self/comm", "r");
	cr_assert(cf && fgets(comm, sizeof(comm), cf));
	fclose(cf);
	comm[strcspn(comm, "\n")] = 0;
	kt_reader *r;
	kt_trace_frame f;
	int entries = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_reader_skip_events(r, 1);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (!p)
			continue;
		entries++;
		cr_assert(p->id == 0 && p->pid == (uint64_t)getpid(), "entry %u: pid %llu", p->id,
			  (unsigned long long)p->pid);
		cr_assert_str_eq(p->name, comm);
	}
	kt_reader_close(r);
	cr_assert_eq(entries, 1, "%d process entries", entries);
}

/* *@last: the highest counter value in the published file; *@sum: the
 * session's summary, from the manager's own backend. */
/* @boundary: give the run's start (else the capture's start stands in). */
static kt_capture_status capped_capture(int policy, int io, int boundary, int64_t *last,
					kt_summary *sum)
{
	/* Raw chunks: the cap is counted in 24-byte records. */
	kt_session_options so = { .io = io, .given = KT_GIVEN_CODEC, .codec = KT_CODEC_NONE };
	kt_config cfg = { .overflow = KT_OVERFLOW_BLOCK, .ring_size = 1u << 20 };
	cr_assert_eq(kt_init(&cfg), 0);
	struct fx f;
	fx_init(&f);
	*sum = (kt_summary){ 0 };
	f.backend = kt_manager_session_backend(sum);
	f.mo.now = NULL;
	f.mo.hooks = NULL;
	f.mo.max_bytes = 2u << 20;
	f.mo.cap_policy = policy;
	f.mo.duration_ns = 30000 * MS;
	f.mo.session = &so;
	fx_open(&f);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	kt_capture_ref r = start(&f, "capped", 1, boundary ? t0 : 0);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	struct producer p = { .bytes = CAPPED_EVENTS * 24 };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, produce, &p), 0);
	pthread_join(th, NULL);
	kt_capture_ref t = stop(&f, "capped", 1, 0, 0);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED, "state %d code %d", st.state, st.code);
	cr_assert_leq(st.bytes, 2u << 20);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", f.root, st.file);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq((uint64_t)sb.st_size, st.bytes);
	/* It reads whole, summary and all. */
	kt_reader *rd;
	cr_assert_eq(kt_reader_open(path, NULL, &rd), 0);
	kt_event ev;
	int rc;
	*last = -1;
	while ((rc = kt_reader_next(rd, &ev)) > 0) {
		int64_t v;
		memcpy(&v, ev.payload, 8);
		*last = v > *last ? v : *last;
	}
	cr_assert_eq(rc, 0);
	kt_reader_status rs;
	kt_reader_get_status(rd, &rs);
	cr_assert(rs.complete);
	cr_assert_eq(rs.events, st.events);
	kt_reader_close(rd);
	has_own_process(path);
	/* Nothing left but the capture and the lock. */
	char names[512], want[512];
	ls(f.root, names, sizeof(names));
	snprintf(want, sizeof(want), ".katra.lock %s %s", st.file, st.sidecar);
	cr_assert_str_eq(names, want);
	fx_fini(&f);
	/* The producer's ring (and its name) lives in mapped pages that a
	 * leak checker does not scan: free it rather than leave it to exit. */
	cr_assert_eq(kt_shutdown(), 0);
	return st;
}

Test(caps, two_mib_cap_under_fifty_mib_stops_output_too_large, .timeout = 120)
{
	int64_t last;
	kt_summary sum;
	kt_capture_status st = capped_capture(KT_CAP_STOP, KT_IO_AUTO, 1, &last, &sum);
	cr_assert_lt(last, CAPPED_EVENTS - 1);
	/* The session's side: full, in its one file; events past the cap
	 * counted dropped until the capture stopped it. */
	cr_assert_eq(sum.capped, 1);
	cr_assert_eq(sum.segments, 1);
	cr_assert_gt(sum.events_dropped, 0);
	cr_assert_lt(sum.events_written, (2u << 20) / 24);
	kt_summary_release(&sum);
	cr_assert_eq(st.code, KT_CODE_OUTPUT_TOO_LARGE);
	cr_assert_str_eq(st.stop_reason, "max-bytes");
	cr_assert_eq(st.complete, 0);
	cr_assert_gt(st.events, 0);
	/* 50 MiB of 24-byte records, and 2 MiB kept: most are not in it. */
	cr_assert_lt(st.events, (2u << 20) / 24);
}

/* Dozens of segments, each new one through the same sink. */
static void keeps_the_newest(int io, int boundary)
{
	int64_t last;
	kt_summary sum;
	kt_capture_status st = capped_capture(KT_CAP_KEEP_NEWEST, io, boundary, &last, &sum);
	/* The session wrote every event, over many more files than are kept. */
	cr_assert_eq(sum.capped, 0);
	cr_assert_gt(sum.segments, KT_CAP_SEGMENTS);
	cr_assert_eq(sum.events_written, CAPPED_EVENTS);
	cr_assert_eq(sum.events_dropped, 0);
	kt_summary_release(&sum);
	/* The newest events are the ones kept: the producer's last is in. */
	cr_assert_eq(last, CAPPED_EVENTS - 1);
	cr_assert_eq(st.code, KT_CODE_NONE);
	cr_assert_gt(st.head_loss_ns, 0);
	cr_assert_eq(st.complete, 0);
	cr_assert_gt(st.events, 0);
	cr_assert_lt(st.events, (2u << 20) / 24);
}

Test(caps, two_mib_cap_under_fifty_mib_keeps_the_newest_uring, .timeout = 120)
{
	keeps_the_newest(KT_IO_URING, 1);
}

Test(caps, two_mib_cap_under_fifty_mib_keeps_the_newest_pwrite, .timeout = 120)
{
	/* And without a run start: the head lost is still reported. */
	keeps_the_newest(KT_IO_PWRITE, 0);
}

Test(caps, duration_cap_of_200_ms_with_a_session, .timeout = 60)
{
	struct fx f;
	fx_init(&f);
	/* The manager's own backend, keeping the summary: the default's. */
	kt_summary sum = { 0 };
	f.backend = kt_manager_session_backend(&sum);
	f.mo.now = NULL;
	f.mo.hooks = NULL;
	f.mo.duration_ns = 200 * MS;
	fx_open(&f);
	kt_capture_ref r = start(&f, "timed", 1, 0);
	cr_assert_eq(r.state, KT_STATE_CAPTURING);
	uint32_t id = kt_name("tick");
	for (int i = 0; i < 1000; i++)
		kt_instant(id);
	kt_capture_ref t = { .run_id = "timed", .epoch = 1 };
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.code, KT_CODE_DURATION_COMPLETE);
	cr_assert_str_eq(st.stop_reason, "max-duration");
	cr_assert_eq(st.events, 1000);
	cr_assert_eq(sum.events_written, 1000);
	cr_assert_eq(sum.events_dropped, 0);
	cr_assert_eq(sum.thread_count, 1);
	cr_assert_eq(sum.segments, 1);
	cr_assert_eq(sum.capped, 0);
	kt_summary_release(&sum);
	fx_fini(&f);
	cr_assert_eq(kt_shutdown(), 0);
}

/* ---- crash safety ------------------------------------------------------------ */

static int is_tmp(const char *n)
{
	return !strncmp(n, ".katra-tmp-", 11);
}

/*
 * Every trace in @root has its sidecar, whose sha256 and file fields match
 * it.  Returns how many traces there are; counts leftovers in *@tmps and
 * sidecars without a trace in *@orphans.
 */
static int check_published(const char *root, int *tmps, int *orphans)
{
	DIR *d = opendir(root);
	cr_assert_not_null(d);
	struct dirent *e;
	int traces = 0;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		size_t len = strlen(n);
		char path[512], side[512];
		if (is_tmp(n)) {
			(*tmps)++;
			continue;
		}
		if (len > 11 && !strcmp(n + len - 11, ".katra.json")) {
			snprintf(path, sizeof(path), "%s/%.*s", root, (int)(len - 5), n);
			if (access(path, F_OK) != 0)
				(*orphans)++;
			continue;
		}
		if (len < 6 || strcmp(n + len - 6, ".katra"))
			continue;
		traces++;
		snprintf(path, sizeof(path), "%s/%s", root, n);
		snprintf(side, sizeof(side), "%s/%s.json", root, n);
		json_error_t jerr;
		json_t *j = json_load_file(side, 0, &jerr);
		cr_assert_not_null(j, "%s has no readable sidecar: %s", n, jerr.text);
		char hex[65];
		sha256_file(path, hex);
		cr_assert_str_eq(json_string_value(json_object_get(j, "sha256")), hex, "%s", n);
		cr_assert_str_eq(json_string_value(json_object_get(j, "file")), n);
		cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "published");
		json_decref(j);
	}
	closedir(d);
	return traces;
}

Test(crash, sigkill_during_publish_never_leaves_a_lie, .timeout = 300)
{
	struct fx f;
	fx_init(&f);
	/* Big enough that publishing takes a while: 2 x 40001 events. */
	f.synth.from = T0;
	f.synth.to = T0 + 40000 * MS;
	f.synth.step = MS;
	f.mo.now = NULL;
	unsigned seed = 12345;
	int total_tmps = 0, total_orphans = 0, published = 0;
	for (int round = 0; round < 50; round++) {
		int ready[2];
		cr_assert_eq(pipe(ready), 0);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			alarm(60);
			close(ready[0]);
			kt_manager *m;
			if (kt_manager_new(&f.mo, &m))
				_exit(10);
			for (uint64_t epoch = 1;; epoch++) {
				char run[32];
				snprintf(run, sizeof(run), "r%d", round);
				kt_capture_ref r;
				kt_manager_start(m, &(kt_start_request){ .run_id = run, .epoch = epoch,
									 .validity = "valid" }, &r);
				kt_capture_ref t;
				kt_manager_request_stop(m, &(kt_stop_request){ .run_id = run,
									       .epoch = epoch }, &t);
				kt_capture_status st;
				kt_manager_await(m, &t, UINT64_MAX, &st);
				/* The first one is published: the kills come after, at
				 * whatever point of the next captures they land. */
				if (epoch == 1 && write(ready[1], "P", 1) != 1)
					_exit(11);
			}
		}
		close(ready[1]);
		wait_byte(ready[0], 'P');
		close(ready[0]);
		struct timespec ts = { 0, (long)(rand_r(&seed) % 40000) * 1000 };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int status;
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status), "child ended by itself: %d", status);
		/* Right after the kill: whatever is published is whole. */
		int tmps = 0, orphans = 0;
		published = check_published(f.root, &tmps, &orphans);
		total_tmps += tmps;
		total_orphans += orphans;
		/* The next manager cleans up what the dead one left. */
		kt_manager *m;
		cr_assert_eq(kt_manager_new(&f.mo, &m), 0);
		tmps = orphans = 0;
		cr_assert_eq(check_published(f.root, &tmps, &orphans), published);
		cr_assert_eq(tmps, 0);
		cr_assert_eq(orphans, 0);
		kt_manager_close(m);
	}
	cr_log_info("50 kills: %d published, %d temporary files and %d orphan sidecars cleaned",
		    published, total_tmps, total_orphans);
	cr_assert_gt(published, 0);
	cr_assert_gt(total_tmps, 0);
	fx_fini(&f);
}

/* ---- path safety ---------------------------------------------------------------- */

Test(paths, hostile_run_ids_and_planted_symlinks_stay_inside)
{
	struct fx f;
	fx_init(&f);
	fx_open(&f);
	char kib[1025];
	memset(kib, 'a', 1024);
	kib[1024] = 0;
	struct {
		const char *id;
		size_t len;
	} bad[] = {
		{ "..", 0 }, { "../escape", 0 }, { "a/../../b", 0 }, { "/etc/passwd", 0 },
		{ "a/b", 0 }, { "a\0b", 3 }, { "\0", 1 }, { kib, 0 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		kt_capture_ref r;
		kt_manager_start(f.m, &(kt_start_request){ .run_id = bad[i].id,
							   .run_id_len = bad[i].len, .epoch = 1,
							   .validity = "valid" }, &r);
		cr_assert_eq(r.state, KT_STATE_SKIPPED, "run id %zu", i);
		cr_assert_eq(r.code, KT_CODE_RUN_INVALID, "run id %zu", i);
		kt_capture_ref t;
		kt_manager_request_stop(f.m, &(kt_stop_request){ .run_id = bad[i].id,
								 .run_id_len = bad[i].len, .epoch = 1 }, &t);
		cr_assert_eq(t.code, KT_CODE_NO_ACTIVE_CAPTURE);
	}
	char names[512], path[512], target[512];
	ls(f.root, names, sizeof(names));
	cr_assert_str_eq(names, ".katra.lock");

	/* A symlink planted where the next artifact will be created. */
	snprintf(path, sizeof(path), "%s/.katra-tmp-%ld-cap-0001.katra", f.root, (long)getpid());
	snprintf(target, sizeof(target), "%s/artifact", f.outside);
	cr_assert_eq(symlink(target, path), 0);
	kt_capture_ref r = start(&f, "run", 1, 0);
	cr_assert_eq(r.state, KT_STATE_FAILED);
	cr_assert_eq(r.code, KT_CODE_ARTIFACT_CREATE_FAILED);
	unlink(path);

	/* Symlinks planted at the published names: replaced, not followed. */
	snprintf(path, sizeof(path), "%s/run.2.cap-0002.katra", f.root);
	snprintf(target, sizeof(target), "%s/trace", f.outside);
	cr_assert_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/run.2.cap-0002.katra.json", f.root);
	snprintf(target, sizeof(target), "%s/sidecar", f.outside);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(start(&f, "run", 2, 0).state, KT_STATE_CAPTURING);
	kt_capture_ref t = stop(&f, "run", 2, 0, 0);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	struct stat sb;
	snprintf(path, sizeof(path), "%s/%s", f.root, st.file);
	cr_assert_eq(lstat(path, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode));
	snprintf(path, sizeof(path), "%s/%s", f.root, st.sidecar);
	cr_assert_eq(lstat(path, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode));
	kt_manager_close(f.m);
	f.m = NULL;

	/* A lock file planted as a symlink out of the root. */
	snprintf(path, sizeof(path), "%s/.katra.lock", f.root);
	unlink(path);
	snprintf(target, sizeof(target), "%s/lock", f.outside);
	cr_assert_eq(symlink(target, path), 0);
	kt_manager *m = NULL;
	cr_assert_eq(kt_manager_new(&f.mo, &m), -ELOOP);

	/* Nothing was ever created outside the root. */
	ls(f.outside, names, sizeof(names));
	cr_assert_str_eq(names, "");
	ls(f.dir, names, sizeof(names));
	cr_assert_str_eq(names, "outside root");
	fx_fini(&f);
}

/* ---- free text ------------------------------------------------------------ */

/*
 * A stop reason is free text: cut inside a character by the status's 63
 * bytes, or not UTF-8 at all, it must still publish, cut at a character
 * and with its stray bytes escaped.
 */
Test(text, a_stop_reason_that_is_not_clean_utf8_still_publishes)
{
	static const struct {
		const char *reason, *kept;
	} cases[] = {
		/* 62 bytes, then a two-byte character that does not fit */
		{ "0123456789012345678901234567890123456789012345678901234567890r\xc3\xa9",
		  "0123456789012345678901234567890123456789012345678901234567890r" },
		/* a stray byte, a truncated character, a NUL-free control */
		{ "bad \xff byte, cut \xe2\x82 and \x01", "bad \\xFF byte, cut \\xE2\\x82 and \x01" },
		/* an escape that would not fit whole is left out */
		{ "012345678901234567890123456789012345678901234567890123456789\xfe",
		  "012345678901234567890123456789012345678901234567890123456789" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fx f;
		fx_init(&f);
		fx_open(&f);
		cr_assert_eq(start(&f, "run", 1, 0).state, KT_STATE_CAPTURING);
		kt_capture_ref t;
		kt_manager_request_stop(f.m, &(kt_stop_request){ .run_id = "run", .epoch = 1,
								  .reason = cases[i].reason },
					&t);
		kt_capture_status st = await_final(&f, &t);
		cr_assert_eq(st.state, KT_STATE_PUBLISHED, "case %zu: code %s", i,
			     kt_capture_code_name(st.code));
		cr_assert_str_eq(st.stop_reason, cases[i].kept, "case %zu", i);
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", f.root, st.sidecar);
		size_t len;
		char *side = (char *)t_slurp(path, &len);
		cr_assert_not_null(side);
		json_error_t err;
		json_t *o = json_loadb(side, len, 0, &err);
		cr_assert_not_null(o, "case %zu: %s", i, err.text);
		cr_assert_str_eq(json_string_value(json_object_get(o, "stop_reason")), cases[i].kept);
		json_decref(o);
		free(side);
		fx_fini(&f);
	}
	/* A status a caller filled with any bytes still becomes JSON. */
	kt_capture_status st = { .state = KT_STATE_SKIPPED };
	snprintf(st.run_id, sizeof(st.run_id), "r\xff");
	snprintf(st.stop_reason, sizeof(st.stop_reason), "\xc3");
	char *json = kt_capture_status_json(&st);
	cr_assert_not_null(json);
	cr_assert_not_null(strstr(json, "\"run_id\":\"r\\\\xFF\""), "%s", json);
	cr_assert_not_null(strstr(json, "\"stop_reason\":\"\\\\xC3\""), "%s", json);
	free(json);
}

/* ---- fd 0 ------------------------------------------------------------------- */

/* A daemon whose stdin is closed: the capture's file gets fd 0, and a
 * real session must take it (in a child, to leave this stdin alone). */
Test(fd0, a_capture_in_a_process_without_stdin, .timeout = 60)
{
	struct fx f;
	fx_init(&f);
	f.mo.backend = NULL;
	f.mo.now = NULL;
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(50);
		kt_manager *m;
		if (kt_manager_new(&f.mo, &m))
			_exit(10);
		close(0); /* the next file opened, the capture's, gets fd 0 */
		kt_capture_ref r;
		kt_manager_start(m, &(kt_start_request){ .run_id = "daemon", .epoch = 1,
							  .validity = "valid" }, &r);
		if (r.state != KT_STATE_CAPTURING)
			_exit(11);
		uint32_t id = kt_name("c");
		for (int64_t i = 0; i < 1000; i++)
			kt_counter(id, i);
		kt_capture_ref t;
		kt_manager_request_stop(m, &(kt_stop_request){ .run_id = "daemon", .epoch = 1 }, &t);
		kt_capture_status st;
		kt_manager_await(m, &t, UINT64_MAX, &st);
		kt_manager_close(m);
		_exit(st.state == KT_STATE_PUBLISHED && st.events == 1000 ? 0 : 12);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	fx_fini(&f);
}

/* ---- the flight policy ------------------------------------------------------ */

static const kt_session_options flight_so = { .mode = KT_SESSION_FLIGHT };

/* A manager of the flight policy over the injected backend. */
static void fx_flight(struct fx *f)
{
	fx_init(f);
	f->mo.session = &flight_so;
}

Test(flight_policy, capturing_then_published)
{
	struct fx f;
	fx_flight(&f);
	fx_open(&f);
	cr_assert_eq(start(&f, "bench-42", 7, T0).state, KT_STATE_CAPTURING);
	cr_assert_eq(f.synth.so->mode, KT_SESSION_FLIGHT, "the backend is told flight");
	kt_capture_status st;
	cr_assert_eq(kt_manager_get_status(f.m, "bench-42", 7, &st), 0);
	check_json(&st, "capturing");
	kt_capture_ref t = stop(&f, "bench-42", 7, T0 + 30 * MS, 0);
	cr_assert_eq(t.state, KT_STATE_STOPPING);
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.events, 22);
	/* One snapshot, then the stop.  Clock calls: start asked (+1 ms) and
	 * done (+2), stop asked (+3), the snapshot's now (+4): the window
	 * [T0, T0 + 30 ms] reaches back 4 ms, and 50 ms of slack. */
	cr_assert_eq(f.synth.snaps, 1);
	cr_assert_eq(f.synth.stops, 1);
	cr_assert_eq(f.synth.snap_age, 54 * MS);
	cr_assert_eq(f.synth.snap_max_bytes, KT_CAPTURE_DEFAULT_MAX_BYTES);
	char path[512], hex[65];
	snprintf(path, sizeof(path), "%s/%s", f.root, st.file);
	sha256_file(path, hex);
	cr_assert_str_eq(hex, st.sha256);
	check_json(&st, "flight-published");
	fx_fini(&f);
}

/*
 * The run [+50 ms, +800 ms] is longer than the 100 ms window: the window
 * is [+700 ms, +800 ms], its start the status's boundary_start, and the
 * events the rings hold outside it are trimmed (with those the snapshot
 * itself left out).
 */
static kt_capture_status flight_window(struct fx *f, uint64_t head_loss, uint64_t held_from)
{
	uint64_t times[] = { T0 + 100 * MS, T0 + 110 * MS, T0 + 900 * MS, T0 + 905 * MS,
			     T0 + 950 * MS };
	f->mo.duration_ns = 100 * MS;
	f->synth.snap_trimmed = 5;
	f->synth.snap_head_loss = head_loss;
	kt_capture_status st = run_to_800(f, times, 5, held_from);
	cr_assert_eq(st.boundary_start, T0 + 700 * MS);
	cr_assert_eq(st.requested_span_ns, 100 * MS);
	cr_assert_eq(st.tail_excess_ns, 100 * MS); /* +800 to +900 */
	/* From +905 ms back to +700 ms, and the slack. */
	cr_assert_eq(f->synth.snap_age, 255 * MS);
	return st;
}

Test(flight_policy, window_is_the_last_duration_of_the_run)
{
	struct fx f;
	fx_flight(&f);
	kt_capture_status st = flight_window(&f, 0, T0 + 110 * MS);
	cr_assert_eq(st.head_loss_ns, 0);
	cr_assert_eq(st.capture_span_ns, 100 * MS);
	cr_assert_eq(st.complete, 1);
	cr_assert_eq(st.events, 22);                  /* +700 to +800, 2 threads */
	cr_assert_eq(st.events_trimmed, 2 * 69 + 5); /* +110 to +690, +810 to +900 */
	uint64_t n[3], lo, hi;
	file_events(f.root, st.file, n, &lo, &hi);
	cr_assert_eq(n[1], 11);
	cr_assert_eq(lo, T0 + 700 * MS);
	cr_assert_eq(hi, T0 + 800 * MS);
	check_json(&st, "flight-published-window");
	fx_fini(&f);
}

/* The rings held the run only from +740 ms: the 40 ms before are the
 * window's head loss, and the capture is not complete. */
Test(flight_policy, rings_that_could_not_hold_the_window_report_head_loss)
{
	struct fx f;
	fx_flight(&f);
	kt_capture_status st = flight_window(&f, 40 * MS + 50 * MS, T0 + 740 * MS);
	cr_assert_eq(st.head_loss_ns, 40 * MS);
	cr_assert_eq(st.capture_span_ns, 60 * MS);
	cr_assert_eq(st.complete, 0);
	cr_assert_eq(st.events, 14);
	check_json(&st, "flight-published-head-loss");
	fx_fini(&f);
}

/* The flight capture fails, is aborted or does not last as any other. */
Test(flight_policy, failed_and_aborted)
{
	struct fx f;
	fx_flight(&f);
	f.synth.snap_rc = -EIO;
	fails_after_start(&f, KT_CODE_STOP_FAILED, "flight-failed-stop-failed");
	cr_assert_eq(f.synth.stops, 1, "its session stopped all the same");
	fx_flight(&f);
	f.faults.rename_fail = 1;
	fails_after_start(&f, KT_CODE_PUBLISH_FAILED, "flight-failed-publish-failed");
	fx_flight(&f);
	f.faults.fsync_fail = 1;
	fails_after_start(&f, KT_CODE_DURABILITY_UNKNOWN, "flight-failed-durability-unknown");

	fx_flight(&f);
	fx_open(&f);
	start(&f, "run", 1, T0);
	kt_capture_ref t = stop(&f, "run", 1, T0 + 5 * MS, 1);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_ABORTED);
	cr_assert_eq(f.synth.snaps, 0, "an abort writes nothing");
	check_json(&st, "aborted");
	fx_fini(&f);
}

/* Its duration is the window, not a limit: it records until stopped. */
Test(flight_policy, runs_past_its_duration)
{
	struct fx f;
	fx_flight(&f);
	f.mo.duration_ns = 20 * MS;
	fx_open(&f);
	start(&f, "run", 1, T0);
	usleep(100000);
	kt_capture_status st;
	cr_assert_eq(kt_manager_get_status(f.m, "run", 1, &st), 0);
	cr_assert_eq(st.state, KT_STATE_CAPTURING);
	kt_capture_ref t = stop(&f, "run", 1, 0, 0);
	st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED);
	cr_assert_eq(st.code, KT_CODE_NONE);
	fx_fini(&f);
}

Test(flight_policy, needs_a_backend_that_snapshots)
{
	struct fx f;
	fx_flight(&f);
	f.backend.snapshot = NULL;
	cr_assert_eq(kt_manager_new(&f.mo, &f.m), -EINVAL);
	fx_fini(&f);
}

/* A real flight session over 64 KiB rings: @n counters from one thread,
 * then the stop; the published file's first counter in *@first. */
static kt_capture_status flight_real(uint64_t n, int64_t *first)
{
	kt_config cfg = { .ring_size = KT_RING_MIN };
	cr_assert_eq(kt_init(&cfg), 0);
	struct fx f;
	fx_flight(&f);
	f.mo.backend = NULL;
	f.mo.now = NULL;
	f.mo.hooks = NULL;
	f.mo.duration_ns = 10000 * MS;
	fx_open(&f);
	cr_assert_eq(start(&f, "flight", 1, 0).state, KT_STATE_CAPTURING);
	uint32_t id = kt_name("counter");
	for (uint64_t i = 0; i < n; i++)
		kt_counter(id, (int64_t)i);
	kt_capture_ref t = stop(&f, "flight", 1, 0, 0);
	kt_capture_status st = await_final(&f, &t);
	cr_assert_eq(st.state, KT_STATE_PUBLISHED, "state %d code %d", st.state, st.code);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", f.root, st.file);
	kt_reader *rd;
	cr_assert_eq(kt_reader_open(path, NULL, &rd), 0);
	kt_event ev;
	int rc;
	*first = -1;
	for (int64_t prev = -1; (rc = kt_reader_next(rd, &ev)) > 0;) {
		int64_t v;
		memcpy(&v, ev.payload, 8);
		cr_assert(prev < 0 || v == prev + 1, "a hole after %" PRId64, prev);
		*first = prev < 0 ? v : *first;
		prev = v;
	}
	cr_assert_eq(rc, 0);
	kt_reader_close(rd);
	fx_fini(&f);
	cr_assert_eq(kt_shutdown(), 0);
	return st;
}

/*
 * 100000 counters of 24 bytes lap a 64 KiB ring ~36 times: the window (10
 * s, from the capture's start) is far more than it holds, so the file
 * starts at the ring's oldest event and says how much it lacks.  100 fit.
 */
Test(flight_policy, real_rings_report_head_loss, .timeout = 60)
{
	int64_t first;
	kt_capture_status st = flight_real(100000, &first);
	cr_assert_gt(st.head_loss_ns, 0);
	cr_assert_eq(st.complete, 0);
	cr_assert_eq(st.events, 2720, "the ring's newest, as test_flight counts them");
	cr_assert_eq(first, 97280);
	st = flight_real(100, &first);
	cr_assert_eq(st.head_loss_ns, 0);
	cr_assert_eq(st.events, 100);
	cr_assert_eq(first, 0);
}

/*
 * The flusher end to end: every event type from several threads, both
 * codecs, both I/O backends, read back exactly; io_uring refused by a
 * seccomp filter; writes that fail part way.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include <katra/katra.h>

#define THREADS 3
#define ROUNDS 4000 /* each round emits EVENTS_PER_ROUND events */
#define EVENTS_PER_ROUND 10

struct names {
	uint32_t zone, counter, fcounter, instant, frame, flow, msg, user, marker;
};

static void intern(struct names *n)
{
	n->zone = kt_name("e2e.zone");
	n->counter = kt_name("e2e.counter");
	n->fcounter = kt_name("e2e.fcounter");
	n->instant = kt_name("e2e.instant");
	n->frame = kt_name("e2e.frame");
	n->flow = kt_name("e2e.flow");
	n->msg = kt_name("e2e.msg");
	n->user = kt_name("e2e.user");
	n->marker = kt_name("e2e.marker");
}

struct prod {
	int index;
	const struct names *n;
};

/* The round's user payload: a length and bytes that depend on both. */
static size_t user_payload(int thread, uint64_t i, uint8_t *out)
{
	size_t len = (size_t)((i * 7 + (uint64_t)thread) % 41);
	for (size_t k = 0; k < len; k++)
		out[k] = (uint8_t)(i + k * 13 + (uint64_t)thread);
	return len;
}

static void *e2e_producer(void *arg)
{
	struct prod *p = arg;
	const struct names *n = p->n;
	char name[16];
	snprintf(name, sizeof(name), "e2e-%d", p->index);
	kt_thread_name(name);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		char msg[32];
		uint8_t user[64];
		int mlen = snprintf(msg, sizeof(msg), "t%d msg %llu", p->index, (unsigned long long)i);
		size_t ulen = user_payload(p->index, i, user);
		kt_zone_begin(n->zone);
		kt_counter(n->counter, (int64_t)(i * 3) - 7);
		kt_counter_f64(n->fcounter, (double)i * 0.5);
		kt_instant(n->instant);
		kt_frame(n->frame, i);
		kt_flow(n->flow, i * 100 + (uint64_t)p->index, (kt_flow_phase)(i % 3));
		kt_message(n->msg, msg, (size_t)mlen);
		kt_emit(KT_EV_USER, n->user, (uint8_t)(i & 0xff), user, ulen);
		kt_zone_end(n->zone);
		kt_counter(n->marker, (int64_t)i);
	}
	return NULL;
}

/* Check one thread's events against what e2e_producer emitted. */
struct expect {
	int thread;
	uint64_t i;
	int k;          /* event within the round */
	uint64_t last_ts;
	uint64_t n;
};

static void check_event(struct expect *x, const struct names *n, const kt_event *ev)
{
	uint64_t i = x->i;
	int64_t iv;
	double dv;
	uint64_t uv;
	cr_assert_geq(ev->ts, x->last_ts, "thread %d: time went backwards", x->thread);
	x->last_ts = ev->ts;
	switch (x->k) {
	case 0:
		cr_assert_eq(ev->type, KT_EV_ZONE_BEGIN);
		cr_assert_eq(ev->name_id, n->zone);
		break;
	case 1:
		cr_assert_eq(ev->type, KT_EV_COUNTER_I64);
		cr_assert_eq(ev->name_id, n->counter);
		memcpy(&iv, ev->payload, 8);
		cr_assert_eq(iv, (int64_t)(i * 3) - 7);
		break;
	case 2:
		cr_assert_eq(ev->type, KT_EV_COUNTER_F64);
		cr_assert_eq(ev->name_id, n->fcounter);
		memcpy(&dv, ev->payload, 8);
		cr_assert_eq(dv, (double)i * 0.5);
		break;
	case 3:
		cr_assert_eq(ev->type, KT_EV_INSTANT);
		cr_assert_eq(ev->name_id, n->instant);
		cr_assert_eq(ev->payload_len, 0);
		break;
	case 4:
		cr_assert_eq(ev->type, KT_EV_FRAME);
		memcpy(&uv, ev->payload, 8);
		cr_assert_eq(uv, i);
		break;
	case 5:
		cr_assert_eq(ev->type, KT_EV_FLOW);
		cr_assert_eq(ev->name_id, n->flow);
		cr_assert_eq(ev->flags, i % 3);
		memcpy(&uv, ev->payload, 8);
		cr_assert_eq(uv, i * 100 + (uint64_t)x->thread);
		break;
	case 6: {
		char msg[32];
		int mlen = snprintf(msg, sizeof(msg), "t%d msg %llu", x->thread, (unsigned long long)i);
		cr_assert_eq(ev->type, KT_EV_MESSAGE);
		cr_assert_eq(ev->payload_len, mlen);
		cr_assert_eq(memcmp(ev->payload, msg, (size_t)mlen), 0);
		break;
	}
	case 7: {
		uint8_t user[64];
		size_t ulen = user_payload(x->thread, i, user);
		cr_assert_eq(ev->type, KT_EV_USER);
		cr_assert_eq(ev->flags, i & 0xff);
		cr_assert_eq(ev->payload_len, ulen);
		cr_assert_eq(memcmp(ev->payload, user, ulen), 0);
		break;
	}
	case 8:
		cr_assert_eq(ev->type, KT_EV_ZONE_END);
		cr_assert_eq(ev->name_id, n->zone);
		break;
	case 9:
		cr_assert_eq(ev->type, KT_EV_COUNTER_I64);
		cr_assert_eq(ev->name_id, n->marker);
		memcpy(&iv, ev->payload, 8);
		cr_assert_eq(iv, (int64_t)i);
		break;
	}
	x->n++;
	if (++x->k == EVENTS_PER_ROUND) {
		x->k = 0;
		x->i++;
	}
}

/* Whether a chunk of codec @got may stand in a session of codec @codec:
 * the compact codecs store a chunk zstd would not shrink enough as codec
 * 3, and one no codec shrinks raw (a chunk of a few events, which a slow
 * build such as TSan's flushes often). */
static int chunk_codec_ok(int codec, int got)
{
	if (got == codec)
		return 1;
	return codec >= KT_CODEC_COMPACT && (got == KT_CODEC_COMPACT || got == KT_CODEC_NONE);
}

/* A session of codec option @opt and backend @io, read back exactly; its
 * header says @codec, and so do its chunks but the small ones the writer
 * keeps from growing. */
static void run_e2e_as(int opt, int codec, int io)
{
	kt_config cfg = { .ring_size = 64 << 10, .overflow = KT_OVERFLOW_BLOCK };
	cr_assert_eq(kt_init(&cfg), 0);
	struct names n;
	intern(&n);
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-e2e-%d-%d-%d.katra", opt, io, (int)getpid());
	kt_session_options o = { .codec = opt, .io = io, .fsync_interval_ns = 5000000 };
	/* @opt is the codec given, but where the file's differs: 0 left unset,
	 * for the default (compact). */
	if (opt == codec)
		o.given = KT_GIVEN_CODEC;
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	struct prod p[THREADS];
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++) {
		p[i] = (struct prod){ i, &n };
		cr_assert_eq(pthread_create(&th[i], NULL, e2e_producer, &p[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.io_backend, io);
	cr_assert_eq(sum.io_error, 0);
	cr_assert_eq(sum.events_written, THREADS * ROUNDS * EVENTS_PER_ROUND);
	cr_assert_eq(sum.events_dropped, 0);
	kt_summary_release(&sum);

	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open(path, &e, &r), 0, "%s", e.message);
	const kt_header *h = kt_reader_get_header(r);
	cr_assert_eq(h->capture.codec, codec);
	cr_assert_eq(h->capture.io, io);
	struct expect x[64] = { 0 };
	char names[64][16] = { { 0 } };
	int name_ok = 0, exact = 0, rc;
	kt_trace_frame f;
	/* Thread ids map to e2e-N only through thread frames, which come at
	 * stop: read twice, first for the map. */
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_THREAD && f.u.thread.thread_id < 64)
			snprintf(names[f.u.thread.thread_id], 16, "%s", f.u.thread.name);
		if (f.kind == KT_FRAME_NAME && f.u.name.id == n.msg)
			name_ok += !strcmp(f.u.name.str, "e2e.msg");
		if (f.kind == KT_FRAME_CHUNK) {
			cr_assert(chunk_codec_ok(codec, f.u.chunk.codec), "chunk codec %d",
				  (int)f.u.chunk.codec);
			exact += f.u.chunk.codec == codec;
		}
		if (f.kind == KT_FRAME_SUMMARY)
			cr_assert_eq(f.u.summary.io_backend, io);
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	cr_assert_eq(name_ok, 1);
	cr_assert_gt(exact, 0);
	kt_reader_rewind(r);
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		uint32_t tid = f.u.chunk.thread_id;
		cr_assert_lt(tid, 64);
		int thread = -1;
		cr_assert_eq(sscanf(names[tid], "e2e-%d", &thread), 1, "thread %u unnamed", tid);
		x[tid].thread = thread;
		kt_chunk_iter it;
		kt_event ev;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev))
			check_event(&x[tid], &n, &ev);
	}
	cr_assert_eq(rc, 0);
	int threads = 0;
	for (int t = 0; t < 64; t++) {
		if (!names[t][0])
			continue;
		threads++;
		cr_assert_eq(x[t].n, ROUNDS * EVENTS_PER_ROUND, "%s: %llu events", names[t],
			     (unsigned long long)x[t].n);
	}
	cr_assert_eq(threads, THREADS);
	kt_reader_close(r);
	unlink(path);
}

static void run_e2e(int codec, int io)
{
	run_e2e_as(codec, codec, io);
}

Test(e2e, raw_pwrite)
{
	run_e2e_as(KT_CODEC_NONE, KT_CODEC_NONE, KT_IO_PWRITE);
}

Test(e2e, raw_uring)
{
	run_e2e_as(KT_CODEC_NONE, KT_CODEC_NONE, KT_IO_URING);
}

/* Zeroed options write compact chunks. */
Test(e2e, default_codec_is_compact)
{
	run_e2e_as(0, KT_CODEC_COMPACT, KT_IO_PWRITE);
}

Test(e2e, lz4_pwrite)
{
	run_e2e(KT_CODEC_LZ4, KT_IO_PWRITE);
}

Test(e2e, lz4_uring)
{
	run_e2e(KT_CODEC_LZ4, KT_IO_URING);
}

Test(e2e, compact_pwrite)
{
	run_e2e(KT_CODEC_COMPACT, KT_IO_PWRITE);
}

Test(e2e, compact_uring)
{
	run_e2e(KT_CODEC_COMPACT, KT_IO_URING);
}

Test(e2e, compact_zstd_uring)
{
	run_e2e(KT_CODEC_COMPACT_ZSTD, KT_IO_URING);
}

/* ---- io_uring refused ---------------------------------------------------- */

/* A seccomp filter that fails system call @nr with EPERM, as container
 * runtimes' default profiles do for io_uring, and allows everything else;
 * @flags SECCOMP_FILTER_FLAG_TSYNC puts it on every thread. */
static void deny_syscall(int nr, unsigned flags)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog), 0);
}

/* On every thread, io_uring_enter() fails with EIO: the kernel never
 * takes a write, so the flusher, once every staging buffer is queued,
 * must wait on the ring, and that wait fails.  A ring that dies whatever
 * the speed of the disk or of the flusher. */
static void fail_io_uring_enter(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
			     &fprog), 0);
}

static void deny_io_uring(void)
{
	deny_syscall(__NR_io_uring_setup, 0);
}

/* The trace at @path is complete, holds @events events and says @backend
 * wrote it. */
static void check_backend_trace(const char *path, uint64_t events, int backend)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_trace_frame f;
	int rc, seen = -1;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		if (f.kind == KT_FRAME_SUMMARY)
			seen = f.u.summary.io_backend;
	cr_assert_eq(rc, 0);
	kt_reader_status rs;
	kt_reader_get_status(r, &rs);
	cr_assert_eq(rs.complete, 1);
	cr_assert_eq(rs.events, events);
	cr_assert_eq(seen, backend);
	kt_reader_close(r);
}

Test(fallback, seccomp_refusing_io_uring_falls_back_to_pwrite)
{
	/* Its own child, so the filter (which cannot be removed) stays there. */
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-seccomp-%d.katra", (int)getpid());
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		deny_io_uring();
		kt_session *s;
		kt_session_options forced = { .io = KT_IO_URING };
		if (kt_session_start(path, &forced, &s) != -EPERM)
			_exit(10);
		if (kt_session_start(path, NULL, &s) != 0)
			_exit(11);
		uint32_t id = kt_name("c");
		for (int64_t i = 0; i < 100000; i++)
			kt_counter(id, i);
		kt_summary sum;
		if (kt_session_stop(s, &sum) != 0)
			_exit(12);
		_exit(sum.io_backend == KT_IO_PWRITE && sum.events_written == 100000 ? 0 : 13);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
	check_backend_trace(path, 100000, KT_IO_PWRITE);
	unlink(path);
}

#define LATE_EVENTS 100000

/*
 * io_uring allowed at set-up, io_uring_enter refused once the session
 * runs (a filter the program installs later, on every thread): the sink
 * goes on with pwrite, writing what the kernel never saw first, and
 * nothing is lost.  Before, every later write failed (stop -EPERM, the
 * trace lost).
 */
Test(fallback, io_uring_enter_refused_mid_session_goes_on_with_pwrite, .timeout = 120)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-seccomp-late-%d.katra", (int)getpid());
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(100); /* a hung child must not outlive the test */
		kt_config cfg = { .ring_size = 1 << 20, .overflow = KT_OVERFLOW_BLOCK };
		if (kt_init(&cfg) != 0)
			_exit(10);
		kt_session *s;
		kt_session_options forced = { .io = KT_IO_URING };
		if (kt_session_start(path, &forced, &s) != 0)
			_exit(11);
		uint32_t id = kt_name("c");
		for (int64_t i = 0; i < LATE_EVENTS; i++)
			kt_counter(id, i);
		usleep(20000); /* let io_uring write some of them */
		deny_syscall(__NR_io_uring_enter, SECCOMP_FILTER_FLAG_TSYNC);
		for (int64_t i = 0; i < LATE_EVENTS; i++)
			kt_counter(id, i);
		kt_summary sum;
		int rc = kt_session_stop(s, &sum);
		if (rc != 0)
			_exit(rc == -EPERM ? 12 : 13);
		if (sum.events_written != 2 * LATE_EVENTS || sum.events_dropped != 0)
			_exit(14);
		_exit(sum.io_backend == KT_IO_PWRITE ? 0 : 15);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
	check_backend_trace(path, 2 * LATE_EVENTS, KT_IO_PWRITE);
	unlink(path);
}

/* The fd /proc/self/fd shows as an io_uring instance, or -1. */
static int uring_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	while (d && found < 0 && (e = readdir(d))) {
		char path[300], link[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = 0, !strcmp(link, "anon_inode:[io_uring]")))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * A ring that fails in the middle of a session (waiting on it fails) is
 * closed, and the host may get its fd number for a file of its own.  A child forked before the session stops
 * must keep that file, and the stop must not close it: before, the
 * session still named the number and the child's fork handler closed it.
 */
Test(fallback, a_dead_rings_fd_number_is_left_to_the_host, .timeout = 100)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-dead-ring-%d.katra", (int)getpid());
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(90);
		/* Big rings, drained in big batches: the flusher soon has every
		 * staging buffer in flight and waits on the ring. */
		kt_config cfg = { .ring_size = 16 << 20, .overflow = KT_OVERFLOW_DROP };
		kt_session *s;
		kt_session_options o = { .io = KT_IO_URING, .given = KT_GIVEN_CODEC,
					 .codec = KT_CODEC_NONE };
		if (kt_init(&cfg) != 0 || kt_session_start(path, &o, &s) != 0)
			_exit(10);
		int n = uring_fd();
		if (n < 0)
			_exit(11);
		fail_io_uring_enter();
		uint32_t id = kt_name("c");
		while (uring_fd() == n) {
			for (int64_t i = 0; i < 200000; i++)
				kt_counter(id, i);
			usleep(1000);
		}
		int host = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (host < 0 || dup2(host, n) != n)
			_exit(12);
		pid_t child = fork();
		if (child == 0)
			_exit(fcntl(n, F_GETFD) < 0 ? 1 : 0);
		int st = 0;
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(13); /* the fork handler closed the host's fd */
		kt_summary sum;
		if (kt_session_stop(s, &sum) != -EIO)
			_exit(14);
		kt_summary_release(&sum);
		_exit(fcntl(n, F_GETFD) < 0 ? 15 : 0);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
	unlink(path);
}

Test(fallback, kt_io_environment_variable_forces_a_backend)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-env-%d.katra", (int)getpid());
	kt_session *s;
	kt_summary sum;
	setenv("KT_IO", "pwrite", 1);
	kt_session_options o = { .io = KT_IO_URING };
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.io_backend, KT_IO_PWRITE);
	kt_summary_release(&sum);
	setenv("KT_IO", "uring", 1);
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.io_backend, KT_IO_URING);
	kt_summary_release(&sum);
	setenv("KT_IO", "bogus", 1);
	cr_assert_eq(kt_session_start(path, NULL, &s), -EINVAL);
	unsetenv("KT_IO");
	unlink(path);
}

/* ---- failing writes --------------------------------------------------- */

struct err_prod {
	uint32_t id;
	uint64_t n;
};

static void *err_producer(void *arg)
{
	struct err_prod *p = arg;
	/* Values no predictor finds: the file grows by several bytes an
	 * event whatever the codec does with the timestamps, so the 300 KiB
	 * limits below are crossed. */
	for (uint64_t i = 0; i < p->n; i++)
		kt_counter(p->id, (int64_t)((i * 0x9E3779B97F4A7C15u) >> 24));
	return NULL;
}

/* Emit @n events from two threads into a session writing to @fd or
 * @path; return kt_session_stop()'s result and the summary. */
static int run_failing(int policy, int io, int fd, const char *path, uint64_t n,
		       kt_summary *sum)
{
	kt_config cfg = { .ring_size = 64 << 10, .overflow = policy };
	cr_assert_eq(kt_init(&cfg), 0);
	kt_session_options o = { .fd = fd, .io = io };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	struct err_prod p = { kt_name("c"), n };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, err_producer, &p), 0);
	/* If a producer blocked on a dead session this join would hang and
	 * the test's timeout would fail it. */
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return kt_session_stop(s, sum);
}

static void check_enospc(int policy, int io)
{
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	kt_summary sum;
	int rc = run_failing(policy, io, fd, NULL, 200000, &sum);
	cr_assert_eq(rc, -ENOSPC, "stop returned %d (%s)", rc, kt_strerror(rc));
	cr_assert_eq(sum.io_error, -ENOSPC);
	cr_assert_eq(sum.io_backend, io);
	/* Nothing reached the file; every event is accounted as dropped. */
	cr_assert_eq(sum.events_written + sum.events_dropped, 2 * 200000);
	cr_assert_eq(sum.events_written, 0);
	kt_summary_release(&sum);
	close(fd);
}

Test(errors, enospc_pwrite_drop, .timeout = 120)
{
	check_enospc(KT_OVERFLOW_DROP, KT_IO_PWRITE);
}

Test(errors, enospc_pwrite_block, .timeout = 120)
{
	check_enospc(KT_OVERFLOW_BLOCK, KT_IO_PWRITE);
}

Test(errors, enospc_pwrite_wait, .timeout = 120)
{
	check_enospc(KT_OVERFLOW_WAIT, KT_IO_PWRITE);
}

/* io_uring writes at offsets, several at once: a device, a pipe or an
 * O_APPEND file would reorder them, so forcing it there is refused and
 * "auto" picks pwrite. */
Test(errors, uring_only_where_offsets_hold)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-append-%d.katra", (int)getpid());
	int app = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	int targets[3] = { fds[1], full, app };
	for (int i = 0; i < 3; i++) {
		kt_session *s;
		kt_session_options forced = { .fd = targets[i], .io = KT_IO_URING };
		cr_assert_eq(kt_session_start(NULL, &forced, &s), -EINVAL, "target %d", i);
	}
	kt_session *s;
	kt_summary sum;
	kt_session_options autom = { .fd = app };
	cr_assert_eq(kt_session_start(NULL, &autom, &s), 0);
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.io_backend, KT_IO_PWRITE);
	kt_summary_release(&sum);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_close(r);
	close(fds[0]);
	close(fds[1]);
	close(full);
	close(app);
	unlink(path);
}

/* A file that may not grow past 300 KiB: writes fail with EFBIG part way,
 * and what did land reads as a valid prefix. */
static void check_fsize(int io)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-fsize-%d-%d.katra", io, (int)getpid());
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim = { 300 << 10, 300 << 10 };
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim.rlim_max = old.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	kt_summary sum;
	int rc = run_failing(KT_OVERFLOW_BLOCK, io, 0, path, 300000, &sum);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_assert_eq(rc, -EFBIG, "stop returned %d (%s)", rc, kt_strerror(rc));
	cr_assert_eq(sum.events_written + sum.events_dropped, 2 * 300000);
	cr_assert_gt(sum.events_dropped, 0);

	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open(path, &e, &r), 0, "%s", e.message);
	cr_assert_eq(t_drain(r, NULL), 0, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.truncated, 1);
	cr_assert_eq(st.error, 0);
	cr_assert_gt(st.events, 0);
	cr_assert_leq(st.file_size, 300 << 10);
	/* The prefix holds no more than the session counted as written. */
	cr_assert_leq(st.events, sum.events_written);
	/* bytes_on_disk is what the file holds, not what was handed to it. */
	cr_assert_eq(sum.bytes_on_disk, st.file_size);
	kt_summary_release(&sum);
	kt_reader_close(r);
	unlink(path);
}

Test(errors, file_size_limit_pwrite_leaves_a_valid_prefix, .timeout = 120)
{
	check_fsize(KT_IO_PWRITE);
}

Test(errors, file_size_limit_uring_leaves_a_valid_prefix, .timeout = 120)
{
	check_fsize(KT_IO_URING);
}

/*
 * A session may start part way into a caller's file: after a failure the
 * recount must read the trace where it starts, not at offset 0, and
 * bytes_on_disk count from there.  With @append the fd is O_APPEND and
 * its offset still 0: the trace starts where the file ends.
 */
static void recount_mid_file(int append)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-offset-%d-%d.bin", append, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	static char lead[4096];
	memset(lead, 'x', sizeof(lead));
	cr_assert_eq(write(fd, lead, sizeof(lead)), (ssize_t)sizeof(lead));
	if (append) {
		close(fd);
		fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		cr_assert_geq(fd, 0);
	}
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim.rlim_cur = 300 << 10;
	lim.rlim_max = old.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	kt_summary sum;
	int rc = run_failing(KT_OVERFLOW_BLOCK, KT_IO_PWRITE, fd, NULL, 300000, &sum);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_assert_eq(rc, -EFBIG);
	cr_assert_gt(sum.events_written, 0, "the prefix after the lead-in was not found");
	cr_assert_eq(sum.events_written + sum.events_dropped, 2 * 300000);
	struct stat sb;
	cr_assert_eq(fstat(fd, &sb), 0);
	cr_assert_eq(sum.bytes_on_disk, (uint64_t)sb.st_size - sizeof(lead));
	kt_summary_release(&sum);
	/* The lead-in is untouched. */
	char back[sizeof(lead)];
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(pread(rfd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, lead, sizeof(lead)), 0);
	close(rfd);
	close(fd);
	unlink(path);
}

Test(errors, recount_reads_a_trace_that_starts_mid_file, .timeout = 120)
{
	recount_mid_file(0);
}

Test(errors, an_o_append_fd_starts_the_trace_at_the_end_of_the_file, .timeout = 120)
{
	recount_mid_file(1);
}

/* A process that dies without stopping its session leaves a trace cut
 * short: its names are in it all the same, written as they were interned,
 * so the events it holds are named.  @o: the session's options. */
static void cut_short_names_its_events(const kt_session_options *o)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-cutnames-%d.katra", (int)getpid());
	static const char *const want[] = { "before_the_crash", "the_last_zone" };
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(30);
		kt_session *s;
		if (kt_session_start(path, o, &s))
			_exit(10);
		for (int i = 0; i < 2; i++) {
			uint32_t id = kt_name(want[i]);
			kt_zone_begin(id);
			kt_zone_end(id);
		}
		/* Wait until the flusher has put both names in the file, then
		 * die as a crash would: no stop, no summary. */
		while (t_names_in(path, want, 2) < 2) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	cr_assert_eq(t_names_in(path, want, 2), 2);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_event ev;
	int rc, events = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		events++;
	kt_reader_status rs;
	kt_reader_get_status(r, &rs);
	cr_assert_eq(rs.complete, 0);
	kt_reader_close(r);
	/* The names went in with the first drain after they were interned;
	 * the zones either with them or just after. */
	cr_assert_leq(events, 4);
	unlink(path);
}

Test(names, a_trace_cut_short_names_its_events, .timeout = 60)
{
	cut_short_names_its_events(NULL);
}

/* Encoded chunks and names wait in the writer's buffer, not raw chunks:
 * the flusher hands it over each period all the same. */
Test(names, a_trace_cut_short_names_its_events_lz4_delta, .timeout = 60)
{
	kt_session_options o = { .codec = KT_CODEC_LZ4_DELTA };
	cut_short_names_its_events(&o);
}

/* ---- bytes on disk after a failure ---------------------------------------- */

/* bytes_on_disk counts what the file holds, not what was handed to it. */
Test(errors, bytes_on_disk_is_what_the_file_holds_after_enospc, .timeout = 120)
{
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	kt_summary sum;
	cr_assert_eq(run_failing(KT_OVERFLOW_DROP, KT_IO_PWRITE, fd, NULL, 20000, &sum), -ENOSPC);
	cr_assert_eq(sum.bytes_on_disk, 0);
	kt_summary_release(&sum);
	close(fd);
}

/* ---- starts that fail --------------------------------------------------- */

static const char precious[] = "a trace from yesterday";

static void write_precious(const char *path)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(precious, 1, sizeof(precious), f), sizeof(precious));
	fclose(f);
}

static void check_precious(const char *path)
{
	size_t len = 0;
	uint8_t *p = t_slurp(path, &len);
	cr_assert_not_null(p);
	cr_assert_eq(len, sizeof(precious), "the old file was touched: %zu bytes", len);
	cr_assert_eq(memcmp(p, precious, len), 0);
	free(p);
}

/*
 * A start that fails over the crash directory leaves the file at the path
 * as it was (a new one is not left behind either), and says that it was
 * the crash directory.
 */
Test(start, a_bad_crash_directory_leaves_the_old_file_and_is_named)
{
	char path[128], fresh[128];
	snprintf(path, sizeof(path), "/tmp/katra-precious-%d.katra", (int)getpid());
	snprintf(fresh, sizeof(fresh), "/tmp/katra-fresh-%d.katra", (int)getpid());
	write_precious(path);
	kt_session *s;
	setenv("KT_CRASH_DIR", "/nonexistent-katra-dir", 1);
	cr_assert_eq(kt_session_start(path, NULL, &s), -ENOENT);
	unsetenv("KT_CRASH_DIR");
	check_precious(path);
	cr_assert_str_eq(kt_session_get_start_error(),
			 "crash directory in /nonexistent-katra-dir (KT_CRASH_DIR): "
			 "No such file or directory");
	kt_session_options o = { .crash_dir = "/nonexistent-katra-dir/x" };
	cr_assert_eq(kt_session_start(path, &o, &s), -ENOENT);
	check_precious(path);
	cr_assert_str_eq(kt_session_get_start_error(),
			 "crash directory in /nonexistent-katra-dir/x (crash_dir): "
			 "No such file or directory");
	cr_assert_eq(kt_session_start(fresh, &o, &s), -ENOENT);
	cr_assert_eq(access(fresh, F_OK), -1, "a failed start left %s behind", fresh);
	/* A check that used to come after the cut: a header string too long
	 * for the format. */
	static char huge[70000];
	memset(huge, 'w', sizeof(huge) - 1);
	o = (kt_session_options){ .workload = huge };
	cr_assert_eq(kt_session_start(path, &o, &s), -EINVAL);
	check_precious(path);
	cr_assert_eq(strncmp(kt_session_get_start_error(), "trace header", 12), 0, "%s",
		     kt_session_get_start_error());
	/* The same start with good options replaces it. */
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	cr_assert_str_eq(kt_session_get_start_error(), "");
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_close(r);
	unlink(path);
}

/* A FIFO with no reader fails the start at once instead of blocking it. */
Test(start, a_fifo_without_a_reader_does_not_block, .timeout = 30)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-fifo-%d", (int)getpid());
	cr_assert_eq(mkfifo(path, 0600), 0);
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), -ENXIO);
	unlink(path);
}

/*
 * fd 0 is a file like any other: in a daemon whose stdin is closed, the
 * next file it opens gets it.  (In a child, to leave this stdin alone.)
 */
Test(start, fd_zero_is_a_valid_trace_fd)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-fd0-%d.katra", (int)getpid());
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(0);
		if (open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 0)
			_exit(10);
		kt_session *s;
		kt_session_options o = { .fd = 0, .given = KT_GIVEN_FD };
		if (kt_session_start(NULL, &o, &s))
			_exit(11);
		uint32_t id = kt_name("c");
		for (int64_t i = 0; i < 1000; i++)
			kt_counter(id, i);
		kt_summary sum;
		if (kt_session_stop(s, &sum) || sum.events_written != 1000)
			_exit(12);
		/* Zeroed options still mean "the path", fd 0 or not. */
		o = (kt_session_options){ 0 };
		if (kt_session_start(NULL, &o, &s) != -EINVAL)
			_exit(13);
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_status rs;
	kt_reader_get_status(r, &rs);
	cr_assert_eq(rs.complete, 1);
	cr_assert_eq(rs.events, 1000);
	kt_reader_close(r);
	unlink(path);
}

/* A session with options @o into @path, one counter in it; its header. */
static kt_capture_options ringopt_session(const char *path, kt_session_options o)
{
	kt_session *s;
	kt_summary sum;
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	kt_counter(kt_name("c"), 1);
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	kt_summary_release(&sum);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_capture_options c = kt_reader_get_header(r)->capture;
	kt_reader_close(r);
	return c;
}

/* The rings' size and policy set on the session, as kt_init() sets them;
 * a size kt_init() refuses fails the start and says so. */
Test(start, the_session_sets_the_ring_size_and_overflow_policy)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-ringopt-%d.katra", (int)getpid());
	kt_session *s;
	kt_session_options bad = { .ring_size = 1000 };
	cr_assert_eq(kt_session_start(path, &bad, &s), -EINVAL);
	cr_assert_str_eq(kt_session_get_start_error(),
			 "ring size 1000 or overflow policy 0: Invalid argument");
	kt_capture_options c = ringopt_session(
		path, (kt_session_options){ .ring_size = 128 << 10, .overflow = KT_OVERFLOW_BLOCK });
	cr_assert_eq(c.ring_size, 128 << 10);
	cr_assert_eq(c.overflow, KT_OVERFLOW_BLOCK);
	/* DROP asked for by name over the BLOCK the last session left. */
	c = ringopt_session(path, (kt_session_options){ .overflow = KT_OVERFLOW_DROP });
	cr_assert_eq(c.overflow, KT_OVERFLOW_DROP);
	cr_assert_eq(c.ring_size, 128 << 10);
	/* WAIT, which is 0 in kt_overflow, asked for over that DROP. */
	c = ringopt_session(path, (kt_session_options){ .overflow = KT_OVERFLOW_WAIT,
							 .given = KT_GIVEN_OVERFLOW });
	cr_assert_eq(c.overflow, KT_OVERFLOW_WAIT);
	kt_session_options o = { .overflow = -2 };
	cr_assert_eq(kt_session_start(path, &o, &s), -EINVAL);
	cr_assert_str_eq(kt_session_get_start_error(),
			 "ring size 0 or overflow policy -2: Invalid argument");
	unlink(path);
}

/* With fdatasync() failing, a stop that syncs says so and one told not to
 * sync does not call it: its file is complete all the same. */
Test(start, stop_sync_none_leaves_durability_to_the_kernel)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-nosync-%d.katra", (int)getpid());
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		deny_syscall(__NR_fdatasync, SECCOMP_FILTER_FLAG_TSYNC);
		kt_session *s;
		kt_summary sum;
		kt_session_options o = { .io = KT_IO_PWRITE };
		if (kt_session_start(path, &o, &s))
			_exit(10);
		if (kt_session_stop(s, &sum) != -EPERM)
			_exit(11);
		kt_summary_release(&sum);
		o.stop_sync = KT_STOP_SYNC_NONE;
		if (kt_session_start(path, &o, &s))
			_exit(12);
		kt_counter(kt_name("c"), 7);
		if (kt_session_stop(s, &sum) || sum.events_written != 1)
			_exit(13);
		kt_summary_release(&sum);
		o.stop_sync = 2;
		_exit(kt_session_start(path, &o, &s) == -EINVAL ? 0 : 14);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	check_backend_trace(path, 1, KT_IO_PWRITE);
	unlink(path);
}

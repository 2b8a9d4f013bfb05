/*
 * Flight sessions: rings that overwrite their oldest events, and snapshots
 * taken while producers run.  The stress test also runs under TSan
 * (scripts/tsan.sh), which is where the copy's race with the producers is
 * checked for what it must not do: hand a torn record to the file.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

extern char **environ;
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include "flush/flush.h"
#include "ring/ring.h"

/* What one snapshot file holds, as read back. */
struct seen {
	int rc;                    /* t_drain(): 0 when every frame checks */
	int complete;
	uint64_t events, dropped;
	uint64_t min_ts, max_ts;
	uint32_t threads;          /* threads with events */
	uint32_t tid[4];
	uint64_t first[4], last[4]; /* each thread's first and last sequence */
	uint64_t gaps;             /* a sequence not one past the one before */
};

static struct seen *thread_slot(struct seen *v, uint32_t tid, size_t *k)
{
	for (*k = 0; *k < v->threads; (*k)++)
		if (v->tid[*k] == tid)
			return v;
	if (v->threads == 4)
		return NULL;
	v->tid[v->threads++] = tid;
	return v;
}

/* One counter event: its payload is the thread's sequence number. */
static void saw_event(struct seen *v, const kt_event *ev)
{
	size_t k;
	int64_t seq;
	if (ev->payload_len != 8 || !thread_slot(v, ev->thread_id, &k)) {
		v->gaps++;
		return;
	}
	memcpy(&seq, ev->payload, 8);
	if (v->first[k] == 0 && v->last[k] == 0)
		v->first[k] = (uint64_t)seq;
	else if ((uint64_t)seq != v->last[k] + 1)
		v->gaps++;
	v->last[k] = (uint64_t)seq;
	v->events++;
	if (!v->min_ts || ev->ts < v->min_ts)
		v->min_ts = ev->ts;
	if (ev->ts > v->max_ts)
		v->max_ts = ev->ts;
}

/* Read a snapshot back chunk by chunk (each thread's events in order). */
static void read_back(const char *path, struct seen *v)
{
	memset(v, 0, sizeof(*v));
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_trace_frame f;
	while ((v->rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		kt_chunk_iter it;
		kt_event ev;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev) > 0)
			saw_event(v, &ev);
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	v->complete = st.complete;
	v->dropped = st.dropped;
	kt_reader_close(r);
}

/* A snapshot's file must say what its result says. */
static void check_snapshot(const char *path, const kt_snapshot_result *res, struct seen *v)
{
	read_back(path, v);
	cr_assert_eq(v->rc, 0);
	cr_assert(v->complete);
	cr_assert_eq(v->gaps, 0, "a thread has a hole");
	cr_assert_eq(v->events, res->events);
	cr_assert_eq(v->threads, res->thread_count);
	cr_assert_eq(v->min_ts, res->first_event);
	cr_assert_eq(v->max_ts, res->window_end);
}

static char dir[] = "/tmp/kt_flightXXXXXX";

/* A file in this test's directory. */
static char *tmp_path(const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* A flight session over rings of @ring bytes, and a directory for its
 * snapshots; fx_end() stops it and removes them. */
static void fx_dir(void)
{
	strcpy(dir, "/tmp/kt_flightXXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static kt_session *fx_begin(size_t ring)
{
	fx_dir();
	kt_config cfg = { .ring_size = ring };
	cr_assert_eq(kt_init(&cfg), 0);
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	return s;
}

static void fx_end(kt_session *s)
{
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	static const char *const files[] = { "a.katra", "b.katra", "n.katra", "s.katra" };
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++)
		unlink(tmp_path(files[i]));
	cr_assert_eq(rmdir(dir), 0);
}

/* Snapshot into @name, check it against its result, and say in @v what
 * it holds. */
static void snap_check(kt_session *s, const char *name, uint64_t max_age_ns, uint64_t max_bytes,
		       kt_snapshot_result *res, struct seen *v)
{
	int rc = kt_session_snapshot(s, tmp_path(name), -1, max_age_ns, max_bytes, res);
	cr_assert_eq(rc, 0, "%s", kt_strerror(rc));
	check_snapshot(tmp_path(name), res, v);
}

/* A thread that emits @n sequence numbers, 1 to n. */
static void emit_seq(uint32_t id, uint64_t n)
{
	for (uint64_t i = 1; i <= n; i++)
		kt_counter(id, (int64_t)i);
}

struct emit_job {
	uint32_t id;
	uint64_t n;
};

static void *emit_job_main(void *arg)
{
	struct emit_job *j = arg;
	emit_seq(j->id, j->n);
	return NULL;
}

/* A thread of its own emits @n sequence numbers, and exits. */
static void emit_in_thread(uint32_t id, uint64_t n)
{
	struct emit_job j = { id, n };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, emit_job_main, &j), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/* A flight session over the smallest rings, "seq" emitted @n times. */
static kt_session *fx_emit(uint64_t n, uint32_t *id)
{
	kt_session *s = fx_begin(KT_RING_MIN);
	*id = kt_name("seq");
	emit_seq(*id, n);
	return s;
}

Test(flight, keeps_newest_not_oldest)
{
	/* 64 KiB of 24-byte records is ~2730: 100000 laps the ring ~36 times. */
	uint32_t id;
	kt_session *s = fx_emit(100000, &id);
	kt_snapshot_result res;
	struct seen v;
	snap_check(s, "a.katra", 0, 0, &res, &v);
	/* The newest event is in, the oldest are not, and nothing dropped. */
	cr_assert_eq(v.last[0], 100000);
	cr_assert_gt(v.first[0], 90000);
	/* What the ring overwrote is the file's one drop record. */
	cr_assert_eq(v.dropped, v.first[0] - 1);
	/* Everything else was overwritten: 24 bytes an event. */
	cr_assert_eq(res.bytes_overwritten, (100000 - res.events - res.events_trimmed) * 24);
	/* At least the ring less two sub-buffers (16ths) is kept. */
	cr_assert_geq(res.events * 24, KT_RING_MIN - 2 * (KT_RING_MIN / 16) - 24);
	fx_end(s);
}

/*
 * The thread counts what its ring overwrites, exactly.  24-byte records
 * from position 0 in a 64 KiB ring (sub-buffers of 4 KiB): after 100000,
 * the bound is 2400000 rounded up to 4096, 2400256, so every record that
 * starts below 2400256 - 65536 = 2334720 may be overwritten: 97280 of
 * them.  The snapshot starts at the next, 97281, as the ring counted it
 * (not at the next sub-buffer's mark), and a thread that overwrote
 * nothing has a row of 0.
 */
Test(flight, overwritten_counted_per_thread)
{
	uint32_t id;
	kt_session *s = fx_emit(100000, &id);
	emit_in_thread(id, 10);
	kt_snapshot_thread rows[4];
	kt_snapshot_result res;
	struct seen v;
	cr_assert_eq(kt_session_snapshot_threads(s, tmp_path("a.katra"), -1, 0, 0, &res, rows, 4),
		     0);
	check_snapshot(tmp_path("a.katra"), &res, &v);
	cr_assert_eq(res.events_overwritten, 97280);
	cr_assert_eq(res.events, 2720 + 10);
	cr_assert_eq(res.events_trimmed, 0);
	cr_assert_eq(v.dropped, 97280, "the file carries them as a drop record");
	cr_assert_eq(res.thread_rows, 2);
	/* The rows come in the registry's order: find the busy thread's. */
	size_t busy = rows[0].events == 10, k;
	cr_assert_eq(rows[busy].overwritten, 97280);
	cr_assert_eq(rows[busy].events, 2720);
	cr_assert_eq(rows[!busy].overwritten, 0);
	cr_assert_eq(rows[!busy].events, 10);
	thread_slot(&v, rows[busy].thread_id, &k);
	cr_assert_eq(v.first[k], 97281);
	cr_assert_eq(v.last[k], 100000);
	/* No rows: the total alone; what the result held before is not read. */
	kt_snapshot_result bare;
	memset(&bare, 0xff, sizeof(bare));
	cr_assert_eq(kt_session_snapshot(s, tmp_path("b.katra"), -1, 0, 0, &bare), 0);
	cr_assert_eq(bare.thread_rows, 0);
	cr_assert_eq(bare.events_overwritten, 97280);
	/* The stop's summary says it per thread too, apart from drops. */
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.thread_count, 1);
	cr_assert_eq(sum.threads[0].thread_id, rows[busy].thread_id);
	cr_assert_eq(sum.threads[0].overwritten, 97280);
	cr_assert_eq(sum.threads[0].dropped, 0);
	cr_assert_eq(sum.events_dropped, 0);
	kt_summary_release(&sum);
	/* The next session counts from zero. */
	kt_session *s2;
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	cr_assert_eq(kt_session_start(NULL, &o, &s2), 0);
	emit_seq(id, 10);
	cr_assert_eq(kt_session_snapshot(s2, tmp_path("n.katra"), -1, 0, 0, &bare), 0);
	cr_assert_eq(bare.events_overwritten, 0);
	cr_assert_eq(bare.events, 10);
	fx_end(s2);
}

Test(flight, unwrapped_ring_is_whole)
{
	uint32_t id;
	kt_session *s = fx_emit(100, &id);
	kt_snapshot_result res;
	struct seen v;
	snap_check(s, "a.katra", 0, 0, &res, &v);
	cr_assert_eq(res.events, 100);
	cr_assert_eq(res.events_trimmed, 0);
	cr_assert_eq(res.bytes_lapped, 0);
	cr_assert_eq(res.bytes_overwritten, 0);
	/* A second snapshot of the same session, to an fd, sees more. */
	emit_seq(id, 5);
	int fd = open(tmp_path("b.katra"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(kt_session_snapshot(s, NULL, fd, 0, 0, &res), 0);
	close(fd);
	cr_assert_eq(res.events, 105);
	/* Never over an existing file. */
	cr_assert_eq(kt_session_snapshot(s, tmp_path("a.katra"), -1, 0, 0, &res), -EEXIST);
	fx_end(s);
}

Test(flight, max_bytes_keeps_newest)
{
	uint32_t id;
	kt_session *s = fx_emit(1000, &id);
	kt_snapshot_result res;
	/* 24-byte records: 2400 bytes hold exactly the newest 100. */
	struct seen v;
	snap_check(s, "a.katra", 0, 2400, &res, &v);
	cr_assert_eq(v.last[0], 1000);
	cr_assert_eq(res.events, 100);
	cr_assert_eq(res.events_trimmed, 900);
	fx_end(s);
}

/* Every session codec: the chunks a snapshot encoded as it read the ring
 * go to the file as they are or are encoded again in the session's codec,
 * and a cut inside one (max_bytes) keeps exactly the newest events. */
Test(flight, every_codec_whole_and_cut_inside_a_chunk)
{
	static const int codecs[] = { KT_CODEC_NONE, KT_CODEC_LZ4, KT_CODEC_LZ4_DELTA,
				       KT_CODEC_COMPACT, KT_CODEC_COMPACT_ZSTD };
	fx_dir();
	kt_config cfg = { .ring_size = KT_RING_MIN };
	cr_assert_eq(kt_init(&cfg), 0);
	uint32_t id = kt_name("seq");
	for (size_t i = 0; i < sizeof(codecs) / sizeof(*codecs); i++) {
		kt_session_options o = { .mode = KT_SESSION_FLIGHT, .given = KT_GIVEN_CODEC,
					 .codec = codecs[i] };
		kt_session *s;
		cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
		emit_seq(id, 1000);
		kt_snapshot_result res;
		struct seen v;
		snap_check(s, "a.katra", 0, 0, &res, &v);
		cr_assert_eq(v.first[0], 1, "codec %d", codecs[i]);
		cr_assert_eq(v.last[0], 1000);
		/* 24-byte records: 2400 bytes hold exactly the newest 100. */
		snap_check(s, "b.katra", 0, 2400, &res, &v);
		cr_assert_eq(v.first[0], 901, "codec %d", codecs[i]);
		cr_assert_eq(v.last[0], 1000);
		cr_assert_eq(res.events_trimmed, 900);
		cr_assert_eq(kt_session_stop(s, NULL), 0);
		unlink(tmp_path("a.katra"));
		unlink(tmp_path("b.katra"));
	}
	cr_assert_eq(rmdir(dir), 0);
}

Test(flight, max_age_reports_head_loss)
{
	uint32_t id;
	kt_session *s = fx_emit(100000, &id); /* laps the ring: its head is gone */
	kt_snapshot_result res;
	/* An hour asked for: the ring holds far less, and says how much. */
	uint64_t hour = 3600ull * 1000000000ull;
	struct seen v;
	snap_check(s, "a.katra", hour, 0, &res, &v);
	cr_assert_gt(res.head_loss_ns, hour - 60ull * 1000000000ull);
	cr_assert_leq(res.head_loss_ns, hour);
	fx_end(s);
}

Test(flight, not_a_flight_session)
{
	kt_session *f = fx_begin(KT_RING_MIN), *s;
	cr_assert_eq(kt_session_stop(f, NULL), 0);
	cr_assert_eq(kt_session_start(tmp_path("n.katra"), NULL, &s), 0);
	kt_snapshot_result res;
	cr_assert_eq(kt_session_snapshot(s, tmp_path("a.katra"), -1, 0, 0, &res),
		     KT_ENOSESSION);
	cr_assert_eq(access(tmp_path("a.katra"), F_OK), -1);
	kt_session_options o = { .mode = 7 };
	kt_session *bad;
	cr_assert_eq(kt_session_start(NULL, &o, &bad), -EINVAL);
	fx_end(s);
}

/* The producer laps its ring in the middle of the snapshot's copy: the
 * bytes it overwrote are discarded, the rest kept whole. */
static uint32_t lap_id;
static void lap_during_copy(void)
{
	kt__flight_copy_hook = NULL;
	/* 36 KiB of records: past the copy's first half, well into its
	 * second, of a 64 KiB ring. */
	for (int i = 0; i < 1536; i++)
		kt_counter(lap_id, -1);
}

Test(flight, lapped_during_copy)
{
	kt_session *s = fx_begin(KT_RING_MIN);
	lap_id = kt_name("seq");
	emit_seq(lap_id, 10000);
	kt__flight_copy_hook = lap_during_copy;
	kt_snapshot_result res;
	struct seen v;
	snap_check(s, "a.katra", 0, 0, &res, &v);
	cr_assert_eq(v.last[0], 10000);
	/* 1536 x 24 bytes came in; a sub-buffer's rounding more may go. */
	cr_assert_geq(res.bytes_lapped, 1536 * 24 - KT_RING_MIN / 16);
	cr_assert_leq(res.events * 24, KT_RING_MIN - 1536 * 24);
	fx_end(s);
}

/* A thread that exited keeps its events in snapshots until the stop,
 * which recycles its ring. */
Test(flight, exited_thread_stays)
{
	uint32_t id;
	kt_session *s = fx_emit(100, &id);
	emit_in_thread(id, 500);
	kt_snapshot_result res;
	struct seen v;
	snap_check(s, "a.katra", 0, 0, &res, &v);
	cr_assert_eq(res.thread_count, 2);
	cr_assert_eq(res.events, 600);
	fx_end(s);
	/* A new session starts clean. */
	s = fx_begin(KT_RING_MIN);
	emit_seq(id, 3);
	snap_check(s, "a.katra", 0, 0, &res, &v);
	cr_assert_eq(res.events, 3);
	fx_end(s);
}

/* ---- `katra snapshot PID` ------------------------------------------------ */

/* Run `katra snapshot PID --out @out` as user @uid (when not our own),
 * its standard output to @out_fd unless it is -1: its exit status, or
 * -1. */
static int run_cli_to(uid_t uid, const char *out, int out_fd)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	pid_t c = fork();
	if (c == 0) {
		/* Opened before the uid changes: the build directory may be
		 * private (a CI checkout under a 0700 mktemp -d), and what is
		 * tested is the command's refusal, not the path's. */
		int exe = open(KT_BIN_DIR "/katra", O_RDONLY);
		if (exe < 0 || (uid != geteuid() && (setgid(uid) || setuid(uid))) ||
		    (out_fd >= 0 && dup2(out_fd, 1) < 0))
			_exit(100);
		char *const argv[] = { "katra", "snapshot", pid, "--out", (char *)out, NULL };
		fexecve(exe, argv, environ);
		_exit(101);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int run_cli(uid_t uid, const char *out)
{
	return run_cli_to(uid, out, -1);
}

static kt_session *fx_listen(void)
{
	fx_dir();
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .listen = 1 };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	return s;
}

Test(flight, snapshot_pid_from_cli)
{
	kt_session *s = fx_listen();
	emit_seq(kt_name("seq"), 1000);
	cr_assert_eq(run_cli(geteuid(), tmp_path("a.katra")), 0);
	struct seen v;
	read_back(tmp_path("a.katra"), &v);
	cr_assert_eq(v.rc, 0);
	cr_assert(v.complete);
	cr_assert_eq(v.events, 1000);
	cr_assert_eq(v.gaps, 0);
	cr_assert_eq(v.last[0], 1000);
	/* A second request, a second file. */
	emit_seq(kt_name("seq"), 1);
	cr_assert_eq(run_cli(geteuid(), tmp_path("b.katra")), 0);
	read_back(tmp_path("b.katra"), &v);
	cr_assert_eq(v.events, 1001);
	fx_end(s);
	/* Stopped: the socket is gone, and the command says so. */
	fx_dir();
	cr_assert_eq(run_cli(geteuid(), tmp_path("a.katra")), 1);
	cr_assert_eq(access(tmp_path("a.katra"), F_OK), -1);
	rmdir(dir);
}

union anc {
	struct cmsghdr h;
	uint8_t b[64];
};

/* Ancillary data as the kernel lays it out: @n descriptors in one
 * SCM_RIGHTS header, @len_bias added to its length. */
static size_t put_rights(union anc *ctl, const int *fds, size_t n,
			 size_t len_bias)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->h.cmsg_level = SOL_SOCKET;
	ctl->h.cmsg_type = SCM_RIGHTS;
	ctl->h.cmsg_len = CMSG_LEN(n * sizeof(int)) + len_bias;
	memcpy(CMSG_DATA(&ctl->h), fds, n * sizeof(int));
	return CMSG_SPACE(n * sizeof(int));
}

/* Ask for a snapshot into @out_fd over the socket, as a client of
 * protocol @magic: the reply's bytes into @rep, their count returned. */
static size_t ask_raw(uint64_t magic, int out_fd, uint64_t rep[KT__CTL_REP_WORDS + 1])
{
	struct sockaddr_un a;
	char name[64];
	int d = kt__control_dir(), len;
	cr_assert_geq(d, 0);
	cr_assert_eq(kt__control_name(0, name, sizeof(name)), 0);
	cr_assert_gt(len = kt__control_at(d, name, &a), 0);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(c, (struct sockaddr *)&a, (socklen_t)len), 0);
	close(d);
	uint64_t req[KT__CTL_REQ_WORDS] = { magic, 0, 0 };
	union anc ctl;
	struct iovec iov = { req, sizeof(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			    .msg_controllen = put_rights(&ctl, &out_fd, 1, 0) };
	if (sendmsg(c, &m, 0) != (ssize_t)sizeof(req)) {
		/* A kernel with SO_PASSRIGHTS refuses the descriptor itself. */
		cr_assert_eq(errno, EPERM);
		close(c);
		rep[0] = (uint64_t)(int64_t)-EPERM;
		return 0;
	}
	size_t got = 0;
	ssize_t n;
	while ((n = recv(c, (char *)rep + got, (KT__CTL_REP_WORDS + 1) * 8 - got, 0)) > 0)
		got += (size_t)n;
	close(c);
	return got;
}

/* The reply says how many events the rings overwrote: `katra snapshot`
 * prints it.  A version 1 or 2 client, which brings its file for the
 * process to write, is refused: by the kernel (SO_PASSRIGHTS, since Linux
 * 6.16), else in its own reply's size; the file is untouched. */
Test(flight, snapshot_pid_says_events_overwritten)
{
	fx_dir();
	kt_config cfg = { .ring_size = KT_RING_MIN };
	cr_assert_eq(kt_init(&cfg), 0);
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .listen = 1 };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	emit_seq(kt_name("seq"), 20000); /* 24 bytes each: seven laps */
	int out = memfd_create("cli-out", MFD_CLOEXEC);
	cr_assert_eq(run_cli_to(geteuid(), tmp_path("a.katra"), out), 0);
	char line[512] = "";
	cr_assert_gt(pread(out, line, sizeof(line) - 1, 0), 0);
	struct seen v;
	read_back(tmp_path("a.katra"), &v);
	cr_assert_eq(v.last[0], 20000);
	cr_assert_gt(v.first[0], 1, "the ring lapped");
	unsigned long long said = 0;
	const char *at = strstr(line, "; ");
	cr_assert(at && (at = strstr(at + 2, "; ")), "%s", line);
	cr_assert_eq(sscanf(at, "; %llu events overwritten", &said), 1, "%s", line);
	cr_assert_eq(said, v.first[0] - 1, "%s", line);
	/* Each version's reply, its own size. */
	uint64_t rep[KT__CTL_REP_WORDS + 1];
	int f = open(tmp_path("b.katra"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t got = ask_raw(KT__CTL_MAGIC_V1, f, rep);
	if (got) {
		cr_assert_eq(got, KT__CTL_REP_WORDS_V1 * 8);
		cr_assert_eq((int64_t)rep[0], -EPROTONOSUPPORT);
	} else {
		cr_assert_eq((int64_t)rep[0], -EPERM);
	}
	got = ask_raw(KT__CTL_MAGIC, f, rep);
	if (got) {
		cr_assert_eq(got, KT__CTL_REP_WORDS * 8);
		cr_assert_eq((int64_t)rep[0], -EPROTONOSUPPORT);
		cr_assert_eq(rep[KT__CTL_REP_EVENTS_OVERWRITTEN], 0);
	} else {
		cr_assert_eq((int64_t)rep[0], -EPERM);
	}
	cr_assert_eq(lseek(f, 0, SEEK_END), 0);
	close(f);
	close(out);
	fx_end(s);
}

Test(flight, snapshot_pid_refuses_other_user)
{
	if (geteuid() != 0)
		cr_skip_test("needs root, to be another user");
	kt_session *s = fx_listen();
	emit_seq(kt_name("seq"), 10);
	/* nobody may write in /tmp, not in our directory */
	char out[64];
	snprintf(out, sizeof(out), "/tmp/kt_flight_nobody_%ld.katra", (long)getpid());
	cr_assert_eq(run_cli(65534, out), 1);
	cr_assert_eq(access(out, F_OK), -1);
	/* Nor can it reach the socket itself. */
	pid_t c = fork();
	if (c == 0) {
		/* By its path: /proc/self/fd is not nobody's to use. */
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		char name[40], where[48], at[64];
		int d = kt__control_dir();
		snprintf(at, sizeof(at), "/proc/self/fd/%d", d);
		ssize_t n = d < 0 ? -1 : readlink(at, where, sizeof(where) - 1);
		if (n <= 0 || kt__control_name(getppid(), name, sizeof(name)))
			_exit(100);
		where[n] = 0;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", where, name);
		if (access(a.sun_path, F_OK) || setgid(65534) || setuid(65534))
			_exit(100);
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		_exit(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(c, &st, 0), c);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 1);
	fx_end(s);
}

/* ---- must-show 2: producers at full rate, 100 snapshots meanwhile ------ */

struct stress {
	int stop;
	int running;               /* producers that have emitted */
	uint32_t id;
};

static void *producer(void *arg)
{
	struct stress *st = arg;
	int64_t seq = 0;
	kt_counter(st->id, ++seq);
	/* Release: the first event is in the ring before the count says so. */
	__atomic_fetch_add(&st->running, 1, __ATOMIC_RELEASE);
	/* Relaxed: a flag read for its value alone. */
	while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED))
		for (int i = 0; i < 256; i++)
			kt_counter(st->id, ++seq);
	return NULL;
}

/*
 * What a snapshot taken while the producers run says they overwrote: the
 * file's drop records, each thread's count no more than the events before
 * its first in the file (none counted twice), and never less than the
 * last snapshot's.  @over keeps each thread's count from one to the next.
 */
static void check_overwritten(const kt_snapshot_result *res, const kt_snapshot_thread *rows,
			      struct seen *v, uint64_t over[2][2])
{
	cr_assert_eq(v->dropped, res->events_overwritten);
	for (uint32_t i = 0; i < res->thread_rows; i++) {
		const kt_snapshot_thread *row = &rows[i];
		size_t k, j = 0;
		/* Its own slot, or the first free one: two producers, no more. */
		while (j < 2 && over[j][0] && over[j][0] != row->thread_id)
			j++;
		cr_assert_lt(j, 2, "a third thread %u in the snapshot", row->thread_id);
		cr_assert(thread_slot(v, row->thread_id, &k));
		if (row->events)
			cr_assert_leq(row->overwritten, v->first[k] - 1);
		over[j][0] = row->thread_id;
		cr_assert_geq(row->overwritten, over[j][1]);
		over[j][1] = row->overwritten;
	}
}

Test(flight, stress_snapshots_while_producing, .timeout = 600)
{
	kt_session *s = fx_begin(1u << 20);
	struct stress st = { .id = kt_name("seq") };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, producer, &st), 0);
	/* Acquire: pairs with the producers' count of themselves. */
	while (__atomic_load_n(&st.running, __ATOMIC_ACQUIRE) < 2)
		sched_yield();
	uint64_t lapped = 0, events = 0;
	int both = 0;
	uint64_t over[2][2] = { { 0 } }; /* thread id, overwritten so far */
	for (int i = 0; i < 100; i++) {
		kt_snapshot_thread rows[4];
		kt_snapshot_result res;
		struct seen v;
		cr_assert_eq(kt_session_snapshot_threads(s, tmp_path("s.katra"), -1, 0, 0, &res,
							 rows, 4), 0);
		check_snapshot(tmp_path("s.katra"), &res, &v);
		check_overwritten(&res, rows, &v, over);
		/* Both threads, unless the copies were further apart than a
		 * ring holds (this thread descheduled between them); none if
		 * a copy was lapped whole, try after try. */
		events += res.events;
		both += res.thread_count == 2;
		lapped += res.bytes_lapped;
		unlink(tmp_path("s.katra"));
	}
	__atomic_store_n(&st.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_assert_gt(events, 0);
	cr_log_info("100 snapshots: %d with both threads, %llu bytes lapped during copies", both,
		    (unsigned long long)lapped);
	fx_end(s);
}

/* A request's bytes, parsed without a socket: the one file it brings is
 * kept, anything else refused with every descriptor listed to close. */
Test(flight, snapshot_request_parse)
{
	union anc ctl;
	uint64_t w[KT__CTL_REQ_WORDS] = { KT__CTL_MAGIC, 7, 9 };
	const int fds[] = { 11, 12 };
	kt__ctl_req req;
	size_t n = put_rights(&ctl, fds, 1, 0);
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), 0);
	cr_assert_eq(req.fd, 11);
	cr_assert_eq(req.max_age_ns, 7);
	cr_assert_eq(req.max_bytes, 9);
	cr_assert_eq(req.version, 2);
	w[0] = KT__CTL_MAGIC_V1;
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), 0);
	cr_assert_eq(req.version, 1);
	/* Version 3 brings no file: one descriptor is refused, none taken. */
	w[0] = KT__CTL_MAGIC_V3;
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), -EINVAL);
	cr_assert_eq(req.nfds, 1, "listed, to be closed");
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), NULL, 0, 0, &req), 0);
	cr_assert_eq(req.version, 3);
	cr_assert_eq(req.fd, -1);
	cr_assert_eq(req.max_age_ns, 7);
	w[0] = KT__CTL_MAGIC;
	/* Truncated ancillary data, a short request, a wrong magic. */
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, MSG_CTRUNC, &req),
		     -EINVAL);
	cr_assert_eq(req.fd, -1);
	cr_assert_eq(req.nfds, 1, "still listed, to be closed");
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, 16, ctl.b, n, 0, &req), -EINVAL);
	w[0]++;
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), -EINVAL);
	w[0]--;
	/* Two descriptors: neither is the file, both are to be closed. */
	n = put_rights(&ctl, fds, 2, 0);
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), -EINVAL);
	cr_assert_eq(req.nfds, 2);
	cr_assert_eq(req.fds[1], 12);
	/* A header whose length reaches past the data is not read at all. */
	n = put_rights(&ctl, fds, 1, 64);
	cr_assert_eq(kt__ctl_request_parse((uint8_t *)w, sizeof(w), ctl.b, n, 0, &req), -EINVAL);
	cr_assert_eq(req.nfds, 0);
}

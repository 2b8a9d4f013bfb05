/*
 * Crash survival: a child process traces with crash files and is killed;
 * `katra recover` must rebuild every event it published (BLOCK), or account
 * for every one it lost (DROP), and must report damaged crash files
 * clearly and recover what is left.
 */
#include "crash_helpers.h"

#include <errno.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include "format/format.h"
#include "recover/crash.h"
#include "ring/private.h"
#include "ring/ring.h"

#define KILLS 30
#define PRODUCERS 2

/* What the child tells the parent, in a page both map. */
struct shared {
	_Atomic int ready;
	_Atomic int64_t last[PRODUCERS]; /* the last sequence whose emit returned */
};

/* ---- the child ---------------------------------------------------------- */

struct producer {
	struct shared *sh;
	int index;
	uint64_t limit;              /* emit this many, then wait to be killed */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	char name[16];
	snprintf(name, sizeof(name), "seq-%d", p->index);
	kt_thread_name(name);
	uint32_t id = kt_name("seq");
	for (uint64_t seq = 0; seq < p->limit; seq++) {
		kt_counter(id, (int64_t)seq);
		/* Release: the parent that reads this knows the emit returned. */
		atomic_store_explicit(&p->sh->last[p->index], (int64_t)seq, memory_order_release);
	}
	for (;;)
		pause();
	return NULL;
}

/*
 * Fork a child that traces into @trace with crash files under @parent and
 * emits sequence numbers on @threads threads (@limit each), then reports
 * ready... or, with @limit 0, reports ready at once and emits forever.
 */
static pid_t spawn(struct shared *sh, const char *parent, const char *trace, int policy,
		   int codec, int threads, uint64_t limit)
{
	/* Relaxed: fork() orders these before anything the child does. */
	atomic_store_explicit(&sh->ready, 0, memory_order_relaxed);
	for (int i = 0; i < PRODUCERS; i++)
		atomic_store_explicit(&sh->last[i], -1, memory_order_relaxed);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	alarm(60); /* never outlive a parent that lost track of us */
	kt_config cfg = { .ring_size = KT_RING_MIN, .overflow = policy };
	kt_session_options o = { .given = KT_GIVEN_CODEC, .codec = codec, .crash_dir = parent };
	kt_session *s;
	if (kt_init(&cfg) || kt_session_start(trace, &o, &s))
		_exit(10);
	static struct producer p[PRODUCERS];
	pthread_t t[PRODUCERS];
	for (int i = 0; i < threads; i++) {
		p[i] = (struct producer){ sh, i, limit ? limit : UINT64_MAX };
		if (pthread_create(&t[i], NULL, produce, &p[i]))
			_exit(11);
	}
	if (limit)
		for (int i = 0; i < threads; i++)
			/* Acquire: pairs with the producer's release. */
			while (atomic_load_explicit(&sh->last[i], memory_order_acquire) !=
			       (int64_t)limit - 1)
				usleep(1000);
	/* The parent that sees ready sees the reports before it. */
	t_child_ready(&sh->ready);
}

/* ---- reading a recovered trace ------------------------------------------ */

struct thread_seq {
	uint32_t thread_id;
	int index;                   /* the producer, from the thread's name */
	int64_t prev;                /* the last value seen */
	uint64_t count, dropped;
};

struct recovered {
	struct thread_seq t[8];
	int n;
	uint64_t events, dropped;
	uint32_t flags;
	int complete;
};

static struct thread_seq *seq_of(struct recovered *rv, uint32_t tid)
{
	for (int i = 0; i < rv->n; i++)
		if (rv->t[i].thread_id == tid)
			return &rv->t[i];
	cr_assert_lt(rv->n, 8);
	rv->t[rv->n] = (struct thread_seq){ .thread_id = tid, .index = -1, .prev = -1 };
	return &rv->t[rv->n++];
}

/* Read @path (it must read whole) and each thread's sequence: in file
 * order, values must only grow. */
static void read_recovered(const char *path, struct recovered *rv)
{
	memset(rv, 0, sizeof(*rv));
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open(path, &err, &r), 0, "%s", err.message);
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			struct thread_seq *t = seq_of(rv, f.u.chunk.thread_id);
			kt_chunk_iter it;
			kt_event ev;
			kt_chunk_iter_init(&it, &f);
			while (kt_chunk_next(&it, &ev)) {
				int64_t v;
				cr_assert_eq(ev.type, KT_EV_COUNTER_I64);
				memcpy(&v, ev.payload, 8);
				cr_assert_gt(v, t->prev, "thread %u: %lld after %lld", t->thread_id,
					     (long long)v, (long long)t->prev);
				t->prev = v;
				t->count++;
				rv->events++;
			}
		} else if (f.kind == KT_FRAME_THREAD && !strncmp(f.u.thread.name, "seq-", 4)) {
			seq_of(rv, f.u.thread.thread_id)->index = f.u.thread.name[4] - '0';
		} else if (f.kind == KT_FRAME_DROP) {
			seq_of(rv, f.u.drop.thread_id)->dropped += f.u.drop.count;
			rv->dropped += f.u.drop.count;
		} else if (f.kind == KT_FRAME_SUMMARY) {
			rv->flags = f.u.summary.flags;
			rv->complete = 1;
		}
	}
	cr_assert_eq(rc, 0, "%s: %s", path, kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
}

/* Events in the valid prefix of a dead process's trace file. */
static uint64_t prefix_events(const char *trace)
{
	kt_reader *r;
	if (kt_reader_open(trace, NULL, &r))
		return 0; /* cut inside the header: no event either */
	t_drain(r, NULL);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	kt_reader_close(r);
	return st.events;
}

/* ---- must show 1 and 2: killed at random moments ------------------------ */

static void kill_and_recover(int policy, int codec)
{
	char *dir = scratch(), out_buf[8192];
	struct shared *sh = t_shared(sizeof(struct shared));
	unsigned seed = 8 + (unsigned)policy * 1000 + (unsigned)(codec > 0 ? codec : 0);
	for (int round = 0; round < KILLS; round++) {
		char *trace = path_in(dir, "trace-%d.katra", round);
		char *out = path_in(dir, "out-%d.katra", round);
		pid_t pid = spawn(sh, dir, trace, policy, codec, PRODUCERS, 0);
		t_wait_ready(&sh->ready, pid);
		/* Anywhere from before the first event to deep into the run. */
		struct timespec ts = { 0, (long)(rand_r(&seed) % 30000) * 1000 };
		nanosleep(&ts, NULL);
		t_kill_child(pid);
		int64_t last[PRODUCERS];
		for (int i = 0; i < PRODUCERS; i++)
			/* Acquire: the child is dead; this pairs with its stores. */
			last[i] = atomic_load_explicit(&sh->last[i], memory_order_acquire);

		/* The dead process's own file is a valid prefix, no more. */
		const char *verify[] = { "verify", trace, NULL };
		int st = katra(out_buf, sizeof(out_buf), verify);
		cr_assert_eq(st, 3, "round %d: verify exit %d: %s", round, st, out_buf);
		cr_assert_not_null(strstr(out_buf, "no session summary"), "%s", out_buf);

		char *crash = path_in(dir, "katra-%ld", (long)pid);
		const char *rec[] = { "recover", crash, "--out", out, NULL };
		st = katra(out_buf, sizeof(out_buf), rec);
		cr_assert_eq(st, 0, "round %d: recover exit %d: %s", round, st, out_buf);
		const char *verify_out[] = { "verify", out, NULL };
		cr_assert_eq(katra(out_buf, sizeof(out_buf), verify_out), 0, "%s", out_buf);

		struct recovered rv;
		read_recovered(out, &rv);
		cr_assert_eq(rv.complete, 1);
		cr_assert_eq(rv.flags & KT_SUMMARY_RECOVERED, KT_SUMMARY_RECOVERED);
		for (int k = 0; k < rv.n; k++) {
			struct thread_seq *t = &rv.t[k];
			cr_assert(t->index >= 0 && t->index < PRODUCERS, "thread %u unnamed",
				  t->thread_id);
			int64_t l = last[t->index];
			/* Emitted: up to the last reported, or one more if the
			 * kill came between an emit and its report. */
			uint64_t held = t->count + t->dropped;
			cr_assert(held == (uint64_t)(l + 1) || held == (uint64_t)(l + 2),
				  "round %d thread %d: %llu events + %llu dropped, last sent %lld",
				  round, t->index, (unsigned long long)t->count,
				  (unsigned long long)t->dropped, (long long)l);
			/* Values only grow and stay below what was emitted, so
			 * the values missing are exactly the ones counted lost:
			 * none under BLOCK, the drop records' under DROP. */
			cr_assert_lt(t->prev, (int64_t)held);
			if (policy == KT_OVERFLOW_BLOCK)
				cr_assert_eq(t->dropped, 0);
		}
		/* A thread with nothing published has nothing to show. */
		for (int i = 0; i < PRODUCERS; i++) {
			int seen = 0;
			for (int k = 0; k < rv.n; k++)
				seen |= rv.t[k].index == i && rv.t[k].count + rv.t[k].dropped > 0;
			cr_assert(seen || last[i] < 0, "round %d: thread %d's events are missing",
				  round, i);
		}
		free(crash);
		free(trace);
		free(out);
	}
	munmap(sh, sizeof(*sh));
	rm_rf(dir);
}

Test(crash, block_policy_killed_30_times_recovers_gapless)
{
	kill_and_recover(KT_OVERFLOW_BLOCK, KT_CODEC_NONE);
}

Test(crash, drop_policy_killed_30_times_gaps_are_drops)
{
	kill_and_recover(KT_OVERFLOW_DROP, KT_CODEC_LZ4);
}

/* ---- must show 4: damaged crash files ----------------------------------- */

/* Written to the file, then left in the ring only: 24-byte counters, the
 * second batch under the half-ring mark that wakes the flusher. */
#define LEFT_FLUSHED 3000
#define LEFT_IN_RING 1000
#define LEFT_EVENTS (LEFT_FLUSHED + LEFT_IN_RING)

struct leftover {
	char *dir, *trace, *crash, *out;
	uint64_t in_trace;     /* events in the dead trace file's prefix */
	char msg[8192];
};

static void leftover_child(struct shared *sh, const char *dir, const char *trace)
{
	alarm(60);
	kt_config cfg = { .ring_size = KT_RING_MIN, .overflow = KT_OVERFLOW_BLOCK };
	/* The flusher wakes at the half-ring mark or when told, not by time. */
	kt_session_options o = { .crash_dir = dir, .flush_period_ns = UINT64_C(60000000000) };
	kt_session *s;
	if (kt_init(&cfg) || kt_session_start(trace, &o, &s))
		_exit(10);
	kt_thread_name("seq-0");
	uint32_t id = kt_name("seq");
	int64_t seq = 0;
	for (; seq < LEFT_FLUSHED; seq++)
		kt_counter(id, seq);
	/* Wait until the flusher has written them all: with crash files the
	 * tail reaches head only then.  Acquire pairs with its release of
	 * tail; relaxed head: this thread writes it. */
	struct kt__ring *r = (struct kt__ring *)(void *)kt__tls_ring;
	for (int i = 0; kt__load_acquire(&r->tail) != kt__load_own(&r->prod.head); i++) {
		/* A wake that lands mid-pass is seen only by the next one. */
		if (i % 100 == 0)
			kt__ring_wake_consumer();
		usleep(1000);
	}
	/* Let a pass that a late wake started end before the next batch. */
	usleep(10000);
	for (; seq < LEFT_EVENTS; seq++)
		kt_counter(id, seq);
	/* Release: ready comes after the last emit returned. */
	atomic_store_explicit(&sh->ready, 1, memory_order_release);
	for (;;)
		pause();
}

typedef void (*child_fn)(struct shared *sh, const char *dir, const char *trace);

/* Run @child (it reports ready, then waits) and kill it. */
static void leftover_of(struct leftover *l, child_fn child)
{
	struct shared *sh = t_shared(sizeof(struct shared));
	l->dir = scratch();
	l->trace = path_in(l->dir, "trace.katra");
	l->out = path_in(l->dir, "out.katra");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		child(sh, l->dir, l->trace);
		_exit(12);
	}
	t_wait_ready(&sh->ready, pid);
	t_kill_child(pid);
	munmap(sh, sizeof(*sh));
	l->crash = path_in(l->dir, "katra-%ld", (long)pid);
	l->in_trace = prefix_events(l->trace);
}

/* A process that published exactly LEFT_EVENTS events and was killed. */
static void leftover(struct leftover *l)
{
	leftover_of(l, leftover_child);
	cr_assert_geq(l->in_trace, LEFT_FLUSHED);
	cr_assert_lt(l->in_trace, LEFT_EVENTS, "some events are in the ring only");
}

/*
 * A ring that exists before the crash session starts moves onto crash
 * files in place: this thread emits in a plain session first (its ring and
 * name exist), then LEFT_IN_RING events with crash files, none flushed.
 */
static void rebound_child(struct shared *sh, const char *dir, const char *trace)
{
	alarm(60);
	kt_config cfg = { .ring_size = KT_RING_MIN, .overflow = KT_OVERFLOW_BLOCK };
	kt_session_options plain = { .flush_period_ns = 1000000 };
	kt_session *s;
	char *first = NULL;
	if (kt_init(&cfg) || kt_thread_name("seq-0") || asprintf(&first, "%s.first", trace) < 0 ||
	    kt_session_start(first, &plain, &s))
		_exit(10);
	uint32_t id = kt_name("seq");
	for (int64_t v = 0; v < 100; v++)
		kt_counter(id, 100000 + v);
	if (kt_session_stop(s, NULL))
		_exit(11);
	kt_session_options o = { .crash_dir = dir, .flush_period_ns = UINT64_C(60000000000) };
	if (kt_session_start(trace, &o, &s))
		_exit(12);
	/* After the flusher's first pass it sleeps for the whole period. */
	while (!kt__ring_consumer_asleep())
		usleep(100);
	for (int64_t v = 0; v < LEFT_IN_RING; v++)
		kt_counter(id, v);
	/* Release: ready comes after the last emit returned. */
	atomic_store_explicit(&sh->ready, 1, memory_order_release);
	for (;;)
		pause();
}

static void leftover_free(struct leftover *l)
{
	/* Whatever happened, OUT is whole or absent: no temporary beside it. */
	char *tmp = path_in(l->dir, "out.katra.tmp-");
	DIR *d = opendir(l->dir);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_assert_null(strstr(e->d_name, ".tmp-"), "left behind: %s", e->d_name);
	closedir(d);
	free(tmp);
	free(l->trace);
	free(l->crash);
	free(l->out);
	rm_rf(l->dir);
}

static int recover(struct leftover *l)
{
	const char *args[] = { "recover", l->crash, "--out", l->out, NULL };
	return katra(l->msg, sizeof(l->msg), args);
}

/* Recovered: exactly @events, the sequence 0.. without a gap. */
static void check_sequence(struct leftover *l, uint64_t events)
{
	struct recovered rv;
	read_recovered(l->out, &rv);
	cr_assert_eq(rv.flags, KT_SUMMARY_RECOVERED);
	cr_assert_eq(rv.events, events, "%llu events: %s", (unsigned long long)rv.events, l->msg);
	cr_assert_eq(rv.dropped, 0);
	if (events) {
		cr_assert_eq(rv.n, 1);
		cr_assert_eq(rv.t[0].index, 0, "the thread's name is recovered");
		cr_assert_eq(rv.t[0].prev, (int64_t)events - 1);
	}
}

/* Recovery from damaged files: exit 3, @msg among the problems reported,
 * and exactly @events recovered. */
static void expect_partial(struct leftover *l, const char *msg, uint64_t events)
{
	cr_assert_eq(recover(l), 3, "%s", l->msg);
	cr_assert_not_null(strstr(l->msg, msg), "%s", l->msg);
	check_sequence(l, events);
}

static void poke(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

Test(recover, leftover_gives_back_every_event)
{
	struct leftover l;
	leftover(&l);
	cr_assert_eq(recover(&l), 0, "%s", l.msg);
	check_sequence(&l, LEFT_EVENTS);
	const char *info[] = { "info", l.out, NULL };
	cr_assert_eq(katra(l.msg, sizeof(l.msg), info), 0, "%s", l.msg);
	cr_assert_not_null(strstr(l.msg, "(recovered)"), "%s", l.msg);
	const char *list[] = { "recover", "--list", l.dir, NULL };
	cr_assert_eq(katra(l.msg, sizeof(l.msg), list), 0);
	cr_assert_not_null(strstr(l.msg, l.crash), "%s", l.msg);
	leftover_free(&l);
}

Test(recover, a_ring_from_before_the_session_moves_onto_crash_files)
{
	struct leftover l;
	leftover_of(&l, rebound_child);
	cr_assert_eq(recover(&l), 0, "%s", l.msg);
	/* The second session's events, all from the ring, under the name the
	 * thread took before it. */
	cr_assert_eq(l.in_trace, 0);
	check_sequence(&l, LEFT_IN_RING);
	leftover_free(&l);
}

Test(recover, damaged_control_header_is_reported_and_the_rest_recovered)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	poke(ctl, KT__CTL_O_RING_SIZE, "\x55", 1);
	expect_partial(&l, "control: offset 112: control header checksum mismatch", LEFT_EVENTS);
	free(ctl);
	leftover_free(&l);
}

Test(recover, control_file_cut_short_keeps_the_trace_file)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	cr_assert_eq(truncate(ctl, 100), 0);
	/* Neither the trace's path nor the rings are known: nothing to read. */
	expect_partial(&l, "offset 100: the control file ends inside its 4096-byte header", 0);
	/* Told where the trace is, it keeps what that file holds. */
	const char *args[] = { "recover", l.crash, "--out", l.out, "--trace", l.trace, NULL };
	cr_assert_eq(katra(l.msg, sizeof(l.msg), args), 3, "%s", l.msg);
	check_sequence(&l, l.in_trace);
	free(ctl);
	leftover_free(&l);
}

Test(recover, damaged_slot_is_skipped)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	poke(ctl, 4096 + KT__SLOT_O_MAGIC, "XXXXXXXX", 8);
	expect_partial(&l, "control: offset 4096: slot 0: offset 2048: no slot "
				      "mark (empty, or damaged): that ring is skipped", l.in_trace);
	free(ctl);
	leftover_free(&l);
}

Test(recover, ring_file_of_the_wrong_size_is_skipped)
{
	struct leftover l;
	leftover(&l);
	char *ring = path_in(l.crash, "ring-0");
	cr_assert_eq(truncate(ring, 4096), 0);
	expect_partial(&l, "ring-0: 4096 bytes, but slot 0 of the control file says "
				      "the ring has 65536", l.in_trace);
	free(ring);
	leftover_free(&l);
}

Test(recover, head_and_tail_out_of_range_are_refused)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	int fd = open(ctl, O_RDWR);
	cr_assert_geq(fd, 0);
	uint64_t head;
	cr_assert_eq(pread(fd, &head, 8, 4096 + KT__SLOT_O_HEAD), 8);
	/* More than a ring ahead of the tails. */
	uint64_t bad = head + 4 * KT_RING_MIN;
	cr_assert_eq(pwrite(fd, &bad, 8, 4096 + KT__SLOT_O_HEAD), 8);
	close(fd);
	expect_partial(&l, "are out of range: more than one ring apart", l.in_trace);

	/* A head not on a record boundary: misaligned. */
	bad = head + 4;
	poke(ctl, 4096 + KT__SLOT_O_HEAD, &bad, 8);
	expect_partial(&l, "are out of range: not multiples of 8", l.in_trace);
	free(ctl);
	leftover_free(&l);
}

Test(recover, torn_record_in_a_ring_keeps_those_before_it)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control"), *ring = path_in(l.crash, "ring-0");
	int fd = open(ctl, O_RDONLY);
	cr_assert_geq(fd, 0);
	uint64_t head, seq, ck_tail, ck_events;
	cr_assert_eq(pread(fd, &head, 8, 4096 + KT__SLOT_O_HEAD), 8);
	cr_assert_eq(pread(fd, &seq, 8, 4096 + KT__SLOT_O_CK_SEQ), 8);
	cr_assert_eq(pread(fd, &ck_tail, 8, 4096 + KT__SLOT_O_CK + 32 * (seq & 1)), 8);
	cr_assert_eq(pread(fd, &ck_events, 8, 4096 + KT__SLOT_O_CK + 32 * (seq & 1) + 8), 8);
	close(fd);
	/* Every record is a 24-byte counter; spoil the type of the 10th
	 * record after the checkpoint. */
	cr_assert_gt(head - ck_tail, 24 * 10);
	poke(ring, (off_t)((ck_tail + 24 * 9 + 12) % KT_RING_MIN), "\x63", 1);
	cr_assert_eq(recover(&l), 3, "%s", l.msg);
	cr_assert_not_null(strstr(l.msg, "malformed event record"), "%s", l.msg);
	struct recovered rv;
	read_recovered(l.out, &rv);
	/* The spoiled record is event ck_events + 9: every one before it is
	 * kept, from the file or the ring, and none after it. */
	cr_assert_eq(rv.t[0].count, ck_events + 9);
	cr_assert_eq(rv.t[0].prev, (int64_t)ck_events + 8);
	free(ctl);
	free(ring);
	leftover_free(&l);
}

/* ---- a live process, and a clean stop ----------------------------------- */

Test(recover, refuses_a_live_process_and_a_clean_stop_removes_the_directory)
{
	char *dir = scratch(), *trace = path_in(dir, "trace.katra");
	char *out = path_in(dir, "out.katra"), msg[4096];
	int go[2];
	cr_assert_eq(pipe(go), 0);
	struct shared *sh = t_shared(sizeof(struct shared));
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(60);
		close(go[1]);
		kt_session_options o = { .crash_dir = dir };
		kt_session *s;
		if (kt_session_start(trace, &o, &s))
			_exit(10);
		kt_instant(kt_name("alive"));
		/* Release: ready comes after the session started. */
		atomic_store_explicit(&sh->ready, 1, memory_order_release);
		char c;
		if (read(go[0], &c, 1) < 0)
			_exit(11);
		_exit(kt_session_stop(s, NULL) ? 12 : 0);
	}
	close(go[0]);
	t_wait_ready(&sh->ready, pid);
	char *crash = path_in(dir, "katra-%ld", (long)pid);
	const char *args[] = { "recover", crash, "--out", out, NULL };
	cr_assert_eq(katra(msg, sizeof(msg), args), 1, "%s", msg);
	char *want = NULL;
	cr_assert_geq(asprintf(&want, "recover: %s: process %ld is alive and holds it", crash,
			       (long)pid), 0);
	cr_assert_not_null(strstr(msg, want), "%s", msg);
	struct stat sb;
	cr_assert_eq(stat(out, &sb), -1, "nothing is written");
	/* --list names only the dead. */
	const char *list[] = { "recover", "--list", dir, NULL };
	cr_assert_eq(katra(msg, sizeof(msg), list), 0);
	cr_assert_null(strstr(msg, crash), "%s", msg);

	close(go[1]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
	cr_assert_eq(stat(crash, &sb), -1);
	cr_assert_eq(errno, ENOENT, "a clean stop removes %s", crash);
	const char *verify[] = { "verify", trace, NULL };
	cr_assert_eq(katra(msg, sizeof(msg), verify), 0, "%s", msg);
	munmap(sh, sizeof(*sh));
	free(want);
	free(crash);
	free(trace);
	free(out);
	rm_rf(dir);
}

/* ---- a live process: exec, pid reuse ------------------------------------- */

/* exec() closes the control file, and with it drops the lock: the process
 * that wrote the directory still runs, and must not look like a leftover. */
Test(recover, a_process_that_called_exec_is_alive_not_a_leftover)
{
	char *dir = scratch(), *trace = path_in(dir, "trace.katra");
	char *out = path_in(dir, "out.katra"), msg[8192];
	int execd[2], hold[2];
	cr_assert_eq(pipe2(execd, O_CLOEXEC), 0);
	cr_assert_eq(pipe(hold), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(60);
		close(execd[0]);
		close(hold[1]);
		kt_session_options o = { .crash_dir = dir };
		kt_session *s;
		if (kt_session_start(trace, &o, &s))
			_exit(10);
		kt_instant(kt_name("before exec"));
		/* cat reads the pipe until the parent closes it. */
		if (dup2(hold[0], 0) < 0)
			_exit(11);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(12);
	}
	close(execd[1]);
	close(hold[0]);
	char c;
	/* End of file: the close-on-exec end is gone, the child runs cat. */
	cr_assert_eq(read(execd[0], &c, 1), 0);
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "the child runs");
	char *crash = path_in(dir, "katra-%ld", (long)pid);
	const char *list[] = { "recover", "--list", dir, NULL };
	cr_assert_eq(katra(msg, sizeof(msg), list), 0, "%s", msg);
	cr_assert_null(strstr(msg, crash), "a live process listed: %s", msg);
	const char *args[] = { "recover", crash, "--out", out, NULL };
	cr_assert_eq(katra(msg, sizeof(msg), args), 1, "%s", msg);
	char *want = NULL;
	cr_assert_geq(asprintf(&want, "%s: process %ld is alive", crash, (long)pid), 0);
	cr_assert_not_null(strstr(msg, want), "%s", msg);

	/* Once it ends, the directory is a leftover like any other. */
	close(hold[1]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
	cr_assert_eq(katra(msg, sizeof(msg), list), 0, "%s", msg);
	cr_assert_not_null(strstr(msg, crash), "%s", msg);
	cr_assert_eq(katra(msg, sizeof(msg), args), 0, "%s", msg);
	cr_assert_not_null(strstr(msg, "recovered 1 events"), "%s", msg);
	close(execd[0]);
	free(want);
	free(crash);
	free(trace);
	free(out);
	rm_rf(dir);
}

/* Rewrite the control header of @ctl with @fn, then its checksum. */
static void edit_header(const char *ctl, void (*fn)(uint8_t *head, void *arg), void *arg)
{
	uint8_t head[KT__CTL_HEADER];
	int fd = open(ctl, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	fn(head, arg);
	memset(head + KT__CTL_O_CHECKSUM, 0, 8);
	kt__put64(head + KT__CTL_O_CHECKSUM, kt__xxh3(head, sizeof(head)));
	cr_assert_eq(pwrite(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	close(fd);
}

struct identity {
	uint64_t pid, start;
	uint8_t boot[16];
};

static void set_identity(uint8_t *head, void *arg)
{
	struct identity *id = arg;
	kt__put64(head + KT__CTL_O_PID, id->pid);
	kt__put64(head + KT__CTL_O_START, id->start);
	memcpy(head + KT__CTL_O_BOOT_ID, id->boot, 16);
}

/* A dead process's pid, now another's: the start time tells them apart. */
Test(recover, a_reused_pid_is_not_the_writer)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	struct identity me = { .pid = (uint64_t)getpid() };
	cr_assert_eq(kt__proc_identity(0, &me.start, me.boot), 0);

	/* This very process, as /proc describes it: alive. */
	edit_header(ctl, set_identity, &me);
	cr_assert_eq(recover(&l), 1, "%s", l.msg);
	char want[64];
	snprintf(want, sizeof(want), "process %ld is alive", (long)getpid());
	cr_assert_not_null(strstr(l.msg, want), "%s", l.msg);

	/* Its pid, started at another time, or in another boot: a leftover. */
	struct identity before = me, other_boot = me;
	before.start--;
	other_boot.boot[3] ^= 1;
	edit_header(ctl, set_identity, &before);
	cr_assert_eq(recover(&l), 0, "%s", l.msg);
	check_sequence(&l, LEFT_EVENTS);
	edit_header(ctl, set_identity, &other_boot);
	cr_assert_eq(recover(&l), 0, "%s", l.msg);
	free(ctl);
	leftover_free(&l);
}

/* A version 1 control file: the path at offset 120, no identity. */
static void to_version_1(uint8_t *head, void *arg)
{
	(void)arg;
	uint32_t n = kt__get32(head + KT__CTL_O_PATH_LEN);
	memmove(head + KT__CTL_V1_O_PATH, head + KT__CTL_O_PATH, n);
	memset(head + KT__CTL_V1_O_PATH + n, 0, KT__CTL_HEADER - KT__CTL_V1_O_PATH - n);
	kt__put32(head + KT__CTL_O_VERSION, KT__CTL_VERSION_1);
}

Test(recover, version_1_control_files_are_still_read)
{
	struct leftover l;
	leftover(&l);
	char *ctl = path_in(l.crash, "control");
	edit_header(ctl, to_version_1, NULL);
	cr_assert_eq(recover(&l), 0, "%s", l.msg);
	check_sequence(&l, LEFT_EVENTS);
	/* The trace path was found at its version 1 place. */
	char want[64];
	snprintf(want, sizeof(want), "(%llu from the trace file", (unsigned long long)l.in_trace);
	cr_assert_not_null(strstr(l.msg, want), "%s", l.msg);
	free(ctl);
	leftover_free(&l);
}

/* ---- thread churn with crash files ------------------------------------------------ */

#define CHURN_WAVES 6
#define CHURN_THREADS 40
#define CHURN_KEEP 16 /* rings the registry keeps mapped for reuse */

static void *emit_few(void *arg)
{
	for (int64_t i = 0; i < 10; i++)
		kt_counter(*(uint32_t *)arg, i);
	return NULL;
}

/* @parent's only crash directory, in @dir. */
static void crash_dir_in(const char *parent, char *dir, size_t cap)
{
	DIR *d = opendir(parent);
	cr_assert_not_null(d);
	struct dirent *e;
	dir[0] = 0;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "katra-", 6))
			snprintf(dir, cap, "%s/%s", parent, e->d_name);
	closedir(d);
	cr_assert_neq(dir[0], 0);
}

/* The ring files in @parent's only crash directory; its control file's
 * size in *@ctl_size. */
static int ring_files(const char *parent, off_t *ctl_size)
{
	char dir[512];
	crash_dir_in(parent, dir, sizeof(dir));
	struct dirent *e;
	DIR *d;
	char *ctl = path_in(dir, "control");
	struct stat sb;
	cr_assert_eq(stat(ctl, &sb), 0);
	*ctl_size = sb.st_size;
	free(ctl);
	int n = 0;
	cr_assert_not_null(d = opendir(dir));
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "ring-", 5);
	closedir(d);
	return n;
}

/*
 * Waves of short-lived threads: once the flusher has reaped a wave, the
 * ring files of rings it did not keep for reuse are gone, and their slots
 * are reused, so neither the files nor the control file grow with churn.
 */
Test(crash, ring_files_of_retired_rings_are_removed_and_slots_reused, .timeout = 120)
{
	char *dir = scratch();
	kt_config cfg = { .ring_size = 64 << 10 };
	cr_assert_eq(kt_init(&cfg), 0);
	char *trace = path_in(dir, "churn.katra");
	kt_session *s;
	cr_assert_eq(kt_session_start(trace, &(kt_session_options){ .crash_dir = dir }, &s), 0);
	uint32_t id = kt_name("count");
	off_t ctl = 0;
	for (int w = 0; w < CHURN_WAVES; w++) {
		pthread_t th[CHURN_THREADS];
		for (int t = 0; t < CHURN_THREADS; t++)
			cr_assert_eq(pthread_create(&th[t], NULL, emit_few, &id), 0);
		for (int t = 0; t < CHURN_THREADS; t++)
			pthread_join(th[t], NULL);
		/* The flusher reaps retired rings on its next passes: wait for
		 * it (bounded), then count. */
		int n = 0;
		for (int tries = 0; tries < 2000; tries++) {
			if ((n = ring_files(dir, &ctl)) <= CHURN_KEEP)
				break;
			usleep(10000);
		}
		cr_assert_leq(n, CHURN_KEEP, "wave %d: %d ring files", w, n);
	}
	/* At most a wave and the kept rings ever existed at once. */
	cr_assert_leq(ctl, (off_t)(1 + CHURN_THREADS + CHURN_KEEP) * (off_t)kt__ring_page());
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.events_written, (uint64_t)CHURN_WAVES * CHURN_THREADS * 10);
	kt_summary_release(&sum);
	free(trace);
	rm_rf(dir);
}

/* ---- a relative crash directory --------------------------------------------------- */

static void *emit_thousand(void *arg)
{
	for (int64_t i = 0; i < 1000; i++)
		kt_counter(*(uint32_t *)arg, i);
	return NULL;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/*
 * crash_dir "crash", relative, and the host chdir()s mid-session (daemons
 * do): a thread's ring made after that still goes into the same crash
 * directory, no event is lost, and the clean stop removes the directory.
 */
Test(crash, a_relative_crash_dir_survives_chdir)
{
	char *dir = scratch();
	char *crash = path_in(dir, "crash");
	cr_assert_eq(mkdir(crash, 0700), 0);
	char *trace = path_in(dir, "rel.katra");
	char cwd[4096];
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(dir), 0);
	kt_session *s;
	cr_assert_eq(kt_session_start(trace, &(kt_session_options){ .crash_dir = "crash" }, &s), 0,
		     "%s", kt_session_get_start_error());
	uint32_t id = kt_name("count");
	emit_thousand(&id);
	cr_assert_eq(chdir("/"), 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emit_thousand, &id), 0);
	pthread_join(th, NULL);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.events_written, 2000);
	cr_assert_eq(sum.events_dropped, 0);
	kt_summary_release(&sum);
	cr_assert_eq(entries(crash), 0);
	cr_assert_eq(chdir(cwd), 0);
	free(trace);
	free(crash);
	rm_rf(dir);
}

/* ---- the names log ------------------------------------------------------------------ */

static off_t names_log_size(const char *parent)
{
	char dir[512];
	crash_dir_in(parent, dir, sizeof(dir));
	char *path = path_in(dir, "names");
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	free(path);
	return sb.st_size;
}

/* A worker that names itself per job logs its name once, not per call;
 * a name that changes is logged again, up to a cap. */
Test(crash, the_names_log_grows_only_when_a_name_changes)
{
	char *dir = scratch();
	char *trace = path_in(dir, "names.katra");
	kt_session *s;
	cr_assert_eq(kt_session_start(trace, &(kt_session_options){ .crash_dir = dir }, &s), 0);
	cr_assert_eq(kt_thread_name("worker"), 0);
	off_t once = names_log_size(dir);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(kt_thread_name("worker"), 0);
	cr_assert_eq(names_log_size(dir), once);
	cr_assert_eq(kt_thread_name("idle"), 0);
	cr_assert_eq(names_log_size(dir), once + 12 + 4); /* an entry: 12 bytes, then the name */
	/* A name per job, each new: logged up to a cap (2 MiB uncapped). */
	char job[32];
	for (int i = 0; i < 100000; i++) {
		snprintf(job, sizeof(job), "job-%06d", i);
		cr_assert_eq(kt_thread_name(job), 0);
	}
	cr_assert_leq(names_log_size(dir), once + KT__NAMES_THREAD_CAP);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	free(trace);
	rm_rf(dir);
}

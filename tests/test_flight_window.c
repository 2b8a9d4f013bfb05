#define _GNU_SOURCE
/*
 * Flight snapshots keep a window per thread: a thread whose ring lapped
 * keeps what its ring still holds, and a quiet thread keeps its own older
 * events, where one window for all (from the latest first event among the
 * threads) dropped them.  Each row of kt_session_snapshot_threads() says
 * its thread's window and loss, and the file says the same.
 */
#include "helpers.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include <katra/katra.h>
#include <katra/reader.h>

/* Per thread of a snapshot file: its events' first and last sequence
 * numbers and timestamps, and its drop record. */
struct tl {
	uint32_t tid;
	uint64_t events, first_seq, last_seq, first_ts, last_ts;
	uint64_t lost, lost_first, lost_last;
};

static struct tl *tl_of(struct tl *t, size_t *n, uint32_t tid)
{
	for (size_t i = 0; i < *n; i++)
		if (t[i].tid == tid)
			return &t[i];
	cr_assert_lt(*n, 4);
	t[*n] = (struct tl){ .tid = tid };
	return &t[(*n)++];
}

static void on_frame(struct tl *t, size_t *n, const kt_trace_frame *f)
{
	if (f->kind == KT_FRAME_DROP) {
		struct tl *x = tl_of(t, n, f->u.drop.thread_id);
		x->lost += f->u.drop.count;
		x->lost_first = f->u.drop.first_ts;
		x->lost_last = f->u.drop.last_ts;
		return;
	}
	if (f->kind != KT_FRAME_CHUNK)
		return;
	kt_chunk_iter it;
	kt_event ev;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev) > 0) {
		struct tl *x = tl_of(t, n, ev.thread_id);
		int64_t seq;
		cr_assert_eq(ev.payload_len, 8);
		memcpy(&seq, ev.payload, 8);
		if (!x->events++) {
			x->first_seq = (uint64_t)seq;
			x->first_ts = ev.ts;
		}
		cr_assert_eq(x->events, (uint64_t)seq - x->first_seq + 1, "a hole");
		x->last_seq = (uint64_t)seq;
		x->last_ts = ev.ts;
	}
}

/* The threads of snapshot @path, in the order first seen. */
static size_t read_threads(const char *path, struct tl *t)
{
	kt_reader *r;
	size_t n = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		on_frame(t, &n, &f);
	cr_assert_eq(rc, 0);
	kt_reader_close(r);
	return n;
}

struct job {
	uint32_t id;
	uint64_t n;
};

static void *emit_main(void *arg)
{
	const struct job *j = arg;
	for (uint64_t i = 1; i <= j->n; i++)
		kt_counter(j->id, (int64_t)i);
	return NULL;
}

/*
 * A flight session over the smallest rings, then two threads, one after
 * the other, each emitting "seq" 1 to its count; a snapshot into @path
 * (made and removed) with @max_bytes, its result and rows, the session's
 * stop, and the file's threads, all into @r.
 */
struct snap {
	kt_snapshot_result res;
	kt_snapshot_thread rows[4];
	struct tl t[4];
	size_t n;
};

static void two_threads(uint64_t quiet, uint64_t busy, uint64_t max_bytes, struct snap *r)
{
	char dir[] = "/tmp/kt_windowXXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.katra", dir);
	kt_config cfg = { .ring_size = KT_RING_MIN };
	cr_assert_eq(kt_init(&cfg), 0);
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	struct job jobs[2] = { { kt_name("seq"), quiet }, { kt_name("seq"), busy } };
	for (int i = 0; i < 2; i++) {
		pthread_t th;
		cr_assert_eq(pthread_create(&th, NULL, emit_main, &jobs[i]), 0);
		cr_assert_eq(pthread_join(th, NULL), 0);
	}
	cr_assert_eq(kt_session_snapshot_threads(s, path, -1, 0, max_bytes, &r->res, r->rows, 4),
		     0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	r->n = read_threads(path, r->t);
	unlink(path);
	cr_assert_eq(rmdir(dir), 0);
}

static const kt_snapshot_thread *row_of(const kt_snapshot_thread *rows, uint32_t n, uint32_t tid)
{
	for (uint32_t i = 0; i < n; i++)
		if (rows[i].thread_id == tid)
			return &rows[i];
	cr_assert_fail("no row for thread %u", tid);
	return NULL;
}

/*
 * A quiet thread emits 10 events and exits; then a busy one laps its
 * 64 KiB ring (24-byte records, 100000 of them: 97280 overwritten, as
 * test_flight's overwritten_counted_per_thread works out).  The quiet
 * thread's 10 events all come before the busy ring's oldest, and are
 * kept: its window is its own.  Without per-thread windows they were
 * trimmed (events_trimmed 10) and the quiet thread had no row.
 */
Test(window, a_quiet_thread_keeps_its_events_older_than_a_busy_ring)
{
	struct snap r;
	two_threads(10, 100000, 0, &r);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.res.thread_rows, 2);
	cr_assert_eq(r.res.events, 10 + 2720);
	cr_assert_eq(r.res.events_trimmed, 0);
	cr_assert_eq(r.res.events_overwritten, 97280);
	const struct tl *quiet = r.t[0].events == 10 ? &r.t[0] : &r.t[1];
	const struct tl *busy = quiet == r.t ? &r.t[1] : &r.t[0];
	cr_assert_eq(quiet->first_seq, 1);
	cr_assert_eq(quiet->last_seq, 10);
	cr_assert_eq(quiet->lost, 0);
	cr_assert_eq(busy->first_seq, 97281);
	cr_assert_eq(busy->last_seq, 100000);
	cr_assert_eq(busy->lost, 97280);
	/* Each row: the thread's own window and loss, as the file has them. */
	const kt_snapshot_thread *q = row_of(r.rows, 2, quiet->tid), *b = row_of(r.rows, 2, busy->tid);
	cr_assert_eq(q->events, 10);
	cr_assert_eq(q->window_start, quiet->first_ts);
	cr_assert_eq(q->window_end, quiet->last_ts);
	cr_assert_eq(q->overwritten, 0);
	cr_assert_eq(q->overwritten_first, 0);
	cr_assert_eq(q->overwritten_last, 0);
	cr_assert_eq(q->trimmed, 0);
	cr_assert_eq(b->events, 2720);
	cr_assert_eq(b->window_start, busy->first_ts);
	cr_assert_eq(b->window_end, busy->last_ts);
	cr_assert_eq(b->overwritten, 97280);
	cr_assert_eq(b->overwritten_first, busy->lost_first);
	cr_assert_eq(b->overwritten_last, busy->lost_last);
	cr_assert_lt(b->overwritten_last, b->window_start);
	cr_assert_eq(b->trimmed, 0);
	/* The file starts at the quiet thread's window; every thread is
	 * complete from the busy one's. */
	cr_assert_eq(r.res.first_event, quiet->first_ts);
	cr_assert_eq(r.res.window_start, busy->first_ts);
	cr_assert_eq(r.res.window_end, busy->last_ts);
	cr_assert_lt(quiet->last_ts, busy->first_ts);
}

/*
 * A byte limit cuts every thread at one time, and each thread then starts
 * at its first event at or after it: 2400 bytes of 24-byte records hold
 * the busy thread's newest 100, and the quiet thread, all of whose events
 * are older, keeps none (its row: nothing).  trimmed says per thread what
 * the limit left out.
 */
Test(window, a_byte_limit_cuts_each_thread_at_one_time)
{
	struct snap r;
	two_threads(10, 1000, 2400, &r);
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.t[0].first_seq, 901);
	cr_assert_eq(r.res.events, 100);
	cr_assert_eq(r.res.events_trimmed, 910);
	cr_assert_eq(r.res.thread_rows, 1);
	cr_assert_eq(r.rows[0].thread_id, r.t[0].tid);
	cr_assert_eq(r.rows[0].trimmed, 900);
	cr_assert_eq(r.rows[0].window_start, r.t[0].first_ts);
	cr_assert_eq(r.rows[0].window_end, r.t[0].last_ts);
}

/* ---- spare rings ----------------------------------------------------------- */

/* The page faults a new thread takes to make its ring (its first use:
 * kt_thread_name() registers it). */
static void *first_use_faults(void *arg)
{
	struct rusage a, b;
	getrusage(RUSAGE_THREAD, &a);
	kt_thread_name("new");
	getrusage(RUSAGE_THREAD, &b);
	*(long *)arg = b.ru_minflt - a.ru_minflt + b.ru_majflt - a.ru_majflt;
	return NULL;
}

static long new_thread_faults(void)
{
	long faults = -1;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, first_use_faults, &faults), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	return faults;
}

/*
 * A thread's ring is made on its first use, and its 4 MiB (the default)
 * faulted in there, on the host's thread: 1024 pages at least (issue
 * #25: 256 MiB rings made the first frame 523 ms).  With spare_rings the
 * session's start makes them: the first two threads after it fault in
 * no ring (a few pages of their own at most), the third, past the
 * spares, its whole ring.  Without spare rings the first faulted 1090.
 */
Test(window, spare_rings_are_made_at_the_start_not_on_the_threads)
{
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .spare_rings = 2 };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	long first = new_thread_faults(), second = new_thread_faults();
	long third = new_thread_faults();
	cr_assert_lt(first, 64, "%ld page faults", first);
	cr_assert_lt(second, 64, "%ld page faults", second);
	cr_assert_geq(third, KT_RING_DEFAULT / 4096, "%ld page faults", third);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
}

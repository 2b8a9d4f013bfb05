/*
 * The WAIT overflow policy, the default (katra/trace.h, kt_overflow): a
 * thread whose ring is full waits for a flusher that is making room, so a
 * burst faster than the flusher is slowed and nothing is lost, and stops
 * waiting once the flusher frees nothing: a stalled flusher costs the
 * program one bounded wait, then drops, counted.
 *
 * The flusher is slowed, or stalled, by the reader of the pipe it writes
 * to, so the ring is full for certain whatever the machine's speed.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define EVENTS 100000

/* The pipe's reader: copies what the flusher writes into @out, @chunk
 * bytes at a time with @pause_ns between reads, once @go is set. */
struct reader {
	int fd, out;
	size_t chunk;
	long pause_ns;
	atomic_int go;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	char buf[65536];
	/* seq_cst: a test flag, polled; nothing rides on its order. */
	while (!atomic_load(&rd->go))
		usleep(1000);
	for (;;) {
		ssize_t n = read(rd->fd, buf, rd->chunk);
		if (n <= 0)
			break;
		cr_assert_eq(write(rd->out, buf, (size_t)n), n);
		if (rd->pause_ns)
			nanosleep(&(struct timespec){ 0, rd->pause_ns }, NULL);
	}
	return NULL;
}

/* A raw session of @policy into a pipe read by @rd, a 64 KiB ring, and
 * EVENTS counters 0, 1, 2... from this thread; then the reader is let go
 * (if it was not yet), the session stopped and its summary returned.
 * The trace lands in @path. */
static void run(int policy, struct reader *rd, const char *path, kt_summary *sum)
{
	kt_config cfg = { .ring_size = 64 << 10, .overflow = policy };
	cr_assert_eq(kt_init(&cfg), 0);
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	rd->fd = fds[0];
	rd->out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(rd->out, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, reader_main, rd), 0);
	kt_session_options o = { .fd = fds[1], .given = KT_GIVEN_CODEC, .codec = KT_CODEC_NONE };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0);
	uint32_t id = kt_name("wait.seq");
	for (int64_t i = 0; i < EVENTS; i++)
		kt_counter(id, i);
	atomic_store(&rd->go, 1);
	cr_assert_eq(kt_session_stop(s, sum), 0);
	close(fds[1]);
	pthread_join(th, NULL);
	close(fds[0]);
	close(rd->out);
}

/* The counters of the trace at @path, checked to rise by one from 0;
 * returns how many there were and, in *@drops, the drop frames' total. */
static uint64_t count_sequence(const char *path, uint64_t *drops)
{
	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open(path, &e, &r), 0, "%s", e.message);
	kt_trace_frame f;
	uint64_t next = 0;
	int rc;
	*drops = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_DROP)
			*drops += f.u.drop.count;
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		kt_chunk_iter it;
		kt_event ev;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev)) {
			if (ev.type != KT_EV_COUNTER_I64)
				continue;
			int64_t v;
			memcpy(&v, ev.payload, 8);
			/* Under DROP a gap is a loss; the test of WAIT wants none. */
			cr_assert_geq(v, (int64_t)next);
			next = (uint64_t)v + 1;
		}
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
	return next;
}

/* A reader of 16 KiB every 100 us or more takes 160 MB/s at most, far
 * below the GB/s one thread emits: DROP loses events, WAIT loses none and
 * the trace holds every counter in order.  The 2.4 MB take 15 ms or more
 * of waiting, well within a thread's credit (250 ms) on a slow machine. */
Test(wait, a_flusher_slower_than_the_thread_slows_it_and_loses_nothing, .timeout = 120)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-wait-%d.katra", (int)getpid());
	kt_summary sum;
	uint64_t drops;

	struct reader slow = { .chunk = 16384, .pause_ns = 100000, .go = 1 };
	run(KT_OVERFLOW_DROP, &slow, path, &sum);
	cr_assert_gt(sum.events_dropped, 0, "the flusher kept up: the test proves nothing");
	kt_summary_release(&sum);

	slow = (struct reader){ .chunk = 16384, .pause_ns = 100000, .go = 1 };
	run(KT_OVERFLOW_WAIT, &slow, path, &sum);
	cr_assert_eq(sum.events_dropped, 0);
	cr_assert_eq(sum.io_error, 0);
	cr_assert_eq(count_sequence(path, &drops), EVENTS);
	cr_assert_eq(drops, 0);
	kt_summary_release(&sum);
	unlink(path);
}

/* A reader that takes nothing until the thread has emitted everything:
 * the flusher is stuck in its write, so the thread waits once, for
 * KT_WAIT_STALL_NS, and then drops without waiting until its records fit
 * again.  Were it to wait for every record, EVENTS x 50 ms would outlast
 * the test's timeout.  Every event is either in the trace or counted. */
Test(wait, a_stalled_flusher_costs_one_wait_then_drops, .timeout = 60)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-stall-%d.katra", (int)getpid());
	kt_summary sum;
	uint64_t drops;

	struct reader stuck = { .chunk = 65536 };
	run(KT_OVERFLOW_WAIT, &stuck, path, &sum);
	cr_assert_gt(sum.events_dropped, 0);
	cr_assert_gt(sum.events_written, 0);
	cr_assert_eq(sum.events_written + sum.events_dropped, EVENTS);
	uint64_t last = count_sequence(path, &drops);
	cr_assert_eq(drops, sum.events_dropped);
	cr_assert_leq(last, EVENTS);
	kt_summary_release(&sum);
	unlink(path);
}

/* The default is WAIT, and the trace's header says so. */
Test(wait, is_the_default_and_the_header_says_so)
{
	cr_assert_eq(kt_init(NULL), 0);
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-waitdef-%d.katra", (int)getpid());
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	kt_instant(kt_name("one"));
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	kt_summary_release(&sum);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(kt_reader_get_header(r)->capture.overflow, KT_OVERFLOW_WAIT);
	kt_reader_close(r);
	unlink(path);
}

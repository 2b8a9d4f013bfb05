/*
 * test_top.c - the live page of a recording session (flush/live.h), which
 * `katra top` reads: the bucket arithmetic its percentiles rest on, the
 * bounds its copy puts on another process's bytes, and the figures a
 * session publishes for events whose relations are known exactly.
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>
#include <pthread.h>
#include <stdatomic.h>
#include "flush/live.h"

static struct kt__live_page page, copy;

Test(bucket, exact_below_32_then_sixteen_per_octave)
{
	for (uint64_t v = 0; v < 32; v++)
		cr_assert_eq(kt__live_bucket(v), v);
	cr_assert_eq(kt__live_bucket(32), 32);
	cr_assert_eq(kt__live_bucket(33), 32);
	cr_assert_eq(kt__live_bucket(34), 33);
	cr_assert_eq(kt__live_bucket(63), 47);
	cr_assert_eq(kt__live_bucket(64), 48);
	cr_assert_eq(kt__live_bucket(UINT64_MAX), 32 + 58 * 16 + 15);
	cr_assert_lt(kt__live_bucket(UINT64_MAX), KT__LIVE_BUCKETS);
	/* Every bucket's middle lies in it, within 1/32 of its values. */
	for (unsigned b = 0; b <= kt__live_bucket(UINT64_MAX); b++) {
		uint64_t mid = kt__live_bucket_mid(b);
		cr_assert_eq(kt__live_bucket(mid), b, "bucket %u: middle %llu", b,
			     (unsigned long long)mid);
	}
	cr_assert_eq(kt__live_bucket_mid(32), 33);
	cr_assert_eq(kt__live_bucket_mid(48), 66);
}

static void valid(struct kt__live_page *p)
{
	memset(p, 0, sizeof(*p));
	p->magic = KT__LIVE_MAGIC;
	p->size = sizeof(*p);
	p->clock.tick_hz = 1000000000;
}

Test(copy, counts_are_clamped_and_names_cut)
{
	valid(&page);
	page.nzones = 1000;
	page.nthreads = 99;
	page.ncounters = UINT32_MAX;
	memset(page.zones[3].name, 'a', KT__LIVE_NAME);
	memset(page.counters[31].name, 'b', KT__LIVE_NAME);
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page)), 0);
	cr_assert_eq(copy.nzones, KT__LIVE_ZONES);
	cr_assert_eq(copy.nthreads, KT__LIVE_THREADS);
	cr_assert_eq(copy.ncounters, KT__LIVE_COUNTERS);
	cr_assert_eq(strlen(copy.zones[3].name), KT__LIVE_NAME - 1);
	cr_assert_eq(strlen(copy.counters[31].name), KT__LIVE_NAME - 1);
}

Test(copy, what_is_not_a_page_is_refused)
{
	valid(&page);
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page) - 1), -EPROTO);
	page.magic ^= 1;
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page)), -EPROTO);
	valid(&page);
	page.size = 64;
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page)), -EPROTO);
	valid(&page);
	page.clock.tick_hz = 0;
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page)), -EPROTO);
	valid(&page);
	page.seq = 7; /* a writer that never finishes */
	cr_assert_eq(kt__live_copy(&copy, &page, sizeof(page)), -EAGAIN);
}

/* The page of this process's session, found as katra top finds it and
 * mapped, once its flusher made it. */
static const void *map_own_page(void)
{
	int fd = -1;
	for (int i = 0; i < 500 && fd < 0; i++) {
		fd = kt__live_find((long)getpid());
		if (fd < 0)
			usleep(10000);
	}
	cr_assert_geq(fd, 0, "no live page");
	void *m = mmap(NULL, sizeof(page), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(m, MAP_FAILED);
	return m;
}

static const struct kt__live_zone *zone_named(const struct kt__live_page *p, const char *name)
{
	for (uint32_t i = 0; i < p->nzones; i++)
		if (!strcmp(p->zones[i].name, name))
			return &p->zones[i];
	return NULL;
}

/* Frames @from .. @to - 1 of the workload the checks below know: per
 * frame an outer zone around two inner ones, a counter, a frame mark. */
static void frames(int from, int to)
{
	uint32_t outer = kt_name("outer"), inner = kt_name("inner"), fr = kt_name("frame"),
		 cnt = kt_name("items");
	for (int f = from; f < to; f++) {
		kt_zone_begin(outer);
		kt_zone_begin(inner);
		kt_zone_end(inner);
		kt_zone_begin(inner);
		kt_zone_end(inner);
		kt_zone_end(outer);
		kt_counter(cnt, 40 + f);
		kt_frame(fr, (uint64_t)f);
	}
}

/* The last copy of a session that ran frames(0, @n), once stopped. */
static void check_last_copy(const void *m, int n, uint64_t written)
{
	cr_assert_eq(kt__live_copy(&copy, m, sizeof(page)), 0);
	munmap((void *)m, sizeof(page));
	cr_assert_eq(copy.ended, 1);
	cr_assert_eq(copy.pid, (uint32_t)getpid());
	cr_assert_eq(copy.events, written);
	cr_assert_eq(copy.events, (uint64_t)n * 8);
	cr_assert_eq(copy.frame_count, (uint64_t)n - 1);
	cr_assert_eq(copy.untimed, 0);
	cr_assert_eq(copy.skipped, 0);
	const struct kt__live_zone *o = zone_named(&copy, "outer"), *i = zone_named(&copy, "inner");
	cr_assert(o && i);
	cr_assert_eq(o->count, (uint64_t)n);
	cr_assert_eq(i->count, 2 * (uint64_t)n);
	cr_assert_eq(i->self, i->total);
	cr_assert_eq(o->self, o->total - i->total);
	uint64_t in_hist = 0;
	for (unsigned b = 0; b < KT__LIVE_BUCKETS; b++)
		in_hist += o->hist[b];
	cr_assert_eq(in_hist, (uint64_t)n);
	cr_assert_eq(copy.ncounters, 1);
	cr_assert_str_eq(copy.counters[0].name, "items");
	cr_assert_eq(copy.counters[0].i, 40 + n - 1);
	cr_assert_eq(copy.nthreads, 1);
	cr_assert_eq(copy.threads[0].events, (uint64_t)n * 8);
	cr_assert_eq(copy.threads[0].waited_ns, 0);
	/* Gone with the session: a viewer that comes now finds no page. */
	cr_assert_eq(kt__live_find((long)getpid()), -ENOENT);
}

Test(session, the_last_copy_holds_every_zone_frame_and_counter)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-test-top-%d.katra", (int)getpid());
	kt_session *s;
	setenv("KATRA_LIVE", "1", 1); /* the page is opt-in */
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	const void *m = map_own_page();
	frames(0, 3);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	unlink(path);
	check_last_copy(m, 3, sum.events_written);
}

/* A fork()ed child does not show the parent's page: `katra top CHILD`
 * found it among the child's inherited descriptors until the child
 * exec'd (the memfd is only close-on-exec). */
Test(session, a_forked_child_has_no_page)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-test-topfork-%d.katra", (int)getpid());
	kt_session *s;
	setenv("KATRA_LIVE", "1", 1);
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	munmap((void *)map_own_page(), sizeof(page));
	pid_t child = fork();
	if (child == 0)
		_exit(kt__live_find((long)getpid()) == -ENOENT ? 0 : 1);
	int st;
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child found a page (status %d)", st);
	int fd = kt__live_find((long)getpid());
	cr_assert_geq(fd, 0, "the parent's page went with the child's");
	close(fd);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	unlink(path);
}

/* A flight session has no flusher: its own thread looks at the rings.
 * Two looks at least (the first copy waited for), each walking only what
 * came since the one before: a look that walked the ring again from its
 * start would count the first frames twice. */
Test(session, a_flight_session_publishes_too)
{
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	kt_session *s;
	setenv("KATRA_LIVE", "1", 1);
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	const void *m = map_own_page();
	frames(0, 3);
	int seen = 0;
	for (int i = 0; i < 500 && !seen; i++) {
		seen = kt__live_copy(&copy, m, sizeof(page)) == 0 && copy.events == 24;
		if (!seen)
			usleep(10000);
	}
	cr_assert(seen, "no copy with the first 24 events: %llu",
		  (unsigned long long)copy.events);
	cr_assert_eq(copy.ended, 0);
	frames(3, 5);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	check_last_copy(m, 5, 5 * 8);
}

/* The pipe's reader: nothing until @go, then everything, to the end. */
struct drain {
	int fd;
	atomic_int go;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char buf[65536];
	/* seq_cst: a test flag, polled; nothing rides on its order. */
	while (!atomic_load(&d->go))
		usleep(1000);
	while (read(d->fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/* A thread's waits for room (the WAIT policy) reach the page: a flusher
 * stuck in its write to a pipe nobody reads makes the thread wait once,
 * until the flusher has freed nothing for KT_WAIT_STALL_NS, then drop;
 * the wait is at least that long and at most the thread's credit. */
Test(session, a_thread_s_wait_for_room_is_on_the_page, .timeout = 60)
{
	kt_config cfg = { .ring_size = 64 << 10, .overflow = KT_OVERFLOW_WAIT };
	cr_assert_eq(kt_init(&cfg), 0);
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	struct drain d = { .fd = fds[0] };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, drain_main, &d), 0);
	setenv("KATRA_LIVE", "1", 1);
	kt_session_options o = { .fd = fds[1], .given = KT_GIVEN_CODEC, .codec = KT_CODEC_NONE };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0);
	const void *m = map_own_page();
	uint32_t id = kt_name("wait.seq");
	for (int64_t i = 0; i < 100000; i++)
		kt_counter(id, i);
	atomic_store(&d.go, 1);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	close(fds[1]);
	pthread_join(th, NULL);
	close(fds[0]);
	cr_assert_gt(sum.events_dropped, 0, "no drop: the thread may not have waited");
	kt_summary_release(&sum);
	cr_assert_eq(kt__live_copy(&copy, m, sizeof(page)), 0);
	munmap((void *)m, sizeof(page));
	cr_assert_eq(copy.nthreads, 1);
	cr_assert_geq(copy.threads[0].waited_ns, KT_WAIT_STALL_NS);
	cr_assert_leq(copy.threads[0].waited_ns, KT_WAIT_CREDIT_NS);
}

/*
 * test_sched_flight.c - a flight session's snapshots carry its threads'
 * scheduler records of their window (issue #31; flush/sched.c's flight
 * part): the header says so, each followed thread's stream starts with
 * a follow no earlier than the snapshot's first event, and a zone that
 * sleeps has its switches out and in.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

struct seen {
	uint32_t flags, stream, stream_tid;
	char stream_name[64];
	uint64_t first_event, first_sched, zone_begin, zone_end;
	unsigned records, follows, first_is_follow, out_in_zone, in_in_zone;
};

static void read_snapshot(const char *path, struct seen *k)
{
	kt_reader *r;
	memset(k, 0, sizeof(*k));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	k->flags = kt_reader_get_header(r)->flags;
	kt_event ev;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		if (ev.type != KT_EV_SCHED) {
			k->first_event = k->first_event ? k->first_event : ev.ts;
			if (ev.type == KT_EV_ZONE_BEGIN)
				k->zone_begin = ev.ts;
			if (ev.type == KT_EV_ZONE_END)
				k->zone_end = ev.ts;
			continue;
		}
		if (!k->records++) {
			k->first_sched = ev.ts;
			k->first_is_follow = ev.flags == KT_SCHED_FOLLOW;
		}
		k->stream = ev.thread_id;
		k->follows += ev.flags == KT_SCHED_FOLLOW;
		int in = k->zone_begin && !k->zone_end;
		k->out_in_zone += in && (ev.flags == KT_SCHED_BLOCKED || ev.flags == KT_SCHED_PREEMPTED);
		k->in_in_zone += in && ev.flags == KT_SCHED_IN;
	}
	cr_assert_eq(rc, 0);
	kt_trace_frame f;
	cr_assert_eq(kt_reader_rewind(r), 0);
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		if (f.kind == KT_FRAME_THREAD && k->stream && f.u.thread.thread_id == k->stream) {
			k->stream_tid = f.u.thread.os_tid;
			snprintf(k->stream_name, sizeof(k->stream_name), "%s", f.u.thread.name);
		}
	kt_reader_close(r);
}

/* The thread is followed (the session's look every 100 ms) long before
 * the window: the old sleep's switches are cut off with the old message,
 * the window's stream opens with a follow at the snapshot's first event
 * (what came before is not in the file), and the zone's sleep is there. */
Test(flight, snapshot_has_the_window_s_scheduler_records, .timeout = 60)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-schedflight-%d.katra", (int)getpid());
	unlink(path);
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .sched = KT_SCHED_ON };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_message(kt_name("log"), "old", 3);
	sleep_ms(400); /* followed, then switches before the window */
	uint32_t z = kt_name("sleep");
	kt_zone_begin(z);
	sleep_ms(20);
	kt_zone_end(z);
	kt_snapshot_result res;
	cr_assert_eq(kt_session_snapshot(s, path, -1, 200000000, 0, &res), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);

	struct seen k;
	read_snapshot(path, &k);
	cr_assert_eq(k.flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), KT_HDR_SCHED);
	cr_assert_gt(k.records, 0, "the snapshot has scheduler records");
	cr_assert(k.first_is_follow, "the stream opens with a follow");
	cr_assert_eq(k.follows, 1);
	cr_assert_eq(k.first_sched, res.first_event, "at the window's first event");
	cr_assert_eq(k.first_event, res.first_event, "the old message is cut off");
	cr_assert_geq(k.out_in_zone, 1, "the zone's sleep switched it out");
	cr_assert_geq(k.in_in_zone, 1, "and back in");
	char want[64];
	snprintf(want, sizeof(want), "katra.sched %u", (unsigned)syscall(SYS_gettid));
	cr_assert_str_eq(k.stream_name, want);
	cr_assert_eq(k.stream_tid, 0);
	unlink(path);
}

/* Not asked: a flight snapshot has none, and its header says nothing. */
Test(flight, snapshot_without_sched_has_none, .timeout = 60)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-schedflight-off-%d.katra", (int)getpid());
	unlink(path);
	unsetenv("KT_SCHED");
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t z = kt_name("sleep");
	sleep_ms(150);
	kt_zone_begin(z);
	sleep_ms(20);
	kt_zone_end(z);
	cr_assert_eq(kt_session_snapshot(s, path, -1, 0, 0, NULL), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	struct seen k;
	read_snapshot(path, &k);
	cr_assert_eq(k.flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), 0);
	cr_assert_eq(k.records, 0);
	unlink(path);
}

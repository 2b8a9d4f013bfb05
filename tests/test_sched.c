/*
 * Scheduler records (issue #31, flush/sched.c): a session with
 * kt_session_options.sched follows each traced thread's context switches
 * into a stream of its own; a thread created later is followed; a fork()ed
 * child holds none of the parent's perf events; where perf_event_open() is
 * refused (a seccomp filter, as containers install) the session runs and
 * the file says scheduler data is absent.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>
#include <katra/katra.h>
#include <katra/reader.h>

#include "cli.h"
#include "deny_perf.h"
#include "tools/export/perfetto_trace.pb-c.h"

/* What a trace holds of scheduling. */
struct sched_seen {
	uint32_t hdr_flags;
	int absent_note;          /* a note "sched: absent: ..." */
	uint32_t owner;           /* the followed thread asked about */
	uint32_t stream;          /* its stream's katra id */
	uint32_t stream_tid;      /* its thread entry's OS tid */
	char stream_name[64];     /* its thread entry's name */
	uint64_t follow_ts, zone_begin, zone_end;
	unsigned follows, blocked, preempted, ins, lost;
	unsigned blocked_in_zone, in_in_zone; /* between zone_begin and zone_end */
	uint64_t sched_records;
	uint32_t zone_thread;     /* the thread of the file's first zone */
};

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

static void count_event(struct sched_seen *k, const kt_event *ev, int in_zone)
{
	kt_value v;
	if (ev->type != KT_EV_SCHED || !kt_event_get_value(ev, &v) || v.thread != k->owner)
		return;
	k->sched_records++;
	k->stream = ev->thread_id;
	switch (ev->flags) {
	case KT_SCHED_FOLLOW:
		k->follows++;
		k->follow_ts = ev->ts;
		break;
	case KT_SCHED_BLOCKED:
		k->blocked++;
		k->blocked_in_zone += in_zone;
		break;
	case KT_SCHED_PREEMPTED:
		k->preempted++;
		break;
	case KT_SCHED_IN:
		k->ins++;
		k->in_in_zone += in_zone;
		break;
	default:
		k->lost++;
	}
}

/* Read @path: its header, @owner's stream and records, in merged order,
 * with the one zone of @owner (if any). */
static void read_sched(const char *path, uint32_t owner, struct sched_seen *k)
{
	kt_reader *r;
	memset(k, 0, sizeof(*k));
	k->owner = owner;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	const kt_header *h = kt_reader_get_header(r);
	k->hdr_flags = h->flags;
	for (uint32_t i = 0; i < h->note_count; i++)
		k->absent_note |= !strncmp(h->notes[i], "sched: absent: ", 15);
	kt_event ev;
	int rc, in_zone = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		if (ev.type == KT_EV_ZONE_BEGIN && !k->zone_thread)
			k->zone_thread = ev.thread_id;
		if (ev.thread_id == owner && ev.type == KT_EV_ZONE_BEGIN) {
			k->zone_begin = ev.ts;
			in_zone = 1;
		} else if (ev.thread_id == owner && ev.type == KT_EV_ZONE_END) {
			k->zone_end = ev.ts;
			in_zone = 0;
		}
		count_event(k, &ev, in_zone);
	}
	cr_assert_eq(rc, 0);
	kt_trace_frame f;
	cr_assert_eq(kt_reader_rewind(r), 0);
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		if (f.kind == KT_FRAME_THREAD && f.u.thread.thread_id == k->stream && k->stream) {
			k->stream_tid = f.u.thread.os_tid;
			snprintf(k->stream_name, sizeof(k->stream_name), "%s", f.u.thread.name);
		}
	cr_assert_eq(rc, 0);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.complete, 1);
	kt_reader_close(r);
}

static char *tmp_path(const char *what)
{
	char *p = NULL;
	cr_assert_gt(asprintf(&p, "/tmp/katra-sched-%s-%d.katra", what, (int)getpid()), 0);
	unlink(p);
	return p;
}

/*
 * A thread's zone that sleeps 20 ms: its stream holds FOLLOW, then inside
 * the zone a switch out blocked and the switch in after it; the stream is
 * named "katra.sched TID" after the thread's OS tid, its own OS tid 0, and
 * the header says so.
 * Without the flusher's poll there is no record at all.
 */
Test(sched, a_sleeping_zone_has_its_switches, .timeout = 60)
{
	char *path = tmp_path("sleep");
	kt_session_options o = { .sched = KT_SCHED_ON, .flush_period_ns = 1000000 };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_message(kt_name("log"), "start", 5);
	sleep_ms(10); /* the flusher sees the ring and follows the thread */
	uint32_t z = kt_name("sleep");
	kt_zone_begin(z);
	sleep_ms(20);
	kt_zone_end(z);
	cr_assert_eq(kt_session_stop(s, NULL), 0);

	struct sched_seen k;
	read_sched(path, 1, &k); /* each test runs in a process of its own: thread 1 */
	cr_assert_eq(k.hdr_flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), KT_HDR_SCHED);
	cr_assert_eq(k.follows, 1);
	cr_assert_lt(k.follow_ts, k.zone_begin, "followed before the zone");
	cr_assert_geq(k.blocked_in_zone, 1);
	cr_assert_geq(k.in_in_zone, 1);
	cr_assert_neq(k.stream, k.owner);
	char want[64];
	snprintf(want, sizeof(want), "katra.sched %u", (unsigned)syscall(SYS_gettid));
	cr_assert_eq(k.stream_tid, 0, "no OS thread's");
	cr_assert_str_eq(k.stream_name, want);
	cr_assert_eq(k.lost, 0);
	unlink(path);
	free(path);
}

static void *late_thread(void *arg)
{
	(void)arg;
	uint32_t z = kt_name("late");
	kt_message(kt_name("log"), "late", 4);
	sleep_ms(10);
	kt_zone_begin(z);
	sleep_ms(20);
	kt_zone_end(z);
	sleep_ms(5);
	return NULL;
}

/* A thread started after the session is followed too (its own FOLLOW and
 * switches inside its zone, each in its own stream).  It is followed
 * from the flusher's first period after its first emit: the zone comes
 * after that. */
Test(sched, a_thread_started_later_is_followed, .timeout = 60)
{
	char *path = tmp_path("late");
	kt_session_options o = { .sched = KT_SCHED_ON };
	kt_session *s;
	pthread_t t;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_message(kt_name("log"), "main", 4); /* thread 1 */
	cr_assert_eq(pthread_create(&t, NULL, late_thread, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	struct sched_seen k;
	read_sched(path, 1, &k);
	cr_assert_eq(k.follows, 1);
	cr_assert_eq(k.zone_begin, 0);
	uint32_t late = k.zone_thread, main_stream = k.stream;
	read_sched(path, late, &k);
	cr_assert_eq(k.follows, 1);
	cr_assert_neq(k.zone_begin, 0, "thread %u is the late one", late);
	cr_assert_lt(k.follow_ts, k.zone_begin);
	cr_assert_geq(k.blocked_in_zone, 1);
	cr_assert_geq(k.in_in_zone, 1);
	cr_assert_neq(k.stream, main_stream);
	unlink(path);
	free(path);
}

/* How many of this process's fds and mappings are perf events. */
static int perf_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[300], to[128];
	while (d && (e = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(link, to, sizeof(to) - 1);
		if (len > 0) {
			to[len] = 0;
			n += strstr(to, "perf_event") != NULL;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static int perf_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, "perf_event") != NULL;
	if (f)
		fclose(f);
	return n;
}

/* A fork()ed child holds none of the parent's perf events: no fd (closed
 * by the session's fork handler), no mapping (MADV_DONTFORK), so it can
 * neither read the parent's switches nor keep its buffers alive.  The
 * parent still has both. */
Test(sched, a_forked_child_has_no_perf_event, .timeout = 60)
{
	char *path = tmp_path("fork");
	kt_session_options o = { .sched = KT_SCHED_ON };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_message(kt_name("log"), "main", 4);
	sleep_ms(20);
	cr_assert_geq(perf_fds(), 1);
	cr_assert_geq(perf_maps(), 1);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(perf_fds() == 0 && perf_maps() == 0 ? 0 : 1 + (perf_fds() ? 1 : 0));
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 0, "the child had the parent's perf %s",
		     WEXITSTATUS(st) == 2 ? "fds" : "mappings");
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	cr_assert_eq(perf_fds(), 0, "the stop closes them");
	unlink(path);
	free(path);
}

/*
 * perf_event_open refused (must-show 5): the session starts, records its
 * events, says once on stderr why scheduler data is missing, and the file
 * says it is absent (the header flag and a note), with no scheduler
 * record: a reader shows "absent", not zero off-CPU time.
 */
static void sleep_5ms(void)
{
	sleep_ms(5);
}

Test(sched, refused_perf_event_open_leaves_a_working_session_saying_absent, .timeout = 60)
{
	char *path = tmp_path("refused"), *errpath = tmp_path("refused-err");
	t_refused_session(path, errpath, &(kt_session_options){ .sched = KT_SCHED_ON }, "sleep",
			  sleep_5ms);
	struct sched_seen k;
	read_sched(path, 1, &k);
	cr_assert_eq(k.hdr_flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), KT_HDR_SCHED_ABSENT);
	cr_assert(k.absent_note);
	cr_assert_eq(k.sched_records, 0);
	FILE *f = fopen(errpath, "r");
	char line[512];
	int said = 0;
	while (f && fgets(line, sizeof(line), f))
		said += strstr(line, "scheduler data absent") &&
			strstr(line, "Operation not permitted");
	if (f)
		fclose(f);
	cr_assert_eq(said, 1, "stderr says why, once");
	unlink(path);
	unlink(errpath);
	free(path);
	free(errpath);
}

#define CAP_THREADS (KT_SCHED_MAX_THREADS + 8)

static pthread_barrier_t cap_emitted, cap_release;

static void *cap_thread(void *arg)
{
	(void)arg;
	kt_message(kt_name("log"), "one", 3);
	pthread_barrier_wait(&cap_emitted);
	pthread_barrier_wait(&cap_release);
	return NULL;
}

/* More threads at once than a session follows: the first 256 it sees are
 * followed (a follow record each), the rest are not (no follow record:
 * readers say their off-CPU time is unknown), and stderr says so once. */
Test(sched, past_the_cap_threads_are_left_out_and_said_once, .timeout = 120)
{
	char *path = tmp_path("cap"), *errpath = tmp_path("cap-err");
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static pthread_t t[CAP_THREADS];
		if (!freopen(errpath, "w", stderr))
			_exit(21);
		setvbuf(stderr, NULL, _IONBF, 0);
		kt_session_options o = { .sched = KT_SCHED_ON, .ring_size = KT_RING_MIN };
		kt_session *s;
		if (kt_session_start(path, &o, &s) != 0)
			_exit(11);
		pthread_barrier_init(&cap_emitted, NULL, CAP_THREADS + 1);
		pthread_barrier_init(&cap_release, NULL, CAP_THREADS + 1);
		for (unsigned i = 0; i < CAP_THREADS; i++)
			if (pthread_create(&t[i], NULL, cap_thread, NULL))
				_exit(12);
		pthread_barrier_wait(&cap_emitted);
		sleep_ms(100); /* flush periods: every ring seen while all live */
		pthread_barrier_wait(&cap_release);
		for (unsigned i = 0; i < CAP_THREADS; i++)
			pthread_join(t[i], NULL);
		_exit(kt_session_stop(s, NULL) != 0 ? 13 : 0);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
	kt_reader *r;
	kt_event ev;
	kt_value v;
	unsigned follows = 0, emitters = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next(r, &ev) > 0) {
		follows += ev.type == KT_EV_SCHED && ev.flags == KT_SCHED_FOLLOW &&
			   kt_event_get_value(&ev, &v);
		emitters += ev.type == KT_EV_MESSAGE;
	}
	kt_reader_close(r);
	cr_assert_eq(emitters, CAP_THREADS);
	cr_assert_eq(follows, KT_SCHED_MAX_THREADS);
	FILE *f = fopen(errpath, "r");
	char line[512];
	int said = 0;
	while (f && fgets(line, sizeof(line), f))
		said += !!strstr(line, "more threads than KT_SCHED_MAX_THREADS (256)");
	if (f)
		fclose(f);
	cr_assert_eq(said, 1, "stderr says the cap once");
	unlink(path);
	unlink(errpath);
	free(path);
	free(errpath);
}

/* @file (tests/data) with header flags @flags set, its header checksum
 * made again, opened from memory: the reader's result. */
static int open_with_flags(const char *file, uint32_t flags)
{
	char path[256];
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/%s", KT_TEST_DATA, file);
	uint8_t *b = t_slurp(path, &len);
	cr_assert_not_null(b);
	uint32_t h;
	memcpy(&h, b + 12, 4);               /* header_len (SPEC §2) */
	size_t end = 16 + ((h + 7u) & ~7u);  /* the header checksum's offset */
	cr_assert_leq(end + 8, len);
	b[20] |= (uint8_t)flags;             /* the body's flags, offset 4 */
	uint64_t sum = XXH3_64bits(b + 8, end - 8);
	memcpy(b + end, &sum, 8);
	kt_reader *r = NULL;
	int rc = kt_reader_open_mem(b, len, NULL, &r);
	if (!rc)
		kt_reader_close(r);
	free(b);
	return rc;
}

/* The header's sched flags are version 4's: a version 3 file with one
 * set is refused as a reserved bit, a version 4 file reads; both at once
 * is refused in any version. */
Test(sched, header_flags_are_version_4s)
{
	cr_assert_eq(open_with_flags("golden_v3.katra", KT_HDR_SCHED), KT_ERESERVED);
	cr_assert_eq(open_with_flags("golden_v3.katra", KT_HDR_SCHED_ABSENT), KT_ERESERVED);
	cr_assert_eq(open_with_flags("golden_v4.katra", KT_HDR_SCHED), 0);
	cr_assert_eq(open_with_flags("golden_v4.katra", KT_HDR_SCHED_ABSENT), 0);
	cr_assert_eq(open_with_flags("golden_v4.katra", KT_HDR_SCHED | KT_HDR_SCHED_ABSENT),
		     KT_ERESERVED);
	cr_assert_eq(open_with_flags("golden_v4.katra", 8), KT_ERESERVED);
}

/* Not asked for: neither flag, no record, no perf event opened. */
Test(sched, off_by_default, .timeout = 60)
{
	char *path = tmp_path("off");
	kt_session *s;
	unsetenv("KT_SCHED");
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	kt_message(kt_name("log"), "main", 4);
	sleep_ms(10);
	cr_assert_eq(perf_fds(), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	struct sched_seen k;
	read_sched(path, 1, &k);
	cr_assert_eq(k.hdr_flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT), 0);
	cr_assert_eq(k.sched_records, 0);
	unlink(path);
	free(path);
}

/* ---- katra stats: on-CPU and off-CPU per zone ------------------------------ */

/* `katra stats --json @path`'s object. */
static json_t *stats_of(const char *path)
{
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", "--json", path, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_error_t e;
	json_t *o = json_loadb(p.out, p.out_len, 0, &e);
	cr_assert(o, "%s", e.text);
	return o;
}

/* The element of array @a whose "name" is @name. */
static json_t *named(json_t *a, const char *name)
{
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *n = json_string_value(json_object_get(json_array_get(a, i), "name"));
		if (n && !strcmp(n, name))
			return json_array_get(a, i);
	}
	cr_assert_fail("no %s", name);
	return NULL;
}

/* A sched row's figures. */
struct row {
	json_int_t zones, not_covered, on, off, blocked, preempted, total;
};

static struct row sched_row(json_t *o, const char *name)
{
	struct row r;
	json_t *z = named(json_object_get(json_object_get(o, "sched"), "zones"), name);
	cr_assert_eq(json_unpack(z, "{s:I,s:I,s:I,s:I,s:I,s:I}", "zones", &r.zones, "not_covered",
				 &r.not_covered, "on_cpu_ns", &r.on, "off_cpu_ns", &r.off,
				 "blocked_ns", &r.blocked, "preempted_ns", &r.preempted),
		     0, "%s", name);
	/* The zone's total time, from the names table. */
	cr_assert_eq(json_unpack(named(json_object_get(o, "names"), name), "{s:{s:I}}", "zone",
				 "total_ns", &r.total),
		     0, "%s", name);
	return r;
}

/*
 * Must-show 1: examples/offcpu's zones, 5 rounds.  "sleep" (a 10 ms
 * nanosleep) is off the CPU 10 ms and more a zone, blocked; "mutex"
 * (waits while another thread holds the lock 10 ms) is mostly off the
 * CPU, blocked; "spin" hardly blocks (it calls no system call) and what
 * it is off the CPU is preemption by whatever else the machine runs;
 * "pinned" (spinning on CPU 0 beside another spinning thread) is
 * preempted.  Each zone's on-CPU and off-CPU time add up to its duration
 * exactly.
 * Without scheduler records the rows are not there at all.
 */
#ifdef KT_OFFCPU
Test(stats, offcpu_zones_sleep_wait_and_spin, .timeout = 120)
{
	char *path = tmp_path("offcpu"), cmd[512];
	snprintf(cmd, sizeof(cmd), "%s %s 5", KT_OFFCPU, path);
	cr_assert_eq(system(cmd), 0);
	json_t *o = stats_of(path);
	json_int_t followed = 0;
	cr_assert_eq(json_unpack(o, "{s:{s:b,s:I}}", "sched", "present", &(int){ 0 },
				 "threads_followed", &followed),
		     0);
	cr_assert(json_is_true(json_object_get(json_object_get(o, "sched"), "present")));
	cr_assert_eq(followed, 1);
	const char *zones[] = { "sleep", "mutex", "spin", "pinned" };
	for (int i = 0; i < 4; i++) {
		struct row r = sched_row(o, zones[i]);
		cr_assert_eq(r.zones, 5, "%s", zones[i]);
		cr_assert_eq(r.not_covered, 0, "%s", zones[i]);
		cr_assert_eq(r.on + r.off, r.total, "%s: on + off is the zones' time", zones[i]);
		cr_assert_eq(r.blocked + r.preempted, r.off);
	}
	struct row sl = sched_row(o, "sleep"), mu = sched_row(o, "mutex"), sp = sched_row(o, "spin");
	/* A 10 ms sleep is off the CPU 10 ms and more: the wake-up waits for
	 * a CPU on a loaded machine, which is off-CPU time too.  So: at least
	 * 9 ms a zone, and all of the zone but 10% of 10 ms a zone. */
	cr_assert_geq(sl.off, 5 * 9000000, "sleep: %lld ns off-CPU in 5 zones", (long long)sl.off);
	cr_assert_leq(sl.total - sl.off, 5 * 1000000, "sleep: %lld ns on-CPU in 5 zones",
		      (long long)(sl.total - sl.off));
	cr_assert_gt(sl.blocked, 5 * 9000000);
	cr_assert_gt(mu.blocked, mu.on, "mutex: blocked mostly");
	cr_assert_gt(mu.blocked, 5 * 5000000);
	/* The spin zone calls nothing that sleeps, but its first begin interns
	 * its site (a lock the flusher may hold): at most a sliver blocked. */
	cr_assert_lt(sp.blocked, sp.total / 10, "spin: %lld ns blocked", (long long)sp.blocked);
	/* What else it spends off the CPU is preemption: on a machine of
	 * two loaded cores (CI's) that may be half of it; alone, ~0 (the
	 * report's run). */
	cr_assert_gt(sp.on, sp.total / 10, "spin: %lld ns on-CPU", (long long)sp.on);
	cr_assert_gt(sl.blocked, 9 * sl.total / 10, "sleep: blocked 90%% of it and more");
	/* Pinned to CPU 0 beside a thread spinning there: preempted, about
	 * half of its time (a tenth at least), and not blocked. */
	struct row pi = sched_row(o, "pinned");
	cr_assert_gt(pi.preempted, pi.total / 10, "pinned: %lld of %lld ns preempted",
		     (long long)pi.preempted, (long long)pi.total);
	cr_assert_lt(pi.blocked, pi.total / 10, "pinned: %lld ns blocked", (long long)pi.blocked);
	json_decref(o);

	/* The text says the same in its table. */
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", path, NULL });
	cr_assert_eq(p.status, 0);
	cr_assert(strstr(p.out, "off-CPU time per zone (scheduler records: 1 threads followed"));
	unlink(path);
	free(path);
}
#endif

/*
 * Without root (the premise, at perf_event_paranoid 2): run as
 * root, the test runs examples/offcpu as nobody (setpriv), whose session
 * must still follow its threads.  A test not run as root is that case
 * already (the other tests).
 */
Test(stats, offcpu_without_root_is_followed, .timeout = 120)
{
	if (getuid() != 0 || access("/usr/bin/setpriv", X_OK))
		cr_skip_test("not root, or no setpriv: the other tests run unprivileged");
	char *path = tmp_path("nobody"), cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups %s %s 1", KT_OFFCPU,
		 path);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	json_t *o = stats_of(path);
	json_int_t followed = 0;
	cr_assert_eq(json_unpack(o, "{s:{s:I}}", "sched", "threads_followed", &followed), 0);
	cr_assert(json_is_true(json_object_get(json_object_get(o, "sched"), "present")));
	cr_assert_eq(followed, 1);
	cr_assert_gt(sched_row(o, "sleep").blocked, 9000000);
	json_decref(o);
	unlink(path);
	free(path);
}

/*
 * katra merge of two processes' traces keeps their scheduling: the
 * header flag, and each record's thread renumbered as the threads are
 * (without, the records name the merge's other threads and every zone is
 * not covered).
 */
Test(stats, merged_processes_keep_their_scheduling, .timeout = 120)
{
	char *a = tmp_path("merge-a"), *b = tmp_path("merge-b"), *out = tmp_path("merge-out");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s %s 2 && %s %s 2", KT_OFFCPU, a, KT_OFFCPU, b);
	cr_assert_eq(system(cmd), 0);
	struct proc p;
	run_katra(&p, (const char *const[]){ "merge", a, b, "-o", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_t *o = stats_of(out);
	json_int_t followed = 0;
	cr_assert_eq(json_unpack(o, "{s:{s:I}}", "sched", "threads_followed", &followed), 0);
	cr_assert_eq(followed, 2);
	json_t *rows = json_object_get(json_object_get(o, "sched"), "zones"), *r;
	size_t i;
	cr_assert_eq(json_array_size(rows), 8, "4 zones' names in each process");
	json_array_foreach(rows, i, r) {
		json_int_t zones = 0, not_covered = 1;
		cr_assert_eq(json_unpack(r, "{s:I,s:I}", "zones", &zones, "not_covered",
					 &not_covered), 0);
		cr_assert_eq(zones, 2, "%s", json_dumps(r, JSON_COMPACT));
		cr_assert_eq(not_covered, 0);
	}
	json_decref(o);
	unlink(a);
	unlink(b);
	unlink(out);
	free(a);
	free(b);
	free(out);
}

/* A file whose session was refused: stats says absent and why; a file
 * nobody asked of has no sched key at all (no zero off-CPU anywhere). */
Test(stats, absent_is_said_not_zero, .timeout = 60)
{
	char *path = tmp_path("absent"), *errpath = tmp_path("absent-err");
	t_refused_session(path, errpath, &(kt_session_options){ .sched = KT_SCHED_ON }, "sleep",
			  sleep_5ms);
	json_t *o = stats_of(path);
	json_t *sched = json_object_get(o, "sched");
	cr_assert(json_is_false(json_object_get(sched, "present")));
	cr_assert(strstr(json_string_value(json_object_get(sched, "why")),
			 "perf_event_open refused: Operation not permitted"));
	cr_assert_null(json_object_get(sched, "zones"));
	json_decref(o);
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", path, NULL });
	cr_assert(strstr(p.out, "scheduler data: absent (perf_event_open refused"));
	cr_assert_null(strstr(p.out, "off-CPU"));
	unlink(path);

	kt_session *s;
	unsetenv("KT_SCHED");
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	kt_zone_begin(kt_name("work"));
	kt_zone_end(kt_name("work"));
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	o = stats_of(path);
	cr_assert_null(json_object_get(o, "sched"));
	json_decref(o);
	unlink(path);
	unlink(errpath);
	free(path);
	free(errpath);
}

/* ---- katra export --perfetto: thread states --------------------------------- */

#ifdef KT_OFFCPU
struct pf_seen {
	int32_t tid;             /* the thread named "main" */
	unsigned outs_blocked, outs_preempted, ins, other;
	int in_state;            /* 1 after a switch in, 0 after one out */
	int alternates;          /* every switch of it flips in_state */
	uint64_t boot, mono;     /* the clock snapshot's BOOTTIME and MONOTONIC */
};

static void pf_switch(struct pf_seen *k, const Perfetto__Protos__SchedSwitchFtraceEvent *sw)
{
	if (sw->prev_pid == k->tid && sw->next_pid == 0) {
		k->outs_blocked += sw->prev_state == 1;
		k->outs_preempted += sw->prev_state == 0;
		k->alternates &= k->in_state != 0;
		k->in_state = 0;
	} else if (sw->next_pid == k->tid && sw->prev_pid == 0) {
		k->ins++;
		k->alternates &= k->in_state != 1;
		k->in_state = 1;
	} else {
		k->other++;
	}
}

static void pf_walk(const Perfetto__Protos__Trace *tr, struct pf_seen *k)
{
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *pk = tr->packet[i];
		const Perfetto__Protos__TrackDescriptor *td = pk->track_descriptor;
		if (pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR &&
		    td->thread && td->thread->thread_name && !strcmp(td->thread->thread_name, "main"))
			k->tid = td->thread->tid;
		if (pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT)
			for (size_t c = 0; c < pk->clock_snapshot->n_clocks; c++) {
				const Perfetto__Protos__ClockSnapshot__Clock *cl =
					pk->clock_snapshot->clocks[c];
				if (cl->clock_id == 6)
					k->boot = cl->timestamp;
				if (cl->clock_id == 3 && !k->mono)
					k->mono = cl->timestamp;
			}
	}
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *pk = tr->packet[i];
		if (pk->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_FTRACE_EVENTS)
			continue;
		for (size_t e = 0; e < pk->ftrace_events->n_event; e++)
			pf_switch(k, pk->ftrace_events->event[e]->sched_switch);
	}
}

/*
 * Must-show 4 (protoc part): examples/offcpu exported with --perfetto has
 * the main thread's switches as ftrace sched_switch events of its tid
 * (the tid of its ThreadDescriptor): a switch out blocked (prev_state 1)
 * for each sleep and mutex zone at least, each followed by a switch in;
 * BOOTTIME, ftrace's clock, stated equal to MONOTONIC.  protoc decodes the
 * file against the checked-in schema, whose new messages carry Perfetto's
 * field numbers (FtraceEventBundle 1 in TracePacket; cpu 1, event 2;
 * timestamp 1, pid 2, sched_switch 4; prev_comm 1 .. next_prio 7).
 */
Test(perfetto, offcpu_thread_states_as_sched_switch, .timeout = 120)
{
	char *path = tmp_path("pf"), cmd[1024], out[160], txt[160];
	snprintf(cmd, sizeof(cmd), "%s %s 3", KT_OFFCPU, path);
	cr_assert_eq(system(cmd), 0);
	snprintf(out, sizeof(out), "/tmp/katra-sched-pf-%d.pftrace", (int)getpid());
	snprintf(txt, sizeof(txt), "/tmp/katra-sched-pf-%d.txt", (int)getpid());
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--perfetto", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	snprintf(cmd, sizeof(cmd),
		 "protoc --decode=perfetto.protos.Trace --proto_path=%s/tools/export perfetto_trace.proto "
		 "< %s > %s && grep -c 'prev_state: 1' %s",
		 KT_SRC_DIR, out, txt, txt);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	size_t len = 0;
	uint8_t *bytes = t_slurp(out, &len);
	cr_assert_not_null(bytes);
	Perfetto__Protos__Trace *tr = perfetto__protos__trace__unpack(NULL, len, bytes);
	cr_assert_not_null(tr);
	struct pf_seen k = { .tid = -1, .alternates = 1, .in_state = -1 };
	pf_walk(tr, &k);
	cr_assert_gt(k.tid, 0, "a thread named main");
	cr_assert_geq(k.outs_blocked, 6, "sleep and mutex, 3 rounds: %u", k.outs_blocked);
	cr_assert_geq(k.ins, k.outs_blocked);
	cr_assert(k.alternates, "out, in, out, in");
	cr_assert_eq(k.other, 0);
	cr_assert_neq(k.mono, 0);
	cr_assert_eq(k.boot, k.mono);
	perfetto__protos__trace__free_unpacked(tr, NULL);
	free(bytes);
	unlink(out);
	unlink(txt);
	unlink(path);
	free(path);
}
#endif

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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>

/* What a trace holds of scheduling. */
struct sched_seen {
	uint32_t hdr_flags;
	int absent_note;          /* a note "sched: absent: ..." */
	uint32_t owner;           /* the followed thread asked about */
	uint32_t stream;          /* its stream's katra id */
	uint32_t stream_tid;      /* its thread entry's OS tid */
	int stream_named;         /* named "katra.sched" */
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
			k->stream_named = !strcmp(f.u.thread.name, "katra.sched");
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
 * named katra.sched with the thread's OS tid, and the header says so.
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
	cr_assert_eq(k.stream_tid, (uint32_t)syscall(SYS_gettid));
	cr_assert(k.stream_named);
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

/* A seccomp filter failing perf_event_open with EPERM on every thread. */
static void deny_perf(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog))
		_exit(20);
}

/*
 * perf_event_open refused (must-show 5): the session starts, records its
 * events, says once on stderr why scheduler data is missing, and the file
 * says it is absent (the header flag and a note), with no scheduler
 * record: a reader shows "absent", not zero off-CPU time.
 */
Test(sched, refused_perf_event_open_leaves_a_working_session_saying_absent, .timeout = 60)
{
	char *path = tmp_path("refused"), *errpath = tmp_path("refused-err");
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		FILE *e = freopen(errpath, "w", stderr);
		if (!e)
			_exit(21);
		setvbuf(stderr, NULL, _IONBF, 0); /* _exit() flushes nothing */
		deny_perf();
		kt_session_options o = { .sched = KT_SCHED_ON };
		kt_session *s;
		if (kt_session_start(path, &o, &s) != 0)
			_exit(11);
		uint32_t z = kt_name("sleep");
		for (int i = 0; i < 3; i++) {
			kt_zone_begin(z);
			sleep_ms(5);
			kt_zone_end(z);
		}
		kt_summary sum;
		if (kt_session_stop(s, &sum) != 0)
			_exit(12);
		_exit(sum.events_written == 6 ? 0 : 13);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
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

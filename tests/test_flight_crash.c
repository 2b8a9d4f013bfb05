/*
 * A flight session with crash files, killed: its rings overwrite their
 * oldest bytes, so `katra recover` must find where each one's whole
 * records begin (the flight window), rebuild them gapless, and count the
 * events overwritten before them, exactly.
 */
#include "crash_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include "recover/crash.h"

#define KILLS 20
#define PRODUCERS 2
#define RING KT_RING_MIN
/* A counter record's bytes in a ring: 16-byte head, 8-byte value. */
#define EVENT_BYTES 24u

/* What the child tells the parent, in a page both map. */
struct shared {
	_Atomic int ready;
	_Atomic uint64_t sent[PRODUCERS]; /* emits returned: sequence numbers
					   * 0 .. sent - 1 are in the ring */
};

/* ---- the child ---------------------------------------------------------- */

struct producer {
	struct shared *sh;
	int index;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	_Atomic uint64_t *sent = &p->sh->sent[p->index];
	char name[] = "seq-0";
	name[4] = (char)('0' + p->index);
	kt_thread_name(name);
	for (uint64_t seq = 0, id = kt_name("seq");; seq++) {
		kt_counter((uint32_t)id, (int64_t)seq);
		/* Release: the parent that reads this knows the emit returned. */
		atomic_store_explicit(sent, seq + 1, memory_order_release);
	}
	return NULL;
}

/* Fork a child whose flight session keeps its rings in crash files under
 * @parent, and two threads emitting sequence numbers until it is killed. */
static pid_t spawn(struct shared *sh, const char *parent)
{
	/* Relaxed: fork() orders these before anything the child does. */
	atomic_store_explicit(&sh->ready, 0, memory_order_relaxed);
	for (int i = 0; i < PRODUCERS; i++)
		atomic_store_explicit(&sh->sent[i], 0, memory_order_relaxed);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	alarm(60); /* never outlive a parent that lost track of us */
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .crash_dir = parent,
				 .ring_size = RING };
	kt_session *s;
	if (kt_session_start(NULL, &o, &s))
		_exit(10);
	static struct producer p[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++) {
		pthread_t t;
		p[i] = (struct producer){ sh, i };
		if (pthread_create(&t, NULL, produce, &p[i]))
			_exit(11);
	}
	t_child_ready(&sh->ready);
}

/* ---- reading what recover made ------------------------------------------ */

struct thread_seq {
	int64_t first, last;         /* values seen; -1: none */
	uint64_t count, overwritten;
	uint32_t thread_id;
	int index;                   /* the producer, from the thread's name */
};

/* Threads by katra's id: a fresh child's threads have the first ones. */
#define IDS 8
struct recovered {
	struct thread_seq t[IDS];    /* thread_id 0: none */
	uint32_t flags;
};

static struct thread_seq *seq_of(struct recovered *rv, uint32_t tid)
{
	cr_assert(tid > 0 && tid < IDS, "thread id %u", tid);
	struct thread_seq *t = &rv->t[tid];
	if (!t->thread_id)
		*t = (struct thread_seq){ .first = -1, .last = -1, .thread_id = tid, .index = -1 };
	return t;
}

/* Every value one more than the one before it on its thread. */
static void take_chunk(struct recovered *rv, const kt_trace_frame *f)
{
	struct thread_seq *t = seq_of(rv, f->u.chunk.thread_id);
	kt_chunk_iter it;
	kt_event ev;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev)) {
		int64_t v;
		cr_assert_eq(ev.type, KT_EV_COUNTER_I64);
		memcpy(&v, ev.payload, 8);
		cr_assert(t->last < 0 || v == t->last + 1, "thread %u: %lld after %lld: a gap",
			  t->thread_id, (long long)v, (long long)t->last);
		if (t->first < 0)
			t->first = v;
		t->last = v;
		t->count++;
	}
}

static void take_frame(void *ctx, const kt_trace_frame *f)
{
	struct recovered *rv = ctx;
	if (f->kind == KT_FRAME_CHUNK)
		take_chunk(rv, f);
	else if (f->kind == KT_FRAME_THREAD && !strncmp(f->u.thread.name, "seq-", 4))
		seq_of(rv, f->u.thread.thread_id)->index = f->u.thread.name[4] - '0';
	else if (f->kind == KT_FRAME_DROP)
		seq_of(rv, f->u.drop.thread_id)->overwritten += f->u.drop.count;
	else if (f->kind == KT_FRAME_SUMMARY)
		rv->flags = f->u.summary.flags;
}

/* One thread's recovered window against what its producer sent. */
static uint64_t check_thread(int round, const struct thread_seq *t, const uint64_t *sents)
{
	cr_assert(t->index >= 0 && t->index < PRODUCERS, "thread %u unnamed", t->thread_id);
	uint64_t sent = sents[t->index];
	if (!t->count) {
		/* Killed after the thread named itself and before its first
		 * emit returned (round 0 kills at once): a thread with nothing,
		 * and then nothing may have been sent or overwritten. */
		cr_assert_eq(sent, 0, "round %d thread %d: no events, %llu sent", round, t->index,
			     (unsigned long long)sent);
		cr_assert_eq(t->overwritten, 0);
		return 0;
	}
	/* Gapless from the first overwritten one: nothing lost uncounted. */
	cr_assert_eq((uint64_t)t->first, t->overwritten,
		     "round %d thread %d: first %lld, %llu counted overwritten", round, t->index,
		     (long long)t->first, (unsigned long long)t->overwritten);
	/* Sent means published, and one more may have been published
	 * before its report. */
	cr_assert_leq((uint64_t)t->last, sent, "round %d thread %d: last %lld, sent %llu", round,
		      t->index, (long long)t->last, (unsigned long long)sent);
	cr_assert_geq((uint64_t)t->last + 1, sent, "round %d thread %d: last %lld, sent %llu",
		      round, t->index, (long long)t->last, (unsigned long long)sent);
	/* A ring holds no more than its bytes' worth, and after a lap no
	 * less than all but the sub-buffer being written (a sixteenth) and
	 * a record at either end. */
	cr_assert_leq(t->count, RING / EVENT_BYTES);
	if (t->overwritten)
		cr_assert_geq(t->count, (RING - RING / 16 - 2 * EVENT_BYTES) / EVENT_BYTES,
			      "round %d: %llu", round, (unsigned long long)t->count);
	return t->overwritten;
}

/* Run recover on the dead child's directory; its result line's count of
 * events overwritten. */
static uint64_t recover(int round, const char *crash, const char *out)
{
	char buf[8192];
	const char *rec[] = { "recover", crash, "--out", out, NULL };
	int st = katra(buf, sizeof(buf), rec);
	cr_assert_eq(st, 0, "round %d: recover exit %d: %s", round, st, buf);
	const char *over = strstr(buf, " dropped, ");
	cr_assert_not_null(over, "%s", buf);
	cr_assert_not_null(strstr(buf, " 0 dropped, "), "%s", buf);
	unsigned long long n;
	cr_assert_eq(sscanf(over, " dropped, %llu overwritten,", &n), 1, "%s", buf);
	const char *verify[] = { "verify", out, NULL };
	cr_assert_eq(katra(buf, sizeof(buf), verify), 0, "round %d: %s", round, buf);
	return n;
}

Test(flight_crash, killed_20_times_recovers_each_window_gapless, .timeout = 300)
{
	char *dir = scratch();
	struct shared *sh = t_shared(sizeof(*sh));
	unsigned seed = 17, lapped = 0;
	for (int round = 0; round < KILLS; round++) {
		char *out = path_in(dir, "out-%d.katra", round);
		pid_t pid = spawn(sh, dir);
		t_wait_ready(&sh->ready, pid);
		/* From before the first event (round 0) to many laps in. */
		struct timespec ts = { 0, round ? (long)(rand_r(&seed) % 20000) * 1000 : 0 };
		nanosleep(&ts, NULL);
		t_kill_child(pid);
		uint64_t sent[PRODUCERS];
		for (int i = 0; i < PRODUCERS; i++)
			/* Acquire: the child is dead; this pairs with its stores. */
			sent[i] = atomic_load_explicit(&sh->sent[i], memory_order_acquire);
		char *crash = path_in(dir, "katra-%ld", (long)pid);
		uint64_t said = recover(round, crash, out);
		struct recovered rv = { 0 };
		t_each_frame(out, take_frame, &rv);
		cr_assert_eq(rv.flags & KT_SUMMARY_RECOVERED, KT_SUMMARY_RECOVERED);
		uint64_t over = 0;
		int seen[PRODUCERS] = { 0 };
		for (int k = 0; k < IDS; k++) {
			if (!rv.t[k].thread_id)
				continue;
			over += check_thread(round, &rv.t[k], sent);
			seen[rv.t[k].index] = 1;
		}
		cr_assert_eq(said, over, "round %d: recover says %llu overwritten", round,
			     (unsigned long long)said);
		for (int i = 0; i < PRODUCERS; i++)
			cr_assert(seen[i] || !sent[i], "round %d: thread %d's events are missing",
				  round, i);
		lapped += over > 0;
		free(crash);
		free(out);
	}
	/* Most rounds ran many laps: the window was found past overwriting. */
	cr_assert_geq(lapped, KILLS / 2);
	munmap(sh, sizeof(*sh));
	rm_rf(dir);
}

/* ---- the window, from a slot page's bytes ------------------------------- */

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

/* A lapped ring's slot: head three laps and ten records in, the bound a
 * sub-buffer past the lap; count slot 0 ends at @a, slot 1 at @b. */
static void lapped_slot(uint8_t *page, uint64_t a, uint64_t b, uint64_t seq)
{
	memset(page, 0, 4096);
	kt__crash_stamp(page, 0);
	put64(page, KT__SLOT_O_SIZE, RING);
	put64(page, KT__SLOT_O_HEAD, 3 * RING + 240);
	memcpy(page + KT__SLOT_O_THREAD, &(uint32_t){ 1 }, 4);
	put64(page, KT__SLOT_O_FL_BOUND, 3 * RING + RING / 16);
	put64(page, KT__SLOT_O_FL_MARK, a);
	put64(page, KT__SLOT_O_FL_MARK + 8, b);
	put64(page, KT__SLOT_O_FL_SEQ, seq);
	const uint64_t counts[2][5] = { { 0, a, 777, 1, 2 }, { 0, b, 999, 3, 4 } };
	for (int k = 0; k < 10; k++)
		put64(page, KT__SLOT_O_FL_COUNT + 8 * (size_t)k, counts[k / 5][k % 5]);
}

/* The count's slot is the one the sequence names, odd (the producer was
 * killed writing the other) or even; the window starts where it ends. */
Test(flight_crash, window_starts_where_the_whole_count_ends)
{
	uint8_t page[4096];
	kt__slot s;
	char why[256] = "";
	const uint64_t a = 2 * RING + RING / 16 + 8, b = 3 * RING;
	lapped_slot(page, a, b, 5);
	cr_assert_eq(kt__slot_parse(page, sizeof(page), 0, KT__CTL_F_FLIGHT, &s, why, sizeof(why)),
		     0, "%s", why);
	cr_assert_eq(s.from, a);
	cr_assert_eq(s.over_end, a);
	cr_assert_eq(s.over, 777);
	cr_assert_eq(s.over_first, 1);
	cr_assert_eq(s.over_last, 2);
	lapped_slot(page, a, b, 6);
	cr_assert_eq(kt__slot_parse(page, sizeof(page), 0, KT__CTL_F_FLIGHT, &s, why, sizeof(why)),
		     0, "%s", why);
	cr_assert_eq(s.from, b);
	cr_assert_eq(s.over, 999);
	/* A count of another session: none, and the window starts at the
	 * first mark past the bound's lap. */
	lapped_slot(page, a, b, 4);
	put64(page, KT__SLOT_O_FL_COUNT, 8);
	cr_assert_eq(kt__slot_parse(page, sizeof(page), 0, KT__CTL_F_FLIGHT, &s, why, sizeof(why)),
		     0, "%s", why);
	cr_assert_eq(s.from, a);
	cr_assert_eq(s.over, 0);
	cr_assert_eq(s.over_end, 0);
	/* Without the flight flag the lapped ring is refused, and so is a
	 * bound more than a ring past head. */
	cr_assert_eq(kt__slot_parse(page, sizeof(page), 0, 0, &s, why, sizeof(why)), KT_EFRAME);
	put64(page, KT__SLOT_O_FL_BOUND, 5 * RING);
	cr_assert_eq(kt__slot_parse(page, sizeof(page), 0, KT__CTL_F_FLIGHT, &s, why, sizeof(why)),
		     KT_EFRAME);
	cr_assert_not_null(strstr(why, "flight bound"), "%s", why);
}

/* While a flight session runs its rings are in its crash directory, the
 * header says it is a flight session's (with sites and tracks files),
 * snapshots work as without; a clean stop removes the directory. */
Test(flight_crash, crash_dir_lives_with_the_session)
{
	char *dir = scratch();
	char *crash = path_in(dir, "katra-%ld", (long)getpid());
	char *snap = path_in(dir, "snap.katra");
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .crash_dir = dir, .ring_size = RING };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t id = kt_name("seq");
	for (int64_t i = 0; i < 10000; i++) /* 24 bytes each: three laps and more */
		kt_counter(id, i);
	char *ring = path_in(crash, "ring-0"), *ctl = path_in(crash, "control");
	struct stat sb;
	cr_assert_eq(stat(ring, &sb), 0);
	cr_assert_eq(sb.st_size, RING);
	uint8_t head[KT__CTL_HEADER];
	int fd = open(ctl, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(pread(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	close(fd);
	uint32_t flags;
	memcpy(&flags, head + KT__CTL_O_FLAGS, 4);
	cr_assert_eq(flags, KT__CTL_F_FLIGHT | KT__CTL_F_TABLES);
	kt_snapshot_result res;
	cr_assert_eq(kt_session_snapshot(s, snap, -1, 0, 0, &res), 0);
	cr_assert_eq(res.events + res.events_overwritten, 10000);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	cr_assert_eq(stat(crash, &sb), -1);
	free(ring);
	free(ctl);
	free(snap);
	free(crash);
	rm_rf(dir);
}

/*
 * Scheduler records: each traced thread's context switches, from the
 * kernel, on katra's clock (kt_session_options.sched, KT_SCHED=1).
 *
 * The flusher opens, for every thread whose ring it sees, a software dummy
 * perf event on that thread alone with context_switch set: the kernel then
 * writes a PERF_RECORD_SWITCH into the event's mmap buffer each time the
 * thread is switched in or out, with its CPU, its time on CLOCK_MONOTONIC
 * (use_clockid) and whether it was preempted (PERF_RECORD_MISC_SWITCH_OUT_
 * PREEMPT) or went to sleep.  Nothing runs on the thread's emit path: the
 * kernel writes on a switch, which it makes anyway, and the flusher reads
 * the buffers once a period, after the rings, and writes them as records of
 * type 20 (katra/record.h's kt_sched_what) into a stream of their own: a
 * katra thread id per followed thread (kt__registry_new_id()), its thread
 * entry named "katra.sched TID" after the followed thread's OS tid (its
 * own OS tid 0: it is no thread of the OS).  A stream
 * of its own, because the buffer is read later than the ring: the merged
 * order of a reader (timestamps across streams) puts each switch between
 * the thread's own events, where a chunk of the thread's own would not.
 *
 * Bounded: at most KT_SCHED_MAX_THREADS followed at once, each buffer
 * KT_SCHED_PAGES pages of data (512 switches a period before the kernel
 * counts them lost, which becomes a KT_SCHED_LOST record); a thread past
 * the cap, or whose buffer the kernel's locked-memory limit refuses, is
 * not followed (its stream has no FOLLOW record, so readers say its
 * threads' off-CPU time is unknown) and stderr says so once.  The table
 * of events and buffers is perf_ring.c's (as sample.c's is): mapped
 * MADV_DONTFORK, every fd O_CLOEXEC, so a fork()ed child has no mapping
 * of the parent's buffers and closes the fds (session.c's fork_child), as
 * it does the ring's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flush/perf_ring.h"

#define KT_SCHED_PAGES 4u         /* data pages per buffer, a power of two */
#define KT_SCHED_REC 32u          /* bytes of one type 20 record */
#define KT_SCHED_BATCH 1024u      /* records per chunk written at once */
#define KT_SCHED_KEEP 2048u       /* a flight session's newest records per thread */

/* A followed thread (a slot of perf_ring.h's table) in a flight session:
 * its newest KT_SCHED_KEEP records, the oldest at kstart, kn of them (the
 * slot's own). */
struct kept {
	uint32_t kstart, kn;
	uint8_t rec[];
};
typedef struct kt__perf_thread followed;

struct kt__sched {
	struct kt__perf_table pt;
	uint32_t *refused;     /* owners not followed (sorted not needed: small) */
	size_t nrefused, cap_refused;
	int said;              /* the cap's message was written */
	kt_clock_calibration c0;
	uint8_t buf[KT_SCHED_BATCH * KT_SCHED_REC];
	size_t nbuf;
	uint64_t first, lastw;
	/* A flight session's (no flusher): records are kept per thread,
	 * newest over oldest, by a thread of this file (sched_flight()),
	 * for the snapshots; the lock is its and theirs. */
	int flight;
	kt_session *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* CLOCK_MONOTONIC */
	pthread_t thread;
	int started, stop;     /* stop under lock */
};

/* The event of a thread's context switches. */
static void switches_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->context_switch = 1;
	a->sample_id_all = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* Unprivileged at perf_event_paranoid 2: user space only, and only
	 * the thread itself (no inherit: a thread it starts is followed on
	 * its own once it emits). */
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

int kt__sched_probe(char *why, size_t n)
{
	struct perf_event_attr a;
	switches_attr(&a);
	int fd = kt__perf_open(&a, (uint32_t)syscall(SYS_gettid));
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int paranoid = -9;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = -9;
		fclose(f);
	}
	if (paranoid == -9)
		snprintf(why, n, "perf_event_open refused: %s", strerror(-fd));
	else
		snprintf(why, n, "perf_event_open refused: %s (perf_event_paranoid %d)",
			 strerror(-fd), paranoid);
	return fd;
}

void kt__sched_start(kt_session *s, const kt_session_options *o, kt_header *h,
		     const char ***notes)
{
	static char note[200];
	char why[160];
	*notes = NULL;
	if (o->sched != KT_SCHED_ON)
		return;
	int rc = kt__sched_probe(why, sizeof(why));
	if (!rc && (s->sched = kt__sched_new(&s->c0))) {
		h->flags |= KT_HDR_SCHED;
		return;
	}
	if (!rc)
		snprintf(why, sizeof(why), "no memory for the followed threads");
	h->flags |= KT_HDR_SCHED_ABSENT;
	fprintf(stderr, "katra: scheduler data absent from this trace: %s\n", why);
	snprintf(note, sizeof(note), "sched: absent: %s", why);
	kt__header_add_note(h, notes, note);
}

struct kt__sched *kt__sched_new(const kt_clock_calibration *c0)
{
	struct kt__sched *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	kt__perf_table_init(&k->pt, KT_SCHED_PAGES);
	k->c0 = *c0;
	return k;
}

static uint64_t to_ticks(const struct kt__sched *k, uint64_t ns)
{
	return kt__perf_ticks(&k->c0, ns);
}

/* The batch so far as one chunk of stream @sid. */
static void flush_batch(kt_session *s, const followed *f)
{
	struct kt__sched *k = s->sched;
	char name[32];
	if (!k->nbuf)
		return;
	/* OS tid 0: the exports place a thread by its OS tid, and this stream
	 * is not the thread it follows; its name says which that is. */
	snprintf(name, sizeof(name), "katra.sched %u", f->tid);
	kt__flush_records(s, f->sid, 0, name, k->buf, k->nbuf * KT_SCHED_REC, (uint32_t)k->nbuf,
			  k->first, k->lastw);
	k->nbuf = 0;
}

/* One type 20 record at @p. */
static void encode(uint8_t *p, uint32_t owner, uint64_t ts, unsigned what, uint64_t second)
{
	memset(p, 0, KT_SCHED_REC);
	kt__put64(p + KT_REC_TS, ts);
	p[KT_REC_TYPE] = KT_EV_SCHED;
	p[KT_REC_FLAGS] = (uint8_t)what;
	kt__put16(p + KT_REC_LEN, 16);
	kt__put64(p + KT_REC_HEAD, owner);
	kt__put64(p + KT_REC_HEAD + 8, second);
}

static void put_rec(kt_session *s, followed *f, uint64_t ts, unsigned what, uint64_t second)
{
	struct kt__sched *k = s->sched;
	if (ts < f->last)
		ts = f->last; /* the stream stays in order, as a thread's does */
	f->last = ts;
	if (k->flight) { /* the newest kept, over the oldest */
		struct kept *kp = f->own;
		uint32_t at = (kp->kstart + kp->kn) % KT_SCHED_KEEP;
		encode(kp->rec + (size_t)at * KT_SCHED_REC, f->owner, ts, what, second);
		if (kp->kn < KT_SCHED_KEEP)
			kp->kn++;
		else
			kp->kstart = (kp->kstart + 1) % KT_SCHED_KEEP;
		return;
	}
	uint8_t *p = k->buf + k->nbuf * KT_SCHED_REC;
	encode(p, f->owner, ts, what, second);
	if (!k->nbuf)
		k->first = ts;
	k->lastw = ts;
	if (++k->nbuf == KT_SCHED_BATCH)
		flush_batch(s, f);
}

static void say_once(struct kt__sched *k, const char *why)
{
	if (k->said || !why)
		return;
	k->said = 1;
	fprintf(stderr, "katra: scheduler data: some threads not followed: %s\n", why);
}

static int was_refused(const struct kt__sched *k, uint32_t owner)
{
	for (size_t i = 0; i < k->nrefused; i++)
		if (k->refused[i] == owner)
			return 1;
	return 0;
}

static void refuse(struct kt__sched *k, uint32_t owner, const char *why)
{
	say_once(k, why);
	if (k->nrefused == k->cap_refused) {
		size_t cap = k->cap_refused ? 2 * k->cap_refused : 16;
		/* Bounded by the threads that ever emitted, as the rings are. */
		uint32_t *p = realloc(k->refused, cap * sizeof(*p));
		if (!p)
			return;
		k->refused = p;
		k->cap_refused = cap;
	}
	k->refused[k->nrefused++] = owner;
}

/* Follow the thread of ring @r in free slot @f (NULL: the table is full):
 * its event, its buffer, its stream and the FOLLOW record that starts it.
 * A thread refused once is not tried again. */
static void follow(void *ctx, followed *f, struct kt__ring *r)
{
	kt_session *s = ctx;
	struct kt__sched *k = s->sched;
	uint32_t owner = kt__ring_thread_id(r);
	struct perf_event_attr a;
	const char *why;
	if (was_refused(k, owner))
		return;
	if (!f) {
		refuse(k, owner, "more threads than KT_SCHED_MAX_THREADS (256)");
		return;
	}
	switches_attr(&a);
	if (kt__perf_attach(&k->pt, f, &a, r, &why)) {
		refuse(k, owner, why);
		return;
	}
	if (k->flight && !(f->own = calloc(1, sizeof(struct kept) +
						      (size_t)KT_SCHED_KEEP * KT_SCHED_REC))) {
		kt__perf_detach(&k->pt, f);
		refuse(k, owner, "no memory for its records");
		return;
	}
	put_rec(s, f, to_ticks(k, kt__mono_ns()), KT_SCHED_FOLLOW, 0);
	flush_batch(s, f); /* the batch is one stream's */
}

/* One record of the kernel's, @h and @n bytes, read out of the ring. */
static void take(kt_session *s, followed *f, const uint8_t *e, size_t n)
{
	struct perf_event_header h;
	memcpy(&h, e, sizeof(h));
	/* sample_id_all's tail: u32 pid, u32 tid, u64 time, u32 cpu, u32 res. */
	if (n < sizeof(h) + 24)
		return;
	const uint8_t *id = e + n - 24;
	uint64_t ns;
	uint32_t cpu;
	memcpy(&ns, id + 8, 8);
	memcpy(&cpu, id + 16, 4);
	uint64_t ts = to_ticks(s->sched, ns);
	if (h.type == PERF_RECORD_SWITCH || h.type == PERF_RECORD_SWITCH_CPU_WIDE) {
		unsigned what = !(h.misc & PERF_RECORD_MISC_SWITCH_OUT) ? KT_SCHED_IN
				: h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? KT_SCHED_PREEMPTED
									      : KT_SCHED_BLOCKED;
		put_rec(s, f, ts, what, cpu);
	} else if (h.type == PERF_RECORD_LOST && n >= sizeof(h) + 16 + 24) {
		uint64_t lost;
		memcpy(&lost, e + sizeof(h) + 8, 8);
		put_rec(s, f, ts, KT_SCHED_LOST, lost);
	}
}

struct take_ctx {
	kt_session *s;
	followed *f;
};

static void take_one(void *ctx, const uint8_t *rec, size_t n)
{
	struct take_ctx *c = ctx;
	take(c->s, c->f, rec, n);
}

/* Everything the kernel wrote into @f's buffer since the last read. */
static void drain_one(void *ctx, followed *f)
{
	kt_session *s = ctx;
	uint8_t rec[256];
	struct take_ctx c = { s, f };
	kt__perf_drain(&s->sched->pt, f, rec, sizeof(rec), take_one, &c);
	flush_batch(s, f);
}

/* Follow the threads of @rings new since, read every buffer, let go of
 * the threads that exited. */
static void poll_rings(kt_session *s, const kt__ring_list *rings)
{
	static const struct kt__perf_ops ops = { follow, drain_one };
	kt__perf_look(&s->sched->pt, rings, &ops, s);
}

void kt__sched_poll(kt_session *s)
{
	if (s->sched && s->w && !s->error)
		poll_rings(s, &s->rings);
}

void kt__sched_end(kt_session *s)
{
	struct kt__sched *k = s->sched;
	if (k)
		kt__perf_close_all(&k->pt, s->w && !s->error ? drain_one : NULL, s);
}

void kt__sched_free(struct kt__sched *k)
{
	if (!k)
		return;
	kt__sched_flight_stop(k);
	if (k->flight) {
		pthread_cond_destroy(&k->cond);
		pthread_mutex_destroy(&k->lock);
	}
	kt__perf_close_all(&k->pt, NULL, NULL);
	free(k->refused);
	free(k);
}

void kt__sched_fork_child(struct kt__sched *k)
{
	/* The fds are the parent's threads' events, closed here as the
	 * parent's file is. */
	if (k)
		kt__perf_fork_child(&k->pt);
}

/* ---- flight sessions ------------------------------------------------------ */

#define KT_SCHED_FLIGHT_NS UINT64_C(100000000) /* a look every 100 ms: 512 switches a thread */

/* A flight session's look, as the flusher's: follow the threads new
 * since, keep what their buffers got, let go of the ones that exited. */
static void *sched_flight(void *arg)
{
	struct kt__sched *k = arg;
	int stop;
	kt__work_adopt();
	do {
		stop = kt__period_wait(&k->lock, &k->cond, &k->stop, KT_SCHED_FLIGHT_NS);
		kt__ring_list list = { 0 };
		if (kt__registry_snapshot(&list) == 0) {
			pthread_mutex_lock(&k->lock);
			poll_rings(k->s, &list);
			pthread_mutex_unlock(&k->lock);
		}
		free(list.rings);
	} while (!stop);
	kt__work_end();
	return NULL;
}

void kt__sched_flight_start(kt_session *s)
{
	struct kt__sched *k = s->sched;
	pthread_condattr_t ca;
	if (!k)
		return;
	if (pthread_condattr_init(&ca)) {
		fprintf(stderr, "katra: scheduler data: no thread to follow the threads\n");
		return;
	}
	k->flight = 1;
	k->s = s;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Without the thread nothing is followed: the snapshots have none. */
	k->started = !kt__work_thread_start(&k->thread, sched_flight, k);
	if (!k->started)
		fprintf(stderr, "katra: scheduler data: no thread to follow the threads\n");
}

void kt__sched_flight_stop(struct kt__sched *k)
{
	if (!k || !k->started)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = 1;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->thread, NULL);
	/* The lock stays for a snapshot in progress: kt__sched_free()'s. */
	k->started = 0;
}

/* @f's kept records from @from on into @out (KT_SCHED_KEEP + 1 room),
 * after a FOLLOW at the first kept time unless the first is one: the
 * state before is not known.  Returns how many. */
static uint32_t kept_from(const followed *f, uint64_t from, uint8_t *out)
{
	const struct kept *kp = f->own;
	uint32_t n = 0;
	for (uint32_t i = 0; i < kp->kn; i++) {
		const uint8_t *p = kp->rec + (size_t)((kp->kstart + i) % KT_SCHED_KEEP) * KT_SCHED_REC;
		uint64_t ts = kt__get64(p + KT_REC_TS);
		if (ts < from)
			continue;
		if (!n && p[KT_REC_FLAGS] != KT_SCHED_FOLLOW) {
			uint64_t at = i ? from : ts; /* the oldest kept is as far as is known */
			encode(out, f->owner, at > ts ? ts : at, KT_SCHED_FOLLOW, 0);
			n++;
		}
		memcpy(out + (size_t)n++ * KT_SCHED_REC, p, KT_SCHED_REC);
	}
	return n;
}

int kt__sched_snapshot(kt_session *s, struct kt_writer *w, uint64_t from)
{
	struct kt__sched *k = s->sched;
	if (!k || !k->flight)
		return 0;
	uint8_t *buf = malloc((size_t)(KT_SCHED_KEEP + 1) * KT_SCHED_REC);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	char name[32];
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS; i++)
		if (k->pt.t[i].owner) /* up to now, not to the last look */
			drain_one(s, &k->pt.t[i]);
	for (size_t i = 0; i < KT_SCHED_MAX_THREADS && !rc; i++) {
		const followed *f = &k->pt.t[i];
		uint32_t n = f->owner ? kept_from(f, from, buf) : 0;
		if (!n)
			continue;
		snprintf(name, sizeof(name), "katra.sched %u", f->tid);
		rc = kt__writer_chunk_known(w, f->sid, KT_CODEC_NONE, 0, buf,
					    (size_t)n * KT_SCHED_REC, n, kt__get64(buf + KT_REC_TS),
					    kt__get64(buf + (size_t)(n - 1) * KT_SCHED_REC + KT_REC_TS));
		if (!rc)
			rc = kt_writer_thread(w, f->sid, 0, name);
	}
	pthread_mutex_unlock(&k->lock);
	free(buf);
	return rc;
}

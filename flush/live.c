/*
 * The live figures of a recording session (live.h): the flusher's side
 * keeps running totals in memory of its own while it drains, and copies
 * them to the shared page under a seqlock at most every
 * KT__LIVE_PUBLISH_NS; the viewer's side copies the page out and bounds
 * whatever it holds.  The cost on the host: one more walk over each span
 * the flusher drained, in cache, and a copy of a few hundred KiB at most
 * ten times a second; the producers see none of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <katra/atomic.h>
#include <katra/record.h>
#include "flush/live.h"
#include "ring/ring.h"

#define ZHASH 256 /* open addressing over name ids */

/* A name's zone slot + 1 (0: empty), beside its id: a probe reads one
 * cache line, not the zones' entries 4 KiB apart. */
struct zkey {
	uint32_t id;
	uint32_t slot;
};

struct open_zone {
	uint32_t name;
	uint64_t ts, child;
};

struct lthread {
	uint32_t depth;
	uint32_t too_deep;      /* begins past KT__LIVE_DEPTH still open */
	int have_frame;
	uint64_t last_frame;
	struct open_zone st[KT__LIVE_DEPTH];
};

struct kt__live {
	struct kt__live_page priv; /* the flusher's totals */
	struct kt__live_page *pub; /* the shared page */
	int fd;
	int names_pending;
	uint64_t last_pub;
	struct zkey zhash[ZHASH];
	struct kt__ring *last_ring; /* the ring being drained, and its slot */
	int last_slot;
	int skip;                   /* this drain's records are counted only */
	struct lthread th[KT__LIVE_THREADS];
};

/* The page's memfd while a session has one, else -1: a fork()ed child
 * closes it (kt__live_fork_child()), or `katra top CHILD` would find the
 * parent's page among the child's descriptors until it execs.  Set after
 * the fd is made and cleared before it is closed, so it never names a
 * closed (or reused) descriptor. */
static int live_fd = -1;

/* @fd moved past 0, 1 and 2, which a daemon that closed its stdio
 * would otherwise find katra's; -1 if it cannot be. */
static int fd_high(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return high;
}

/* A viewer's scan of a process's descriptors stops after this many. */
#define FD_SCAN_MAX 65536

int kt__live_find(long pid)
{
	char dir[40], link[64], target[64];
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int found = -ENOENT;
	struct dirent *e;
	for (unsigned n = 0; found < 0 && n < FD_SCAN_MAX && (e = readdir(d)); n++) {
		snprintf(link, sizeof(link), "%s/%.20s", dir, e->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strncmp(target, "/memfd:" KT__LIVE_MEMFD " ", sizeof("/memfd:" KT__LIVE_MEMFD)))
			continue;
		int fd = open(link, O_RDONLY | O_CLOEXEC);
		struct stat sb;
		if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    (uint64_t)sb.st_size >= sizeof(struct kt__live_page))
			found = fd;
		else if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return found;
}

int kt__live_wanted(void)
{
	const char *env = getenv("KATRA_LIVE");
	return env && *env && strcmp(env, "0");
}

struct kt__live *kt__live_start(const kt_clock_calibration *c0)
{
	/* Opt-in: the walk costs the flusher 3-8 ns an event (bench/RESULTS.md,
	 * "katra top"), which on two cores is the program's. */
	if (!kt__live_wanted())
		return NULL;
	struct kt__live *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	/* Its name is how a viewer finds it (kt__live_find()): nothing on
	 * disk to create, or to leave behind when the process dies. */
	l->fd = fd_high(memfd_create(KT__LIVE_MEMFD, MFD_CLOEXEC));
	/* On the flusher thread, SIGXFSZ blocked (kt__thread_start()): past
	 * RLIMIT_FSIZE these fail with EFBIG and the host lives.  The blocks
	 * reserved now: a full tmpfs answers here, not with SIGBUS at a store. */
	if (l->fd < 0 || ftruncate(l->fd, sizeof(struct kt__live_page)) < 0 ||
	    posix_fallocate(l->fd, 0, sizeof(struct kt__live_page)))
		goto fail;
	/* Relaxed: only a fork()ed child reads it; a fork racing this store
	 * may leave that child the fd open, harmless (its page is the
	 * parent's, found until the child execs, as without this). */
	kt__store_relaxed(&live_fd, l->fd);
	l->pub = mmap(NULL, sizeof(*l->pub), PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	if (l->pub == MAP_FAILED) {
		l->pub = NULL;
		goto fail;
	}
	l->priv.magic = KT__LIVE_MAGIC;
	l->priv.size = sizeof(l->priv);
	l->priv.pid = (uint32_t)getpid();
	l->priv.clock = *c0;
	memcpy(l->pub, &l->priv, offsetof(struct kt__live_page, frame_hist));
	return l;
fail:
	kt__live_stop(l);
	return NULL;
}

void kt__live_stop(struct kt__live *l)
{
	if (!l)
		return;
	if (l->pub)
		munmap(l->pub, sizeof(*l->pub));
	/* Relaxed, as in kt__live_start(); cleared before the close, so a
	 * child never closes a descriptor number reused meanwhile. */
	kt__store_relaxed(&live_fd, -1);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

void kt__live_fork_child(void)
{
	/* Relaxed: the child has one thread, this one. */
	int fd = kt__load_own(&live_fd);
	if (fd >= 0)
		close(fd);
	kt__store_relaxed(&live_fd, -1);
}

/* The zone slot of name @id, made if there is room; NULL past the table. */
static struct kt__live_zone *zone_of(struct kt__live *l, uint32_t id)
{
	unsigned h = (id * 2654435761u) >> 24;
	for (unsigned i = 0; i < ZHASH; i++, h = (h + 1) & (ZHASH - 1)) {
		const struct zkey *k = &l->zhash[h];
		if (k->slot && k->id == id)
			return &l->priv.zones[k->slot - 1];
		if (k->slot)
			continue;
		if (l->priv.nzones == KT__LIVE_ZONES)
			return NULL;
		struct kt__live_zone *z = &l->priv.zones[l->priv.nzones++];
		z->id = id;
		l->zhash[h] = (struct zkey){ id, l->priv.nzones };
		l->names_pending = 1;
		return z;
	}
	return NULL;
}

static void zone_add(struct kt__live *l, uint32_t name, uint64_t dur, uint64_t self)
{
	struct kt__live_zone *z = zone_of(l, name);
	if (!z) {
		l->priv.other_zones++;
		return;
	}
	z->count++;
	z->total += dur;
	z->self += self;
	if (dur > z->max)
		z->max = dur;
	z->hist[kt__live_bucket(dur)]++;
}

/* As katra stats matches them: the innermost open zone of the name; those
 * opened after it close with it, untimed, their time in its self time. */
static void zone_end(struct kt__live *l, struct lthread *t, uint32_t name, uint64_t ts)
{
	if (t->too_deep) {
		t->too_deep--;
		l->priv.untimed++;
		return;
	}
	uint32_t d = t->depth;
	while (d && t->st[d - 1].name != name)
		d--;
	if (!d) {
		l->priv.untimed++; /* begun before the session */
		return;
	}
	d--;
	while (t->depth > d + 1) {
		t->depth--;
		t->st[t->depth - 1].child += t->st[t->depth].child;
	}
	struct open_zone z = t->st[d];
	t->depth = d;
	uint64_t dur = ts > z.ts ? ts - z.ts : 0;
	zone_add(l, name, dur, dur > z.child ? dur - z.child : 0);
	if (d)
		t->st[d - 1].child += dur;
}

static void frame_mark(struct kt__live *l, struct lthread *t, uint64_t ts)
{
	struct kt__live_page *p = &l->priv;
	if (t->have_frame) {
		uint64_t iv = ts > t->last_frame ? ts - t->last_frame : 0;
		p->frames[p->frame_head++ % KT__LIVE_FRAMES] = iv;
		p->frame_count++;
		p->frame_total += iv;
		p->frame_hist[kt__live_bucket(iv)]++;
		if (iv >= p->frame_max) {
			p->frame_max = iv;
			p->frame_max_end = ts;
		}
	}
	t->have_frame = 1;
	t->last_frame = ts;
}

static void counter(struct kt__live *l, const uint8_t *rec, uint32_t name, uint64_t ts, int fl)
{
	struct kt__live_page *p = &l->priv;
	uint32_t i = 0;
	while (i < p->ncounters && p->counters[i].id != name)
		i++;
	if (i == KT__LIVE_COUNTERS)
		return;
	struct kt__live_counter *c = &p->counters[i];
	if (i == p->ncounters) {
		p->ncounters++;
		c->id = name;
		l->names_pending = 1;
	}
	c->ts = ts;
	c->is_float = (uint32_t)fl;
	if (fl)
		memcpy(&c->f, rec + KT_REC_HEAD, 8);
	else
		memcpy(&c->i, rec + KT_REC_HEAD, 8);
}

static void record(struct kt__live *l, struct lthread *t, const uint8_t *rec, uint64_t ts)
{
	uint32_t name;
	memcpy(&name, rec + KT_REC_NAME, 4);
	switch (rec[KT_REC_TYPE]) {
	case KT_EV_ZONE_BEGIN:
		if (t->depth == KT__LIVE_DEPTH)
			t->too_deep++;
		else
			t->st[t->depth++] = (struct open_zone){ name, ts, 0 };
		break;
	case KT_EV_ZONE_END:
		zone_end(l, t, name, ts);
		break;
	case KT_EV_FRAME:
		frame_mark(l, t, ts);
		break;
	case KT_EV_COUNTER_I64:
	case KT_EV_COUNTER_F64:
		counter(l, rec, name, ts, rec[KT_REC_TYPE] == KT_EV_COUNTER_F64);
		break;
	default:
		break;
	}
}

/* The thread's slot, made if there is room; NULL past the table. */
static int thread_slot(struct kt__live *l, uint32_t id, uint32_t os_tid)
{
	struct kt__live_page *p = &l->priv;
	for (uint32_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].id == id)
			return (int)i;
	if (p->nthreads == KT__LIVE_THREADS)
		return -1;
	p->threads[p->nthreads].id = id;
	p->threads[p->nthreads].os_tid = os_tid;
	return (int)p->nthreads++;
}

/* Ring @r's thread: its slot (-1 past the table) and its open zones. */
static struct lthread *thread_of(struct kt__live *l, struct kt__ring *r, int *slot)
{
	static struct lthread spare; /* threads past the table: totals only */
	if (r != l->last_ring) {
		l->last_ring = r;
		l->last_slot = thread_slot(l, kt__ring_thread_id(r), kt__ring_os_tid(r));
	}
	*slot = l->last_slot;
	return l->last_slot < 0 ? &spare : &l->th[l->last_slot];
}

/* Zones open across records not walked would be timed wrong: their ends
 * count untimed instead; no frame interval spans them. */
static void forget(struct lthread *t)
{
	t->depth = 0;
	t->too_deep = 0;
	t->have_frame = 0;
}

void kt__live_ring_begin(struct kt__live *l, struct kt__ring *r, uint64_t unread)
{
	int i;
	struct lthread *t = thread_of(l, r, &i);
	l->skip = unread > kt__ring_bytes(r) / 4;
	if (i >= 0) {
		l->priv.threads[i].fill = unread;
		l->priv.threads[i].ring_bytes = kt__ring_bytes(r);
	}
	if (l->skip)
		forget(t);
}

void kt__live_flight_ring(struct kt__live *l, struct kt__ring *r, int gap)
{
	int i;
	struct lthread *t = thread_of(l, r, &i);
	l->skip = 0;
	if (i >= 0)
		l->priv.threads[i].ring_bytes = kt__ring_bytes(r);
	if (gap)
		forget(t);
}

void kt__live_records(struct kt__live *l, struct kt__ring *r, const uint8_t *p, size_t len,
		      uint64_t count)
{
	int i;
	struct lthread *t = thread_of(l, r, &i);
	uint64_t events = 0, last = l->priv.last_ts;
	kt__ring_rec rec;
	if (l->skip) {
		l->priv.skipped += count;
		l->priv.events += count;
		if (i >= 0)
			l->priv.threads[i].events += count;
		return;
	}
	for (size_t off = 0; off < len; off += rec.size) {
		if (kt__ring_decode(p + off, len - off, off, &rec) != 1)
			break;
		if (!rec.bytes)
			continue;
		events++;
		record(l, t, rec.bytes, rec.ts);
		if (rec.ts > last)
			last = rec.ts;
	}
	l->priv.last_ts = last;
	l->priv.events += events;
	if (i >= 0)
		l->priv.threads[i].events += events;
}

void kt__live_ring(struct kt__live *l, struct kt__ring *r, uint64_t dropped)
{
	int i;
	thread_of(l, r, &i);
	l->last_ring = NULL; /* a ring recycled for another thread is looked up again */
	if (i < 0)
		return;
	struct kt__live_thread *lt = &l->priv.threads[i];
	l->priv.dropped += dropped - lt->dropped;
	lt->dropped = dropped;
	lt->waited_ns = kt__ring_waited_ns(r);
	if (!lt->name[0]) {
		char *name = kt__ring_name_dup(r);
		if (name)
			snprintf(lt->name, sizeof(lt->name), "%s", name);
		free(name);
	}
}

static void name_cb(void *ctx, uint32_t id, const char *s, size_t len, const kt_srcloc *loc)
{
	struct kt__live_page *p = ctx;
	(void)loc;
	size_t n = len < KT__LIVE_NAME - 1 ? len : KT__LIVE_NAME - 1;
	for (uint32_t i = 0; i < p->nzones; i++)
		if (p->zones[i].id == id && !p->zones[i].name[0])
			memcpy(p->zones[i].name, s, n);
	for (uint32_t i = 0; i < p->ncounters; i++)
		if (p->counters[i].id == id && !p->counters[i].name[0])
			memcpy(p->counters[i].name, s, n);
}

void kt__live_publish(struct kt__live *l, uint64_t bytes, int last)
{
	uint64_t now = kt__mono_ns();
	if (!l || (!last && now - l->last_pub < KT__LIVE_PUBLISH_NS))
		return;
	l->last_pub = now;
	/* Names are looked up only when a slot is new: at most the tables'
	 * size of walks over the names, for the session. */
	if (l->names_pending)
		kt__names_after(0, name_cb, &l->priv);
	l->names_pending = 0;
	struct kt__live_page *p = &l->priv, *q = l->pub;
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		p->flusher_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	p->bytes = bytes;
	p->published_ns = now;
	p->ended = (uint32_t)!!last;
	uint32_t seq = kt__load_own(&q->seq);
	/* Relaxed, then the release fence: no copy below is seen before the
	 * odd count is (the viewer's acquire fence pairs with it). */
	kt__store_relaxed(&q->seq, seq + 1);
	kt__fence_release();
	memcpy((char *)q + offsetof(struct kt__live_page, pid), (char *)p +
	       offsetof(struct kt__live_page, pid), offsetof(struct kt__live_page, zones) -
	       offsetof(struct kt__live_page, pid));
	memcpy(q->zones, p->zones, p->nzones * sizeof(p->zones[0]));
	memcpy(q->threads, p->threads, sizeof(p->threads));
	memcpy(q->counters, p->counters, sizeof(p->counters));
	/* Release: every byte above is seen before the even count. */
	kt__store_release(&q->seq, seq + 2);
}

static void bound_name(char *s)
{
	s[KT__LIVE_NAME - 1] = 0;
}

int kt__live_copy(struct kt__live_page *dst, const volatile void *src, size_t len)
{
	const struct kt__live_page *p = (const struct kt__live_page *)src;
	if (len < sizeof(*p))
		return -EPROTO;
	for (int tries = 0; tries < 1000; tries++) {
		/* Acquire: the bytes copied after it are at least this new. */
		uint32_t s1 = kt__load_acquire(&p->seq);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		memcpy(dst, (const void *)p, sizeof(*dst));
		/* Acquire: the copy above is done before seq is read again. */
		kt__fence_acquire();
		if (kt__load_racy(&p->seq) != s1)
			continue;
		if (dst->magic != KT__LIVE_MAGIC || dst->size != sizeof(*dst))
			return -EPROTO;
		if (dst->nzones > KT__LIVE_ZONES)
			dst->nzones = KT__LIVE_ZONES;
		if (dst->nthreads > KT__LIVE_THREADS)
			dst->nthreads = KT__LIVE_THREADS;
		if (dst->ncounters > KT__LIVE_COUNTERS)
			dst->ncounters = KT__LIVE_COUNTERS;
		if (!dst->clock.tick_hz)
			return -EPROTO;
		for (unsigned i = 0; i < KT__LIVE_ZONES; i++)
			bound_name(dst->zones[i].name);
		for (unsigned i = 0; i < KT__LIVE_THREADS; i++)
			bound_name(dst->threads[i].name);
		for (unsigned i = 0; i < KT__LIVE_COUNTERS; i++)
			bound_name(dst->counters[i].name);
		return 0;
	}
	return -EAGAIN;
}

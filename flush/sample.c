/*
 * Sampled call chains: each traced thread's user-space stack, about
 * kt_session_options.sample_hz times per second of its CPU time
 * (KT_SAMPLE_HZ=N), written as sample records (type 21, SPEC §4.2.2) that
 * name interned stack entries (§4.11), with the process's executable
 * mappings as map entries (§4.12) so that `katra` can name the functions.
 *
 * As sched.c does for context switches, the flusher opens, for every
 * thread whose ring it sees, a perf event on that thread alone: the task
 * clock, sampled at the rate asked, user space only (unprivileged at
 * perf_event_paranoid 2), with PERF_SAMPLE_CALLCHAIN (the kernel walks
 * the frame pointers: without them the chain stops early) and mmap2
 * records (an executable mapping the thread makes: a dlopen()).  The
 * thread's emit path pays nothing: the kernel's timer samples it, and the
 * flusher reads the buffers once a period.  The mappings at the start
 * come from /proc/self/maps, read at the first poll.
 *
 * Bounded: KT_SCHED_MAX_THREADS threads at once, KT_SAMPLE_PAGES pages a
 * buffer (the kernel counts what does not fit as lost), stacks interned
 * by a 64-bit hash in a table of KT_SAMPLE_STACKS (forgotten when full:
 * later stacks get new ids, written again), at most KT_SAMPLE_MAPS map
 * entries, KT_SAMPLE_BFRAMES frames of samples not yet written.  A
 * capture's next segment starts with no stack or map entry: the table is
 * forgotten and /proc/self/maps read again there (SPEC §4.11).  The table
 * of events and buffers is perf_ring.c's, as sched.c's is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "flush/perf_ring.h"

#define KT_SAMPLE_PAGES 16u     /* data pages per buffer, a power of two */
#define KT_SAMPLE_STACKS 65536u /* interned stacks remembered, a power of two */
#define KT_SAMPLE_MAPS 4096u    /* map entries written at most */
#define KT_SAMPLE_REC 32u       /* bytes of one type 21 record */
#define KT_SAMPLE_BATCH 1024u
#define KT_SAMPLE_BFRAMES 4096u /* frames of a batch's samples, kept until written */
/* The buffers are read this often, not every period: a chunk per thread
 * per read, and at 1000 Hz a period holds about one sample.  16 pages
 * hold 64 ms of 1000 Hz samples of 128 frames, 4 times this. */
#define KT_SAMPLE_READ_NS 16000000u

typedef struct kt__perf_thread sampled;

struct stack_slot {
	uint64_t hash; /* 0: empty */
	uint32_t id;
};

struct kt__sample {
	struct kt__perf_table pt;
	uint32_t hz;
	int maps_read, said;
	uint64_t next_read; /* CLOCK_MONOTONIC ns of the next read */
	kt_clock_calibration c0;
	struct stack_slot *stacks; /* KT_SAMPLE_STACKS slots */
	uint32_t nstacks, next_id;
	uint64_t maps[KT_SAMPLE_MAPS]; /* hashes of the mappings written */
	uint32_t nmaps;
	uint8_t buf[KT_SAMPLE_BATCH * KT_SAMPLE_REC];
	size_t nbuf;
	/* The batch's chains, interned only as the batch is written, so that
	 * its stack entries go to the file its records go to (a capture's
	 * next segment starts at the records' room check). */
	uint64_t bframes[KT_SAMPLE_BFRAMES];
	uint32_t boff[KT_SAMPLE_BATCH], nbframes;
	uint8_t bdepth[KT_SAMPLE_BATCH];
	uint32_t seg; /* the file (kt_session.seg) the table's stacks and maps are in */
	uint64_t first, lastw;
	uint64_t frames[KT_MAX_STACK_DEPTH];
	uint8_t rec[65536]; /* one kernel record: its size is a u16 */
};

/* The event of a thread's samples at @hz. */
static void samples_attr(struct perf_event_attr *a, uint32_t hz)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->freq = 1;
	a->sample_freq = hz;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* Unprivileged at perf_event_paranoid 2: user space, this thread. */
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = 1;
}

struct kt__sample *kt__sample_new(const kt_clock_calibration *c0, uint32_t hz, char *why, size_t n,
                                  int *refused)
{
	struct perf_event_attr a;
	*refused = 0;
	samples_attr(&a, hz);
	int fd = kt__perf_open(&a, (uint32_t)syscall(SYS_gettid));
	if (fd < 0) {
		snprintf(why, n, "perf_event_open refused: %s", strerror(-fd));
		*refused = 1;
		return NULL;
	}
	close(fd);
	struct kt__sample *k = calloc(1, sizeof(*k));
	if (k && !(k->stacks = calloc(KT_SAMPLE_STACKS, sizeof(*k->stacks)))) {
		free(k);
		k = NULL;
	}
	if (!k) {
		snprintf(why, n, "no memory for the sampled threads");
		return NULL;
	}
	kt__perf_table_init(&k->pt, KT_SAMPLE_PAGES);
	k->hz = hz;
	k->c0 = *c0;
	k->next_id = 1;
	return k;
}

static void read_maps(kt_session *s);

/* The id of the stack of @n frames at @fr, its entry written the first
 * time in this file (0 when it could not be). */
static uint32_t intern(kt_session *s, const uint64_t *fr, uint32_t n)
{
	struct kt__sample *k = s->sample;
	uint64_t h = XXH3_64bits(fr, n * sizeof(uint64_t)) | 1;
	if (k->nstacks >= KT_SAMPLE_STACKS / 2) {
		/* Full enough that probes grow long: forget, go on with new ids. */
		memset(k->stacks, 0, KT_SAMPLE_STACKS * sizeof(*k->stacks));
		k->nstacks = 0;
	}
	size_t i = (size_t)(h >> 20) & (KT_SAMPLE_STACKS - 1);
	for (; k->stacks[i].hash; i = (i + 1) & (KT_SAMPLE_STACKS - 1))
		if (k->stacks[i].hash == h)
			return k->stacks[i].id;
	kt_stack_def d = { k->next_id, n, fr };
	if (s->error || kt_writer_stack(s->w, &d))
		return 0;
	k->stacks[i].hash = h;
	k->stacks[i].id = k->next_id++;
	k->nstacks++;
	return d.id;
}

/* The batch written: room asked for it and for every stack it may write,
 * so that both land in one file; in a file new since the last batch (a
 * capture's next segment), the stacks and mappings are written again,
 * under new stack ids (SPEC §4.11: a writer that forgets its table). */
static void flush_batch(kt_session *s, const sampled *f)
{
	struct kt__sample *k = s->sample;
	char name[32];
	if (!k->nbuf)
		return;
	int room = kt__out_room(s, k->nbuf * (KT_SAMPLE_REC + 32) + 8 * (uint64_t)k->nbframes);
	if (room && k->seg != s->seg) {
		memset(k->stacks, 0, KT_SAMPLE_STACKS * sizeof(*k->stacks));
		k->nstacks = 0;
		k->nmaps = 0;
		k->seg = s->seg;
		read_maps(s);
	}
	for (size_t i = 0; i < k->nbuf; i++) {
		uint32_t id = room ? intern(s, k->bframes + k->boff[i], k->bdepth[i]) : 0;
		kt__put64(k->buf + i * KT_SAMPLE_REC + KT_REC_HEAD + 8, id);
	}
	snprintf(name, sizeof(name), "katra.samples %u", f->tid);
	kt__flush_records(s, f->sid, 0, name, k->buf, k->nbuf * KT_SAMPLE_REC, (uint32_t)k->nbuf,
	                  k->first, k->lastw);
	k->nbuf = 0;
	k->nbframes = 0;
}

/* A sample of the @n frames in k->frames, its stack named as the batch is
 * written. */
static void put_sample(kt_session *s, sampled *f, uint64_t ts, uint32_t n)
{
	struct kt__sample *k = s->sample;
	if (k->nbframes + n > KT_SAMPLE_BFRAMES)
		flush_batch(s, f);
	if (ts < f->last)
		ts = f->last;
	f->last = ts;
	uint8_t *p = k->buf + k->nbuf * KT_SAMPLE_REC;
	memset(p, 0, KT_SAMPLE_REC);
	kt__put64(p + KT_REC_TS, ts);
	p[KT_REC_TYPE] = KT_EV_SAMPLE;
	kt__put16(p + KT_REC_LEN, 16);
	kt__put64(p + KT_REC_HEAD, f->owner);
	memcpy(k->bframes + k->nbframes, k->frames, n * sizeof(uint64_t));
	k->boff[k->nbuf] = k->nbframes;
	k->bdepth[k->nbuf] = (uint8_t)n;
	k->nbframes += n;
	if (!k->nbuf)
		k->first = ts;
	k->lastw = ts;
	if (++k->nbuf == KT_SAMPLE_BATCH)
		flush_batch(s, f);
}

/* A map entry for [@start, @start + @len) of @path at @pgoff, once. */
static void put_map(kt_session *s, uint64_t ts, uint64_t start, uint64_t len, uint64_t pgoff,
                    const char *path)
{
	struct kt__sample *k = s->sample;
	uint64_t key[3] = { start, len, pgoff };
	uint64_t h = XXH3_64bits(key, sizeof(key)) ^ XXH3_64bits(path, strlen(path));
	for (uint32_t i = 0; i < k->nmaps; i++)
		if (k->maps[i] == h)
			return;
	size_t plen = strlen(path);
	if (k->nmaps == KT_SAMPLE_MAPS || path[0] != '/' || !plen || plen > KT_MAX_MAP_PATH)
		return;
	kt_map_def m = { ts, start, len, pgoff, 0, (uint32_t)plen, path };
	if (!s->error && !kt_writer_map(s->w, &m))
		k->maps[k->nmaps++] = h;
}

/* The process's executable file mappings now, from /proc/self/maps. */
static void read_maps(kt_session *s)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096 + 256], perms[8], path[4096 + 1];
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, off;
		path[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4096[^\n]", &lo,
		           &hi, perms, &off, path) < 4)
			continue;
		if (perms[2] == 'x' && hi > lo && path[0] == '/')
			put_map(s, 0, lo, hi - lo, off, path);
	}
	fclose(f);
}

/* A PERF_RECORD_SAMPLE: u32 pid, u32 tid, u64 time, u64 nr, nr addresses
 * (user space only; the kernel's context markers left out). */
static void take_sample(kt_session *s, sampled *f, const uint8_t *e, size_t n)
{
	struct kt__sample *k = s->sample;
	uint64_t ns, nr;
	if (n < 8 + 24)
		return;
	memcpy(&ns, e + 16, 8);
	memcpy(&nr, e + 24, 8);
	if (nr > (n - 32) / 8)
		nr = (n - 32) / 8;
	uint32_t depth = 0;
	for (uint64_t i = 0; i < nr && depth < KT_MAX_STACK_DEPTH; i++) {
		uint64_t ip;
		memcpy(&ip, e + 32 + 8 * i, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue; /* PERF_CONTEXT_USER and its kin: markers */
		k->frames[depth++] = ip;
	}
	if (depth)
		put_sample(s, f, kt__perf_ticks(&k->c0, ns), depth);
}

/* A PERF_RECORD_MMAP2 (attr.mmap: executable mappings only): u32 pid, tid,
 * u64 addr, len, pgoff, 24 bytes of device/inode or build-id, u32 prot,
 * flags, the file's name, then sample_id's u32 pid, tid, u64 time. */
static void take_mmap(kt_session *s, const uint8_t *e, size_t n)
{
	uint64_t addr, len, pgoff, ns;
	if (n < 72 + 16 + 1)
		return;
	memcpy(&addr, e + 16, 8);
	memcpy(&len, e + 24, 8);
	memcpy(&pgoff, e + 32, 8);
	memcpy(&ns, e + n - 8, 8);
	char path[KT_MAX_MAP_PATH + 1];
	size_t plen = strnlen((const char *)e + 72, n - 72 - 16);
	if (plen > KT_MAX_MAP_PATH || plen == n - 72 - 16)
		return; /* no terminator inside the record: not a name */
	memcpy(path, e + 72, plen);
	path[plen] = 0;
	if (len && addr + len > addr)
		put_map(s, kt__perf_ticks(&s->sample->c0, ns), addr, len, pgoff, path);
}

struct take_ctx {
	kt_session *s;
	sampled *f;
};

static void take(void *ctx, const uint8_t *e, size_t n)
{
	struct take_ctx *c = ctx;
	struct perf_event_header h;
	memcpy(&h, e, sizeof(h));
	if (h.type == PERF_RECORD_SAMPLE)
		take_sample(c->s, c->f, e, n);
	else if (h.type == PERF_RECORD_MMAP2)
		take_mmap(c->s, e, n);
}

static void drain_one(void *ctx, sampled *f)
{
	kt_session *s = ctx;
	struct take_ctx c = { s, f };
	kt__perf_drain(&s->sample->pt, f, s->sample->rec, sizeof(s->sample->rec), take, &c);
	flush_batch(s, f);
}

static void say_once(struct kt__sample *k, const char *why)
{
	if (k->said || !why)
		return;
	k->said = 1;
	fprintf(stderr, "katra: samples: some threads not sampled: %s\n", why);
}

/* Sample ring @r's thread in free slot @f (NULL: the table is full, the
 * thread not sampled).  A thread refused once is tried again each read:
 * the cost of a refused open is one system call. */
static void follow(void *ctx, sampled *f, struct kt__ring *r)
{
	kt_session *s = ctx;
	struct kt__sample *k = s->sample;
	struct perf_event_attr a;
	const char *why;
	if (!f)
		return;
	samples_attr(&a, k->hz);
	if (kt__perf_attach(&k->pt, f, &a, r, &why))
		say_once(k, why);
}

void kt__sample_poll(kt_session *s)
{
	static const struct kt__perf_ops ops = { follow, drain_one };
	struct kt__sample *k = s->sample;
	if (!k || !s->w || s->error)
		return;
	if (!k->maps_read) {
		k->maps_read = 1;
		read_maps(s);
	}
	uint64_t now = kt__mono_ns();
	if (now < k->next_read)
		return; /* threads new since are followed at the next read */
	k->next_read = now + KT_SAMPLE_READ_NS;
	kt__perf_look(&k->pt, &s->rings, &ops, s);
}

void kt__sample_end(kt_session *s)
{
	struct kt__sample *k = s->sample;
	if (k)
		kt__perf_close_all(&k->pt, s->w && !s->error ? drain_one : NULL, s);
}

void kt__sample_free(struct kt__sample *k)
{
	if (!k)
		return;
	kt__perf_close_all(&k->pt, NULL, NULL);
	free(k->stacks);
	free(k);
}

void kt__sample_fork_child(struct kt__sample *k)
{
	if (k)
		kt__perf_fork_child(&k->pt);
}

int kt__sample_env(uint32_t *hz)
{
	const char *e = getenv("KT_SAMPLE_HZ");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);
		if (*end || v > KT_SAMPLE_HZ_MAX)
			return -EINVAL;
		*hz = (uint32_t)v;
	}
	return *hz > KT_SAMPLE_HZ_MAX ? -EINVAL : 0;
}

const char *kt__sample_setup(kt_session *s, uint32_t hz, char *note, size_t n)
{
	char why[160];
	int refused;
	if (!hz || (s->sample = kt__sample_new(&s->c0, hz, why, sizeof(why), &refused)))
		return NULL;
	fprintf(stderr, "katra: samples absent from this trace: %s\n", why);
	snprintf(note, n, "samples: absent: %s", why);
	return note;
}

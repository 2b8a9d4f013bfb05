/*
 * codecbench - the chunk codecs measured on real and synthetic chunks.
 *
 *   codecbench synth KIND OUT.katra [--events N] [--threads T]
 *       write a trace of KIND: `irregular` (24-byte user payloads, 1000
 *       names, nested zones, counters and messages on several threads),
 *       `burst` (an interpreter's deep call trees of short zones at full
 *       speed, with pauses) or `empty` (identical empty zones on one
 *       thread: N/2 zones).  Records are laid out as the producer lays
 *       them in a ring (kt__put_record, TSC timestamps taken as each is
 *       made) and cut into 256 KiB chunks, as the flusher cuts them.
 *       The corpus of bench/workloads.h too: `renderer`, `interp`, `jobs`
 *       (codecbench_workloads.c), on a synthetic clock, so each thread's
 *       chunks, and so every codec's bytes, are the same in every run.
 *
 *   codecbench measure [--reps R] [--max-events N] [--codecs a,b] FILE...
 *       every event chunk of each trace (read through kt_reader), encoded
 *       and decoded by every codec, each decode checked byte for byte.
 *       Prints per codec: bytes per event, and encode and decode ns per
 *       event (each chunk's fastest of R runs, summed; the compact row's
 *       bytes are a flusher's with --reps 1 only, as its encoder keeps
 *       from chunk to chunk which streams LZ4 does not pay on), and an
 *       XXH64 of the encoded bytes, so that a change to an encoder's
 *       speed shows it left the bytes alone.  compact-upto is the
 *       compact row through the flusher's one pass
 *       (kt__compact_encode_upto).  --kinds adds
 *       where the compact codec's bytes go: per stream, and per record
 *       type its timestamps, key misses and values (codecbench_kinds.c).
 *
 * Under `valgrind --tool=callgrind` each codec's encoder and decoder is a
 * function of its own (enc_<codec>, dec_<codec>), so callgrind_annotate's
 * inclusive counts give instructions per event (see the codec notes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>
#include <xxhash.h>
#include <zstd.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "format/compact.h"
#include "format/format.h"
#include "bench/codecbench.h"
#include "bench/codecbench_kinds.h"


static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void die(const char *what, int rc)
{
	fprintf(stderr, "codecbench: %s: %s\n", what, rc ? kt_strerror(rc) : "failed");
	exit(1);
}

/* ---- the codecs ---------------------------------------------------------- */

/* A function of its own in the binary, so callgrind counts it apart: GCC
 * would otherwise fold identical wrappers into one (-fipa-icf). */
#if defined(__clang__)
#define OWN __attribute__((noinline))
#else
#define OWN __attribute__((noipa))
#endif

typedef long (*enc_fn)(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out,
		       size_t cap);
typedef int (*dec_fn)(struct ctx *c, const uint8_t *in, size_t len, uint8_t *out,
		      size_t raw_len, uint32_t count);

/* Codec 2 (SPEC §4.1): each ts minus the one before, then LZ4. */
static void delta_ts(uint8_t *ev, size_t raw_len)
{
	uint64_t prev = 0;
	for (size_t at = 0; at < raw_len; at += KT__EVENT_HEAD + kt__align8(kt__get16(ev + at + 14))) {
		uint64_t ts = kt__get64(ev + at);
		kt__put64(ev + at, ts - prev);
		prev = ts;
	}
}

static void undelta_ts(uint8_t *ev, size_t raw_len)
{
	uint64_t ts = 0;
	for (size_t at = 0; at < raw_len; at += KT__EVENT_HEAD + kt__align8(kt__get16(ev + at + 14))) {
		ts += kt__get64(ev + at);
		kt__put64(ev + at, ts);
	}
}

static OWN long enc_lz4delta(struct ctx *c, const uint8_t *ev,
						   size_t raw_len, uint8_t *out, size_t cap)
{
	memcpy(c->tmp, ev, raw_len);
	delta_ts(c->tmp, raw_len);
	int n = LZ4_compress_fast((const char *)c->tmp, (char *)out, (int)raw_len, (int)cap, 1);
	return n > 0 ? n : -1;
}

static OWN int dec_lz4delta(struct ctx *c, const uint8_t *in, size_t len,
						  uint8_t *out, size_t raw_len, uint32_t count)
{
	(void)c, (void)count;
	if (LZ4_decompress_safe((const char *)in, (char *)out, (int)len, (int)raw_len) !=
	    (int)raw_len)
		return -1;
	undelta_ts(out, raw_len);
	return 0;
}

static OWN long enc_compact(struct ctx *c, const uint8_t *ev,
						  size_t raw_len, uint8_t *out, size_t cap)
{
	return kt__compact_encode(c->enc, ev, raw_len, out, cap);
}

/* One decoder function per codec, though they call the same code, so that
 * callgrind counts each codec's decoding apart. */
#define DEC_COMPACT(name)                                                                  \
	static OWN int dec_##name(struct ctx *c, const uint8_t *in,  \
							size_t len, uint8_t *out,          \
							size_t raw_len, uint32_t count)    \
	{                                                                                  \
		return kt__compact_decode(c->dec, in, len, out, raw_len, count);           \
	}
DEC_COMPACT(compact)
DEC_COMPACT(compact_nolz4)
DEC_COMPACT(compact_lz4all)

#define COMPACT_TK(i, name)                                                                \
	static OWN long enc_##name(struct ctx *c, const uint8_t *ev, size_t raw_len,       \
				   uint8_t *out, size_t cap)                               \
	{                                                                                  \
		return kt__compact_encode(c->enc_tk[i], ev, raw_len, out, cap);            \
	}                                                                                  \
	DEC_COMPACT(name)
COMPACT_TK(0, compact_lz4tk1)
COMPACT_TK(1, compact_lz4tk4)
COMPACT_TK(2, compact_lz4tk16)

/* The flusher's path (flush/flusher.c): a chunk's records found and
 * encoded in one pass, here the whole chunk (its end the limit). */
static OWN long enc_compact_upto(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out,
				 size_t cap)
{
	kt__compact_run run;
	long n = kt__compact_encode_upto(c->enc_upto, ev, raw_len, raw_len, out, cap, &run);
	return run.used == raw_len ? n : -1;
}
DEC_COMPACT(compact_upto)

static OWN long enc_compact_nolz4(struct ctx *c, const uint8_t *ev,
							size_t raw_len, uint8_t *out, size_t cap)
{
	return kt__compact_encode(c->enc0, ev, raw_len, out, cap);
}

static OWN long enc_compact_lz4all(struct ctx *c, const uint8_t *ev,
							 size_t raw_len, uint8_t *out, size_t cap)
{
	return kt__compact_encode(c->enc_all, ev, raw_len, out, cap);
}

static long zstd_enc(struct ctx *c, const uint8_t *src, size_t n, uint8_t *out, size_t cap,
		     int level)
{
	size_t z = ZSTD_compressCCtx(c->zc, out, cap, src, n, level);
	return ZSTD_isError(z) ? -1 : (long)z;
}

#define COMPACT_ZSTD(i, name)                                                              \
	static OWN long enc_##name(struct ctx *c, const uint8_t *ev, \
							 size_t raw_len, uint8_t *out,    \
							 size_t cap)                      \
	{                                                                                  \
		return kt__codec_compact_zstd.encode(c->cz[i], ev, raw_len, out, cap);     \
	}                                                                                  \
	static OWN int dec_##name(struct ctx *c, const uint8_t *in,  \
							size_t len, uint8_t *out,          \
							size_t raw_len, uint32_t count)    \
	{                                                                                  \
		return kt__codec_compact_zstd.decode(c->czd, in, len, out, raw_len, count); \
	}
COMPACT_ZSTD(0, compact_zstd1)
COMPACT_ZSTD(1, compact_zstd3)
COMPACT_ZSTD(2, compact_zstd9)
COMPACT_ZSTD(3, compact_zstd19)

static OWN long enc_raw_zstd3(struct ctx *c, const uint8_t *ev,
						    size_t raw_len, uint8_t *out, size_t cap)
{
	return zstd_enc(c, ev, raw_len, out, cap, 3);
}

static OWN long enc_delta_zstd3(struct ctx *c, const uint8_t *ev,
						      size_t raw_len, uint8_t *out, size_t cap)
{
	memcpy(c->tmp, ev, raw_len);
	delta_ts(c->tmp, raw_len);
	return zstd_enc(c, c->tmp, raw_len, out, cap, 3);
}

static OWN int dec_raw_zstd3(struct ctx *c, const uint8_t *in, size_t len,
					      uint8_t *out, size_t raw_len, uint32_t count)
{
	(void)count;
	size_t n = ZSTD_decompressDCtx(c->zd, out, raw_len, in, len);
	return ZSTD_isError(n) || n != raw_len ? -1 : 0;
}

static OWN int dec_delta_zstd3(struct ctx *c, const uint8_t *in,
						     size_t len, uint8_t *out, size_t raw_len,
						     uint32_t count)
{
	(void)count;
	size_t n = ZSTD_decompressDCtx(c->zd, out, raw_len, in, len);
	if (ZSTD_isError(n) || n != raw_len)
		return -1;
	undelta_ts(out, raw_len);
	return 0;
}

struct codec {
	const char *name;
	enc_fn enc;
	dec_fn dec; /* NULL: an encoder measured for its size and cost only */
};

static const struct codec codecs[] = {
	{ "lz4-delta", enc_lz4delta, dec_lz4delta },
	{ "compact", enc_compact, dec_compact },
	{ "compact-upto", enc_compact_upto, dec_compact_upto },
	{ "compact-nolz4", enc_compact_nolz4, dec_compact_nolz4 },
	{ "compact-lz4all", enc_compact_lz4all, dec_compact_lz4all },
	{ "compact-lz4tk1", enc_compact_lz4tk1, dec_compact_lz4tk1 },
	{ "compact-lz4tk4", enc_compact_lz4tk4, dec_compact_lz4tk4 },
	{ "compact-lz4tk16", enc_compact_lz4tk16, dec_compact_lz4tk16 },
	{ "compact+zstd1", enc_compact_zstd1, dec_compact_zstd1 },
	{ "compact+zstd3", enc_compact_zstd3, dec_compact_zstd3 },
	{ "compact+zstd9", enc_compact_zstd9, dec_compact_zstd9 },
	{ "compact+zstd19", enc_compact_zstd19, dec_compact_zstd19 },
	{ "raw+zstd3", enc_raw_zstd3, dec_raw_zstd3 },
	{ "delta+zstd3", enc_delta_zstd3, dec_delta_zstd3 },
	{ "alt:fields+lz4", alt_fields_lz4, NULL },
	{ "alt:nibble-ts", alt_nibble_ts, NULL },
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

/* ---- measure ------------------------------------------------------------- */

struct acc {
	uint64_t bytes, enc_ns, dec_ns;
	uint64_t hash; /* of every chunk's encoding in turn: the same bytes, the same hash */
	int failed;
};

struct bench {
	struct ctx c;
	uint8_t *enc_out, *dec_out;
	size_t enc_cap;
	int reps;
	int kinds;               /* --kinds: where compact's bytes go */
	struct cb_kinds k;
	int sel[NCODECS];
	struct acc acc[NCODECS];
	uint64_t events, chunks, raw, skipped;
};

static void bench_init(struct bench *b)
{
	int rc = kt__compact_enc_new(&b->c.enc, BUF_MAX);
	if (rc || (rc = kt__codec_compact.enc_level(b->c.enc, 1)) || (rc = kt__compact_enc_new(&b->c.enc0, BUF_MAX)) ||
	    (rc = kt__compact_enc_lz4(b->c.enc0, 0, 1)) ||
	    (rc = kt__compact_enc_new(&b->c.enc_all, BUF_MAX)) ||
	    (rc = kt__compact_enc_lz4(b->c.enc_all, KT__COMPACT_ALL, 1)) ||
	    (rc = kt__compact_enc_new(&b->c.enc_upto, BUF_MAX + kt_event_size(UINT16_MAX))) ||
	    (rc = kt__codec_compact.enc_level(b->c.enc_upto, 1)) ||
	    (rc = kt__compact_dec_new(&b->c.dec)) ||
	    (rc = kt__codec_compact_zstd.dec_new(&b->c.czd)))
		die("compact codec", rc);
	static const int accel[3] = { 1, 4, 16 };
	for (int i = 0; i < 3; i++)
		if ((rc = kt__compact_enc_new(&b->c.enc_tk[i], BUF_MAX)) ||
		    (rc = kt__compact_enc_lz4(b->c.enc_tk[i],
					      KT__COMPACT_T | KT__COMPACT_K | KT__COMPACT_P, accel[i])))
			die("compact codec", rc);
	static const int levels[4] = { 1, 3, 9, 19 };
	for (int i = 0; i < 4; i++)
		if ((rc = kt__codec_compact_zstd.enc_new(&b->c.cz[i], BUF_MAX, levels[i])))
			die("compact+zstd codec", rc);
	b->c.zc = ZSTD_createCCtx();
	b->c.zd = ZSTD_createDCtx();
	b->c.tmp_cap = 4 * (size_t)BUF_MAX;
	b->c.tmp = malloc(b->c.tmp_cap);
	b->enc_cap = 2 * (size_t)BUF_MAX;
	b->enc_out = malloc(b->enc_cap);
	b->dec_out = malloc(BUF_MAX);
	if (!b->c.zc || !b->c.zd || !b->c.tmp || !b->enc_out || !b->dec_out)
		die("out of memory", 0);
}

static uint64_t fastest(uint64_t best, uint64_t t0)
{
	uint64_t t = now_ns() - t0;
	return t < best ? t : best;
}

/* One codec over one chunk: its size and its fastest encode and decode. */
static void run_codec(struct bench *b, size_t i, const uint8_t *ev, size_t raw_len,
		      uint32_t count)
{
	const struct codec *k = &codecs[i];
	struct acc *a = &b->acc[i];
	uint64_t enc = UINT64_MAX, dec = UINT64_MAX;
	long n = 0;

	for (int r = 0; r < b->reps; r++) {
		uint64_t t0 = now_ns();
		n = k->enc(&b->c, ev, raw_len, b->enc_out, b->enc_cap);
		enc = fastest(enc, t0);
	}
	if (n <= 0) {
		a->failed++;
		return;
	}
	a->bytes += (uint64_t)n;
	a->enc_ns += enc;
	a->hash = XXH64(b->enc_out, (size_t)n, a->hash);
	if (!k->dec)
		return;
	for (int r = 0; r < b->reps; r++) {
		uint64_t t0 = now_ns();
		int rc = k->dec(&b->c, b->enc_out, (size_t)n, b->dec_out, raw_len, count);
		dec = fastest(dec, t0);
		if (rc || (r == 0 && memcmp(b->dec_out, ev, raw_len))) {
			a->failed++;
			return;
		}
	}
	a->dec_ns += dec;
}

static void print_table(const struct bench *b, const char *path)
{
	double ev = (double)b->events;
	printf("%s: %" PRIu64 " events in %" PRIu64 " chunks, %.2f raw bytes/event%s\n", path,
	       b->events, b->chunks, (double)b->raw / ev, b->skipped ? " (chunks skipped)" : "");
	printf("  %-16s %11s %11s %11s %8s  %-16s\n", "codec", "bytes/event", "enc ns/ev",
	       "dec ns/ev", "failed", "xxh64 of output");
	for (size_t i = 0; i < NCODECS; i++) {
		const struct acc *a = &b->acc[i];
		if (!b->sel[i])
			continue;
		printf("  %-16s %11.3f %11.2f ", codecs[i].name, (double)a->bytes / ev,
		       (double)a->enc_ns / ev);
		if (codecs[i].dec)
			printf("%11.2f", (double)a->dec_ns / ev);
		else
			printf("%11s", "-");
		printf(" %8d  %016" PRIx64 "\n", a->failed, a->hash);
	}
}

/* --kinds: the chunk encoded without LZ4, its streams' and records' share. */
static void kinds_chunk(struct bench *b, const uint8_t *ev, size_t raw_len)
{
	long n = kt__compact_encode(b->c.enc0, ev, raw_len, b->enc_out, b->enc_cap);
	if (n > 0)
		cb_kinds_chunk(&b->k, ev, raw_len, b->enc_out, n);
}

static int measure_file(struct bench *b, const char *path, uint64_t max_events)
{
	kt_reader *r;
	kt_reader_error err;
	kt_trace_frame f;
	int rc = kt_reader_open(path, &err, &r);
	if (rc) {
		fprintf(stderr, "codecbench: %s: %s\n", path, err.message);
		return 1;
	}
	memset(b->acc, 0, sizeof(b->acc));
	memset(&b->k, 0, sizeof(b->k));
	b->events = b->chunks = b->raw = b->skipped = 0;
	while ((rc = kt_reader_next_frame(r, &f)) == 1 && (!max_events || b->events < max_events)) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		if (f.u.chunk.raw_len > BUF_MAX) {
			b->skipped++;
			continue;
		}
		for (size_t i = 0; i < NCODECS; i++)
			if (b->sel[i])
				run_codec(b, i, f.u.chunk.events, f.u.chunk.raw_len,
					  f.u.chunk.event_count);
		if (b->kinds)
			kinds_chunk(b, f.u.chunk.events, f.u.chunk.raw_len);
		b->events += f.u.chunk.event_count;
		b->raw += f.u.chunk.raw_len;
		b->chunks++;
	}
	kt_reader_close(r);
	if (rc < 0) {
		fprintf(stderr, "codecbench: %s: %s\n", path, kt_strerror(rc));
		return 1;
	}
	print_table(b, path);
	if (b->kinds)
		cb_kinds_print(&b->k, b->events);
	return 0;
}

/* ---- synth --------------------------------------------------------------- */

void builder_flush(struct builder *b)
{
	if (!b->len)
		return;
	pthread_mutex_lock(b->mu);
	int rc = kt_writer_chunk(b->w, b->tid, KT_CODEC_LZ4_DELTA, 1, b->buf, b->len);
	pthread_mutex_unlock(b->mu);
	if (rc)
		die("writing a chunk", rc);
	b->len = 0;
}

enum { NAMES = 1000, COUNTERS = 20, DEPTH = 16 };

/* A user record of 24 bytes: a sequence number, a small id, the zone it
 * is in and a heap-like address, as a program's own payload might be. */
static void irregular_user(struct builder *b, uint64_t x, uint64_t seq, uint32_t zone)
{
	uint8_t p[24];
	kt__put64(p, seq);
	kt__put32(p + 8, (uint32_t)(x >> 32) % 1000);
	kt__put32(p + 12, zone);
	kt__put64(p + 16, UINT64_C(0x55d000000000) + ((x >> 8) & 0xffff) * 16);
	emit(b, KT_EV_USER, zone ? zone : 1, 0, p, sizeof(p));
}

static void *irregular(void *arg)
{
	struct builder *b = arg;
	uint32_t stack[DEPTH];
	int64_t walk[COUNTERS] = { 0 };
	uint64_t seq = 0;
	int depth = 0;
	while (b->events < b->target) {
		uint64_t x = rnd(b);
		unsigned choice = (unsigned)(x % 100);
		uint32_t name = 1 + (uint32_t)((x >> 16) % 4 ? (x >> 24) % 50 : (x >> 24) % NAMES);
		if (choice < 40 && depth < DEPTH) {
			stack[depth++] = name;
			emit(b, KT_EV_ZONE_BEGIN, name, 0, NULL, 0);
		} else if (choice < 80 && depth > 0) {
			emit(b, KT_EV_ZONE_END, stack[--depth], 0, NULL, 0);
		} else if (choice < 95) {
			irregular_user(b, x, seq++, depth ? stack[depth - 1] : 0);
		} else if (choice < 99) {
			unsigned k = (unsigned)(x >> 20) % COUNTERS;
			walk[k] += (int64_t)((x >> 40) % 201) - 100;
			emit(b, KT_EV_COUNTER_I64, NAMES + 1 + k, 0, &walk[k], 8);
		} else {
			char msg[64];
			int n = snprintf(msg, sizeof(msg), "request %u done in %u us",
					 (unsigned)seq, (unsigned)(x >> 44) % 5000);
			emit(b, KT_EV_MESSAGE, NAMES + COUNTERS + 1, 0, msg, (size_t)n);
		}
	}
	builder_flush(b);
	return NULL;
}

/* An interpreter's calls: fib's binary tree under one name, then a random
 * tree over 40 names, as bursts at full speed with a pause between. */
static void fib(struct builder *b, int n)
{
	emit(b, KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
	if (n >= 2) {
		fib(b, n - 1);
		fib(b, n - 2);
	}
	emit(b, KT_EV_ZONE_END, 1, 0, NULL, 0);
}

static void tree(struct builder *b, unsigned depth, uint32_t name)
{
	emit(b, KT_EV_ZONE_BEGIN, name, 0, NULL, 0);
	unsigned kids = depth < 18 ? (unsigned)(rnd(b) % 4) : 0;
	for (unsigned i = 0; i < kids && b->events < b->target; i++)
		tree(b, depth + 1, 2 + (uint32_t)((depth * 7 + i) % 40));
	emit(b, KT_EV_ZONE_END, name, 0, NULL, 0);
}

static void *burst(void *arg)
{
	struct builder *b = arg;
	for (unsigned k = 0; b->events < b->target; k++) {
		if (k % 2)
			tree(b, 0, 2);
		else
			fib(b, 22);
		struct timespec pause = { 0, 20000000 };
		nanosleep(&pause, NULL);
	}
	builder_flush(b);
	return NULL;
}

static void *empty(void *arg)
{
	struct builder *b = arg;
	while (b->events < b->target) {
		emit(b, KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
		emit(b, KT_EV_ZONE_END, 1, 0, NULL, 0);
	}
	builder_flush(b);
	return NULL;
}

static void name_all(kt_writer *w, unsigned n)
{
	char s[32];
	for (unsigned i = 1; i <= n; i++) {
		int len = snprintf(s, sizeof(s), "fn%04u", i);
		if (kt_writer_name(w, i, s, (size_t)len))
			die("writing a name", 0);
	}
}

static int synth(const char *kind, const char *path, uint64_t events, int threads)
{
	int wl_threads = 0;
	void *(*wl)(void *) = cb_workload(kind, &wl_threads);
	void *(*fn)(void *) = !strcmp(kind, "irregular") ? irregular :
			      !strcmp(kind, "burst")     ? burst :
			      !strcmp(kind, "empty")     ? empty : wl;
	if (!threads)
		threads = wl ? wl_threads : !strcmp(kind, "irregular") ? 4 : 1;
	if (!fn || threads < 1 || threads > 64) {
		fprintf(stderr, "codecbench: synth irregular|burst|empty|renderer|interp|jobs, "
				"1..64 threads\n");
		return 2;
	}
	kt_header h;
	kt_header_init(&h);
	h.clock.source = KT_CLOCK_TSC;
	h.workload = kind;
	kt_writer *w;
	int rc = kt_writer_open(path, &h, &w);
	if (rc)
		die(path, rc);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct builder b[64];
	pthread_t th[64];
	for (int i = 0; i < threads; i++) {
		b[i] = (struct builder){ .w = w, .mu = &mu, .tid = (uint32_t)i + 1,
					 .buf = malloc(BUF_MAX), .target = events / (uint64_t)threads,
					 .rng = 0x9E3779B97F4A7C15u * (uint64_t)(i + 1),
					 .clock = wl ? UINT64_C(1) << 40 : 0, .threads = threads };
		if (!b[i].buf || pthread_create(&th[i], NULL, fn, &b[i]))
			die("starting a thread", 0);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		free(b[i].buf);
	}
	if (wl)
		cb_workload_names(w);
	else
		name_all(w, NAMES + COUNTERS + 1);
	if ((rc = kt_writer_finish(w, NULL)) || (rc = kt_writer_close(w)))
		die(path, rc);
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: codecbench synth irregular|burst|empty|renderer|interp|jobs "
			"OUT.katra [--events N] "
			"[--threads T]\n"
			"       codecbench measure [--reps R] [--max-events N] [--codecs a,b] [--kinds] "
			"FILE...\n");
	exit(2);
}

static void select_codecs(struct bench *b, const char *list)
{
	for (size_t i = 0; i < NCODECS; i++) {
		b->sel[i] = !list;
		if (!list)
			continue;
		size_t n = strlen(codecs[i].name);
		for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
			if (!strncmp(p, codecs[i].name, n) && (p[n] == ',' || !p[n]))
				b->sel[i] = 1;
	}
}

int main(int argc, char **argv)
{
	static struct bench b;
	uint64_t events = 0, max_events = 0;
	int threads = 0, reps = 3, first = 0;
	const char *list = NULL;

	if (argc < 2)
		usage();
	for (int i = 2; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--events"))
			events = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
			threads = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--max-events"))
			max_events = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--kinds"))
			b.kinds = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--codecs"))
			list = argv[++i];
		else if (argv[i][0] == '-')
			usage();
		else if (!first)
			first = i;
	}
	if (!strcmp(argv[1], "synth")) {
		if (!first || first + 1 >= argc || argv[first + 1][0] == '-')
			usage();
		int irr = !strcmp(argv[first], "irregular");
		return synth(argv[first], argv[first + 1],
			     events ? events : !strcmp(argv[first], "empty") ? 40000000 :
					       irr ? 8000000 : 20000000,
			     threads);
	}
	if (strcmp(argv[1], "measure") || !first || reps < 1)
		usage();
	b.reps = reps;
	select_codecs(&b, list);
	bench_init(&b);
	int status = 0;
	for (int i = first; i < argc; i++) {
		if (argv[i][0] == '-') {
			i += strcmp(argv[i], "--kinds") != 0; /* the option's value */
			continue;
		}
		status |= measure_file(&b, argv[i], max_events);
	}
	return status;
}

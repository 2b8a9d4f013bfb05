/*
 * codecbench's trace builder, shared by its synthetic kinds (codecbench.c)
 * and the workload corpus (codecbench_workloads.c): one producer thread's
 * records, laid out as in its ring and cut into chunks as the flusher
 * cuts them.
 */
#ifndef KATRA_BENCH_CODECBENCH_H
#define KATRA_BENCH_CODECBENCH_H

#include <pthread.h>
#include <stdint.h>

#include <zstd.h>

#include <katra/katra.h>
#include <katra/writer.h>
#include "format/compact.h"
#include "format/format.h"

#define CHUNK_MAX KT__CHUNK_MAX /* the flusher's chunk size */
#define SLACK (64u << 10)      /* one record past the cut, at most */
#define BUF_MAX (CHUNK_MAX + SLACK)

struct builder {
	kt_writer *w;
	pthread_mutex_t *mu;
	uint32_t tid;
	uint8_t *buf;
	size_t len;
	uint64_t events, target;
	uint64_t rng;
	uint64_t clock;  /* the synthetic clock's ticks; 0: the TSC's */
	int threads;     /* the producers of the trace */
};

/* What every codec may use: scratch as large as the largest chunk's worst
 * case, and the library contexts, all made once. */
struct ctx {
	kt__compact_enc *enc;    /* a session's: level 1 (format/compact_codec.c) */
	kt__compact_enc *enc0;   /* no LZ4 at all (under zstd, and to compare) */
	kt__compact_enc *enc_all; /* LZ4 tried on every stream */
	kt__compact_enc *enc_tk[3]; /* LZ4 on T, K and P at acceleration 1, 4, 16 */
	kt__compact_enc *enc_upto; /* a session's level 1 through the flusher's one pass */
	kt__compact_dec *dec;
	void *cz[4];             /* the archival codec at levels 1, 3, 9, 19 */
	void *czd;
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	uint8_t *tmp;        /* an intermediate encoding */
	size_t tmp_cap;
};

/* The alternatives the compact codec was chosen over (encoders
 * only, codecbench_alt.c). */
long alt_fields_lz4(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out, size_t cap);
long alt_nibble_ts(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out, size_t cap);


void die(const char *what, int rc) __attribute__((noreturn));
void builder_flush(struct builder *b);

static inline void emit(struct builder *b, uint8_t type, uint32_t id, uint8_t flags,
			const void *payload, size_t len)
{
	kt__put_record(b->buf + b->len, b->clock ? b->clock : __rdtsc(), type, id, flags,
		       payload, len);
	b->len += KT__EVENT_HEAD + kt__align8(len);
	b->events++;
	if (b->len >= CHUNK_MAX)
		builder_flush(b);
}

static inline uint64_t rnd(struct builder *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

/* The thread function of workload @kind (bench/workloads.h: renderer,
 * interp, jobs), its default producer count in *@threads; NULL for
 * another kind. */
void *(*cb_workload(const char *kind, int *threads))(void *);

/* Write the names of the corpus's ids into @w. */
void cb_workload_names(kt_writer *w);

#endif

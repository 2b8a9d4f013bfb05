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

#include <katra/writer.h>
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

/*
 * A synthetic trace with scheduler records (SPEC §4.2.1), every time
 * known, for the views of them (test_sched_views): thread 1 "main" (OS
 * tid 101) with a zone "frame" [1000, 11000) and its stream 2, thread 3
 * "worker" (OS tid 103) with a zone "work" [1500, 4500) and its stream 4.
 * Times in ns after the clock's start (synth.h's T_NS; the file's
 * monotonic ns are 123456000 more).
 *
 *   main:   follow 500, blocked 2000 (CPU 1), in 6000 (CPU 0),
 *           preempted 8000 (CPU 0), in 9000 (CPU 1)
 *   worker: follow 1000, in 3000 (CPU 1), lost 4000 (2 switches),
 *           blocked 5000 (CPU 0)
 */
#ifndef KATRA_TESTS_SYNTH_SCHED_H
#define KATRA_TESTS_SYNTH_SCHED_H

#include "synth.h"

#define T_MONO(x) (UINT64_C(123456000) + (uint64_t)(x))

struct t_sched_rec {
	uint64_t ns;
	unsigned what;
	uint64_t cpu; /* or the switches lost */
};

/* Records of thread @of into @s (events of its scheduler stream). */
static inline void t_sched_add(struct t_synth *s, uint32_t of, const struct t_sched_rec *r,
			       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s->cap - s->len < 64) {
			s->cap = s->cap ? s->cap * 2 : 1 << 16;
			s->buf = realloc(s->buf, s->cap);
			cr_assert_not_null(s->buf);
		}
		uint64_t pl[2] = { of, r[i].cpu };
		kt_event ev = { .ts = T_NS(r[i].ns), .type = KT_EV_SCHED,
				.flags = (uint8_t)r[i].what, .payload = (const uint8_t *)pl,
				.payload_len = sizeof(pl) };
		size_t k = kt_event_encode(s->buf + s->len, s->cap - s->len, &ev);
		cr_assert_gt(k, 0);
		s->len += k;
	}
}

/* Thread @tid's stream of scheduler records @r (os_tid 0, as katra's). */
static inline void t_sched_stream(kt_writer *w, uint32_t tid, uint32_t of, uint32_t of_os,
				  const struct t_sched_rec *r, size_t n)
{
	struct t_synth s = { 0 };
	char name[32];
	snprintf(name, sizeof(name), "katra.sched %u", of_os);
	t_sched_add(&s, of, r, n);
	cr_assert_eq(kt_writer_thread(w, tid, 0, name), 0);
	cr_assert_eq(kt_writer_chunk(w, tid, KT_CODEC_NONE, 1, s.buf, s.len), 0);
	free(s.buf);
}

/* The trace above at @path; @scale multiplies main's times after 1000
 * (a second trace for diff: main's off-CPU time @scale times longer). */
static inline void t_sched_trace(const char *path, uint64_t scale)
{
	kt_header h;
	t_header(&h);
	h.flags = KT_HDR_SCHED;
	h.run_id = h.capture_id = NULL;
	h.epoch = 0;
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0, "open %s", path);
	cr_assert_eq(kt_writer_name(w, 1, "frame", 5), 0);
	cr_assert_eq(kt_writer_name(w, 2, "work", 4), 0);
#define SC(x) (1000 + ((x) - 1000) * scale)
	struct t_synth s = { 0 };
	t_synth_zone(&s, 1, 1000, SC(11000) - 1000);
	cr_assert_eq(kt_writer_thread(w, 1, 101, "main"), 0);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, s.buf, s.len), 0);
	free(s.buf);
	memset(&s, 0, sizeof(s));
	t_synth_zone(&s, 2, 1500, 3000);
	cr_assert_eq(kt_writer_thread(w, 3, 103, "worker"), 0);
	cr_assert_eq(kt_writer_chunk(w, 3, KT_CODEC_NONE, 1, s.buf, s.len), 0);
	free(s.buf);
	const struct t_sched_rec m[] = {
		{ 500, KT_SCHED_FOLLOW, 0 }, { SC(2000), KT_SCHED_BLOCKED, 1 },
		{ SC(6000), KT_SCHED_IN, 0 }, { SC(8000), KT_SCHED_PREEMPTED, 0 },
		{ SC(9000), KT_SCHED_IN, 1 },
	};
	const struct t_sched_rec k[] = {
		{ 1000, KT_SCHED_FOLLOW, 0 }, { 3000, KT_SCHED_IN, 1 },
		{ 4000, KT_SCHED_LOST, 2 }, { 5000, KT_SCHED_BLOCKED, 0 },
	};
#undef SC
	t_sched_stream(w, 2, 1, 101, m, sizeof(m) / sizeof(m[0]));
	t_sched_stream(w, 4, 3, 103, k, sizeof(k) / sizeof(k[0]));
	t_synth_close(w);
}

#endif

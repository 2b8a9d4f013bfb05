/*
 * A synthetic trace with sample records (SPEC §4.2.2) and stack entries
 * (§4.11) but no map entries, so every address is named "0xADDR" by the
 * symbolizer and every figure is known: thread 1 "main" marks 12 frames,
 * frame k (k = 0..11) lasting 1000 + 100 k us, so the 10 slowest are
 * frames 11 (the slowest) down to 2; frame 11 holds zone "draw" [+100,
 * +500000) ns.  Its samples (thread 2, "katra.samples 101"):
 *
 *   frame 0  +1000   stack 1 (0x1000 in 0x2000)   not in a slowest frame
 *   frame 10 +1000   stack 2 (0x3000 in 0x2000)
 *   frame 11 +1000   stack 1, in draw
 *   frame 11 +2000   stack 1, in draw
 *   frame 11 +600000 stack 2
 *
 * With @note, the header's second note is @note (e.g. "samples: absent:
 * WHY") and the file has no sample.  Times through synth.h's T_NS.
 */
#ifndef KATRA_TESTS_SYNTH_SAMPLES_H
#define KATRA_TESTS_SYNTH_SAMPLES_H

#include "synth.h"

/* The start of frame @k (its mark), in ns after the clock's start. */
static inline uint64_t t_smp_frame(int k)
{
	return (uint64_t)k * 1000000 + (uint64_t)k * (uint64_t)(k - 1) / 2 * 100000;
}

static inline void t_smp_add(struct t_synth *s, uint64_t ns, uint64_t stack)
{
	if (s->cap - s->len < 64) {
		s->cap = s->cap ? s->cap * 2 : 1 << 16;
		s->buf = realloc(s->buf, s->cap);
		cr_assert_not_null(s->buf);
	}
	uint64_t pl[2] = { 1, stack };
	kt_event ev = { .ts = T_NS(ns), .type = KT_EV_SAMPLE, .payload = (const uint8_t *)pl,
			.payload_len = sizeof(pl) };
	size_t n = kt_event_encode(s->buf + s->len, s->cap - s->len, &ev);
	cr_assert_gt(n, 0);
	s->len += n;
}

static inline void t_smp_write(const char *path, const char *note)
{
	static const char *const names[] = { "frame", "draw" };
	kt_header h;
	t_header(&h);
	const char *notes[2] = { h.notes[0], note };
	if (note)
		h.notes = notes;
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0, "open %s", path);
	for (uint32_t i = 0; i < 2; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	static const uint64_t a[2] = { 0x1000, 0x2000 }, b[2] = { 0x3000, 0x2000 };
	kt_stack_def s1 = { 1, 2, a }, s2 = { 2, 2, b };
	cr_assert_eq(kt_writer_stack(w, &s1), 0);
	cr_assert_eq(kt_writer_stack(w, &s2), 0);
	struct t_synth m = { 0 }, smp = { 0 };
	for (int k = 0; k <= 12; k++) {
		t_synth_add(&m, KT_EV_FRAME, 1, t_smp_frame(k), k);
		if (k == 11)
			t_synth_zone(&m, 2, t_smp_frame(k) + 100, 499900);
	}
	if (!note) {
		t_smp_add(&smp, t_smp_frame(0) + 1000, 1);
		t_smp_add(&smp, t_smp_frame(10) + 1000, 2);
		t_smp_add(&smp, t_smp_frame(11) + 1000, 1);
		t_smp_add(&smp, t_smp_frame(11) + 2000, 1);
		t_smp_add(&smp, t_smp_frame(11) + 600000, 2);
	}
	t_synth_flush(w, 1, "main", &m);
	if (smp.len) {
		cr_assert_eq(kt_writer_thread(w, 2, 0, "katra.samples 101"), 0);
		cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_NONE, 1, smp.buf, smp.len), 0);
		free(smp.buf);
	}
	t_synth_close(w);
}

#endif

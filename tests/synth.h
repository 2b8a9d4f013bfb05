/*
 * Synthetic traces for the stats, diff and report tests, written with the
 * public writer API: zones, frame marks and counters at chosen times on
 * chosen threads, so every duration and self time is known exactly.
 * t_ prefix, as in helpers.h.
 */
#ifndef KATRA_TESTS_SYNTH_H
#define KATRA_TESTS_SYNTH_H

#include <criterion/criterion.h>

#include <katra/writer.h>
#include "helpers.h"

/* t_header's clock: 3 GHz from tick 1000000, so 3 ticks are 1 ns. */
#define T_NS(x) (UINT64_C(1000000) + (uint64_t)(x) * 3)

/* Events of one thread being built, encoded as they come. */
struct t_synth {
	uint8_t *buf;
	size_t len, cap;
};

static inline void t_synth_add(struct t_synth *s, unsigned type, uint32_t name, uint64_t ns,
			       int64_t value)
{
	if (s->cap - s->len < 64) {
		s->cap = s->cap ? s->cap * 2 : 1 << 16;
		s->buf = realloc(s->buf, s->cap);
		cr_assert_not_null(s->buf);
	}
	kt_event ev = { .ts = T_NS(ns), .name_id = name, .type = (uint8_t)type };
	uint8_t pl[8];
	if (type == KT_EV_COUNTER_I64 || type == KT_EV_FRAME) {
		memcpy(pl, &value, sizeof(pl));
		ev.payload = pl;
		ev.payload_len = sizeof(pl);
	}
	size_t n = kt_event_encode(s->buf + s->len, s->cap - s->len, &ev);
	cr_assert_gt(n, 0);
	s->len += n;
}

/* A zone [@begin, @begin + @dur) of @name. */
static inline void t_synth_zone(struct t_synth *s, uint32_t name, uint64_t begin, uint64_t dur)
{
	t_synth_add(s, KT_EV_ZONE_BEGIN, name, begin, 0);
	t_synth_add(s, KT_EV_ZONE_END, name, begin + dur, 0);
}

/* Open a trace at @path with names 1..@n (@names[i - 1]) and, if @run_id
 * is not NULL, that run id and @epoch in its header; else no capture's. */
static inline kt_writer *t_synth_open(const char *path, const char *const *names, uint32_t n,
				      const char *run_id, uint64_t epoch)
{
	kt_header h;
	t_header(&h);
	if (run_id) {
		h.run_id = run_id;
		h.epoch = epoch;
	} else {
		h.flags &= ~KT_HDR_CAPTURE;
		h.run_id = h.capture_id = NULL;
		h.epoch = 0;
	}
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0, "open %s", path);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	return w;
}

/* Write @s's events as chunks of thread @tid (named @name) and empty @s. */
static inline void t_synth_flush(kt_writer *w, uint32_t tid, const char *name, struct t_synth *s)
{
	cr_assert_eq(kt_writer_thread(w, tid, 100 + tid, name), 0);
	for (size_t off = 0; off < s->len;) {
		/* Cut at a record boundary about every 256 KiB. */
		size_t end = off, n;
		while (end < s->len && end - off < (256u << 10)) {
			uint16_t plen;
			memcpy(&plen, s->buf + end + 14, sizeof(plen));
			n = kt_event_size(plen);
			end += n;
		}
		cr_assert_eq(kt_writer_chunk(w, tid, KT_CODEC_LZ4, 1, s->buf + off, end - off), 0);
		off = end;
	}
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static inline void t_synth_close(kt_writer *w)
{
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

#endif

/*
 * Tracks with a clock of their own (SPEC §4.9): the reader's check of a
 * track entry, a track record's fields, and the conversion of a track's
 * time to katra's ticks through its calibration pairs.
 */
#include <errno.h>
#include <string.h>

#include <katra/reader.h>
#include "format/format.h"
#include "format/reader_impl.h"

int kt__rd_decode_track(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	kt_track_def *t = &f->u.track;
	if (blen < KT__TRACK_FIXED)
		return kt__rd_stop(r, KT_EFRAME, off, "track body is %u bytes, under %u", blen,
				   KT__TRACK_FIXED);
	t->id = kt__get32(b + KT__TRACK_ID);
	t->name_id = kt__get32(b + KT__TRACK_NAME);
	t->clock_hz = kt__get64(b + KT__TRACK_HZ);
	t->pair_count = kt__get32(b + KT__TRACK_COUNT);
	t->pairs = NULL;
	/* The count is checked against its cap before it is multiplied, and
	 * against the body before anything is allocated for it. */
	if (t->pair_count > KT_MAX_TRACK_PAIRS ||
	    blen != KT__TRACK_FIXED + KT__TRACK_PAIR * t->pair_count)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__TRACK_COUNT,
				   "track of %u pairs in a %u-byte body", t->pair_count, blen);
	if (kt__get32(b + KT__TRACK_PAD))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__TRACK_PAD, "track reserved bytes");
	size_t need = (size_t)t->pair_count * sizeof(kt_track_pair) + 1;
	if (kt__rd_grow(r, (void **)&r->str_buf, &r->str_cap, need))
		return kt__rd_stop(r, -ENOMEM, off, "a track");
	/* str_buf comes from malloc, aligned for any type. */
	kt_track_pair *p = (kt_track_pair *)(void *)r->str_buf;
	for (uint32_t i = 0; i < t->pair_count; i++) {
		p[i].track_ts = kt__get64(b + KT__TRACK_FIXED + KT__TRACK_PAIR * i);
		p[i].ticks = kt__get64(b + KT__TRACK_FIXED + KT__TRACK_PAIR * i + 8);
	}
	t->pairs = p;
	const char *bad = kt__track_bad(t);
	if (bad)
		return kt__rd_stop(r, KT_EFRAME, boff, "%s", bad);
	return 0;
}

const kt_track_def *kt_trace_frame_get_track(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_TRACK ? &f->u.track : NULL;
}

/* @dt track ticks in katra ticks at the nominal rates: floor(dt * hz /
 * clock_hz), or -ERANGE past 64 bits. */
static int nominal(const kt_track_def *t, uint64_t tick_hz, uint64_t dt, uint64_t *out)
{
	unsigned __int128 q = (unsigned __int128)dt * tick_hz / t->clock_hz;
	if (q > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)q;
	return 0;
}

/* The last pair at or before @ts, or -1 when @ts is before them all. */
static long pair_at(const kt_track_def *t, uint64_t ts)
{
	long lo = 0, hi = (long)t->pair_count; /* answer in [lo - 1, hi) */
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		if (t->pairs[mid].track_ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

int kt_track_to_ticks(const kt_track_def *t, uint64_t tick_hz, uint64_t track_ts,
		      uint64_t *ticks)
{
	/* Not kt__track_bad(): that walks every pair, and this runs per
	 * event.  Pairs out of order give -EINVAL where they are used. */
	if (!t || !t->clock_hz || !tick_hz || t->pair_count > KT_MAX_TRACK_PAIRS ||
	    (t->pair_count && !t->pairs))
		return -EINVAL;
	if (!t->pair_count)
		return -ENODATA;
	long i = pair_at(t, track_ts);
	uint64_t d;
	if (i >= 0 && (uint32_t)i + 1 < t->pair_count) {
		/* Between two pairs: on the line through them, which follows
		 * the drift of one clock against the other. */
		const kt_track_pair *a = &t->pairs[i], *b = &t->pairs[i + 1];
		if (b->track_ts <= a->track_ts || b->ticks <= a->ticks)
			return -EINVAL;
		unsigned __int128 x = (unsigned __int128)(track_ts - a->track_ts) *
				      (b->ticks - a->ticks);
		*ticks = a->ticks + (uint64_t)(x / (b->track_ts - a->track_ts));
		return 0;
	}
	/* Outside the pairs: the nearest one's offset at the nominal rate. */
	const kt_track_pair *p = &t->pairs[i < 0 ? 0 : i];
	if (i < 0) {
		if (nominal(t, tick_hz, p->track_ts - track_ts, &d) || d > p->ticks)
			return -ERANGE;
		*ticks = p->ticks - d;
		return 0;
	}
	if (nominal(t, tick_hz, track_ts - p->track_ts, &d) || d > UINT64_MAX - p->ticks)
		return -ERANGE;
	*ticks = p->ticks + d;
	return 0;
}

/*
 * format/reader_internal.h - internal: the reader's entry points beyond
 * katra/reader.h, for format/'s merge and rewrite and for recovery and the
 * flusher (which open a trace at an offset, re-read frames, or take over
 * a chunk's decoded events).
 */
#ifndef KATRA_FORMAT_READER_INTERNAL_H
#define KATRA_FORMAT_READER_INTERNAL_H

#include <katra/reader.h>
#include "format/format.h"

struct kt__merge;

/* kt_reader_open_fd() for a trace that starts at file offset @base. */
int kt__reader_open_fd_at(kt_reader **out, int fd, uint64_t base, kt_reader_error *err);

/* kt_ticks_to_ns() with its set-up done once. */
struct kt__conv {
	uint64_t t0, ns0, num, den;
	uint64_t whole, frac;      /* num / den and num % den */
	uint64_t recip;            /* floor(frac * 2^64 / den) */
	int fast;                  /* den < 2^63: the reciprocal's way is exact */
};
void kt__conv_init(struct kt__conv *cv, const kt_clock_calibration *c, const kt_file_summary *stop);

/*
 * floor(dt * num / den), saturating at UINT64_MAX, exactly and without a
 * division: every event of every reader comes through here, and a 128-bit
 * division (or a double estimate and its corrections) was a third of the
 * merged read's time.  num / den = whole + frac / den; the reciprocal
 * recip = floor(frac * 2^64 / den) falls short of frac * 2^64 / den by
 * under 1, so dt * recip / 2^64 falls short of dt * frac / den by under
 * dt / 2^64 < 1: its integer part q is floor(dt * frac / den) or one
 * less.  The remainder dt * frac - q * den then lies in [0, 2 den), which
 * the low 64 bits hold exactly when den < 2^63, and says which.
 */
static inline uint64_t kt__conv_scale(const struct kt__conv *cv, uint64_t dt)
{
	if (__builtin_expect(!cv->fast, 0)) {
		unsigned __int128 x = (unsigned __int128)dt * cv->num;
		return (uint64_t)(x >> 64) >= cv->den ? UINT64_MAX : (uint64_t)(x / cv->den);
	}
	uint64_t q = (uint64_t)(((unsigned __int128)dt * cv->recip) >> 64), w;
	if (dt * cv->frac - q * cv->den >= cv->den)
		q++;
	if (__builtin_mul_overflow(dt, cv->whole, &w) || __builtin_add_overflow(w, q, &w))
		return UINT64_MAX;
	return w;
}

static inline uint64_t kt__conv_apply(const struct kt__conv *cv, uint64_t ticks)
{
	if (ticks >= cv->t0) {
		uint64_t add = kt__conv_scale(cv, ticks - cv->t0);
		return add > UINT64_MAX - cv->ns0 ? UINT64_MAX : cv->ns0 + add;
	}
	/* Before the calibration point: rare, so the plain way, truncating
	 * toward zero as C division does. */
	unsigned __int128 back = (unsigned __int128)(cv->t0 - ticks) * cv->num / cv->den;
	return back >= cv->ns0 ? 0 : cv->ns0 - (uint64_t)back;
}

/* The reader's merge state, created on first use; NULL without memory. */
struct kt__merge *kt__reader_merge(kt_reader *r);
struct kt__merge *kt__merge_new(kt_reader *r);
/* Free @m (NULL is a no-op), taking what it held off @r's accounting. */
void kt__merge_free(kt_reader *r, struct kt__merge *m);

/* Count @delta more bytes held by the reader (its status's buffer_bytes
 * and peak): buffers and tables, the merge's included. */
void kt__reader_account(kt_reader *r, int64_t delta);

/* Set the reader's last error, outside the sequential pass (which keeps
 * its own sticky status).  Return: @code. */
int kt__reader_fail(kt_reader *r, int code, uint64_t off, const char *detail);

/*
 * With @on, the sequential pass checks chunk frames (head, checksum, fixed
 * fields, order, accounting) but neither decompresses nor walks their
 * events, and returns them with events NULL: for an index that loads the
 * chunks again later, through kt__reader_frame_at(), which checks them
 * whole.
 */
void kt__reader_set_headers_only(kt_reader *r, int on);

/*
 * kt__reader_salvage - whether the pass goes on past a fault @code found
 * at @off (salvage is on and @code is a verdict on bytes); if so, the
 * frame's @bytes are counted as skipped.  Returns 1 to go on, 0 to stop.
 */
int kt__reader_salvage(kt_reader *r, int code, uint64_t off, uint64_t bytes);

/* kt__reader_keeps - whether kt_reader_set_filter()'s filter (if any)
 * keeps @ev. */
int kt__reader_keeps(kt_reader *r, const kt_event *ev);

/*
 * Take ownership of the decoded events of chunk @f (just returned by
 * kt__reader_frame_at(), which never leaves them in the sequential pass's
 * read-ahead window) without copying them: the reader's buffer holding them is traded
 * for the caller's *@buf (which may be NULL).  Returns where the events are
 * now; for a memory reader, the caller's own bytes, and nothing is traded.
 * The reader's buffer accounting then counts the caller's old buffer.
 */
const uint8_t *kt__reader_steal_events(kt_reader *r, const kt_trace_frame *f, uint8_t **buf,
				       size_t *cap);

/*
 * How many events of the sequential pass so far have a timestamp earlier
 * than the event before them on their thread (SPEC §4.1 allows it; a
 * reader counts it, never refuses it), and in *@first_off (when not NULL)
 * the offset of the first one's chunk frame.  Reset by a rewind.
 */
uint64_t kt__reader_ts_backwards(const kt_reader *r, uint64_t *first_off);

/* Back to the first frame, keeping the merge state (kt_reader_rewind()
 * without dropping it).  Return: 0. */
int kt__reader_restart(kt_reader *r);

/*
 * Read, check and decode the frame at @off again, outside the reader's
 * sequential pass: no accounting, no order checks, and the pass's position
 * and status are left as they were.  Return: 0, or a negative code.
 */
int kt__reader_frame_at(kt_reader *r, uint64_t off, kt_trace_frame *f);

/* kt_chunk_next(), inline: the merge steps through every event with it. */
static inline int kt__chunk_next(kt_chunk_iter *it, kt_event *ev)
{
	if (it->pos >= it->end)
		return 0;
	const uint8_t *p = it->pos;
	ev->ts = kt__get64(p + KT_REC_TS);
	ev->name_id = kt__get32(p + KT_REC_NAME);
	ev->type = p[KT_REC_TYPE];
	ev->flags = p[KT_REC_FLAGS];
	ev->payload_len = kt__get16(p + KT_REC_LEN);
	ev->payload = p + KT_REC_HEAD;
	ev->thread_id = it->thread_id;
	it->pos += kt_event_size(ev->payload_len);
	return 1;
}

#endif

/*
 * katra/track.h - tracks with a clock of their own: zones and counters
 * emitted with explicit timestamps onto a named timeline whose clock is
 * not the CPU's (a GPU queue, a remote device, an imported timeline).
 *
 * A track is created once (kt_track_create(): its name and its clock's
 * rate) and gets an id from 1 to KT_MAX_TRACKS.  Its events carry the
 * track's own timestamps; calibration pairs (kt_track_calibrate(): one
 * instant read on both clocks) let a reader put them on katra's clock
 * (kt_track_to_ticks() in katra/reader.h).  The session writes each track,
 * with its pairs, at its end (SPEC §4.9).
 *
 * A track's events are ordinary records (SPEC §4.2, types 16-19) of the
 * thread that emits them, whenever they become known: a GPU's timestamp
 * queries come back on a CPU thread a frame or two late, in batches, and
 * that thread emits them then.  The record's own ts is when it was
 * emitted; the track time in its payload is when it happened.  Per
 * track, emit a zone's begin before its end and nested zones inside their
 * parent, as for CPU zones; tracks are independent of threads.
 *
 * Threads: any thread.  The emits (kt_track_zone_begin() and the others
 * below) are katra.h's fast path, lock-free, allocation-free and as
 * async-signal-safe as kt_counter().  kt_track_create() and
 * kt_track_calibrate() take the track table's lock (not from a signal
 * handler); calibrate about once a frame or a second, not per event.
 */
#ifndef KATRA_TRACK_H
#define KATRA_TRACK_H

#include <katra/katra.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * kt_track_create - the id of the track named @name whose clock runs at
 * @clock_hz ticks per second (1000000000 for a clock in ns), creating it
 * on first use.  A name names one track for the life of the process.
 * Return: the id (1..KT_MAX_TRACKS); -EINVAL for a name kt_name() refuses
 * or a rate of 0; -EEXIST when @name is a track with another rate;
 * -ENOSPC past KT_MAX_TRACKS tracks; -ENOMEM.  Any thread (takes a lock).
 */
KT_API int kt_track_create(const char *name, uint64_t clock_hz);

/**
 * kt_track_calibrate - record that @track_ts on track @track's clock and
 * @ticks on katra's (kt_now()) are the same instant.  Pairs must go
 * forward on both clocks.  A track keeps at most KT_MAX_TRACK_PAIRS: when
 * full, every other pair is let go (the first and the newest stay), so a
 * long run keeps pairs over its whole span, denser toward its end.
 * Return: 0; -EINVAL for a track that was not created, or a pair not
 * strictly after the track's last one on both clocks.  Any thread (takes
 * a lock).
 */
KT_API int kt_track_calibrate(uint32_t track, uint64_t track_ts, uint64_t ticks);

#ifdef KATRA_DISABLE
/* Compiled out (katra/disable.h): no track (id 0), calibration a no-op. */
#define kt_track_create(name, hz) KT__OFF(kt_track_create(name, hz), kt__off_int(0))
#define kt_track_calibrate(track, ts, ticks)                                        \
	KT__OFF(kt_track_calibrate(track, ts, ticks), kt__off_int(0))
#endif

/** kt_track_zone_begin - a zone named @name_id begins on track @track at
 * @track_ts (the track's clock). */
static inline void kt_track_zone_begin(uint32_t track, uint32_t name_id, uint64_t track_ts)
{
	if (kt__on())
		kt__emit(KT_EV_TRACK_BEGIN, name_id, (uint8_t)track, &track_ts, 8);
}

/** kt_track_zone_end - the innermost zone named @name_id of track @track
 * ends at @track_ts. */
static inline void kt_track_zone_end(uint32_t track, uint32_t name_id, uint64_t track_ts)
{
	if (kt__on())
		kt__emit(KT_EV_TRACK_END, name_id, (uint8_t)track, &track_ts, 8);
}

/** kt_track_counter - counter @name_id of track @track is @value from
 * @track_ts on. */
static inline void kt_track_counter(uint32_t track, uint32_t name_id, uint64_t track_ts,
				    int64_t value)
{
	uint64_t pl[2] = { track_ts, (uint64_t)value };
	if (kt__on())
		kt__emit(KT_EV_TRACK_COUNTER_I64, name_id, (uint8_t)track, pl, sizeof(pl));
}

/** kt_track_counter_f64 - as kt_track_counter(), a floating-point value. */
static inline void kt_track_counter_f64(uint32_t track, uint32_t name_id, uint64_t track_ts,
					double value)
{
	uint64_t pl[2] = { track_ts, 0 };
	memcpy(&pl[1], &value, 8);
	if (kt__on())
		kt__emit(KT_EV_TRACK_COUNTER_F64, name_id, (uint8_t)track, pl, sizeof(pl));
}

#ifdef __cplusplus
}
#endif
#endif /* KATRA_TRACK_H */

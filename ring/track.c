/*
 * Tracks with a clock of their own (katra/track.h): the process's table of
 * tracks and their calibration pairs, which each session writes at its
 * end (SPEC §4.9), and which a backing that keeps tracks (crash files) is
 * told of as they change, so that a killed process's trace has them too.
 * A track's events never come here; they are records.
 *
 * The table is fixed (KT_MAX_TRACKS entries, ids are indexes plus one);
 * each track's pairs are one allocation of KT_MAX_TRACK_PAIRS made at its
 * creation, so calibrating never allocates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <katra/track.h>
#include "ring/private.h"

struct track {
	uint32_t name_id;
	uint64_t clock_hz;
	uint32_t count;
	kt_track_pair *pairs;
};

static pthread_mutex_t track_lock = PTHREAD_MUTEX_INITIALIZER;
static struct track tracks[KT_MAX_TRACKS];
static uint32_t track_count;
typedef void (*track_log_fn)(void *ctx, const kt_track_def *t);
static struct kt__log track_log; /* a backing that keeps tracks: told of each */

/* Under track_lock: tell the log of track @i as it is now. */
static void log_track(uint32_t i)
{
	if (!track_log.fn)
		return;
	kt_track_def d = { i + 1, tracks[i].name_id, tracks[i].clock_hz, tracks[i].count,
			   tracks[i].pairs };
	((track_log_fn)track_log.fn)(track_log.ctx, &d);
}

int kt_track_create(const char *name, uint64_t clock_hz)
{
	uint32_t id = clock_hz ? kt_name(name) : 0;
	if (!id)
		return -EINVAL;
	int rc = -ENOSPC;
	int cancel = kt__lock_nocancel(&track_lock);
	for (uint32_t i = 0; i < track_count; i++)
		if (tracks[i].name_id == id) {
			rc = tracks[i].clock_hz == clock_hz ? (int)i + 1 : -EEXIST;
			goto out;
		}
	if (track_count < KT_MAX_TRACKS) {
		struct track *t = &tracks[track_count];
		t->pairs = calloc(KT_MAX_TRACK_PAIRS, sizeof(*t->pairs));
		if (!t->pairs) {
			rc = -ENOMEM;
			goto out;
		}
		t->name_id = id;
		t->clock_hz = clock_hz;
		rc = (int)++track_count;
		log_track(track_count - 1);
	}
out:
	kt__unlock_nocancel(&track_lock, cancel);
	return rc;
}

/* Keep every other pair of a full table, the first among them: the span
 * stays covered at half the density. */
static void thin(struct track *t)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->count; i += 2)
		t->pairs[n++] = t->pairs[i];
	t->count = n;
}

int kt_track_calibrate(uint32_t track, uint64_t track_ts, uint64_t ticks)
{
	int rc = -EINVAL;
	int cancel = kt__lock_nocancel(&track_lock);
	if (track && track <= track_count) {
		struct track *t = &tracks[track - 1];
		const kt_track_pair *last = t->count ? &t->pairs[t->count - 1] : NULL;
		if (!last || (track_ts > last->track_ts && ticks > last->ticks)) {
			if (t->count == KT_MAX_TRACK_PAIRS)
				thin(t);
			t->pairs[t->count++] = (kt_track_pair){ track_ts, ticks };
			log_track(track - 1);
			rc = 0;
		}
	}
	kt__unlock_nocancel(&track_lock, cancel);
	return rc;
}

void kt__tracks_each(void (*fn)(void *ctx, const kt_track_def *t), void *ctx)
{
	pthread_mutex_lock(&track_lock);
	for (uint32_t i = 0; i < track_count; i++) {
		kt_track_def d = { i + 1, tracks[i].name_id, tracks[i].clock_hz, tracks[i].count,
				   tracks[i].pairs };
		fn(ctx, &d);
	}
	pthread_mutex_unlock(&track_lock);
}

void kt__tracks_set_log(void (*fn)(void *ctx, const kt_track_def *t), void *ctx)
{
	kt__log_set(&track_lock, &track_log, (void (*)(void))fn, ctx, &track_count, log_track);
}

void kt__tracks_fork(int phase)
{
	kt__fork_lock(&track_lock, phase);
}

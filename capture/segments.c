/*
 * A capture's files and the output its session writes to (kt__output,
 * flush/flush.h): the byte cap, with the room kept free for the end of
 * each file, and under KT_CAP_KEEP_NEWEST the segments (max_bytes /
 * KT_CAP_SEGMENTS bytes each, opened below the root as the session asks
 * for them) and the retire window: once a segment is KT_CAP_SEGMENTS
 * behind the current one it is closed and deleted, so the segments kept
 * sum to at most max_bytes.  The output's callbacks run on the session's
 * flusher thread; the segments' other users (publish.c, the start's
 * failure path) run once the session has stopped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <katra/capture.h>
#include "flush/flush.h"
#include "capture/manager_impl.h"

static void seg_name(const struct capture *c, uint32_t index, char *buf, size_t size)
{
	if (index == 0)
		snprintf(buf, size, "%s.katra", c->base);
	else
		snprintf(buf, size, "%s.seg%" PRIu32, c->base, index);
}

/* Close and delete every file of @c that is not published. */
void kt__mgr_remove_temps(struct capture *c)
{
	char name[128];
	for (uint32_t i = c->seg_lo; i <= c->seg_hi; i++) {
		if (c->seg_fd[i % KT__MGR_NSEG] >= 0)
			close(c->seg_fd[i % KT__MGR_NSEG]);
		c->seg_fd[i % KT__MGR_NSEG] = -1;
		seg_name(c, i, name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	static const char *const other[] = { "out", "json" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s.%s", c->base, other[i]);
		unlinkat(c->m->rootfd, name, 0);
	}
}

/* ---- the segments (on the flusher's thread while the session runs) ------ */

/* The session's output is full; any backend may say so too
 * (kt_backend_args.on_cap). */
void kt__mgr_on_cap(void *ctx)
{
	struct capture *c = ctx;
	pthread_mutex_lock(&c->m->lock);
	c->capped = 1;
	pthread_cond_broadcast(&c->m->cond);
	pthread_mutex_unlock(&c->m->lock);
}

int kt__mgr_open_segment(struct capture *c, uint32_t index)
{
	char name[128];
	seg_name(c, index, name, sizeof(name));
	int fd = kt__mgr_open_beneath(c->m->rootfd, name, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd >= 0) {
		c->seg_fd[index % KT__MGR_NSEG] = fd;
		c->seg_hi = index;
	}
	return fd;
}

/* Segment @index, whose events end at @last_tick, falls out of the window:
 * close it and have the capture's thread delete it. */
static void retire(struct capture *c, uint32_t index, uint64_t last_tick)
{
	char name[128];
	if (index < c->seg_lo || index > c->seg_hi)
		return;
	close(c->seg_fd[index % KT__MGR_NSEG]);
	c->seg_fd[index % KT__MGR_NSEG] = -1;
	c->seg_lo = index + 1;
	pthread_mutex_lock(&c->m->lock);
	int queued = c->unlink_n < sizeof(c->unlink_q) / sizeof(*c->unlink_q);
	if (queued) {
		c->unlink_q[c->unlink_n++] = index;
		pthread_cond_broadcast(&c->m->cond);
	}
	pthread_mutex_unlock(&c->m->lock);
	if (!queued) {
		seg_name(c, index, name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	if (!c->retired || last_tick > c->retired_tick)
		c->retired_tick = last_tick;
	c->retired = 1;
}

/* Delete the retired segments queued for it; called and returns with the
 * lock held, and drops it meanwhile. */
void kt__mgr_unlink_retired(struct capture *c)
{
	uint32_t q[sizeof(c->unlink_q) / sizeof(*c->unlink_q)];
	unsigned n = c->unlink_n;
	memcpy(q, c->unlink_q, n * sizeof(*q));
	c->unlink_n = 0;
	pthread_mutex_unlock(&c->m->lock);
	for (unsigned i = 0; i < n; i++) {
		char name[128];
		seg_name(c, q[i], name, sizeof(name));
		unlinkat(c->m->rootfd, name, 0);
	}
	pthread_mutex_lock(&c->m->lock);
}

/* ---- the session's output -------------------------------------------- */

/* Room for @need more bytes while the end of the file (@tail) stays free;
 * else the next segment, or, under KT_CAP_STOP, none. */
static int seg_room(void *ctx, uint64_t at, uint64_t need, uint64_t tail)
{
	struct capture *c = ctx;
	if (at + need + tail <= c->seg_bytes)
		return KT__ROOM_FITS;
	return c->m->cap_policy == KT_CAP_KEEP_NEWEST ? KT__ROOM_NEXT : KT__ROOM_FULL;
}

static int seg_next(void *ctx)
{
	struct capture *c = ctx;
	return kt__mgr_open_segment(c, c->seg_cur + 1);
}

/* The next segment is the session's now: the one KT_CAP_SEGMENTS behind
 * it goes, and its slot starts over. */
static void seg_started(void *ctx)
{
	struct capture *c = ctx;
	uint32_t next = c->seg_cur + 1;
	if (next >= KT_CAP_SEGMENTS)
		retire(c, next - KT_CAP_SEGMENTS, c->seg_last[next % KT_CAP_SEGMENTS]);
	c->seg_last[next % KT_CAP_SEGMENTS] = 0;
	c->seg_cur = next;
}

static void seg_wrote(void *ctx, uint64_t last)
{
	struct capture *c = ctx;
	uint64_t *l = &c->seg_last[c->seg_cur % KT_CAP_SEGMENTS];
	if (last > *l)
		*l = last;
}

kt__output kt__mgr_output(struct capture *c)
{
	kt_manager *m = c->m;
	int keep = m->cap_policy == KT_CAP_KEEP_NEWEST;
	c->seg_bytes = keep ? m->max_bytes / KT_CAP_SEGMENTS : m->max_bytes;
	return (kt__output){ .max_bytes = m->max_bytes, .file_bytes = c->seg_bytes,
			     .room = seg_room, .next = keep ? seg_next : NULL,
			     .started = seg_started, .wrote = seg_wrote,
			     .full = kt__mgr_on_cap, .ctx = c };
}

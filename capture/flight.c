/*
 * The capture manager's flight policy: the run stays in the rings of a
 * flight session, and only its stop writes anything, the window
 * [boundary_finish - duration, boundary_finish] taken from memory by the
 * backend's snapshot into the capture's first segment.  From there the
 * capture publishes as any other (publish.c): trimmed to the window,
 * hashed, with its sidecar.
 */
#include <pthread.h>

#include <katra/capture.h>
#include "capture/manager_impl.h"

/* The snapshot reaches back this much before the window's start: its
 * clock is read a moment after the manager's, and the trim cuts the rest
 * at the window's exact start. */
#define SLACK_NS 50000000ull

int kt__mgr_flight_snapshot(struct capture *c)
{
	kt_manager *m = c->m;
	pthread_mutex_lock(&m->lock);
	kt_capture_status *st = &c->st;
	uint64_t end = st->boundary_finish ? st->boundary_finish : st->stop_requested_at;
	uint64_t from = st->boundary_start ? st->boundary_start : st->start_completed_at;
	if (end > m->duration_ns && end - m->duration_ns > from)
		from = st->boundary_start = end - m->duration_ns;
	uint64_t now = kt__mgr_now(m);
	pthread_mutex_unlock(&m->lock);
	uint64_t age = (now > from ? now - from : 0) + SLACK_NS;
	kt_snapshot_result res = { 0 };
	int rc = m->backend.snapshot(m->backend.ctx, c->handle, c->seg_fd[0], age, m->max_bytes,
				     &res);
	/* Rings that did not reach back to the window's start: the file
	 * begins at its first event (publish.c turns that into head loss). */
	c->flight_first_tick = res.head_loss_ns ? res.window_start : 0;
	c->flight_trimmed = res.events_trimmed;
	return rc;
}

/*
 * A capture's thread: it waits for its stop (requested, at its duration,
 * or at its byte cap), stops the backend, trims the trace to the run's
 * boundaries and publishes it.
 *
 * Publishing is ordered so that a crash at any instant leaves no trace in
 * place without its sidecar and no sidecar that lies about its trace:
 *   1. the trimmed trace is written to a temporary name and fsynced;
 *   2. its SHA-256 is taken from the bytes read back, and checked to parse;
 *   3. the sidecar is written to a temporary name and fsynced;
 *   4. the sidecar is renamed into place, then the directory fsynced;
 *   5. the trace is renamed into place, then the directory fsynced.
 * A crash between 4 and 5 leaves a sidecar whose trace is missing; the
 * next manager over the root removes it (root.c), with every temporary
 * file of a process that is gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <katra/capture.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "capture/capture_internal.h"
#include "capture/manager_impl.h"

/* SHA-256 of the whole of @fd, and a check that it parses to its summary. */
static int digest_and_check(int fd, char hex[65], uint64_t *events)
{
	uint64_t bytes;
	int rc = kt__sha256_fd(fd, hex, &bytes);
	if (rc)
		return rc;
	kt_reader *r = NULL;
	rc = kt_reader_open_fd(fd, NULL, &r);
	if (rc < 0)
		return rc;
	kt_trace_frame f;
	int have_summary = 0;
	*events = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK)
			*events += f.u.chunk.event_count;
		have_summary |= f.kind == KT_FRAME_SUMMARY;
	}
	kt_reader_close(r);
	return rc < 0 ? rc : have_summary ? 0 : KT_ETRUNCATED;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/*
 * The spans, from the boundaries and the window the file covers:
 * [@from, @to] in wall ns (0 when the side is open).
 */
static void spans(kt_capture_status *st, uint64_t from, uint64_t to)
{
	uint64_t bs = st->boundary_start, bf = st->boundary_finish;
	st->requested_span_ns = bs && bf ? (int64_t)sub0(bf, bs) : 0;
	/* Without a run start the capture's own start stands for it: a
	 * keep-newest capture still reports the head it let go. */
	st->head_loss_ns = (int64_t)sub0(from, bs ? bs : st->start_completed_at);
	st->tail_excess_ns = bf ? (int64_t)sub0(st->stop_requested_at, bf) : 0;
	uint64_t a = from > bs ? from : bs;
	uint64_t b = bf && bf < to ? bf : to;
	st->capture_span_ns = (int64_t)sub0(b, a);
}


/* One publish's names, files and outcome, on the capture's thread. */
struct pub {
	struct capture *c;
	kt_manager *m;
	kt_capture_status *st;       /* the thread's copy, filled in as it goes */
	char out_tmp[128], json_tmp[128];
	int fds[KT__MGR_NSEG];       /* the segments kept, oldest first */
	size_t n;
	char note[160];
	const char *notes[1];
	int out, jfd;
	char *json;
	kt_capture_code code;
};

/*
 * The window to keep, in the trace's monotonic ns, from the run's
 * wall-clock boundaries and the header's pair of start times, into @o
 * with its note.  Return: 0, or -1 when the first segment does not read.
 */
static int plan_trim(struct pub *p, kt_rewrite_options *o)
{
	kt_capture_status *st = p->st;
	kt_reader *hr = NULL;
	if (!p->n || kt_reader_open_fd(p->fds[0], NULL, &hr) < 0) {
		kt_reader_close(hr);
		return -1;
	}
	kt_header h = *kt_reader_get_header(hr);
	uint64_t w0 = h.start_wall_ns, m0 = h.start_mono_ns;
	*o = (kt_rewrite_options){ .in_fds = p->fds, .n_in = p->n, .codec = -1, .filter = 1,
				   .from_ns = 0, .to_ns = UINT64_MAX };
	if (st->boundary_start)
		o->from_ns = sub0(add_sat(st->boundary_start, m0), w0);
	if (st->boundary_finish)
		o->to_ns = sub0(add_sat(st->boundary_finish, m0), w0);
	/* The capture covers the run from its start, or from just after the
	 * last event of the newest segment it let go. */
	uint64_t covered_from = st->start_completed_at;
	if (p->c->retired) {
		uint64_t cut = kt_ticks_to_ns(&h.clock, NULL, p->c->retired_tick) + 1;
		if (cut > o->from_ns)
			o->from_ns = cut;
		uint64_t wcut = sub0(add_sat(cut, w0), m0);
		if (wcut > covered_from)
			covered_from = wcut;
	}
	/* A flight capture's rings no longer held the window's start: it is
	 * covered from the first event they did hold. */
	if (p->c->flight_first_tick) {
		uint64_t first = kt_ticks_to_ns(&h.clock, NULL, p->c->flight_first_tick);
		uint64_t wfirst = sub0(add_sat(first, w0), m0);
		if (wfirst > covered_from)
			covered_from = wfirst;
	}
	kt_reader_close(hr);
	spans(st, covered_from, st->stop_requested_at);
	snprintf(p->note, sizeof(p->note),
		 "katra.capture: trimmed to [%" PRIu64 ", %" PRIu64 "] ns; head_loss_ns=%" PRId64
		 " tail_excess_ns=%" PRId64,
		 o->from_ns, o->to_ns, st->head_loss_ns, st->tail_excess_ns);
	p->notes[0] = p->note;
	o->extra_notes = p->notes;
	o->n_extra_notes = 1;
	return 0;
}

/* Steps 1 and 2: the trimmed trace, fsynced, hashed and parse-checked.
 * Return: 0, or -1 with p->code set. */
static int write_trace(struct pub *p, kt_rewrite_options *o)
{
	p->out = kt__mgr_open_beneath(p->m->rootfd, p->out_tmp, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (p->out < 0)
		return -1;
	o->out_fd = p->out;
	kt_rewrite_result rr;
	if (kt_rewrite(o, &rr) < 0)
		return -1;
	if (rr.bytes > p->m->max_bytes) {
		p->code = KT_CODE_OUTPUT_TOO_LARGE;
		return -1;
	}
	if (kt__mgr_fsync(p->m, p->out) < 0) {
		p->code = KT_CODE_DURABILITY_UNKNOWN;
		return -1;
	}
	if (digest_and_check(p->out, p->st->sha256, &p->st->events) < 0)
		return -1;
	/* A flight snapshot's own cut to its window counts as trimmed too. */
	p->st->events_trimmed = rr.events_in - rr.events_out + p->c->flight_trimmed;
	p->st->bytes = rr.bytes;
	return 0;
}

/* Step 3: the status as published, written as the sidecar and fsynced.
 * Return: 0, or -1 with p->code set. */
static int write_sidecar(struct pub *p)
{
	kt_capture_status *st = p->st;
	snprintf(st->file, sizeof(st->file), "%s.%" PRIu64 ".%s.katra", st->run_id, st->epoch,
		 st->capture_id);
	snprintf(st->sidecar, sizeof(st->sidecar), "%s.json", st->file);
	st->stop_completed_at = kt__mgr_now(p->m);
	st->state = KT_STATE_PUBLISHED;
	st->complete = st->boundary_start && st->boundary_finish && !st->head_loss_ns &&
		       st->stop_requested_at >= st->boundary_finish &&
		       st->code != KT_CODE_OUTPUT_TOO_LARGE;
	if (!(p->json = kt_capture_status_json(st)))
		return -1;
	p->jfd = kt__mgr_open_beneath(p->m->rootfd, p->json_tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (p->jfd < 0 || kt__write_all(p->jfd, p->json, strlen(p->json)) < 0 ||
	    kt__write_all(p->jfd, "\n", 1) < 0)
		return -1;
	if (kt__mgr_fsync(p->m, p->jfd) < 0) {
		p->code = KT_CODE_DURABILITY_UNKNOWN;
		return -1;
	}
	return 0;
}

/* Steps 4 and 5: the sidecar, then the trace, renamed into place.
 * Return: 0 with p->code the published code, or -1 with p->code set. */
static int put_in_place(struct pub *p)
{
	kt_manager *m = p->m;
	kt_capture_status *st = p->st;
	/* A pair already under these names (a restarted process replaying a
	 * run, epoch and id): its trace goes first, so that no moment shows
	 * it beside the new sidecar. */
	if (unlinkat(m->rootfd, st->file, 0) == 0)
		kt__mgr_fsync(m, m->rootfd);
	if (kt__mgr_rename(m, p->json_tmp, st->sidecar) < 0)
		return -1;
	if (kt__mgr_fsync(m, m->rootfd) < 0) {
		p->code = KT_CODE_DURABILITY_UNKNOWN;
		unlinkat(m->rootfd, st->sidecar, 0);
		return -1;
	}
	if (kt__mgr_rename(m, p->out_tmp, st->file) < 0) {
		unlinkat(m->rootfd, st->sidecar, 0);
		return -1;
	}
	p->code = st->code;
	if (kt__mgr_fsync(m, m->rootfd) < 0)
		p->code = KT_CODE_DURABILITY_UNKNOWN; /* in place; whether it lasts is unknown */
	return 0;
}

static int abort_asked(struct capture *c)
{
	pthread_mutex_lock(&c->m->lock);
	int abort_now = c->abort_req;
	pthread_mutex_unlock(&c->m->lock);
	return abort_now;
}

/*
 * Trim, check and publish, in the five steps above.  Returns the final
 * state and sets *@code; called without the lock, on the capture's
 * thread.  @st is the thread's copy of the status, filled in as it goes.
 */
static kt_capture_state publish(struct capture *c, kt_capture_status *st, kt_capture_code *code)
{
	struct pub p = { .c = c, .m = c->m, .st = st, .out = -1, .jfd = -1 };
	for (uint32_t i = c->seg_lo; i <= c->seg_hi; i++)
		if (c->seg_fd[i % KT__MGR_NSEG] >= 0)
			p.fds[p.n++] = c->seg_fd[i % KT__MGR_NSEG];
	snprintf(p.out_tmp, sizeof(p.out_tmp), "%s.out", c->base);
	snprintf(p.json_tmp, sizeof(p.json_tmp), "%s.json", c->base);
	kt_rewrite_options o;
	if (plan_trim(&p, &o) < 0) {
		kt__mgr_remove_temps(c);
		*code = KT_CODE_STOP_FAILED;
		return KT_STATE_FAILED;
	}
	kt_capture_state state = KT_STATE_FAILED;
	p.code = KT_CODE_PUBLISH_FAILED;
	if (write_trace(&p, &o) == 0 && write_sidecar(&p) == 0) {
		if (abort_asked(c)) {
			p.code = KT_CODE_ABORTED;
			state = KT_STATE_ABORTED;
		} else if (put_in_place(&p) == 0) {
			state = KT_STATE_PUBLISHED;
		}
	}
	if (p.out >= 0)
		close(p.out);
	if (p.jfd >= 0)
		close(p.jfd);
	free(p.json);
	if (state != KT_STATE_PUBLISHED) {
		st->file[0] = st->sidecar[0] = st->sha256[0] = 0;
		st->bytes = 0;
		st->complete = 0;
	}
	kt__mgr_remove_temps(c);
	*code = p.code;
	return state;
}

/* Wait, deleting retired segments meanwhile, until the capture is asked
 * to stop or abort, reaches its byte cap or its duration; then mark why. */
static void wait_for_stop(struct capture *c)
{
	kt_manager *m = c->m;
	struct timespec dl;
	kt__mgr_deadline(&dl, m->duration_ns);
	pthread_mutex_lock(&m->lock);
	while (!c->stop_req && !c->capped && !c->abort_req) {
		if (c->unlink_n) {
			kt__mgr_unlink_retired(c);
			continue;
		}
		/* A flight capture keeps its run in memory: duration is its
		 * window, not a limit on how long it runs. */
		if (m->flight)
			pthread_cond_wait(&m->cond, &m->lock);
		else if (pthread_cond_timedwait(&m->cond, &m->lock, &dl) == ETIMEDOUT)
			break;
	}
	if (!c->stop_req && c->abort_req) {
		/* Closing the manager: no reason, nothing will be published. */
		c->stop_req = 1;
		c->st.stop_requested_at = kt__mgr_now(m);
	} else if (!c->stop_req) {
		/* It stops itself: at the byte cap, or at its duration. */
		c->stop_req = 1;
		c->st.stop_requested_at = kt__mgr_now(m);
		int cap = c->capped;
		snprintf(c->st.stop_reason, sizeof(c->st.stop_reason), "%s",
			 cap ? KT_CAPTURE_REASON_MAX_BYTES : KT_CAPTURE_REASON_MAX_DURATION);
		c->st.code = cap ? KT_CODE_OUTPUT_TOO_LARGE : KT_CODE_DURATION_COMPLETE;
		c->st.state = KT_STATE_STOPPING;
	}
	pthread_mutex_unlock(&m->lock);
}

/* The capture's final status, made visible; the capture is no longer
 * active and its owner lets go. */
static void finish(struct capture *c, kt_capture_status *st, kt_capture_state state,
		   kt_capture_code code)
{
	kt_manager *m = c->m;
	pthread_mutex_lock(&m->lock);
	if (state != KT_STATE_PUBLISHED) {
		/* What publish() filled stays out of a status without a file. */
		st->file[0] = st->sidecar[0] = st->sha256[0] = 0;
		st->bytes = 0;
		st->complete = 0;
	}
	if (!st->stop_completed_at)
		st->stop_completed_at = kt__mgr_now(m);
	st->state = state;
	st->code = code;
	if (state != KT_STATE_PUBLISHED)
		spans(st, st->start_completed_at, st->stop_requested_at);
	c->st = *st;
	c->running = 0;
	if (m->active == c)
		m->active = NULL;
	m->owner.release(m->owner.ctx, c->st.capture_id);
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

void *kt__mgr_capture_main(void *arg)
{
	struct capture *c = arg;
	kt_manager *m = c->m;
	wait_for_stop(c);
	/* A flight capture's window, from memory, before its session goes. */
	int snap_rc = m->flight && !abort_asked(c) ? kt__mgr_flight_snapshot(c) : 0;
	/* Without the lock: stopping a session waits for its flusher, which
	 * may be inside kt__mgr_on_cap() waiting for the lock. */
	int rc = m->backend.stop(m->backend.ctx, c->handle);
	rc = snap_rc ? snap_rc : rc;

	pthread_mutex_lock(&m->lock);
	kt__mgr_unlink_retired(c);
	kt_capture_status st = c->st;
	int abort_now = c->abort_req;
	/* A KEEP_NEWEST cap that could not rotate, or a STOP cap reached as
	 * the stop was asked for: the file lacks events either way. */
	if (c->capped && st.code == KT_CODE_NONE)
		st.code = c->st.code = KT_CODE_OUTPUT_TOO_LARGE;
	pthread_mutex_unlock(&m->lock);

	kt_capture_code code;
	kt_capture_state state;
	if (abort_now) {
		kt__mgr_remove_temps(c);
		state = KT_STATE_ABORTED;
		code = KT_CODE_ABORTED;
	} else if (rc) {
		kt__mgr_remove_temps(c);
		state = KT_STATE_FAILED;
		code = KT_CODE_STOP_FAILED;
	} else {
		state = publish(c, &st, &code);
	}
	finish(c, &st, state, code);
	return NULL;
}

/*
 * chrome.c - the Chrome Trace Event document with balanced zones, drop
 * marks and metadata; chrome.h says the rules.  Objects are formatted by
 * fmt.c; this file decides which, from export_state.c's matcher.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/chrome.h"
#include "tools/export/chrome_sched.h"
#include "tools/export/export_args.h"
#include "tools/pipeline/fmt.h"
#include "tools/pipeline/fmt_mid.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/text.h"
#include "tools/pipeline/tracks.h"

enum { CUT_START = 1, CUT_END = 2, CLOSED = 4 };
/* In a kept begin time: the zone's start was cut; the zone went out as a
 * begin (B), its end to be an E.  (A time past 2^62 ns, from a crafted
 * clock, loses those bits: a wrong duration, never a fault.) */
#define START_BIT (UINT64_C(1) << 63)
#define AS_B_BIT (UINT64_C(1) << 62)
#define TIME_MASK (AS_B_BIT - 1)

/* The args a zone's object gets, by its CUT_* and CLOSED bits. */
static const char *const zone_args[] = {
	"", "\"cut\":\"start\"", "\"cut\":\"end\"", "\"cut\":\"both\"",
	"\"closed\":true", "\"cut\":\"start\",\"closed\":true", "\"cut\":\"end\",\"closed\":true",
	"\"cut\":\"both\",\"closed\":true",
};

/* A thread's open zones' begin times (ns, START_BIT when cut), for
 * --complete: its first CHROME_X_DEPTH levels. */
struct xbegin {
	uint64_t *ns;
	size_t cap;
};

struct ch {
	struct xstate xs;
	struct fmt_job job;
	struct memstats mem;   /* the pools' live bytes, for memory counters */
	struct fmt *fm;
	kt_reader *r;
	const struct chrome_opts *o;
	struct xbegin *begins; /* by thread index */
	size_t nbegins, begins_cap;
	struct tracks tracks;  /* zones of tracks with a clock of their own */
	uint8_t *track_b[KT_MAX_TRACKS + 1]; /* per track and level: went out as B */
	struct chsched sched;  /* scheduler records as state slices */
	uint64_t samples;      /* sample records: written after the events */
	uint64_t last_ns;      /* the last event's time: where states in progress end */
};

/* A zone's begin or end (or one as a complete event) of @t, with the
 * kept arguments of its zone at @level not yet written (level SIZE_MAX:
 * none), which are then marked written. */
static int put_zone(struct ch *c, struct xthread *t, uint8_t type, uint32_t name, uint64_t ns,
		    unsigned bits, uint64_t dur, size_t level)
{
	kt_event ev = { .thread_id = t->id, .name_id = name, .type = type };
	char *more = NULL;
	int rc = level == SIZE_MAX ? 0 : xarg_json_kept(c->job.t, t, level, zone_args[bits], &more);
	struct chrome_extra x = { more ? more : zone_args[bits], dur != UINT64_MAX, dur };
	if (!rc)
		rc = fmt_chrome_put(c->fm, &ev, ns, bits || x.complete || more ? &x : NULL);
	free(more);
	return rc;
}

/* Where @t keeps the begin time of the zone at @level, made as needed;
 * NULL past CHROME_X_DEPTH, or (with *@rc = -ENOMEM) out of memory. */
static uint64_t *begin_slot(struct ch *c, struct xthread *t, size_t level, int *rc)
{
	*rc = 0;
	if (level >= CHROME_X_DEPTH)
		return NULL;
	if (t->index >= c->nbegins) {
		if (grow_array((void **)&c->begins, &c->begins_cap, t->index + 1, sizeof(*c->begins))) {
			*rc = -ENOMEM;
			return NULL;
		}
		memset(c->begins + c->nbegins, 0, (t->index + 1 - c->nbegins) * sizeof(*c->begins));
		c->nbegins = t->index + 1;
	}
	struct xbegin *b = &c->begins[t->index];
	if (grow_array((void **)&b->ns, &b->cap, level + 1, sizeof(*b->ns))) {
		*rc = -ENOMEM;
		return NULL;
	}
	return &b->ns[level];
}

/*
 * --complete: a zone opening at @ns inside one that began at the same
 * time.  Complete events go out at their ends, a child's before its
 * parent's, and a viewer that sorts by begin time alone (stably: Tracy's
 * import-chrome) would nest them upside down; so the parent goes out as a
 * begin now, before the child, and as an end at its end.
 */
static int parent_first(struct ch *c, struct xthread *t, uint64_t ns)
{
	int rc;
	size_t level = t->depth - 1;
	if (!level || level > CHROME_X_DEPTH)
		return 0;
	uint64_t *slot = begin_slot(c, t, level - 1, &rc); /* made at its begin */
	if (!slot || (*slot & AS_B_BIT) || (*slot & TIME_MASK) != ns)
		return rc;
	*slot |= AS_B_BIT;
	return put_zone(c, t, KT_EV_ZONE_BEGIN, t->stack[level - 1].name, ns,
			*slot & START_BIT ? CUT_START : 0, UINT64_MAX, level - 1);
}

/* @t has just opened zone @name (xstate_begin() said 1) at @ns. */
static int open_zone(struct ch *c, struct xthread *t, uint32_t name, uint64_t ns, unsigned bits)
{
	int rc;
	if (c->o->complete) {
		if ((rc = parent_first(c, t, ns)))
			return rc;
		uint64_t *slot = begin_slot(c, t, t->depth - 1, &rc);
		if (slot) {
			*slot = (ns & TIME_MASK) | (bits & CUT_START ? START_BIT : 0);
			return 0;
		}
		if (rc)
			return rc;
		c->xs.res->deep++;
	}
	return put_zone(c, t, KT_EV_ZONE_BEGIN, name, ns, bits, UINT64_MAX, t->depth - 1);
}

/* @n zones of @t closed at @ns (as xstate_end() leaves them): the last
 * with @last's bits, the others (inside it) with @inner's. */
static int close_zones(struct ch *c, struct xthread *t, uint64_t ns, size_t n, unsigned inner,
		       unsigned last)
{
	for (size_t i = 0; i < n; i++) {
		size_t level = t->depth + n - 1 - i;
		uint32_t name = t->stack[level].name;
		unsigned bits = i + 1 < n ? inner : last;
		int rc;
		uint64_t b = c->o->complete && level < CHROME_X_DEPTH
			? *begin_slot(c, t, level, &rc) /* made at its begin */
			: AS_B_BIT;
		if (!(b & AS_B_BIT)) {
			bits |= b & START_BIT ? CUT_START : 0;
			b &= TIME_MASK;
			rc = put_zone(c, t, KT_EV_ZONE_BEGIN, name, b, bits, ns > b ? ns - b : 0,
				      level);
		} else {
			rc = put_zone(c, t, KT_EV_ZONE_END, name, ns, bits, UINT64_MAX, level);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* A count as JSON: past INT64_MAX a string (readers refuse larger). */
static const char *json_u64(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, v > INT64_MAX ? "\"%" PRIu64 "\"" : "%" PRIu64, v);
	return buf;
}

/* The instant that marks drop record @d on @t, from @a to @b ns. */
static int drop_mark(struct ch *c, struct xthread *t, const struct xdrop *d, uint64_t a, uint64_t b)
{
	char buf[320], num[32];
	int n = snprintf(buf, sizeof(buf), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
			 ".%03u3,\"ph\":\"i\",\"s\":\"t\",\"name\":\"katra: %" PRIu64
			 " events dropped\",\"cat\":\"katra\",\"args\":{\"dropped\":%s,"
			 "\"until_ts\":%" PRIu64 ".%03u3}}", export_pid(c->job.t, t->id, c->job.pid),
			 export_os_tid(c->job.t, t->id), a / 1000,
			 (unsigned)(a % 1000), d->count, json_u64(num, sizeof(num), d->count),
			 b / 1000, (unsigned)(b % 1000));
	return fmt_chrome_raw(c->fm, buf, (size_t)n);
}

/* Each drop record of @t that began by @ts (ticks): its mark, and the
 * zones open there cut at its start and opened again at its end (not
 * past @limit ns, the event that made it due). */
static int put_drops(struct ch *c, struct xthread *t, uint64_t ts, uint64_t limit)
{
	const struct xdrop *d;
	int rc = 0;
	while (!rc && (d = xstate_drop_due(&c->xs, t, ts))) {
		uint64_t a = kt_reader_get_time_ns(c->r, d->first_ts);
		uint64_t b = kt_reader_get_time_ns(c->r, d->last_ts);
		if (b < c->o->from_ns || a > c->o->to_ns)
			continue; /* outside the window: not this export's */
		a = a < limit ? a : limit;
		b = b < a ? a : b < limit ? b : limit;
		if ((rc = drop_mark(c, t, d, a, b)))
			break;
		t->last_out = b > t->last_out ? b : t->last_out;
		size_t n = xstate_cut_all(&c->xs, t);
		rc = close_zones(c, t, a, n, CUT_END, CUT_END);
		/* The cut zones' names stay readable at stack[0..n): each is
		 * read before its begin writes that slot again. */
		for (size_t i = 0; i < n && !rc; i++) {
			uint32_t name = t->stack[i].name;
			if ((rc = xstate_begin(&c->xs, t, name)) > 0)
				rc = open_zone(c, t, name, b, CUT_START);
		}
	}
	return rc;
}

/* A raw object @head + the JSON literal of name @id + @tail. */
static int put_named(struct ch *c, const char *head, uint32_t id, const char *tail);

/* A flow event, bound ("bp":"e") to the zone around it.  Outside every
 * zone there is none: its end binds to the thread's next slice (the
 * format's rule for an "f" without "bp"), and a begin or a step is left
 * unbound (counted: viewers skip it).  No slice is made up for it: a
 * viewer shows every slice as a zone. */
static int put_flow(struct ch *c, struct xthread *t, const kt_event *ev, uint64_t ns)
{
	if (t->depth)
		return fmt_chrome_put(c->fm, ev, ns, NULL);
	c->xs.res->unbound += ev->flags != KT_FLOW_END;
	if (ev->flags != KT_FLOW_END)
		return fmt_chrome_put(c->fm, ev, ns, NULL);
	kt_value v;
	kt_event_get_value(ev, &v);
	uint64_t id = v.u64;
	char head[160], tail[64];
	snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
		 ".%03u3,\"ph\":\"f\",\"cat\":\"flow\",\"name\":", export_pid(c->job.t, t->id, c->job.pid),
		 export_os_tid(c->job.t, t->id), ns / 1000, (unsigned)(ns % 1000));
	snprintf(tail, sizeof(tail), ",\"id\":%" PRIu64 "}", id);
	return put_named(c, head, ev->name_id, tail);
}

static int put_named(struct ch *c, const char *head, uint32_t id, const char *tail)
{
	size_t n = 0;
	const char *s = tables_name(c->job.t, id, &n);
	char *lit = s ? text_json(s, n) : strdup("\"?\""), *buf = NULL;
	int len = lit ? asprintf(&buf, "%s%s%s", head, lit, tail) : -1;
	int rc = len < 0 ? -ENOMEM : fmt_chrome_raw(c->fm, buf, (size_t)len);
	free(lit);
	free(buf);
	return rc;
}

/* A track zone opens (tools/pipeline/tracks.h): inside one that began at the same
 * time, that one goes out as a begin now (parent_first()'s reason). */
static int open_track_zone(void *ctx, const struct track_zone *z)
{
	struct ch *c = ctx;
	size_t d = c->tracks.depth[z->track]; /* this zone's level + 1 */
	uint8_t **as_b = &c->track_b[z->track];
	if (!*as_b && !(*as_b = calloc(TRACK_OPEN, 1)))
		return -ENOMEM;
	(*as_b)[d - 1] = 0;
	if (d < 2 || (*as_b)[d - 2])
		return 0;
	const struct track_open *up = &c->tracks.stack[z->track][d - 2];
	uint64_t b = kt_reader_get_time_ns(c->r, up->begin);
	if (b != kt_reader_get_time_ns(c->r, z->begin) || b < c->o->from_ns || b > c->o->to_ns)
		return 0;
	(*as_b)[d - 2] = 1;
	char head[192];
	snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
		 ".%03u3,\"ph\":\"B\",\"cat\":\"track\",\"name\":", c->job.pid,
		 TRACK_TID(z->track), b / 1000, (unsigned)(b % 1000));
	return put_named(c, head, up->name, "}");
}

/* A track zone, matched (tools/pipeline/tracks.h): one complete event on its
 * track's row, when it meets the window; an end when it went out as a
 * begin. */
static int put_track_zone(void *ctx, const struct track_zone *z)
{
	struct ch *c = ctx;
	uint64_t b = kt_reader_get_time_ns(c->r, z->begin), e = kt_reader_get_time_ns(c->r, z->end);
	uint8_t *as_b = c->track_b[z->track];
	char head[256];
	if (as_b && as_b[z->depth]) {
		as_b[z->depth] = 0;
		snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
			 ".%03u3,\"ph\":\"E\",\"cat\":\"track\",\"name\":", c->job.pid,
			 TRACK_TID(z->track), e / 1000, (unsigned)(e % 1000));
		return put_named(c, head, z->name, "}");
	}
	if (e < c->o->from_ns || b > c->o->to_ns)
		return 0;
	snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
		 ".%03u3,\"dur\":%" PRIu64 ".%03u3,\"ph\":\"X\",\"cat\":\"track\",\"name\":",
		 c->job.pid, TRACK_TID(z->track), b / 1000, (unsigned)(b % 1000), (e - b) / 1000,
		 (unsigned)((e - b) % 1000));
	return put_named(c, head, z->name, "}");
}

/* A track record: zones through the matcher, a counter as one. */
static int put_track(struct ch *c, const kt_event *ev)
{
	uint64_t ticks;
	int rc = tracks_event(&c->tracks, ev, &ticks);
	if (rc <= 0)
		return rc;
	kt_track_event te;
	kt_event_get_track(ev, &te);
	uint64_t ns = kt_reader_get_time_ns(c->r, ticks);
	if (ns < c->o->from_ns || ns > c->o->to_ns)
		return 0;
	char head[192], val[40];
	snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
		 ".%03u3,\"ph\":\"C\",\"name\":", c->job.pid, TRACK_TID(te.track), ns / 1000,
		 (unsigned)(ns % 1000));
	if (ev->type == KT_EV_TRACK_COUNTER_I64)
		snprintf(val, sizeof(val), "%" PRId64, te.value_i64);
	else if (te.value_f64 - te.value_f64 == 0)
		snprintf(val, sizeof(val), "%.17g", te.value_f64);
	else
		snprintf(val, sizeof(val), "null");
	/* The value's key is the counter's name: a viewer names its plot by
	 * the key (Tracy) or by name and key (Perfetto). */
	size_t n = 0;
	const char *s = tables_name(c->job.t, ev->name_id, &n);
	char *lit = s ? text_json(s, n) : strdup("\"?\""), *tail = NULL;
	int len = lit ? asprintf(&tail, ",\"args\":{%s:%s}}", lit, val) : -1;
	rc = len < 0 ? -ENOMEM : put_named(c, head, ev->name_id, tail);
	free(lit);
	free(tail);
	return rc;
}

/* Each track's row: named after the track, after the threads' rows. */
static int put_track_rows(struct ch *c, const struct tables *t)
{
	int rc = 0;
	for (uint32_t i = 1; i <= KT_MAX_TRACKS && !rc; i++) {
		if (!t->tracks[i].id)
			continue;
		char head[320];
		snprintf(head, sizeof(head), ",\n{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,"
			 "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}},\n{\"ph\":"
			 "\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,\"name\":\"thread_name\",\"args\":"
			 "{\"name\":", c->job.pid, TRACK_TID(i), 0x10000u + i, c->job.pid,
			 TRACK_TID(i));
		rc = put_named(c, head, t->tracks[i].name_id, "}}");
	}
	return rc;
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	struct ch *c = ctx;
	int fresh, rc;
	(void)index;
	c->xs.res->events++;
	c->last_ns = ns > c->last_ns ? ns : c->last_ns;
	if (ev->type == KT_EV_SCHED) /* its stream's row: chrome_sched.h */
		return chsched_event(&c->sched, c->fm, c->job.t, ev, ns);
	struct xthread *t = xstate_thread(&c->xs, ev->thread_id, &fresh);
	if (!t)
		return -ENOMEM;
	if (xstate_is_arg(ev->type)) { /* on its zone, or where it is */
		rc = xstate_arg(&c->xs, t, ev);
		return rc ? (rc < 0 ? rc : 0) : fmt_chrome_put(c->fm, ev, ns, NULL);
	}
	if (xstate_unhold(t) && (rc = open_zone(c, t, t->stack[t->depth - 1].name, t->held_ns, 0)))
		return rc;
	t->last_ts = ev->ts;
	t->last_out = ns;
	/* Most threads have no drop record left to mark: no call per event. */
	if (t->drop_next < t->drop_end && (rc = put_drops(c, t, ev->ts, ns)))
		return rc;
	size_t n;
	/* A zone that closes alone with no argument left to write, without
	 * --complete: the object put_zone() would make is the event's own (a
	 * zone's middle is its thread, name and type; an end that closes one
	 * zone closes the innermost of its name), so it goes out without the
	 * calls.  A begin waits for its arguments (export_state.h). */
	switch (ev->type) {
	case KT_EV_ZONE_BEGIN:
		rc = xstate_begin(&c->xs, t, ev->name_id);
		if (rc > 0)
			xstate_hold(t, ev->ts, ns);
		return rc < 0 ? rc : 0;
	case KT_EV_ZONE_END:
		n = xstate_end(&c->xs, t, ev->name_id);
		if (n == 1 && !c->o->complete &&
		    (!t->nargs || t->args[t->nargs - 1].level < t->depth))
			return fmt_chrome_put(c->fm, ev, ns, NULL);
		return close_zones(c, t, ns, n, CLOSED, 0);
	case KT_EV_FLOW:
		return put_flow(c, t, ev, ns);
	default:
		if (fmt_is_track(ev->type))
			return put_track(c, ev);
		if (ev->type == KT_EV_SAMPLE) { /* after the events: chrome.h */
			c->samples++;
			return 0;
		}
		return fmt_chrome_put(c->fm, ev, ns, NULL);
	}
}

/* After the last event: threads known only from drop records, every
 * thread's unmarked drops, its open zones closed at its last event (or at
 * the window's end), and the file's cut, if any. */
static int put_trace_end(struct ch *c, const struct tables *tb)
{
	int fresh, rc = 0;
	for (size_t i = 0; i < c->xs.ndrops; i++) {
		struct xthread *t = xstate_thread(&c->xs, c->xs.drops[i].thread_id, &fresh);
		if (!t)
			return -ENOMEM;
		if (fresh)
			t->last_out = kt_reader_get_time_ns(c->r, c->xs.drops[i].first_ts);
	}
	struct xthread *last = NULL;
	for (size_t i = 0; i < c->xs.nthreads && !rc; i++) {
		struct xthread *t = &c->xs.threads[i];
		if (xstate_unhold(t) &&
		    (rc = open_zone(c, t, t->stack[t->depth - 1].name, t->held_ns, 0)))
			break;
		if ((rc = put_drops(c, t, UINT64_MAX, UINT64_MAX)))
			break;
		uint64_t end = c->o->cut_to && c->o->to_ns > t->last_out ? c->o->to_ns : t->last_out;
		rc = close_zones(c, t, end, xstate_close_all(&c->xs, t), CUT_END, CUT_END);
		if (!last || t->last_out > last->last_out)
			last = t;
	}
	if (!rc)
		rc = tracks_finish(&c->tracks);
	if (!rc)
		rc = chsched_finish(&c->sched, c->fm, tb,
				    c->o->cut_to && c->o->to_ns > c->last_ns ? c->o->to_ns : c->last_ns);
	c->xs.res->tracks = c->tracks.n;
	if (rc || tb->have_summary || !last)
		return rc;
	char buf[200];
	int n = snprintf(buf, sizeof(buf), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
			 ".%03u3,\"ph\":\"i\",\"s\":\"p\",\"name\":\"katra: the file was cut short "
			 "here; later events are lost\",\"cat\":\"katra\"}", export_pid(tb, last->id, c->job.pid),
			 export_os_tid(tb, last->id),
			 last->last_out / 1000, (unsigned)(last->last_out % 1000));
	return fmt_chrome_raw(c->fm, buf, (size_t)n);
}

/* The metadata before the events: the process's name, then each thread's
 * name and its place (the order of its id). */
static int put_metadata(struct ch *c, const struct tables *t)
{
	const kt_header *h = kt_reader_get_header(c->r);
	const char *wl = h->workload && *h->workload ? h->workload : "katra trace";
	char *lit = NULL, *buf = NULL;
	int n, rc = 0;
	/* A merged trace's processes each by their own pid (SPEC §4.10); a
	 * file of one process by its own entry's name when it has one. */
	for (size_t i = 0; i < (tables_multiprocess(t) ? t->nprocs : 1) && !rc; i++) {
		const struct tproc *p = tables_named_process(t, i);
		lit = p ? text_json(tables_process_name(t, p), p->name_len)
			: text_json(wl, strlen(wl));
		n = lit ? asprintf(&buf, "%s{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"name\":"
					 "\"process_name\",\"args\":{\"name\":%s}}", i ? ",\n" : "",
				   p && tables_multiprocess(t) ? p->pid : c->job.pid, lit) : -1;
		free(lit);
		rc = n < 0 ? -ENOMEM : fmt_chrome_raw(c->fm, buf, (size_t)n);
		free(buf);
	}
	for (size_t i = 0; i < t->nthreads && !rc; i++) {
		const struct tentry *e = &t->threads[i];
		if (!(lit = text_json(tables_str(t, e), e->len)))
			return -ENOMEM;
		n = asprintf(&buf, ",\n{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,\"name\":\"thread_name\","
			     "\"args\":{\"name\":%s}},\n{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,"
			     "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%zu}}",
			     export_pid(t, e->id, c->job.pid), export_os_tid(t, e->id), lit,
			     export_pid(t, e->id, c->job.pid), export_os_tid(t, e->id), i);
		free(lit);
		rc = n < 0 ? -ENOMEM : fmt_chrome_raw(c->fm, buf, (size_t)n);
		free(buf);
	}
	return rc ? rc : put_track_rows(c, t);
}

static void ch_free(struct ch *c)
{
	for (size_t i = 0; i < c->nbegins; i++)
		free(c->begins[i].ns);
	free(c->begins);
	fmt_free(c->fm);
	memstats_free(&c->mem);
	tracks_free(&c->tracks);
	for (uint32_t i = 0; i <= KT_MAX_TRACKS; i++)
		free(c->track_b[i]);
	xstate_free(&c->xs);
	chsched_free(&c->sched);
	free(c);
}

int chrome_run(kt_reader *r, const struct tables *t, FILE *f, const struct chrome_opts *o,
	       struct export_result *res)
{
	struct ch *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->r = r;
	c->o = o;
	/* The metadata come first: every event's object follows a comma. */
	memstats_init(&c->mem);
	tracks_init(&c->tracks, t, put_track_zone, c);
	c->tracks.open = open_track_zone;
	chsched_init(&c->sched, kt_reader_get_header(r)->process_id);
	c->job = (struct fmt_job){ .t = t, .kind = FMT_CHROME, .printed = 1,
				   .pid = kt_reader_get_header(r)->process_id, .mem = &c->mem };
	int rc = xstate_init(&c->xs, r, res);
	if (!rc && !(c->fm = fmt_new(&c->job, f)))
		rc = -ENOMEM;
	if (!rc && fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f) < 0)
		rc = -EIO;
	if (!rc)
		rc = put_metadata(c, t);
	if (!rc) {
		/* Balancing is state of this thread: nothing is formatted ahead. */
		static const struct pipe_client client = { .event = on_event, .payloads = 1,
							   .merge_ns = 1 };
		rc = pipe_run(r, &client, c);
	}
	if (rc >= 0 && !(rc = put_trace_end(c, t)))
		rc = fmt_flush(c->fm);
	if (!rc && c->mem.failed)
		rc = -ENOMEM; /* a pool's live bytes went untracked */
	int werr = c->fm ? fmt_flush(c->fm) : 0;
	uint64_t samples = c->samples;
	ch_free(c);
	if (fputs("\n]", f) < 0)
		return rc ? rc : -EIO;
	if (!rc && !werr && samples && o->samples)
		rc = o->samples(o->samples_ctx, f);
	if (fputs("}\n", f) < 0 || ferror(f))
		return rc ? rc : -EIO;
	return rc ? rc : werr;
}

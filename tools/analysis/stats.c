/*
 * stats.c - `katra stats`; stats.h says what it counts and how.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/drops.h"
#include "tools/pipeline/hist.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/memstats.h"
#include "tools/analysis/trackstats.h"
#include "tools/pipeline/pipe.h"
#include "tools/analysis/samples.h"
#include "tools/analysis/stats.h"
#include "tools/pipeline/tables.h"
#include "tools/pipeline/text.h"
#include "tools/analysis/stats_impl.h"
#include "tools/analysis/valstats.h"


/* The index of @id's element, added zeroed when new; -1 when out of memory. */
static long table_index(struct table *t, uint32_t id)
{
	if (t->have_last && t->last_id == id)
		return t->last;
	if (t->n == t->cap) {
		size_t n = t->cap ? t->cap * 2 : 16;
		void *p = n <= UINT32_MAX ? realloc(t->a, n * t->size) : NULL;
		if (!p)
			return -1;
		t->a = p;
		t->cap = n;
	}
	int added;
	uint32_t *v = idmap_slot(&t->map, id, (uint32_t)t->n, &added);
	if (!v)
		return -1;
	if (added) {
		uint8_t *e = (uint8_t *)t->a + t->n++ * t->size;
		memset(e, 0, t->size);
		memcpy(e, &id, sizeof(id));
	}
	t->last_id = id;
	t->last = *v;
	t->have_last = 1;
	return *v;
}

static uint64_t tops_key(long thread, uint32_t name)
{
	return (uint64_t)thread << 32 | name;
}

/* The time from @from to @to on one thread.  A thread's timestamps may go
 * back (SPEC §4.1): then 0, counted, never a wrapped 2^64 - n. */
static uint64_t elapsed(struct stats *c, uint64_t from, uint64_t to)
{
	if (to >= from)
		return to - from;
	c->negative++;
	return 0;
}

/* ---- drop windows -------------------------------------------------------- */

/* A zone of @name was open across a drop window: its figures include
 * time whose events were lost.  0 or -ENOMEM (the name was indexed at
 * the zone's begin, so the table does not move under a caller's
 * pointer). */
static int zone_across(struct stats *c, uint32_t name)
{
	long ni = table_index(&c->names, name);
	if (ni < 0)
		return -ENOMEM;
	name_at(c, ni)->across++;
	c->across++;
	return 0;
}

/* @t's event at tick @ts: the drop windows that began by then mark its
 * open zones as crossed.  A zone below a crossed one was crossed with it,
 * so the walk stops there: each zone is marked once. */
static void drops_pass(struct stats *c, struct sthread *t, uint64_t ts)
{
	int due = 0;
	while (t->drop_next < t->drop_end && c->drops.d[t->drop_next].first_ts <= ts) {
		t->drop_next++;
		due = 1;
	}
	for (size_t k = t->depth; due && k-- > 0 && !(t->stack[k].below & CROSSED);)
		t->stack[k].below |= CROSSED;
}

/* After the frames' pass: the drop records sorted by thread, and each
 * thread's share of them. */
static void drops_ready(struct stats *c)
{
	drops_sort_thread(&c->drops);
	for (size_t i = 0; i < c->th.n; i++) {
		struct sthread *t = thread_at(c, (long)i);
		drops_thread(&c->drops, t->id, &t->drop_next, &t->drop_end);
		t->drop_windows = t->drop_end - t->drop_next;
	}
}

/* After the events (ticks convert as the events' did, with the merge's
 * calibration): the time each thread's drop windows cover, overlaps
 * once. */
static void drops_time(struct stats *c, kt_reader *r)
{
	for (size_t i = 0; i < c->th.n; i++) {
		struct sthread *t = thread_at(c, (long)i);
		uint64_t reach = 0;
		int none = !t->events;
		t->drop_from_ns = t->first_ns;
		t->drop_to_ns = t->last_ns;
		for (size_t k = t->drop_end - t->drop_windows; k < t->drop_end; k++) {
			const struct xdrop *x = &c->drops.d[k];
			uint64_t a = kt_reader_get_time_ns(r, x->first_ts);
			uint64_t b = kt_reader_get_time_ns(r, x->last_ts);
			uint64_t from = a > reach ? a : reach;
			t->drop_ns += b > from ? b - from : 0;
			reach = b > reach ? b : reach;
			t->drop_from_ns = none || a < t->drop_from_ns ? a : t->drop_from_ns;
			t->drop_to_ns = none || b > t->drop_to_ns ? b : t->drop_to_ns;
			none = 0;
		}
	}
}

/* After the events: zones still open that a drop window crossed. */
static int drops_open_left(struct stats *c)
{
	for (size_t i = 0; i < c->th.n; i++) {
		struct sthread *t = thread_at(c, (long)i);
		for (size_t k = 0; k < t->depth; k++)
			if ((t->stack[k].below & CROSSED) && zone_across(c, t->stack[k].name))
				return -ENOMEM;
	}
	return 0;
}

/* ---- zones and frames ---------------------------------------------------- */

static int zone_begin(struct stats *c, long ti, uint32_t name, uint64_t ns)
{
	struct sthread *t = thread_at(c, ti);
	if (c->open >= MAX_OPEN_ZONES) {
		t->untimed++;
		c->untimed++;
		return 0;
	}
	if (t->depth == t->cap) {
		size_t n = t->cap ? t->cap * 2 : 16;
		void *p = n <= UINT32_MAX ? realloc(t->stack, n * sizeof(*t->stack)) : NULL;
		if (!p)
			return -ENOMEM;
		t->stack = p;
		t->cap = n;
	}
	int added;
	uint32_t *top = idmap_slot(&c->tops, tops_key(ti, name), 0, &added);
	if (!top)
		return -ENOMEM;
	t->stack[t->depth] = (struct zone){ ns, 0, name, *top, { 0 } };
	schedstats_mark(&c->sched, t->id, ns, &t->stack[t->depth].sm);
	*top = (uint32_t)++t->depth;
	c->open++;
	return 0;
}

/* Match the innermost open zone of the same name; the zones opened after
 * it are closed with it, untimed (their ends were dropped or sliced away):
 * their time stays in its self time.  An end with no begin is skipped.
 * Each zone is popped once: O(1) amortized. */
static int zone_end(struct stats *c, long ti, struct sname *nm, uint64_t ns)
{
	struct sthread *t = thread_at(c, ti);
	if (t->untimed) {
		t->untimed--;
		return 0;
	}
	uint32_t *top = idmap_find(&c->tops, tops_key(ti, nm->id));
	if (!top || !*top)
		return windows_unbegun(&c->win, t->id, nm->id, ns);
	size_t d = *top - 1;
	uint64_t dur = elapsed(c, t->stack[d].ns, ns);
	if (hist_add(&nm->zone, dur))
		return -ENOMEM;
	while (t->depth > d) {
		struct zone *p = &t->stack[--t->depth];
		*idmap_find(&c->tops, tops_key(ti, p->name)) = p->below & ~CROSSED;
		c->open--;
		/* An untimed inner zone's own time stays in this one's self
		 * time; the zones that ended inside it counted already. */
		if (t->depth > d)
			p[-1].child += p->child;
		if ((p->below & CROSSED) && zone_across(c, p->name))
			return -ENOMEM;
	}
	struct zone z = t->stack[d];
	uint64_t self = dur > z.child ? dur - z.child : 0;
	nm->total_ns += dur;
	nm->self_ns += self;
	if (t->depth)
		t->stack[t->depth - 1].child += dur;
	t->zones_ns += self;
	if (schedstats_zone(&c->sched, t->id, nm->id, &z.sm, ns, dur))
		return -ENOMEM;
	if (c->hooks && c->hooks->zone)
		return c->hooks->zone(c->hooks->ctx, t->id, nm->id, z.ns, dur, self);
	return 0;
}

/* A frame mark: the interval since the thread's last one is a frame time. */
static int frame_mark(struct stats *c, struct sthread *t, uint64_t ns)
{
	int had = t->have_frame;
	uint64_t iv = had ? elapsed(c, t->last_frame_ns, ns) : 0;
	t->last_frame_ns = ns;
	t->have_frame = 1;
	if (!had)
		return 0;
	if (hist_add(&c->frames, iv))
		return -ENOMEM;
	c->frames_ns += iv;
	if (c->hooks && c->hooks->frame)
		return c->hooks->frame(c->hooks->ctx, t->id, ns, iv);
	return 0;
}

/* An allocation or a free: its pool's live bytes, then the hook. */
static int stats_mem_event(struct stats *c, const kt_event *ev, uint64_t ns)
{
	const struct mem_pool *p;
	int rc = memstats_event(&c->mem, ev, ns, &p);
	if (!rc && p && c->hooks && c->hooks->mem)
		rc = c->hooks->mem(c->hooks->ctx, p->id, ns, p->live);
	return rc;
}

/* Whether the hooks' thread filter (stats.h) keeps @tid's events and drops. */
static int thread_kept(const struct stats *c, uint32_t tid)
{
	return !c->hooks || !c->hooks->threads || idmap_find(c->hooks->threads, tid);
}

static int stats_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	struct stats *c = ctx;
	(void)index;
	if (!thread_kept(c, ev->thread_id))
		return 0;
	if (c->hooks && c->hooks->event) {
		int rc = c->hooks->event(c->hooks->ctx, ev, ns);
		if (rc)
			return rc;
	}
	long ti = table_index(&c->th, ev->thread_id);
	if (ti < 0)
		return -ENOMEM;
	struct sthread *t = thread_at(c, ti);
	if (!t->events)
		t->first_ns = t->last_ns = ns;
	c->backwards += t->events && ns < t->prev_ns;
	t->first_ns = ns < t->first_ns ? ns : t->first_ns;
	t->last_ns = ns > t->last_ns ? ns : t->last_ns;
	t->prev_ns = ns;
	t->events++;
	if (t->drop_next < t->drop_end)
		drops_pass(c, t, ev->ts);
	c->events++;
	if (ev->type == KT_EV_SCHED) /* of another thread: no name, no zone */
		return schedstats_event(&c->sched, ev, ns);
	if (ev->type == KT_EV_SAMPLE) { /* samples.c's, in a pass of its own */
		c->samples++;
		return 0;
	}
	/* Name 0 of an argument is its zone's own value or text, and of a
	 * memory record the default pool: no row of the names' own. */
	if (!ev->name_id && ev->type >= KT_EV_ARG_I64 && ev->type <= KT_EV_ARG_STR)
		return valstats_zone_value(&c->vals, t->depth ? t->stack[t->depth - 1].name : 0, ev);
	if (!ev->name_id && (ev->type == KT_EV_ALLOC || ev->type == KT_EV_FREE))
		return stats_mem_event(c, ev, ns);
	long ni = table_index(&c->names, ev->name_id);
	if (ni < 0 || valstats_counter(&c->vals, ev))
		return -ENOMEM;
	struct sname *nm = name_at(c, ni);
	if (!nm->count)
		nm->proc = tables_thread_process(&c->t, ev->thread_id);
	nm->count++;
	nm->begins += ev->type == KT_EV_ZONE_BEGIN;
	nm->ends += ev->type == KT_EV_ZONE_END;
	nm->frames += ev->type == KT_EV_FRAME;
	if (ev->type == KT_EV_ZONE_BEGIN)
		return zone_begin(c, ti, ev->name_id, ns);
	if (ev->type == KT_EV_ZONE_END)
		return zone_end(c, ti, nm, ns);
	if (ev->type == KT_EV_FRAME)
		return frame_mark(c, t, ns);
	if (ev->type == KT_EV_ALLOC || ev->type == KT_EV_FREE)
		return stats_mem_event(c, ev, ns);
	return trackstats_event(&c->tracks, ev);
}

/*
 * The pass before the events: names, threads and the summary (tables.h),
 * and the drops per thread, from the drop records, which the merged events
 * do not carry.  Returns the reader's result or -ENOMEM.
 */
static int stats_frames(kt_reader *r, struct stats *c, struct tables *t)
{
	kt_trace_frame f;
	int rc;
	memset(t, 0, sizeof(*t));
	t->tick_hz = kt_reader_get_header(r)->clock.tick_hz;
	kt_reader_skip_events(r, 1);
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_DROP) {
			if ((rc = tables_add(t, &f)) < 0)
				break;
			continue;
		}
		if (!thread_kept(c, f.u.drop.thread_id))
			continue;
		long ti = table_index(&c->th, f.u.drop.thread_id);
		if (ti < 0 || drops_add(&c->drops, &f)) {
			rc = -ENOMEM;
			break;
		}
		thread_at(c, ti)->dropped += f.u.drop.count;
	}
	kt_reader_skip_events(r, 0);
	tables_finish(t);
	return rc;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x, y;
	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

static void table_sort(struct table *t)
{
	if (t->n > 1)
		qsort(t->a, t->n, t->size, by_id);
}

void stats_free(struct stats *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->th.n; i++)
		free(thread_at(c, (long)i)->stack);
	for (size_t i = 0; i < c->names.n; i++)
		hist_free(&name_at(c, (long)i)->zone);
	free(c->th.a);
	free(c->names.a);
	idmap_free(&c->th.map);
	idmap_free(&c->names.map);
	idmap_free(&c->tops);
	hist_free(&c->frames);
	drops_free(&c->drops);
	memstats_free(&c->mem);
	trackstats_free(&c->tracks);
	valstats_free(&c->vals);
	windows_free(&c->win);
	schedstats_free(&c->sched);
	tables_free(&c->t);
	free(c);
}

/* ---- text ---------------------------------------------------------------- */

/* @n bytes of @s escaped, left-aligned in @width columns.  0 or -ENOMEM. */
static int put_padded(FILE *f, const char *s, size_t n, int width)
{
	char *e = text_escape(s, n);
	if (!e)
		return -ENOMEM;
	fprintf(f, "%-*s", width, e);
	free(e);
	return 0;
}

static int text_threads(FILE *f, const struct stats *c, const struct tables *t)
{
	fprintf(f, "\n%-8s %-20s %12s %10s %14s %14s\n", "tid", "thread", "events", "dropped",
		"span ns", "events/s");
	for (size_t i = 0; i < c->th.n; i++) {
		struct sthread *th = thread_at(c, (long)i);
		size_t n = 0;
		const char *name = tables_thread(t, th->id, &n);
		double span = (double)(th->last_ns - th->first_ns) / 1e9;
		fprintf(f, "%-8u ", th->id);
		if (put_padded(f, name ? name : "", n, 20))
			return -ENOMEM;
		fprintf(f, " %12" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14.0f\n", th->events,
			th->dropped, th->last_ns - th->first_ns,
			span > 0 ? (double)th->events / span : 0);
	}
	return 0;
}

/* A name's source location as a last column "  file:line function",
 * escaped; nothing when the file gives none. */
static int text_loc(FILE *f, const struct tables *t, uint32_t id)
{
	const struct tloc *l = tables_loc(t, id);
	if (!l)
		return 0;
	fputs("  ", f);
	if (text_puts(f, tloc_file(t, l)) < 0)
		return -EIO;
	fprintf(f, ":%u ", l->line);
	return text_puts(f, tloc_function(t, l)) < 0 ? -EIO : 0;
}

/* A name row's first column: its name ("(no name)" for id 0, "?" when the
 * file does not name it), and "(frame mark)" after a name whose records
 * are frame marks and no zone, so that a frame and a zone of one name
 * (two ids) are told apart.  0 or -ENOMEM. */
static int put_name(FILE *f, const struct tables *t, const struct sname *nm, int clash)
{
	size_t n = 9;
	const char *name = nm->id ? tables_name(t, nm->id, &n) : "(no name)";
	char *e = text_escape(name ? name : "?", name ? n : 1);
	if (!e)
		return -ENOMEM;
	int w = fprintf(f, "%s%s", e, nm->frames && !nm->begins && !nm->ends ? " (frame mark)" : "");
	if (clash)
		w += fprintf(f, " (pid %" PRIu64 ")", tables_process_pid(t, nm->proc));
	fprintf(f, "%*s", w < 24 ? 24 - w : 0, "");
	free(e);
	return 0;
}

/* Percentile @p of @h as a column: "~" before one from buckets. */
static const char *pct_col(char *buf, size_t len, const struct hist *h, double p)
{
	snprintf(buf, len, "%s%" PRIu64, hist_exact(h) ? "" : "~", hist_pct(h, p));
	return buf;
}

/* The text's count of a name: a zone (its begin and end) once, any other
 * event each; a zone record with no partner is a zone too.  (--json's
 * count counts records.) */
static uint64_t text_count(const struct sname *nm)
{
	uint64_t zones = nm->begins > nm->ends ? nm->begins : nm->ends;
	return nm->count - nm->begins - nm->ends + zones;
}

static int text_names(FILE *f, const struct stats *c, const struct tables *t)
{
	/* The location column only where the file has locations: the output
	 * of older files stays as it was. */
	fprintf(f, "\n%-24s %10s %10s %10s %10s %10s %12s %12s%s\n", "name", "count", "zone min",
		"p50", "p99", "max", "total", "self", t->nlocs ? "  location" : "");
	int approx = 0, rc = 0;
	uint8_t *clash = stats_name_clashes(c, &rc);
	for (size_t i = 0; i < c->names.n && !rc; i++) {
		struct sname *nm = name_at(c, (long)i);
		char p50[24], p99[24];
		if ((rc = put_name(f, t, nm, clash && clash[i])))
			break;
		fprintf(f, " %10" PRIu64, text_count(nm));
		approx |= nm->zone.n && !hist_exact(&nm->zone);
		if (nm->zone.n)
			fprintf(f, " %10" PRIu64 " %10s %10s %10" PRIu64 " %12" PRIu64 " %12" PRIu64,
				nm->zone.min, pct_col(p50, sizeof(p50), &nm->zone, 0.5),
				pct_col(p99, sizeof(p99), &nm->zone, 0.99), nm->zone.max,
				nm->total_ns, nm->self_ns);
		else if (t->nlocs)
			fprintf(f, " %10s %10s %10s %10s %12s %12s", "", "", "", "", "", "");
		if ((rc = text_loc(f, t, nm->id)))
			break;
		fprintf(f, "\n");
	}
	free(clash);
	if (rc)
		return rc;
	if (approx)
		fprintf(f, "~: a percentile from buckets (a name with over %u zones), within "
			   "%.1f%% of the value of its rank; the others are exact\n",
			HIST_EXACT, 100 * HIST_ERROR);
	return 0;
}

/* Per thread with drop records: how many, the events lost, the time they
 * cover and its share of the thread's span; then the names whose zones
 * were open across one. */
static int text_drops(FILE *f, const struct stats *c, const struct tables *t)
{
	if (!c->drops.n)
		return 0;
	fprintf(f, "\ndrop windows: time whose events were lost\n%-8s %-20s %12s %10s %14s %10s\n",
		"tid", "thread", "windows", "dropped", "drop ns", "% of span");
	for (size_t i = 0; i < c->th.n; i++) {
		struct sthread *th = thread_at(c, (long)i);
		size_t n = 0;
		const char *name = tables_thread(t, th->id, &n);
		/* Its events' span and its drop windows' together: the share
		 * is at most 100% (a snapshot's windows precede its events). */
		uint64_t span = th->drop_to_ns > th->drop_from_ns ? th->drop_to_ns - th->drop_from_ns : 0;
		if (!th->drop_windows)
			continue;
		fprintf(f, "%-8u ", th->id);
		if (put_padded(f, name ? name : "", n, 20))
			return -ENOMEM;
		fprintf(f, " %12" PRIu64 " %10" PRIu64 " %14" PRIu64 " %10.1f\n", th->drop_windows,
			th->dropped, th->drop_ns, span ? 100.0 * (double)th->drop_ns / (double)span : 0);
	}
	if (!c->across)
		return 0;
	fprintf(f, "\nzones open across a drop window (their times include lost events):\n");
	for (size_t i = 0; i < c->names.n; i++) {
		struct sname *nm = name_at(c, (long)i);
		size_t n = 1;
		const char *name = nm->id ? tables_name(t, nm->id, &n) : NULL;
		if (!nm->across)
			continue;
		if (put_padded(f, name ? name : "?", name ? n : 1, 24))
			return -ENOMEM;
		fprintf(f, " %10" PRIu64 "\n", nm->across);
	}
	return 0;
}

/* Frame times: percentiles, then ten bars between the fastest and slowest. */
static void text_frames(FILE *f, const struct hist *h)
{
	if (!h->n)
		return;
	char p50[24], p99[24];
	fprintf(f, "\nframe times: %" PRIu64 " intervals, p50 %s ns, p99 %s ns, max %" PRIu64 " ns%s\n",
		h->n, pct_col(p50, sizeof(p50), h, 0.5), pct_col(p99, sizeof(p99), h, 0.99), h->max,
		hist_exact(h) ? "" : " (~: from buckets, within 1.6%)");
	uint64_t lo = h->min, hi = h->max, w = (hi - lo) / 10 + 1;
	uint64_t bars[10] = { 0 }, top = 1, v, count;
	uint32_t pos = 0;
	while (hist_next(h, &pos, &v, &count)) {
		v = v < lo ? lo : v > hi ? hi : v;
		bars[(v - lo) / w] += count;
	}
	for (int i = 0; i < 10; i++)
		top = bars[i] > top ? bars[i] : top;
	for (int i = 0; i < 10; i++) {
		fprintf(f, "  %12" PRIu64 " ns |", lo + (uint64_t)i * w);
		for (uint64_t k = 0; k < bars[i] * 40 / top; k++)
			putc('#', f);
		fprintf(f, " %" PRIu64 "\n", bars[i]);
	}
}

static int print_text(FILE *f, const struct stats *c, const char *label)
{
	const struct tables *t = &c->t;
	uint64_t dropped = c->dropped;
	int truncated = c->truncated;
	if (text_puts(f, label) < 0)
		return -EIO;
	fprintf(f, ": %" PRIu64 " events, %" PRIu64 " dropped%s\n", c->events, dropped,
		truncated ? ", truncated" : "");
	if (stats_text_processes(f, c) || text_threads(f, c, t) || text_names(f, c, t) || valstats_text(f, &c->vals, t) ||
	    text_drops(f, c, t) || windows_text(f, &c->win, t))
		return -ENOMEM;
	if (c->untimed)
		fprintf(f, "\nzones: %" PRIu64 " begins past %u open zones were not timed\n",
			c->untimed, MAX_OPEN_ZONES);
	if (c->backwards)
		fprintf(f, "\ntime: %" PRIu64 " events earlier than the event before them on "
			   "their thread; %" PRIu64 " durations ending before they began count as 0\n",
			c->backwards, c->negative);
	text_frames(f, &c->frames);
	int rc = memstats_text(f, &c->mem, t);
	rc = rc ? rc : schedstats_text(f, &c->sched, t);
	rc = rc ? rc : trackstats_text(f, &c->tracks, t);
	return rc ? rc : ferror(f) ? -EIO : 0;
}

/* ---- the command --------------------------------------------------------- */

int stats_collect(kt_reader *r, const struct stats_hooks *hooks, struct stats **out)
{
	/* Payloads of the fixed-size records at least: memory events need
	 * theirs, and a message's are not copied for nothing. */
	const struct pipe_client client = { .event = stats_event,
					    .payloads = hooks && hooks->payloads
							? 1 : PIPE_PAYLOADS_FIXED };
	struct stats *c = calloc(1, sizeof(*c));
	*out = c;
	if (!c)
		return -ENOMEM;
	c->th.size = sizeof(struct sthread);
	c->names.size = sizeof(struct sname);
	c->hooks = hooks;
	idmap_init(&c->th.map);
	idmap_init(&c->names.map);
	idmap_init(&c->tops);
	memstats_init(&c->mem);
	valstats_init(&c->vals);
	trackstats_init(&c->tracks, &c->t, r);
	int rc = schedstats_init(&c->sched, kt_reader_get_header(r));
	rc = rc ? rc : stats_frames(r, c, &c->t);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	c->dropped = st.dropped;
	if (hooks && hooks->threads) { /* the kept threads' alone */
		c->filtered = 1;
		c->dropped = 0;
		for (size_t i = 0; i < c->th.n; i++)
			c->dropped += thread_at(c, (long)i)->dropped;
	}
	if (rc >= 0) {
		drops_ready(c);
		kt_reader_rewind(r);
		rc = pipe_run(r, &client, c);
	}
	if (rc >= 0)
		rc = drops_open_left(c);
	if (rc >= 0)
		rc = trackstats_finish(&c->tracks);
	drops_time(c, r);
	for (size_t i = 0; rc >= 0 && i < c->th.n; i++)
		if (thread_at(c, (long)i)->events)
			rc = windows_add(&c->win, thread_at(c, (long)i)->id,
					 thread_at(c, (long)i)->first_ns, thread_at(c, (long)i)->last_ns);
	windows_finish(&c->win, &c->drops, r);
	table_sort(&c->th);
	table_sort(&c->names);
	memstats_sort(&c->mem);
	valstats_sort(&c->vals);
	schedstats_sort(&c->sched);
	for (size_t i = 0; i < c->names.n; i++)
		hist_finish(&name_at(c, (long)i)->zone);
	hist_finish(&c->frames);
	c->truncated = !c->t.have_summary;
	return rc < 0 ? rc : 0;
}

const struct tables *stats_tables(const struct stats *c)
{
	return &c->t;
}

size_t stats_offcpu(const struct stats *c, int *present, struct stats_offcpu *rows, size_t cap)
{
	*present = c->sched.present;
	for (size_t i = 0; i < c->sched.nn && i < cap; i++) {
		const struct sched_name *n = &c->sched.nm[i];
		rows[i] = (struct stats_offcpu){ n->id, n->zones, n->on_ns, n->blocked_ns,
						 n->preempted_ns };
	}
	return c->sched.nn;
}

int stats_truncated(const struct stats *c)
{
	return c->truncated;
}

int stats_print(const struct stats *c, const char *label, int json, FILE *out)
{
	if (!json)
		return print_text(out, c, label);
	json_t *o = stats_json(c, label);
	int rc = o ? text_json_print(out, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -ENOMEM;
	json_decref(o);
	return rc;
}

/* stats --json with the samples' section (samples_zone_json()) in it. */
static int print_json_samples(kt_reader *r, const struct stats *c, const char *label, FILE *out)
{
	json_t *o = stats_json(c, label), *smp = NULL;
	int rc = o ? samples_zone_json(r, &c->t, &smp) : -ENOMEM;
	if (!rc && json_object_set_new(o, "samples", smp))
		rc = -ENOMEM;
	if (!rc)
		rc = text_json_print(out, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	return rc;
}

int stats_run(kt_reader *r, const char *label, int json, FILE *out, int *truncated)
{
	struct stats *c;
	int rc = stats_collect(r, NULL, &c);
	if (!rc)
		*truncated = c->truncated;
	/* The samples' own pass, only when there are samples: the file's
	 * stacks and maps, then the zones around each sample. */
	if (!rc && json && c->samples)
		rc = print_json_samples(r, c, label, out);
	else if (!rc)
		rc = stats_print(c, label, json, out);
	if (!rc && !json && c->samples)
		rc = samples_zone_text(r, &c->t, out);
	stats_free(c);
	return rc;
}

uint64_t stats_samples(const struct stats *c)
{
	return c->samples;
}

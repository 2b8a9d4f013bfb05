/*
 * trackstats.c - track zones per track and name; trackstats.h says how.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/pipeline/text.h"
#include "tools/analysis/trackstats.h"

static int on_zone(void *ctx, const struct track_zone *z)
{
	struct trackstats *s = ctx;
	int added;
	uint32_t *slot = idmap_slot(&s->ids, (uint64_t)z->track << 32 | z->name, (uint32_t)s->n,
				    &added);
	if (!slot)
		return -ENOMEM;
	if (added) {
		if (s->n == TRACKSTAT_ROWS) {
			*slot = UINT32_MAX;
			s->other++;
			return 0;
		}
		if (grow_array((void **)&s->rows, &s->cap, s->n + 1, sizeof(*s->rows)))
			return -ENOMEM;
		s->rows[s->n++] = (struct track_row){ z->track, z->name, 0, 0, 0 };
	}
	if (*slot == UINT32_MAX) {
		s->other++;
		return 0;
	}
	struct track_row *w = &s->rows[*slot];
	uint64_t b = kt_reader_get_time_ns(s->r, z->begin), e = kt_reader_get_time_ns(s->r, z->end);
	uint64_t d = e > b ? e - b : 0;
	w->count++;
	w->total_ns = w->total_ns > UINT64_MAX - d ? UINT64_MAX : w->total_ns + d;
	w->max_ns = d > w->max_ns ? d : w->max_ns;
	return 0;
}

void trackstats_init(struct trackstats *s, const struct tables *t, kt_reader *r)
{
	memset(s, 0, sizeof(*s));
	tracks_init(&s->k, t, on_zone, s);
	s->r = r;
	idmap_init(&s->ids);
}

int trackstats_event(struct trackstats *s, const kt_event *ev)
{
	uint64_t ticks;
	int rc = tracks_event(&s->k, ev, &ticks);
	s->counters += rc == 1;
	return rc < 0 ? rc : 0;
}

static int by_track_name(const void *a, const void *b)
{
	const struct track_row *x = a, *y = b;
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

int trackstats_finish(struct trackstats *s)
{
	int rc = tracks_finish(&s->k);
	if (s->n > 1)
		qsort(s->rows, s->n, sizeof(*s->rows), by_track_name);
	return rc;
}

size_t trackstats_ntracks(const struct tables *t)
{
	size_t n = 0;
	for (uint32_t i = 1; i <= KT_MAX_TRACKS; i++)
		n += !!t->tracks[i].id;
	return n;
}

/* A name id escaped for a terminal, "?" when the file names it not. */
static char *label(const struct tables *t, uint32_t id)
{
	size_t n = 0;
	const char *s = tables_name(t, id, &n);
	return s ? text_escape(s, n) : strdup("?");
}

static int text_track(FILE *f, const struct trackstats *s, const struct tables *t,
		      const kt_track_def *d)
{
	char *tn = label(t, d->name_id);
	if (!tn)
		return -ENOMEM;
	fprintf(f, "track %s: %" PRIu64 " Hz, %u calibration pairs\n", tn, d->clock_hz,
		d->pair_count);
	for (size_t i = 0; i < s->n; i++) {
		const struct track_row *w = &s->rows[i];
		char *zn = w->track == d->id ? label(t, w->name) : NULL;
		if (zn)
			fprintf(f, "  %-28s %10" PRIu64 " %14" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
				zn, w->count, w->total_ns, w->total_ns / w->count, w->max_ns);
		free(zn);
	}
	free(tn);
	return 0;
}

int trackstats_text(FILE *f, const struct trackstats *s, const struct tables *t)
{
	if (!trackstats_ntracks(t))
		return 0;
	fprintf(f, "\n%-30s %10s %14s %12s %12s\n", "track zone", "count", "total_ns", "mean_ns",
		"max_ns");
	for (uint32_t i = 1; i <= KT_MAX_TRACKS; i++)
		if (t->tracks[i].id && text_track(f, s, t, &t->tracks[i]))
			return -ENOMEM;
	const struct track_counts *n = &s->k.n;
	if (n->unknown || n->unconverted || n->unbegun || n->inner_closed || n->unended ||
	    n->deep || s->other)
		fprintf(f, "tracks: %" PRIu64 " records of unknown tracks, %" PRIu64
			   " unconverted, %" PRIu64 " ends unbegun, %" PRIu64 " inner zones closed, %"
			   PRIu64 " unended, %" PRIu64 " too deep, %" PRIu64 " past the rows\n",
			n->unknown, n->unconverted, n->unbegun, n->inner_closed, n->unended, n->deep,
			s->other);
	return ferror(f) ? -EIO : 0;
}

static json_t *u64j(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *json_name(const struct tables *t, uint32_t id)
{
	size_t n = 0;
	const char *s = tables_name(t, id, &n);
	return s ? text_json_string(s, n) : json_null();
}

static json_t *json_track(const struct trackstats *s, const struct tables *t,
			  const kt_track_def *d)
{
	json_t *zones = json_array();
	for (size_t i = 0; zones && i < s->n; i++) {
		const struct track_row *w = &s->rows[i];
		if (w->track == d->id &&
		    json_array_append_new(zones, json_pack("{s:o,s:o,s:o,s:o}", "name",
							   json_name(t, w->name), "count",
							   u64j(w->count), "total_ns",
							   u64j(w->total_ns), "max_ns",
							   u64j(w->max_ns)))) {
			json_decref(zones);
			return NULL;
		}
	}
	return json_pack("{s:I,s:o,s:o,s:I,s:o}", "id", (json_int_t)d->id, "name",
			 json_name(t, d->name_id), "clock_hz", u64j(d->clock_hz), "pairs",
			 (json_int_t)d->pair_count, "zones", zones);
}

json_t *trackstats_json(const struct trackstats *s, const struct tables *t)
{
	json_t *a = json_array();
	for (uint32_t i = 1; a && i <= KT_MAX_TRACKS; i++)
		if (t->tracks[i].id && json_array_append_new(a, json_track(s, t, &t->tracks[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

void trackstats_free(struct trackstats *s)
{
	tracks_free(&s->k);
	idmap_free(&s->ids);
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

/*
 * valstats.c - counters and zones' own values; valstats.h says what is
 * counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/pipeline/text.h"
#include "tools/analysis/valstats.h"

void valstats_init(struct valstats *v)
{
	memset(v, 0, sizeof(*v));
	idmap_init(&v->counters.ids);
	idmap_init(&v->zones.ids);
}

/* The row of @id, added zeroed when new; NULL when out of memory. */
static struct vstat *row_of(struct vtable *t, uint32_t id)
{
	uint32_t *i = idmap_find(&t->ids, id);
	if (i)
		return &t->a[*i];
	int added;
	if (grow_array((void **)&t->a, &t->cap, t->n + 1, sizeof(*t->a)) ||
	    !(i = idmap_slot(&t->ids, id, (uint32_t)t->n, &added)))
		return NULL;
	struct vstat *r = &t->a[t->n++];
	memset(r, 0, sizeof(*r));
	r->id = id;
	return r;
}

/* One numeric value: @d, and @i too when @is_int. */
static void add_value(struct vstat *r, int is_int, int64_t i, double d)
{
	if (!is_int && !r->f64) {
		/* From here on in doubles: the integers so far join them. */
		r->f64 = 1;
		r->dmin = (double)r->imin;
		r->dmax = (double)r->imax;
	}
	if (r->f64) {
		r->dmin = !r->n || d < r->dmin ? d : r->dmin;
		r->dmax = !r->n || d > r->dmax ? d : r->dmax;
	} else {
		r->imin = !r->n || i < r->imin ? i : r->imin;
		r->imax = !r->n || i > r->imax ? i : r->imax;
	}
	r->ilast = i;
	r->dlast = d;
	r->sum += d;
	r->n++;
}

/* The number @ev carries: 1 with *@i and *@d set, 0 for no number. */
static int value_of(const kt_event *ev, int64_t *i, double *d, int *is_int)
{
	kt_value v;
	if (!kt_event_get_value(ev, &v))
		return 0;
	switch (v.kind) {
	case KT_VALUE_I64:
		*i = v.i64;
		*d = (double)v.i64;
		*is_int = 1;
		return 1;
	case KT_VALUE_U64:
		*i = (int64_t)v.u64;
		*d = (double)v.u64;
		/* An unsigned value past INT64_MAX is kept as a double. */
		*is_int = v.u64 <= INT64_MAX;
		return 1;
	case KT_VALUE_F64:
		*d = v.f64;
		*i = 0;
		*is_int = 0;
		return 1;
	default:
		return 0;
	}
}

int valstats_counter(struct valstats *v, const kt_event *ev)
{
	int64_t i;
	double d;
	int is_int;
	if ((ev->type != KT_EV_COUNTER_I64 && ev->type != KT_EV_COUNTER_F64) ||
	    !value_of(ev, &i, &d, &is_int))
		return 0;
	struct vstat *r = row_of(&v->counters, ev->name_id);
	if (!r)
		return -ENOMEM;
	add_value(r, is_int, i, d);
	return 0;
}

int valstats_zone_value(struct valstats *v, uint32_t zone, const kt_event *ev)
{
	if (!zone) {
		v->outside++;
		return 0;
	}
	struct vstat *r = row_of(&v->zones, zone);
	if (!r)
		return -ENOMEM;
	int64_t i;
	double d;
	int is_int;
	if (ev->type == KT_EV_ARG_STR)
		r->texts++;
	else if (value_of(ev, &i, &d, &is_int))
		add_value(r, is_int, i, d);
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct vstat *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

void valstats_sort(struct valstats *v)
{
	/* The id maps' indexes go stale: sorting is for printing, last. */
	if (v->counters.n > 1)
		qsort(v->counters.a, v->counters.n, sizeof(struct vstat), by_id);
	if (v->zones.n > 1)
		qsort(v->zones.a, v->zones.n, sizeof(struct vstat), by_id);
}

void valstats_free(struct valstats *v)
{
	free(v->counters.a);
	free(v->zones.a);
	idmap_free(&v->counters.ids);
	idmap_free(&v->zones.ids);
	memset(v, 0, sizeof(*v));
}

/* ---- output -------------------------------------------------------------- */

/* @r's count, min, mean, max and last as text columns; blanks with no
 * numeric value. */
static void text_values(FILE *f, const struct vstat *r)
{
	if (!r->n)
		fprintf(f, " %10s %14s %14s %14s %14s", "0", "", "", "", "");
	else if (r->f64)
		fprintf(f, " %10" PRIu64 " %14.6g %14.6g %14.6g %14.6g", r->n, r->dmin,
			r->sum / (double)r->n, r->dmax, r->dlast);
	else
		fprintf(f, " %10" PRIu64 " %14" PRId64 " %14.6g %14" PRId64 " %14" PRId64, r->n,
			r->imin, r->sum / (double)r->n, r->imax, r->ilast);
}

/* @r's name, escaped and padded: the file's name for its id, "?" when the
 * file does not name it.  0 or -ENOMEM. */
static int text_name(FILE *f, const struct tables *t, uint32_t id)
{
	size_t n = 1;
	const char *s = tables_name(t, id, &n);
	char *e = text_escape(s ? s : "?", s ? n : 1);
	if (!e)
		return -ENOMEM;
	fprintf(f, "%-24s", e);
	free(e);
	return 0;
}

int valstats_text(FILE *f, const struct valstats *v, const struct tables *t)
{
	static const char *const cols[] = { "count", "min", "mean", "max", "last" };
	if (v->counters.n)
		fprintf(f, "\n%-24s %10s %14s %14s %14s %14s\n", "counter", cols[0], cols[1],
			cols[2], cols[3], cols[4]);
	for (size_t i = 0; i < v->counters.n; i++) {
		if (text_name(f, t, v->counters.a[i].id))
			return -ENOMEM;
		text_values(f, &v->counters.a[i]);
		fputc('\n', f);
	}
	if (v->zones.n)
		fprintf(f, "\n%-24s %10s %14s %14s %14s %14s %10s\n", "zone values and texts",
			"values", cols[1], cols[2], cols[3], cols[4], "texts");
	for (size_t i = 0; i < v->zones.n; i++) {
		if (text_name(f, t, v->zones.a[i].id))
			return -ENOMEM;
		text_values(f, &v->zones.a[i]);
		fprintf(f, " %10" PRIu64 "\n", v->zones.a[i].texts);
	}
	if (v->outside)
		fprintf(f, "zone values and texts with no zone open: %" PRIu64 "\n", v->outside);
	return ferror(f) ? -EIO : 0;
}

static json_t *u64j(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* A row as JSON: its id, name, count and, with values, min, mean, max and
 * last (integers for an integer counter); @texts adds the zone's texts. */
static json_t *json_row(const struct vstat *r, const struct tables *t, int texts)
{
	size_t n = 0;
	const char *name = tables_name(t, r->id, &n);
	json_t *o = json_pack("{s:I,s:o,s:o}", "id", (json_int_t)r->id, "name",
			      name ? text_json_string(name, n) : json_null(), "count", u64j(r->n));
	if (o && r->n && r->f64)
		json_object_update_new(o, json_pack("{s:f,s:f,s:f,s:f}", "min", r->dmin, "mean",
						    r->sum / (double)r->n, "max", r->dmax, "last",
						    r->dlast));
	else if (o && r->n)
		json_object_update_new(o, json_pack("{s:I,s:f,s:I,s:I}", "min",
						    (json_int_t)r->imin, "mean",
						    r->sum / (double)r->n, "max",
						    (json_int_t)r->imax, "last",
						    (json_int_t)r->ilast));
	if (o && texts)
		json_object_set_new(o, "texts", u64j(r->texts));
	size_t keys = 3 + 4 * !!r->n + !!texts;
	if (o && json_object_size(o) == keys)
		return o;
	json_decref(o);
	return NULL;
}

static json_t *json_rows(const struct vtable *tb, const struct tables *t, int texts)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < tb->n; i++)
		if (json_array_append_new(a, json_row(&tb->a[i], t, texts))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int valstats_json(json_t *o, const struct valstats *v, const struct tables *t)
{
	int keys = 0;
	if (v->counters.n && !json_object_set_new(o, "counters", json_rows(&v->counters, t, 0)))
		keys++;
	if ((v->zones.n || v->outside) &&
	    !json_object_set_new(o, "zone_values", json_rows(&v->zones, t, 1)))
		keys++;
	if (v->outside && !json_object_set_new(o, "zone_values_outside", u64j(v->outside)))
		keys++;
	int want = !!v->counters.n + !!(v->zones.n || v->outside) + !!v->outside;
	return keys == want ? keys : -ENOMEM;
}

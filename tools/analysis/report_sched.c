/*
 * report_sched.c - the report's state lanes; report_sched.h says how.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/report.h"
#include "tools/analysis/report_sched.h"
#include "tools/pipeline/text.h"

#define ABSENT_NOTE "sched: absent: "

_Static_assert(REPORT_BINS == 512, "struct rsched_lane's bins");

struct report_sched *report_sched_new(const kt_header *h)
{
	struct report_sched *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	slane_init(&s->lanes);
	s->present = !!(h->flags & KT_HDR_SCHED);
	s->asked = s->present || (h->flags & KT_HDR_SCHED_ABSENT);
	for (uint32_t i = 0; !s->present && i < h->note_count && !s->why; i++)
		if (!strncmp(h->notes[i], ABSENT_NOTE, strlen(ABSENT_NOTE)))
			s->why = h->notes[i] + strlen(ABSENT_NOTE);
	return s;
}

static struct rsched_lane *lane_of(struct report_sched *s, uint32_t of, int *rc)
{
	*rc = 0;
	for (size_t i = 0; i < s->nlane; i++)
		if (s->lane[i].of == of)
			return &s->lane[i];
	if (s->nlane == REPORT_THREADS)
		return NULL;
	struct rsched_lane *p = realloc(s->lane, (s->nlane + 1) * sizeof(*p));
	if (!p) {
		*rc = -ENOMEM;
		return NULL;
	}
	s->lane = p;
	p = &s->lane[s->nlane++];
	memset(p, 0, sizeof(*p));
	p->of = of;
	return p;
}

/* @iv's ns into the bins it covers (from the timeline's origin on). */
static int spread(struct report *rep, const struct slane_iv *iv)
{
	struct report_sched *s = rep->sched;
	int rc;
	struct rsched_lane *l = lane_of(s, iv->of, &rc);
	if (!l) {
		s->other++;
		return rc;
	}
	size_t last = report_bin_of(rep, iv->end - 1); /* the bins' width set first */
	uint64_t w = UINT64_C(1) << rep->shift, b = iv->begin > rep->origin ? iv->begin : rep->origin;
	unsigned k = iv->state == SLANE_RUNNING ? 0 : iv->state == SLANE_BLOCKED ? 1
		     : iv->state == SLANE_PREEMPTED ? 2 : 3;
	for (size_t i = (size_t)((b - rep->origin) >> rep->shift); i <= last && b < iv->end; i++) {
		uint64_t end = rep->origin + (i + 1) * w;
		end = end < iv->end ? end : iv->end;
		l->ns[k][i] += (double)(end - b);
		b = end;
	}
	return 0;
}

int report_sched_event(struct report *rep, const kt_event *ev, uint64_t ns)
{
	struct report_sched *s = rep->sched;
	struct slane_iv iv;
	s->last_ns = ns > s->last_ns ? ns : s->last_ns;
	if (ev->type != KT_EV_SCHED || !s->present)
		return 0;
	int rc = slane_event(&s->lanes, ev, ns, &iv);
	return rc > 0 ? spread(rep, &iv) : rc;
}

int report_sched_finish(struct report *rep)
{
	struct slane_iv iv;
	size_t at = 0;
	int rc = 0;
	while (!rc && slane_finish(&rep->sched->lanes, rep->sched->last_ns, &at, &iv))
		rc = spread(rep, &iv);
	return rc;
}

void report_sched_halve(struct report_sched *s)
{
	for (size_t l = 0; s && l < s->nlane; l++)
		for (unsigned k = 0; k < 4; k++) {
			double *v = s->lane[l].ns[k];
			for (size_t i = 0; i < REPORT_BINS / 2; i++)
				v[i] = v[2 * i] + v[2 * i + 1];
			memset(v + REPORT_BINS / 2, 0, sizeof(double) * REPORT_BINS / 2);
		}
}

static json_t *lane_json(const struct report *rep, const struct rsched_lane *l, size_t bins)
{
	static const char *const key[] = { "running", "blocked", "preempted", "waiting" };
	size_t len = 0;
	const char *name = tables_thread(stats_tables(rep->stats), l->of, &len);
	json_t *o = json_pack("{s:I,s:o}", "id", (json_int_t)l->of, "name",
			      name ? text_json_string(name, len) : json_string(""));
	for (unsigned k = 0; o && k < 4; k++) {
		json_t *a = json_array();
		for (size_t i = 0; a && i < bins; i++)
			if (json_array_append_new(a, json_integer((json_int_t)l->ns[k][i])))
				a = (json_decref(a), NULL);
		if (!a || json_object_set_new(o, key[k], a))
			o = (json_decref(o), NULL);
	}
	return o;
}

json_t *report_sched_json(const struct report *rep, size_t bins)
{
	const struct report_sched *s = rep->sched;
	if (!s || !s->asked)
		return json_null();
	if (!s->present)
		return json_pack("{s:b,s:o}", "present", 0, "why",
				 s->why ? text_json_string(s->why, strlen(s->why)) : json_null());
	json_t *a = json_array();
	for (size_t i = 0; a && i < s->nlane; i++)
		if (json_array_append_new(a, lane_json(rep, &s->lane[i], bins)))
			a = (json_decref(a), NULL);
	return a ? json_pack("{s:b,s:o,s:I}", "present", 1, "threads", a, "other_intervals",
			     (json_int_t)s->other) : NULL;
}

void report_sched_free(struct report_sched *s)
{
	if (!s)
		return;
	slane_free(&s->lanes);
	free(s->lane);
	free(s);
}

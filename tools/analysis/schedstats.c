/*
 * schedstats.c - on-CPU and off-CPU time per zone; schedstats.h says how.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/analysis/schedstats.h"
#include "tools/pipeline/text.h"

#define ABSENT_NOTE "sched: absent: "

int schedstats_init(struct schedstats *s, const kt_header *h)
{
	memset(s, 0, sizeof(*s));
	idmap_init(&s->tmap);
	idmap_init(&s->nmap);
	s->present = !!(h->flags & KT_HDR_SCHED);
	s->asked = s->present || (h->flags & KT_HDR_SCHED_ABSENT);
	if (!(h->flags & KT_HDR_SCHED_ABSENT))
		return 0;
	for (uint32_t i = 0; i < h->note_count && !s->why; i++)
		if (!strncmp(h->notes[i], ABSENT_NOTE, strlen(ABSENT_NOTE)) &&
		    !(s->why = strdup(h->notes[i] + strlen(ABSENT_NOTE))))
			return -ENOMEM;
	return 0;
}

static struct sched_thread *find_thread(const struct schedstats *s, uint32_t id)
{
	uint32_t *v = idmap_find(&s->tmap, id);
	return v ? &s->t[*v] : NULL;
}

/* @id's entry, added when new; NULL past SCHED_THREADS (*@rc 0) or
 * without memory (*@rc -ENOMEM). */
static struct sched_thread *thread_entry(struct schedstats *s, uint32_t id, int *rc)
{
	struct sched_thread *t = find_thread(s, id);
	*rc = 0;
	if (t || s->n >= SCHED_THREADS)
		return t;
	int added;
	if (grow_array((void **)&s->t, &s->cap, s->n + 1, sizeof(*s->t)) ||
	    !idmap_slot(&s->tmap, id, (uint32_t)s->n, &added)) {
		*rc = -ENOMEM;
		return NULL;
	}
	t = &s->t[s->n++];
	memset(t, 0, sizeof(*t));
	t->id = id;
	return t;
}

int schedstats_event(struct schedstats *s, const kt_event *ev, uint64_t ns)
{
	kt_value v;
	int rc;
	s->records++;
	if (!s->present || !kt_event_get_value(ev, &v) || !v.thread) {
		s->ignored++;
		return 0;
	}
	struct sched_thread *t = thread_entry(s, v.thread, &rc);
	if (!t) {
		s->ignored++;
		return rc;
	}
	switch (ev->flags) {
	case KT_SCHED_FOLLOW:
	case KT_SCHED_LOST:
		/* What it did before is unknown; it runs when it next emits. */
		s->lost += ev->flags == KT_SCHED_LOST;
		t->followed = 1;
		t->epoch++;
		t->state = 0;
		break;
	case KT_SCHED_BLOCKED:
	case KT_SCHED_PREEMPTED:
		if (!t->state) {
			t->state = ev->flags;
			t->since = ns;
		}
		break;
	case KT_SCHED_IN:
		if (t->state && ns > t->since) {
			uint64_t *to = t->state == KT_SCHED_BLOCKED ? &t->blocked : &t->preempted;
			*to += ns - t->since;
		}
		t->state = 0;
		break;
	}
	return 0;
}

/* @t's off-CPU ns of each kind up to @ns: an interval still open counts
 * up to @ns. */
static void off_at(const struct sched_thread *t, uint64_t ns, uint64_t *blocked,
		   uint64_t *preempted)
{
	uint64_t open = t->state && ns > t->since ? ns - t->since : 0;
	*blocked = t->blocked + (t->state == KT_SCHED_BLOCKED ? open : 0);
	*preempted = t->preempted + (t->state == KT_SCHED_PREEMPTED ? open : 0);
}

void schedstats_mark(const struct schedstats *s, uint32_t thread, uint64_t ns,
		     struct sched_mark *m)
{
	memset(m, 0, sizeof(*m));
	const struct sched_thread *t = s->present ? find_thread(s, thread) : NULL;
	if (!t || !t->followed)
		return;
	m->ok = 1;
	m->epoch = t->epoch;
	off_at(t, ns, &m->blocked, &m->preempted);
}

static struct sched_name *name_entry(struct schedstats *s, uint32_t id)
{
	int added;
	if (grow_array((void **)&s->nm, &s->capn, s->nn + 1, sizeof(*s->nm)))
		return NULL;
	uint32_t *v = idmap_slot(&s->nmap, id, (uint32_t)s->nn, &added);
	if (!v)
		return NULL;
	if (added) {
		memset(&s->nm[s->nn], 0, sizeof(*s->nm));
		s->nm[s->nn++].id = id;
	}
	return &s->nm[*v];
}

int schedstats_zone(struct schedstats *s, uint32_t thread, uint32_t name,
		    const struct sched_mark *m, uint64_t ns, uint64_t dur)
{
	if (!s->present)
		return 0;
	struct sched_name *nm = name_entry(s, name);
	if (!nm)
		return -ENOMEM;
	const struct sched_thread *t = find_thread(s, thread);
	if (!m->ok || !t || t->epoch != m->epoch) {
		nm->not_covered++;
		return 0;
	}
	uint64_t b, p;
	off_at(t, ns, &b, &p);
	b = b > m->blocked ? b - m->blocked : 0;
	p = p > m->preempted ? p - m->preempted : 0;
	/* Within the zone by construction; a crafted file's times may not
	 * be: off-CPU time never exceeds the duration. */
	b = b < dur ? b : dur;
	p = p < dur - b ? p : dur - b;
	nm->zones++;
	nm->blocked_ns += b;
	nm->preempted_ns += p;
	nm->on_ns += dur - b - p;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = ((const struct sched_name *)a)->id, y = ((const struct sched_name *)b)->id;
	return x < y ? -1 : x > y;
}

void schedstats_sort(struct schedstats *s)
{
	if (s->nn > 1)
		qsort(s->nm, s->nn, sizeof(*s->nm), by_id);
}

static double share(const struct sched_name *n)
{
	uint64_t off = n->blocked_ns + n->preempted_ns, all = off + n->on_ns;
	return all ? (double)off / (double)all : 0;
}

static size_t followed(const struct schedstats *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->t[i].followed;
	return n;
}

int schedstats_text(FILE *f, const struct schedstats *s, const struct tables *t)
{
	if (!s->asked)
		return 0;
	if (!s->present) {
		fputs("\nscheduler data: absent", f);
		if (s->why && (fputs(" (", f) < 0 || text_puts(f, s->why) < 0 || fputs(")", f) < 0))
			return -EIO;
		fputs("\n", f);
		return ferror(f) ? -EIO : 0;
	}
	fprintf(f, "\noff-CPU time per zone (scheduler records: %zu threads followed, %" PRIu64
		   " losses)\n%-24s %10s %14s %14s %14s %9s %12s\n",
		followed(s), s->lost, "name", "zones", "on-CPU ns", "blocked ns", "preempted ns",
		"off-CPU %", "not covered");
	for (size_t i = 0; i < s->nn; i++) {
		const struct sched_name *n = &s->nm[i];
		size_t len = 1;
		const char *name = n->id ? tables_name(t, n->id, &len) : NULL;
		char *e = text_escape(name ? name : "?", name ? len : 1);
		if (!e)
			return -ENOMEM;
		fprintf(f, "%-24s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64
			   " %9.1f %12" PRIu64 "\n",
			e, n->zones, n->on_ns, n->blocked_ns, n->preempted_ns, 100 * share(n),
			n->not_covered);
		free(e);
	}
	return ferror(f) ? -EIO : 0;
}

static json_t *json_row(const struct sched_name *n, const struct tables *t)
{
	size_t len = 0;
	const char *name = n->id ? tables_name(t, n->id, &len) : NULL;
	/* NULL if any value could not be made: "o" refuses a NULL. */
	return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:f}", "id", (json_int_t)n->id, "name",
			 name ? text_json_string(name, len) : json_null(), "zones",
			 text_json_u64(n->zones), "not_covered", text_json_u64(n->not_covered),
			 "on_cpu_ns", text_json_u64(n->on_ns), "off_cpu_ns",
			 text_json_u64(n->blocked_ns + n->preempted_ns), "blocked_ns",
			 text_json_u64(n->blocked_ns), "preempted_ns",
			 text_json_u64(n->preempted_ns), "off_cpu_share", share(n));
}

json_t *schedstats_json(const struct schedstats *s, const struct tables *t)
{
	json_t *o = json_object(), *rows = json_array();
	int ok = o && rows;
	json_object_set_new(o, "present", json_boolean(s->present));
	if (!s->present) {
		json_decref(rows);
		json_object_set_new(o, "why", s->why ? text_json_string(s->why, strlen(s->why))
						      : json_null());
		return ok && json_object_size(o) == 2 ? o : (json_decref(o), NULL);
	}
	for (size_t i = 0; i < s->nn && ok; i++) {
		json_t *j = json_row(&s->nm[i], t);
		ok = j && !json_array_append_new(rows, j);
	}
	json_object_set_new(o, "threads_followed", text_json_u64(followed(s)));
	json_object_set_new(o, "records", text_json_u64(s->records));
	json_object_set_new(o, "lost", text_json_u64(s->lost));
	json_object_set_new(o, "zones", rows);
	return ok && json_object_size(o) == 5 ? o : (json_decref(o), NULL);
}

void schedstats_free(struct schedstats *s)
{
	free(s->t);
	free(s->nm);
	free(s->why);
	idmap_free(&s->tmap);
	idmap_free(&s->nmap);
	memset(s, 0, sizeof(*s));
}

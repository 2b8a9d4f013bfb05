/*
 * schedlane.c - scheduling as intervals of one state; schedlane.h says how.
 */
#include <errno.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/pipeline/schedlane.h"

void slane_init(struct slane *l)
{
	memset(l, 0, sizeof(*l));
	idmap_init(&l->map);
}

const char *slane_name(enum slane_state s)
{
	switch (s) {
	case SLANE_RUNNING:
		return "running";
	case SLANE_BLOCKED:
		return "blocked";
	case SLANE_PREEMPTED:
		return "preempted";
	case SLANE_WAITING:
		return "waiting";
	default:
		return "?";
	}
}

/* @of's entry, made on first sight; NULL past the cap (*@rc 0) or out of
 * memory (*@rc -ENOMEM). */
static struct slane_thread *entry(struct slane *l, uint32_t of, int *rc)
{
	int added;
	*rc = 0;
	uint32_t *v = idmap_find(&l->map, of);
	if (v)
		return &l->t[*v];
	if (l->n >= SLANE_THREADS)
		return NULL;
	if (grow_array((void **)&l->t, &l->cap, l->n + 1, sizeof(*l->t)) ||
	    !idmap_slot(&l->map, of, (uint32_t)l->n, &added)) {
		*rc = -ENOMEM;
		return NULL;
	}
	struct slane_thread *t = &l->t[l->n++];
	memset(t, 0, sizeof(*t));
	t->of = of;
	t->cpu = SLANE_NO_CPU;
	return t;
}

/* @t's interval in progress as @state, ended at @end: 1 when it has a
 * length. */
static int give(const struct slane_thread *t, enum slane_state state, uint32_t cpu,
		uint64_t end, struct slane_iv *iv)
{
	if (end <= t->since)
		return 0;
	*iv = (struct slane_iv){ .of = t->of, .stream = t->stream, .cpu = cpu, .state = state,
				 .begin = t->since, .end = end };
	return 1;
}

int slane_event(struct slane *l, const kt_event *ev, uint64_t ns, struct slane_iv *iv)
{
	kt_value v;
	int rc, out = 0;
	if (!kt_event_get_value(ev, &v) || !v.thread) {
		l->ignored++;
		return 0;
	}
	struct slane_thread *t = entry(l, v.thread, &rc);
	if (!t) {
		l->ignored++;
		return rc;
	}
	t->stream = ev->thread_id;
	uint32_t cpu = ev->flags == KT_SCHED_LOST || ev->flags == KT_SCHED_FOLLOW
		? SLANE_NO_CPU : (uint32_t)(v.cpu < SLANE_NO_CPU ? v.cpu : SLANE_NO_CPU - 1);
	switch (ev->flags) {
	case KT_SCHED_FOLLOW:
	case KT_SCHED_LOST:
		if (t->state == SLANE_RUNNING || t->state == SLANE_BLOCKED ||
		    t->state == SLANE_PREEMPTED)
			out = give(t, t->state, t->cpu, ns, iv);
		t->state = ev->flags == KT_SCHED_FOLLOW ? SLANE_FOLLOW : SLANE_NONE;
		t->cpu = SLANE_NO_CPU;
		break;
	case KT_SCHED_BLOCKED:
	case KT_SCHED_PREEMPTED:
		if (t->state != SLANE_FOLLOW && t->state != SLANE_RUNNING)
			return 0; /* unknown, or already off: the first out stands */
		out = give(t, SLANE_RUNNING, cpu, ns, iv);
		t->state = ev->flags == KT_SCHED_BLOCKED ? SLANE_BLOCKED : SLANE_PREEMPTED;
		t->cpu = cpu;
		break;
	case KT_SCHED_IN:
		if (t->state == SLANE_RUNNING)
			return 0; /* already in: the first in stands */
		if (t->state == SLANE_FOLLOW)
			out = give(t, SLANE_WAITING, SLANE_NO_CPU, ns, iv);
		else if (t->state != SLANE_NONE)
			out = give(t, t->state, t->cpu, ns, iv);
		t->state = SLANE_RUNNING;
		t->cpu = cpu;
		break;
	default:
		l->ignored++;
		return 0;
	}
	t->since = ns;
	return out;
}

int slane_finish(struct slane *l, uint64_t end, size_t *at, struct slane_iv *iv)
{
	while (*at < l->n) {
		struct slane_thread *t = &l->t[(*at)++];
		if (t->state == SLANE_NONE || t->state == SLANE_FOLLOW)
			continue; /* nothing known to draw */
		if (give(t, t->state, t->cpu, end, iv)) {
			iv->cut = 1;
			return 1;
		}
	}
	return 0;
}

void slane_free(struct slane *l)
{
	free(l->t);
	idmap_free(&l->map);
	memset(l, 0, sizeof(*l));
}

/*
 * export_state.c - threads, open zones and drop marks for the binary
 * exports; export_state.h says the rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/export_state.h"
#include "tools/pipeline/bsearch.h"
#include "tools/pipeline/grow.h"

int xstate_init(struct xstate *s, kt_reader *r, struct export_result *res)
{
	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	s->res = res;
	idmap_init(&s->tids);
	idmap_init(&s->inner);
	struct drops d;
	int rc = drops_load(r, &d);
	drops_sort_thread(&d);
	s->drops = d.d;
	s->ndrops = d.n;
	res->drops_unmarked = d.unkept;
	return rc;
}

void xstate_free(struct xstate *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct xthread *t = &s->threads[i];
		for (size_t j = 0; j < t->nargs; j++)
			free(t->args[j].text);
		free(t->args);
		free(t->stack);
		free(t->small);
	}
	free(s->threads);
	free(s->drops);
	idmap_free(&s->tids);
	idmap_free(&s->inner);
}

uint32_t export_os_tid(const struct tables *t, uint32_t id)
{
	size_t i = lower_bound_u32(t->threads, t->nthreads, sizeof(*t->threads), id);
	return i < t->nthreads && t->threads[i].id == id && t->threads[i].os_tid
		? t->threads[i].os_tid : id;
}

uint64_t export_pid(const struct tables *t, uint32_t id, uint64_t own)
{
	return tables_multiprocess(t) ? tables_process_pid(t, tables_thread_process(t, id)) : own;
}

struct xthread *xstate_thread_add(struct xstate *s, uint32_t id, int *fresh)
{
	int added;
	*fresh = 0;
	uint32_t *slot = idmap_find(&s->tids, id);
	if (slot)
		return &s->threads[*slot];
	if (s->nthreads >= KT_MAX_SUMMARY_THREADS ||
	    grow_array((void **)&s->threads, &s->threads_cap, s->nthreads + 1, sizeof(*s->threads)) ||
	    !idmap_slot(&s->tids, id, (uint32_t)s->nthreads, &added))
		return NULL;
	size_t d, e;
	drops_thread(&(struct drops){ .d = s->drops, .n = s->ndrops }, id, &d, &e);
	s->threads[s->nthreads] = (struct xthread){ .id = id, .index = (uint32_t)s->nthreads,
						    .drop_next = d, .drop_end = e };
	*fresh = 1;
	if (id < EXPORT_DIRECT)
		s->direct[id] = (uint32_t)s->nthreads + 1;
	return &s->threads[s->nthreads++];
}

const struct xdrop *xstate_drop_take(struct xstate *s, struct xthread *t, uint64_t ts)
{
	if (t->drop_next >= t->drop_end || s->drops[t->drop_next].first_ts > ts)
		return NULL;
	s->res->drops_marked++;
	return &s->drops[t->drop_next++];
}

/* Where @t keeps 1 + its innermost open zone of @name (0: none open):
 * made when @make; NULL when not made, or out of memory. */
static uint32_t *inner_of(struct xstate *s, struct xthread *t, uint32_t name, int make)
{
	if (name < EXPORT_SMALL_NAMES && t->index < EXPORT_SMALL_THREADS) {
		if (!t->small && make)
			t->small = calloc(EXPORT_SMALL_NAMES, sizeof(*t->small));
		return t->small ? &t->small[name] : NULL;
	}
	uint64_t key = (uint64_t)t->index << 32 | name;
	int added;
	return make ? idmap_slot(&s->inner, key, 0, &added) : idmap_find(&s->inner, key);
}

int xstate_pool_live(struct memstats *m, const kt_event *ev, uint64_t ns, uint64_t *live)
{
	const struct mem_pool *pool;
	if (memstats_event(m, ev, ns, &pool))
		return -ENOMEM;
	if (pool)
		*live = pool->live > INT64_MAX ? INT64_MAX : pool->live;
	return pool != NULL;
}

/* Let go of @t's arguments of zones no longer open (at or past @level):
 * the last ones, as levels never decrease along the array. */
static void args_trim(struct xstate *s, struct xthread *t, size_t level)
{
	while (t->nargs && t->args[t->nargs - 1].level >= level) {
		struct xarg *a = &t->args[--t->nargs];
		s->nargs--;
		s->arg_bytes -= a->len;
		free(a->text);
	}
}

int xstate_arg(struct xstate *s, struct xthread *t, const kt_event *ev)
{
	args_trim(s, t, t->depth);
	kt_value v;
	kt_event_get_value(ev, &v);
	size_t len = v.kind == KT_VALUE_TEXT ? v.len : 0;
	if (!t->depth || s->nargs >= EXPORT_ARGS || s->arg_bytes + len > EXPORT_ARG_BYTES) {
		s->res->loose_args++;
		return 0;
	}
	if (grow_array((void **)&t->args, &t->args_cap, t->nargs + 1, sizeof(*t->args)))
		return -ENOMEM;
	struct xarg a = { .level = (uint32_t)(t->depth - 1), .name = ev->name_id,
			  .type = ev->type, .len = (uint32_t)len };
	if (len && !(a.text = malloc(len)))
		return -ENOMEM;
	if (len)
		memcpy(a.text, v.bytes, len);
	else
		a.bits = v.bits;
	/* Its nearest namesake in the zone (a name 0 is "value" or "text"),
	 * within EXPORT_ARG_SAME: a bound, so a zone of many costs no more. */
	for (size_t i = t->nargs, k = 0; i-- > 0 && k < EXPORT_ARG_SAME; k++) {
		const struct xarg *b = &t->args[i];
		if (b->level != a.level)
			break;
		int same = a.name || (b->type == KT_EV_ARG_STR) == (a.type == KT_EV_ARG_STR);
		if (b->name == a.name && same) {
			a.nth = b->nth + 1;
			break;
		}
	}
	t->args[t->nargs++] = a;
	s->nargs++;
	s->arg_bytes += len;
	return 1;
}

struct xarg *xstate_args(struct xthread *t, size_t level, size_t *n)
{
	/* By binary search (levels never decrease along the array), not a
	 * walk back: closing N zones at once asks for each level in turn,
	 * and a walk passed every kept argument of the zones inside (up to
	 * EXPORT_ARGS) N times. */
	size_t end = level >= UINT32_MAX ? t->nargs
		     : lower_bound_u32(t->args, t->nargs, sizeof(*t->args), (uint32_t)level + 1);
	size_t start = lower_bound_u32(t->args, end, sizeof(*t->args),
				       (uint32_t)(level < UINT32_MAX ? level : UINT32_MAX));
	*n = end - start;
	return *n ? t->args + start : NULL; /* none: t->args may be NULL */
}

int xstate_begin(struct xstate *s, struct xthread *t, uint32_t name)
{
	args_trim(s, t, t->depth);
	if (s->open >= EXPORT_OPEN) {
		s->res->untimed++;
		return 0;
	}
	if (grow_array((void **)&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack)))
		return -ENOMEM;
	uint32_t *inner = inner_of(s, t, name, 1);
	if (!inner)
		return -ENOMEM;
	t->stack[t->depth] = (struct xzone){ name, *inner };
	*inner = (uint32_t)++t->depth;
	s->open++;
	return 1;
}

static void pop(struct xstate *s, struct xthread *t)
{
	struct xzone *z = &t->stack[--t->depth];
	*inner_of(s, t, z->name, 0) = z->below; /* made when the zone opened */
	s->open--;
}

size_t xstate_end(struct xstate *s, struct xthread *t, uint32_t name)
{
	uint32_t *inner = inner_of(s, t, name, 0);
	if (!inner || !*inner) {
		s->res->unbegun++;
		return 0;
	}
	size_t n = t->depth - (*inner - 1);
	s->res->inner_closed += n - 1;
	for (size_t i = 0; i < n; i++)
		pop(s, t);
	return n;
}

static size_t pop_all(struct xstate *s, struct xthread *t)
{
	size_t n = t->depth;
	while (t->depth)
		pop(s, t);
	return n;
}

size_t xstate_close_all(struct xstate *s, struct xthread *t)
{
	size_t n = pop_all(s, t);
	s->res->unended += n;
	return n;
}

size_t xstate_cut_all(struct xstate *s, struct xthread *t)
{
	size_t n = pop_all(s, t);
	s->res->cut += n;
	return n;
}

int xout_init(struct xout *o, FILE *f, size_t cap)
{
	*o = (struct xout){ .f = f, .buf = malloc(cap), .cap = cap };
	return o->buf ? 0 : -ENOMEM;
}

static void xout_flush(struct xout *o)
{
	if (o->len && !o->failed &&
	    (o->sink ? o->sink(o->ctx, o->buf, o->len) != 0
		     : fwrite(o->buf, 1, o->len, o->f) != o->len))
		o->failed = 1;
	o->len = 0;
}

uint8_t *xout_room(struct xout *o, size_t n)
{
	if (o->len + n > o->cap)
		xout_flush(o);
	if (o->failed || n > o->cap)
		return NULL;
	return o->buf + o->len;
}

int xout_free(struct xout *o)
{
	if (o->buf)
		xout_flush(o);
	free(o->buf);
	o->buf = NULL;
	return o->failed ? -EIO : 0;
}

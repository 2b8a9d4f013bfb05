/*
 * collapse.c - zones as collapsed stacks; collapse.h says what is written.
 *
 * The distinct stacks form a tree per thread (a node per stack, keyed by
 * its parent and its name in one hash map), each node adding up its self
 * time.  Each thread's open zones are a stack; a zone end finds the
 * innermost open zone of its name in O(1) through a second map (name on
 * thread -> innermost open), whose entries chain to the next one down, so
 * zones left open inside it close with it and every zone is popped once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/collapse.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/text.h"

#define NO_NODE UINT32_MAX

struct node {
	uint32_t parent;   /* NO_NODE: a thread's root */
	uint32_t name;     /* a zone's name id; a root's thread id */
	uint32_t depth;    /* 0 for a root */
	uint64_t self;     /* nanoseconds */
};

struct open {
	uint32_t node;
	uint32_t name;
	uint32_t below;    /* 1 + the index of the next open zone of this name, or 0 */
	uint64_t begin;
	uint64_t child;    /* time of the zones closed inside it */
};

struct cthread {
	uint32_t root;
	struct open *stack;
	size_t depth, cap;
};

struct collapse {
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct cthread *threads;
	size_t nthreads, threads_cap;
	struct idmap kids;     /* parent << 32 | name -> node */
	struct idmap tids;     /* thread id -> index in threads */
	struct idmap inner;    /* thread index << 32 | name -> 1 + innermost open */
	size_t open;           /* open zones, all threads */
	struct collapse_result *res;
};

static long node_new(struct collapse *c, uint32_t parent, uint32_t name)
{
	if (grow_array((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof(*c->nodes)))
		return -ENOMEM;
	uint32_t depth = parent == NO_NODE ? 0 : c->nodes[parent].depth + 1;
	c->nodes[c->nnodes] = (struct node){ parent, name, depth, 0 };
	return (long)c->nnodes++;
}

/* The thread of @tid, made with its root on first sight; NULL when out of memory. */
static struct cthread *thread_of(struct collapse *c, uint32_t tid)
{
	int added;
	uint32_t *slot = idmap_slot(&c->tids, tid, (uint32_t)c->nthreads, &added);
	if (!slot)
		return NULL;
	if (!added)
		return &c->threads[*slot];
	long root = node_new(c, NO_NODE, tid);
	if (root < 0 ||
	    grow_array((void **)&c->threads, &c->threads_cap, c->nthreads + 1, sizeof(*c->threads)))
		return NULL; /* the map's entry points past the end: the pass ends here */
	c->threads[c->nthreads] = (struct cthread){ .root = (uint32_t)root };
	return &c->threads[c->nthreads++];
}

/* The child of @parent named @name; @parent itself (folded) past the caps. */
static long child_of(struct collapse *c, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint32_t *found = idmap_find(&c->kids, key);
	if (found)
		return *found;
	if (c->nodes[parent].depth >= COLLAPSE_DEPTH || c->nnodes - c->nthreads >= COLLAPSE_STACKS) {
		c->res->folded++;
		return parent;
	}
	long n = node_new(c, parent, name);
	if (n < 0)
		return n;
	int added;
	return idmap_slot(&c->kids, key, (uint32_t)n, &added) ? n : -ENOMEM;
}

static int zone_open(struct collapse *c, struct cthread *t, uint32_t ti, uint32_t name,
		     uint64_t ns)
{
	if (c->open >= COLLAPSE_OPEN) {
		c->res->untimed++;
		return 0;
	}
	uint32_t parent = t->depth ? t->stack[t->depth - 1].node : t->root;
	long node = child_of(c, parent, name);
	if (node < 0 || grow_array((void **)&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack)))
		return -ENOMEM;
	int added;
	uint32_t *inner = idmap_slot(&c->inner, (uint64_t)ti << 32 | name, 0, &added);
	if (!inner)
		return -ENOMEM;
	t->stack[t->depth] = (struct open){ (uint32_t)node, name, *inner, ns, 0 };
	*inner = (uint32_t)++t->depth;
	c->open++;
	return 0;
}

/* Close @t's innermost open zone at @ns: its self time to its node, its
 * duration to its parent's children.  Times that go backwards count 0. */
static void zone_pop(struct collapse *c, struct cthread *t, uint32_t ti, uint64_t ns)
{
	struct open *z = &t->stack[--t->depth];
	*idmap_find(&c->inner, (uint64_t)ti << 32 | z->name) = z->below;
	c->open--;
	uint64_t dur = ns > z->begin ? ns - z->begin : 0;
	c->nodes[z->node].self += dur > z->child ? dur - z->child : 0;
	if (t->depth)
		t->stack[t->depth - 1].child += dur;
}

static void zone_close(struct collapse *c, struct cthread *t, uint32_t ti, uint32_t name,
		       uint64_t ns)
{
	uint32_t *inner = idmap_find(&c->inner, (uint64_t)ti << 32 | name);
	if (!inner || !*inner) {
		c->res->unbegun++;
		return;
	}
	size_t to = *inner - 1;
	while (t->depth > to)
		zone_pop(c, t, ti, ns);
}

int collapse_event(struct collapse *c, const kt_event *ev, uint64_t ns)
{
	if (ev->type != KT_EV_ZONE_BEGIN && ev->type != KT_EV_ZONE_END)
		return 0;
	struct cthread *t = thread_of(c, ev->thread_id);
	if (!t)
		return -ENOMEM;
	uint32_t ti = (uint32_t)(t - c->threads);
	if (ev->type == KT_EV_ZONE_BEGIN)
		return zone_open(c, t, ti, ev->name_id, ns);
	zone_close(c, t, ti, ev->name_id, ns);
	return 0;
}

/* @s as text_put() writes it, with ';' as "\x3B".  0, or -1 when a write failed. */
int collapse_put_frame(FILE *f, const char *s, size_t n)
{
	const char *semi;
	while ((semi = memchr(s, ';', n))) {
		if (text_put(f, s, (size_t)(semi - s)) || fputs("\\x3B", f) < 0)
			return -1;
		n -= (size_t)(semi - s) + 1;
		s = semi + 1;
	}
	return text_put(f, s, n);
}

/* In a merged trace, the thread's process first (SPEC §4.10): its name
 * and pid, as a frame of its own. */
static int put_process(FILE *f, const struct tables *t, uint32_t tid)
{
	uint32_t id = tables_thread_process(t, tid);
	const struct tproc *p = tables_process(t, id);
	if (p && p->name_len && collapse_put_frame(f, tables_process_name(t, p), p->name_len))
		return -1;
	return fprintf(f, "%s(%" PRIu64 ");", p && p->name_len ? " " : "pid ",
		       tables_process_pid(t, id)) < 0 ? -1 : 0;
}

int collapse_put_thread(FILE *f, const struct tables *t, uint32_t tid)
{
	size_t n = 0;
	if (tables_multiprocess(t) && put_process(f, t, tid))
		return -1;
	const char *s = tables_thread(t, tid, &n);
	if (!s || !n)
		return fprintf(f, "thread %" PRIu32, tid) < 0 ? -1 : 0;
	return collapse_put_frame(f, s, n) || fprintf(f, " (%" PRIu32 ")", tid) < 0 ? -1 : 0;
}

static int put_name(FILE *f, const struct tables *t, uint32_t id)
{
	size_t n = 0;
	const char *s = id ? tables_name(t, id, &n) : NULL;
	return s ? collapse_put_frame(f, s, n) : fputc('?', f) < 0 ? -1 : 0;
}

/* One line: the stack of node @i, root first, and its self time. */
static int put_line(const struct collapse *c, const struct tables *t, FILE *f, size_t i)
{
	uint32_t path[COLLAPSE_DEPTH + 1];
	size_t n = 0;
	for (uint32_t k = (uint32_t)i; k != NO_NODE; k = c->nodes[k].parent)
		path[n++] = k;
	if (collapse_put_thread(f, t, c->nodes[path[n - 1]].name))
		return -1;
	for (size_t k = n - 1; k-- > 0;)
		if (fputc(';', f) < 0 || put_name(f, t, c->nodes[path[k]].name))
			return -1;
	return fprintf(f, " %" PRIu64 "\n", c->nodes[i].self) < 0 ? -1 : 0;
}

static int write_lines(struct collapse *c, const struct tables *t, FILE *f)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		if (c->nodes[i].parent == NO_NODE || !c->nodes[i].self)
			continue;
		if (put_line(c, t, f, i))
			return -EIO;
		c->res->lines++;
	}
	return 0;
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	(void)index;
	return collapse_event(ctx, ev, ns);
}

size_t collapse_nodes(const struct collapse *c)
{
	return c->nnodes;
}

void collapse_node(const struct collapse *c, size_t i, uint32_t *parent, uint32_t *name,
		   uint64_t *self)
{
	*parent = c->nodes[i].parent;
	*name = c->nodes[i].name;
	*self = c->nodes[i].self;
}

static void collapse_clear(struct collapse *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		free(c->threads[i].stack);
	free(c->threads);
	free(c->nodes);
	idmap_free(&c->kids);
	idmap_free(&c->tids);
	idmap_free(&c->inner);
}

struct collapse *collapse_new(struct collapse_result *res)
{
	struct collapse *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->res = res;
	memset(res, 0, sizeof(*res));
	idmap_init(&c->kids);
	idmap_init(&c->tids);
	idmap_init(&c->inner);
	return c;
}

void collapse_end(struct collapse *c)
{
	c->res->unended = c->open;
}

void collapse_free(struct collapse *c)
{
	if (!c)
		return;
	collapse_clear(c);
	free(c);
}

int collapse_run(kt_reader *r, const struct tables *t, FILE *out, struct collapse_result *res)
{
	struct collapse *c = collapse_new(res);
	if (!c)
		return -ENOMEM;
	kt_reader_rewind(r);
	static const struct pipe_client client = { .event = on_event };
	int rc = pipe_run(r, &client, c);
	collapse_end(c);
	if (!rc)
		rc = write_lines(c, t, out);
	collapse_free(c);
	return rc;
}

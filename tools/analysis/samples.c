/*
 * Sampled call chains folded by function name (samples.h): a tree whose
 * nodes are a thread, then zones, then functions; each sample adds one to
 * the node its path ends in.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/collapse.h"
#include "tools/analysis/samples.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/symbolize.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/stacks.h"
#include "tools/pipeline/text.h"

#define NO_NODE UINT32_MAX
#define LABEL_ZONE (UINT64_C(1) << 63)

struct node {
	uint32_t parent;
	uint32_t label;  /* a root's: its thread id */
	uint32_t window; /* a root's: its window (samples_filter) */
	uint64_t count;
};

struct label {
	uint32_t zone;    /* a zone's name id, or 0 */
	const char *name; /* a function's name (the symbolizer's) */
};

struct zstack {
	uint32_t depth;
	uint32_t names[SAMPLES_ZONES];
};

struct samples {
	struct samples_result *res;
	const struct tables *t;
	const struct samples_filter *filter; /* NULL: every sample */
	uint32_t window;                     /* of the roots being made */
	struct symbolizer *sym;
	struct stacks stacks;
	struct idmap labels, kids, roots, zids;
	struct label *lab;
	size_t nlab, cap_lab;
	struct node *nodes;
	size_t nnodes, cap_nodes;
	struct zstack *zs;
	size_t nzs, cap_zs;
};

/* Make room for one more of *@p (@size bytes each), @n of *@cap used. */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : 64;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static uint32_t label_of(struct samples *s, uint64_t key, uint32_t zone, const char *name)
{
	int added;
	uint32_t *v = idmap_slot(&s->labels, key, (uint32_t)s->nlab, &added);
	if (!v)
		return NO_NODE;
	if (added) {
		if (grow((void **)&s->lab, &s->cap_lab, s->nlab, sizeof(*s->lab)))
			return NO_NODE;
		s->lab[s->nlab++] = (struct label){ zone, name };
	}
	return *v;
}

/* Node @parent's child of @label (a root when @parent is NO_NODE: @label
 * is then the thread id); NO_NODE when full or out of memory. */
static uint32_t child(struct samples *s, uint32_t parent, uint32_t label)
{
	int added;
	if (label == NO_NODE || s->nnodes >= SAMPLES_NODES)
		return NO_NODE;
	struct idmap *m = parent == NO_NODE ? &s->roots : &s->kids;
	uint64_t key = (uint64_t)(parent == NO_NODE ? s->window : parent) << 32 | label;
	uint32_t *v = idmap_slot(m, key, (uint32_t)s->nnodes, &added);
	if (!v)
		return NO_NODE;
	if (added) {
		if (grow((void **)&s->nodes, &s->cap_nodes, s->nnodes, sizeof(*s->nodes)))
			return NO_NODE;
		s->nodes[s->nnodes++] = (struct node){ parent, label, s->window, 0 };
	}
	return *v;
}

static struct zstack *zstack_of(struct samples *s, uint32_t tid)
{
	int added;
	uint32_t *v = idmap_slot(&s->zids, tid, (uint32_t)s->nzs, &added);
	if (!v)
		return NULL;
	if (added) {
		if (grow((void **)&s->zs, &s->cap_zs, s->nzs, sizeof(*s->zs)))
			return NULL;
		s->zs[s->nzs++].depth = 0;
	}
	return &s->zs[*v];
}

/* One step down from @n, or a fold: stays at @n. */
static uint32_t step(struct samples *s, uint32_t n, uint32_t label, int *folded)
{
	uint32_t c = *folded ? NO_NODE : child(s, n, label);
	if (c == NO_NODE) {
		*folded = 1;
		return n;
	}
	return c;
}

/* Sample @v's path from its root in window @s->window: its thread, its
 * zones, its frames; the node it ends in, or NO_NODE. */
static uint32_t add_path(struct samples *s, const kt_value *v, const uint64_t *fr, uint32_t depth)
{
	uint32_t n = child(s, NO_NODE, v->thread);
	if (n == NO_NODE) {
		s->res->unknown++;
		return NO_NODE;
	}
	int folded = 0;
	struct zstack *z = zstack_of(s, v->thread);
	for (uint32_t i = 0; z && i < z->depth; i++)
		n = step(s, n, label_of(s, LABEL_ZONE | z->names[i], z->names[i], NULL), &folded);
	/* Named in the sampled thread's process: in a merged trace another
	 * process may hold the same file elsewhere.  A walk without the
	 * tables (samples_walk()) names among every map entry. */
	uint32_t proc = s->t ? tables_thread_process(s->t, v->thread) : 0;
	for (uint32_t i = depth; i-- > 0;) {
		const char *name = s->t ? sym_name_in(s->sym, proc, fr[i], i > 0)
					: sym_name(s->sym, fr[i], i > 0);
		n = step(s, n, label_of(s, (uint64_t)(uintptr_t)name, 0, name), &folded);
	}
	s->res->folded += (uint64_t)folded;
	s->nodes[n].count++;
	return n;
}

/* Whether @f keeps a sample of @thread at @ns. */
static int kept(const struct samples_filter *f, uint32_t thread, uint64_t ns)
{
	if (f->threads && !idmap_find(f->threads, thread))
		return 0;
	if (!f->win)
		return 1;
	for (size_t w = 0; w < f->nwin; w++)
		if (ns >= f->win[w][0] && ns <= f->win[w][1])
			return 1;
	return 0;
}

static int on_sample(struct samples *s, const kt_value *v, uint64_t ns)
{
	const struct samples_filter *f = s->filter;
	if (f && !kept(f, v->thread, ns)) {
		s->res->outside++;
		return 0;
	}
	s->res->samples++;
	uint32_t depth;
	const uint64_t *fr = stacks_get(&s->stacks, v->u64, &depth);
	if (!fr) {
		s->res->unknown++;
		return 0;
	}
	if (!f) {
		add_path(s, v, fr, depth);
		return 0;
	}
	/* Once in each window that holds it: windows may overlap. */
	for (size_t w = 0; w < (f->win ? f->nwin : 1); w++) {
		if (f->win && (ns < f->win[w][0] || ns > f->win[w][1]))
			continue;
		s->window = (uint32_t)w;
		uint32_t n = add_path(s, v, fr, depth);
		int rc = n != NO_NODE && s->nodes[n].parent != NO_NODE && f->sample
			 ? f->sample(f->ctx, ns, v->thread, n) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	struct samples *s = ctx;
	kt_value v;
	(void)index;
	if (ev->type == KT_EV_SAMPLE)
		return kt_event_get_value(ev, &v) ? on_sample(s, &v, ns) : 0;
	if (ev->type != KT_EV_ZONE_BEGIN && ev->type != KT_EV_ZONE_END)
		return 0;
	struct zstack *z = zstack_of(s, ev->thread_id);
	if (!z)
		return -ENOMEM;
	if (ev->type == KT_EV_ZONE_END) {
		/* An end closes its name's innermost open zone, as collapse.c's. */
		for (uint32_t i = z->depth; i-- > 0;)
			if (z->names[i] == ev->name_id) {
				z->depth = i;
				break;
			}
	} else if (z->depth < SAMPLES_ZONES) {
		z->names[z->depth++] = ev->name_id;
	}
	return 0;
}

static int put_label(FILE *f, const struct tables *t, const struct label *l)
{
	size_t n = 0;
	const char *s = l->zone ? tables_name(t, l->zone, &n) : l->name;
	if (!l->zone && s)
		n = strlen(s);
	return s ? collapse_put_frame(f, s, n) : fputc('?', f) < 0 ? -1 : 0;
}

/* One line: node @i's path, root first, and its count. */
static int put_line(const struct samples *s, FILE *f, size_t i)
{
	uint32_t path[SAMPLES_ZONES + KT_MAX_STACK_DEPTH + 1];
	size_t n = 0;
	for (uint32_t k = (uint32_t)i; k != NO_NODE && n < sizeof(path) / 4; k = s->nodes[k].parent)
		path[n++] = k;
	if (collapse_put_thread(f, s->t, s->nodes[path[n - 1]].label))
		return -1;
	for (size_t k = n - 1; k-- > 0;)
		if (fputc(';', f) < 0 || put_label(f, s->t, &s->lab[s->nodes[path[k]].label]))
			return -1;
	return fprintf(f, " %" PRIu64 "\n", s->nodes[i].count) < 0 ? -1 : 0;
}

static void samples_clear(struct samples *s)
{
	sym_free(s->sym);
	stacks_free(&s->stacks);
	idmap_free(&s->labels);
	idmap_free(&s->kids);
	idmap_free(&s->roots);
	idmap_free(&s->zids);
	free(s->lab);
	free(s->nodes);
	free(s->zs);
}

/* The tree of every sample of @r into @s (its res and t set). */
static int samples_pass(struct samples *s, kt_reader *r)
{
	stacks_init(&s->stacks);
	idmap_init(&s->labels);
	idmap_init(&s->kids);
	idmap_init(&s->roots);
	idmap_init(&s->zids);
	int rc = (s->sym = sym_new()) ? 0 : -ENOMEM;
	if (!rc && !(rc = kt_reader_rewind(r)) && !(rc = stacks_read(&s->stacks, r, s->sym)) &&
	    !(rc = kt_reader_rewind(r))) {
		static const struct pipe_client client = { .event = on_event,
			                                   .payloads = PIPE_PAYLOADS_FIXED };
		rc = pipe_run(r, &client, s);
	}
	if (s->sym)
		sym_counts(s->sym, &s->res->named, &s->res->unnamed);
	return rc;
}

int samples_collapse(kt_reader *r, const struct tables *t, FILE *out, struct samples_result *res)
{
	struct samples s = { .res = res, .t = t };
	memset(res, 0, sizeof(*res));
	int rc = samples_pass(&s, r);
	for (size_t i = 0; !rc && i < s.nnodes; i++) {
		if (!s.nodes[i].count)
			continue;
		if (put_line(&s, out, i))
			rc = -EIO;
		res->lines++;
	}
	samples_clear(&s);
	return rc;
}

/* Per zone (the innermost open at a sample) and function (its innermost
 * frame): how many samples. */
struct ztop {
	uint32_t zone, fn; /* a name id; a label */
	uint64_t count, zone_total;
};

static int by_zone_count(const void *a, const void *b)
{
	const struct ztop *x = a, *y = b;
	if (x->zone_total != y->zone_total)
		return x->zone_total < y->zone_total ? 1 : -1;
	if (x->zone != y->zone)
		return x->zone < y->zone ? -1 : 1;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* The rows of node counts by zone and function, their zones' totals set,
 * sorted (biggest zone first, its biggest function first). */
static struct ztop *zone_rows(const struct samples *s, size_t *n)
{
	struct idmap m;
	struct ztop *rows = calloc(s->nnodes + 1, sizeof(*rows));
	*n = 0;
	idmap_init(&m);
	for (size_t i = 0; rows && i < s->nnodes; i++) {
		uint32_t k = (uint32_t)i, fn = s->nodes[i].label;
		if (!s->nodes[i].count || s->nodes[i].parent == NO_NODE || s->lab[fn].zone)
			continue;
		while (s->nodes[k].parent != NO_NODE && !s->lab[s->nodes[k].label].zone)
			k = s->nodes[k].parent;
		uint32_t zone = s->nodes[k].parent == NO_NODE ? 0 : s->lab[s->nodes[k].label].zone;
		int added;
		uint32_t *v = idmap_slot(&m, (uint64_t)zone << 32 | fn, (uint32_t)*n, &added);
		if (!v)
			break;
		if (added)
			rows[(*n)++] = (struct ztop){ zone, fn, 0, 0 };
		rows[*v].count += s->nodes[i].count;
	}
	idmap_free(&m);
	for (size_t i = 0; rows && i < *n; i++)
		for (size_t j = 0; j < *n; j++)
			if (rows[j].zone == rows[i].zone)
				rows[i].zone_total += rows[j].count;
	if (rows)
		qsort(rows, *n, sizeof(*rows), by_zone_count);
	return rows;
}

/* samples_pass() and zone_rows() over @r: *@rows (*@n of them) freed by
 * the caller with samples_clear(@s). */
static int zone_pass(struct samples *s, kt_reader *r, struct ztop **rows, size_t *n)
{
	int rc = samples_pass(s, r);
	*n = 0;
	*rows = rc ? NULL : zone_rows(s, n);
	return !rc && !*rows ? -ENOMEM : rc;
}

int samples_zone_text(kt_reader *r, const struct tables *t, FILE *f)
{
	struct samples_result res = { 0 };
	struct samples s = { .res = &res, .t = t };
	size_t n = 0, zones = 0;
	struct ztop *rows;
	int rc = zone_pass(&s, r, &rows, &n);
	if (!rc)
		fprintf(f,
		        "\nsamples: %" PRIu64 " (%" PRIu64 " of no known stack); per zone, its "
		        "top functions (innermost frame):\n",
		        res.samples, res.unknown);
	for (size_t i = 0, shown = 0; !rc && i < n; i++) {
		if (i == 0 || rows[i].zone != rows[i - 1].zone) {
			if (++zones > SAMPLES_TOP_ZONES)
				break;
			size_t len = 0;
			const char *z = rows[i].zone ? tables_name(t, rows[i].zone, &len) : NULL;
			fputs("  ", f);
			rc = collapse_put_frame(f, z ? z : "(no zone)", z ? len : 9) ? -EIO : 0;
			fprintf(f, ": %" PRIu64 " samples\n", rows[i].zone_total);
			shown = 0;
		}
		if (rc || shown++ >= SAMPLES_TOP_FNS)
			continue;
		fprintf(f, "    %5.1f%% %8" PRIu64 "  ",
		        100.0 * (double)rows[i].count / (double)rows[i].zone_total, rows[i].count);
		rc = put_label(f, t, &s.lab[rows[i].fn]) || fputc('\n', f) < 0 ? -EIO : 0;
	}
	free(rows);
	samples_clear(&s);
	return rc;
}

static json_t *label_json(const struct tables *t, const struct label *l)
{
	size_t n = 0;
	const char *s = l->zone ? tables_name(t, l->zone, &n) : l->name;
	if (!l->zone && s)
		n = strlen(s);
	return s ? text_json_string(s, n) : json_string("?");
}

/* The zones of @rows (@n) as samples_zone_json() gives them. */
static json_t *zones_json(const struct samples *s, const struct ztop *rows, size_t n)
{
	json_t *zones = json_array(), *fns = NULL;
	for (size_t i = 0, nz = 0; zones && i < n; i++) {
		if (i == 0 || rows[i].zone != rows[i - 1].zone) {
			if (++nz > SAMPLES_TOP_ZONES)
				break;
			size_t len = 0;
			const char *z = rows[i].zone ? tables_name(s->t, rows[i].zone, &len) : NULL;
			fns = json_array();
			if (json_array_append_new(zones, json_pack("{s:o,s:I,s:o}", "zone",
								   z ? text_json_string(z, len)
								     : json_null(),
								   "samples",
								   (json_int_t)rows[i].zone_total,
								   "functions", fns)))
				return json_decref(zones), NULL;
		}
		if (json_array_size(fns) >= SAMPLES_TOP_FNS)
			continue;
		double pct = 100.0 * (double)rows[i].count / (double)rows[i].zone_total;
		if (json_array_append_new(fns, json_pack("{s:o,s:I,s:f}", "name",
							 label_json(s->t, &s->lab[rows[i].fn]),
							 "samples", (json_int_t)rows[i].count,
							 "percent", pct)))
			return json_decref(zones), NULL;
	}
	return zones;
}

int samples_zone_json(kt_reader *r, const struct tables *t, json_t **out)
{
	struct samples_result res = { 0 };
	struct samples s = { .res = &res, .t = t };
	size_t n = 0;
	struct ztop *rows;
	int rc = zone_pass(&s, r, &rows, &n);
	json_t *zones = rc ? NULL : zones_json(&s, rows, n);
	*out = zones ? json_pack("{s:I,s:I,s:o}", "samples", (json_int_t)res.samples, "unknown",
				 (json_int_t)res.unknown, "zones", zones)
		     : NULL;
	if (!rc && !*out)
		rc = -ENOMEM;
	free(rows);
	samples_clear(&s);
	return rc;
}

int samples_walk(kt_reader *r, const struct samples_filter *f,
		 int (*node)(void *ctx, size_t i, const struct samples_node *n), void *ctx,
		 struct samples_result *res)
{
	struct samples s = { .res = res, .filter = f };
	memset(res, 0, sizeof(*res));
	int rc = samples_pass(&s, r);
	for (size_t i = 0; !rc && i < s.nnodes; i++) {
		const struct node *x = &s.nodes[i];
		struct samples_node o = { .parent = x->parent, .count = x->count };
		if (x->parent != NO_NODE)
			o.top = s.nodes[x->parent].parent == NO_NODE;
		if (x->parent == NO_NODE) {
			o.parent = SAMPLES_ROOT;
			o.window = x->window;
			o.thread = x->label;
		} else {
			o.zone = s.lab[x->label].zone;
			o.fn = s.lab[x->label].name;
		}
		rc = node(ctx, i, &o);
	}
	samples_clear(&s);
	return rc;
}

/*
 * report_samples.c - the report's flame graph of the samples inside the
 * slowest frames; report_samples.h says what and how it stays bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/report.h"
#include "tools/analysis/report_samples.h"
#include "tools/analysis/samples.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/text.h"

#define ABSENT_NOTE "samples: absent: "

_Static_assert(SAMPLES_ROOT == COLLAPSE_ROOT, "a root is a root in report_flame_rows()");

struct rs_node {
	uint32_t parent, window, thread, zone;
	char *fn; /* a function's name, copied: the walk's strings end with it */
	uint64_t count;
};

struct report_samples {
	const char *why; /* the header's note, or NULL */
	uint64_t total;
	struct samples_result res;
	struct rs_node *n;
	size_t nn, cap;
};

static int keep_node(void *ctx, size_t i, const struct samples_node *x)
{
	struct report_samples *s = ctx;
	(void)i;
	if (grow_array((void **)&s->n, &s->cap, s->nn + 1, sizeof(*s->n)))
		return -ENOMEM;
	char *fn = x->fn ? strdup(x->fn) : NULL;
	if (x->fn && !fn)
		return -ENOMEM;
	s->n[s->nn++] = (struct rs_node){ x->parent, x->window, x->thread, x->zone, fn, x->count };
	return 0;
}

int report_samples_collect(kt_reader *r, struct report *rep)
{
	struct report_samples *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rep->samples = s;
	const kt_header *h = kt_reader_get_header(r);
	for (uint32_t i = 0; i < h->note_count && !s->why; i++)
		if (!strncmp(h->notes[i], ABSENT_NOTE, strlen(ABSENT_NOTE)))
			s->why = h->notes[i] + strlen(ABSENT_NOTE);
	s->total = stats_samples(rep->stats);
	if (!s->total || !rep->nslowest)
		return 0;
	uint64_t win[REPORT_SLOWEST][2];
	for (size_t i = 0; i < rep->nslowest; i++) {
		const struct report_frame *f = &rep->slowest[i];
		win[i][0] = f->ns > f->len ? f->ns - f->len : 0;
		win[i][1] = f->ns;
	}
	struct samples_filter f = { .win = win, .nwin = rep->nslowest,
				    .threads = rep->procs.filtered ? &rep->procs.threads : NULL };
	return samples_walk(r, &f, keep_node, s, &s->res);
}

static json_t *node_name(const struct tables *t, const struct rs_node *x)
{
	size_t len = 0;
	const char *s = x->parent == SAMPLES_ROOT ? tables_thread(t, x->thread, &len)
		      : x->zone ? tables_name(t, x->zone, &len) : x->fn;
	if (x->parent == SAMPLES_ROOT && (!s || !len)) {
		char buf[32];
		snprintf(buf, sizeof(buf), "thread %u", x->thread);
		return json_string(buf);
	}
	if (s && x->fn == s)
		len = strlen(s);
	return s ? text_json_string(s, len) : json_string("?");
}

struct sample_rows {
	const struct report_samples *s;
	const struct tables *t;
	const struct fnode *n;
};

/* [parent row or -1, name, samples, thread id or null, frame or null] */
static json_t *sample_row(void *ctx, size_t i, json_int_t parent)
{
	const struct sample_rows *z = ctx;
	const struct rs_node *x = &z->s->n[i];
	return json_pack("[I,o,I,o,o]", parent, node_name(z->t, x), (json_int_t)z->n[i].self,
			 parent < 0 ? json_integer(x->thread) : json_null(),
			 parent < 0 ? json_integer(x->window) : json_null());
}

static json_t *flame_json(const struct report_samples *s, const struct tables *t)
{
	struct fnode *n = calloc(s->nn ? s->nn : 1, sizeof(*n));
	if (!n)
		return NULL;
	for (size_t i = 0; i < s->nn; i++)
		n[i] = (struct fnode){ s->n[i].parent, (uint32_t)i, s->n[i].count, 0, 0 };
	struct sample_rows z = { s, t, n };
	json_t *a = report_flame_rows(n, s->nn, sample_row, &z);
	free(n);
	return a;
}

json_t *report_samples_json(const struct report *rep)
{
	const struct report_samples *s = rep->samples;
	if (!s)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:I,s:o,s:o}", "total", (json_int_t)s->total, "in_frames",
			 (json_int_t)s->res.samples, "unknown", (json_int_t)s->res.unknown,
			 "folded", (json_int_t)s->res.folded, "why",
			 s->why ? text_json_string(s->why, strlen(s->why)) : json_null(), "flame",
			 flame_json(s, stats_tables(rep->stats)));
}

void report_samples_free(struct report_samples *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nn; i++)
		free(s->n[i].fn);
	free(s->n);
	free(s);
}

const char report_samples_body[] =
	"<section id=\"smsec\"><h2>Sampled call stacks in the slowest frames</h2><p id=\"smsum\" class=\"muted\"></p>\n"
	"<div id=\"smview\"><div class=\"row\"><select id=\"smframe\"></select><button id=\"smreset\">reset zoom</button><span id=\"sminfo\" class=\"muted\"></span></div>\n"
	"<div id=\"smflame\"></div></div></section>\n";

const char report_samples_script[] =
	"// D.samples (report_samples.h): a root per thread in a slowest frame,\n"
	"// gathered under a node per frame; or a sentence saying why there is none.\n"
	"function samples() {\n"
	"  const s = D.samples, slow = D.frames.slowest, say = $(\"smsum\");\n"
	"  let why = null;\n"
	"  if (!s.total) why = \"No sampled call stacks in this trace\" + (s.why ? \": sampling was asked for and is absent (\" + s.why + \").\" : \" (a session samples them with KT_SAMPLE_HZ=N).\");\n"
	"  else if (!slow.length) why = s.total + \" samples, but no frame marks: no slowest frames to show them in.\";\n"
	"  else if (!s.in_frames) why = s.total + \" samples, none inside the \" + slow.length + \" slowest frames.\";\n"
	"  if (why) { say.textContent = why; $(\"smview\").hidden = true; return; }\n"
	"  say.textContent = s.in_frames + \" of the trace's \" + s.total + \" samples are inside the \" + slow.length + \" slowest frames: per frame, its threads, the zones open, then the functions, outermost first; width is samples.\" +\n"
	"    (s.unknown ? \" \" + s.unknown + \" of them name no known stack.\" : \"\") + (s.folded ? \" \" + s.folded + \" were cut short at the caps.\" : \"\");\n"
	"  const roots = flameTree(s.flame);\n"
	"  const frames = slow.map((f, i) => ({ name: \"frame #\" + (i + 1) + \", \" + ns(f[1]) + \" at \" + at(f[0]), self: 0, total: 0, kids: [] }));\n"
	"  roots.forEach((r) => { const f = frames[r.row[4]]; f.kids.push(r); f.total += r.total; });\n"
	"  flameView([\"smframe\", \"smflame\", \"smreset\", \"sminfo\"], frames.filter((f) => f.total), \"the slowest frames\", (v) => v + (v === 1 ? \" sample\" : \" samples\"));\n"
	"}\n";

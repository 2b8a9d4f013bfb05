/*
 * collapse.h - a trace's zones as collapsed stacks ("folded" lines), the
 * input of flame graph tools (FlameGraph's flamegraph.pl, speedscope,
 * inferno): one line per distinct stack of zones on a thread, its frames
 * joined by ';', then a space and the stack's self time in nanoseconds.
 *
 *   main (1);frame;draw 1200
 *
 * The first frame names the thread: "NAME (ID)", or "thread ID" when the
 * trace names it not.  Self time is a zone's duration less its children's,
 * so a thread's lines sum to the time its outermost zones took.  Names are
 * escaped as text_put() does (tools/pipeline/text.h), and ';' as "\x3B", so no name
 * can split a frame or a line.
 *
 * Bounded whatever the trace: stacks deeper than COLLAPSE_DEPTH and
 * distinct stacks past COLLAPSE_STACKS fold into their deepest kept frame
 * (their time stays, in that frame), and at most COLLAPSE_OPEN zones are
 * open at once (a begin past that is left untimed).  Zones still open at
 * the end, and ends with no begin, are left out.  Each is counted in
 * struct collapse_result, which the command says on stderr.
 *
 * The command's one thread (and pipe.h's merging thread, inside).
 */
#ifndef KT_TOOLS_COLLAPSE_H
#define KT_TOOLS_COLLAPSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <katra/reader.h>
#include "tools/pipeline/tables.h"

#define COLLAPSE_DEPTH 256
#define COLLAPSE_STACKS (1u << 20)
#define COLLAPSE_OPEN (1u << 20)

struct collapse_result {
	uint64_t lines;     /* stacks written */
	uint64_t folded;    /* zones folded into a shallower frame */
	uint64_t untimed;   /* begins past COLLAPSE_OPEN open zones */
	uint64_t unended;   /* zones still open at the end */
	uint64_t unbegun;   /* ends with no open zone of their name */
};

/*
 * collapse_run - every event of @r (rewound first) through the zone
 * stacks, then the lines to @out.  @t names names and threads.
 *
 * Return: 0; a reader's negative code (nothing written); -ENOMEM; -EIO when
 * a write to @out failed.  *@res is filled in every case.
 */
int collapse_run(kt_reader *r, const struct tables *t, FILE *out, struct collapse_result *res);

/*
 * The same tree, built by a pass of the caller's (`katra report`, inside
 * the stats pass): collapse_new() (NULL without memory; it zeroes @res,
 * which must outlive it), collapse_event() for every event in the merged
 * order (0 or -ENOMEM), collapse_end() after the last, then the nodes:
 * node i's parent (COLLAPSE_ROOT for a thread's root), its name id
 * (a root's: its thread id) and its self time in ns.  A node's parent
 * comes before it.  collapse_free() accepts NULL.
 */
#define COLLAPSE_ROOT UINT32_MAX
struct collapse;
struct collapse *collapse_new(struct collapse_result *res);
int collapse_event(struct collapse *c, const kt_event *ev, uint64_t ns);
void collapse_end(struct collapse *c);
size_t collapse_nodes(const struct collapse *c);
void collapse_node(const struct collapse *c, size_t i, uint32_t *parent, uint32_t *name,
		   uint64_t *self);
void collapse_free(struct collapse *c);

/* One frame's text as the lines have it (text_put()'s escapes, ';' as
 * "\x3B"), and a thread's first frame ("NAME (ID)", after its process's
 * in a merged trace): for samples.c's lines too.  0, or -1 when a write
 * failed. */
int collapse_put_frame(FILE *f, const char *s, size_t n);
int collapse_put_thread(FILE *f, const struct tables *t, uint32_t tid);

#endif

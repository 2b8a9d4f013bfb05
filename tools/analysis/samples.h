/*
 * samples.h - a trace's sampled call chains (SPEC §4.2.2, §4.11, §4.12)
 * folded into stacks by function name: `katra export --collapsed
 * --samples`, and per zone its top functions for `katra stats`.
 *
 * A sample's stack is its thread (as collapse.h names it), the zones open
 * on that thread when it was taken (outermost first), then its frames,
 * outermost first, each named by symbolize.h; a line is a stack and how
 * many samples took it.  Names are escaped as collapse.h's are.
 *
 * Bounded: STACKS_MAX stack entries kept (stacks.h; later ones' samples counted
 * as unknown), SAMPLES_NODES distinct stacks (past it a sample stays in
 * the deepest node it reached: folded), SAMPLES_ZONES open zones a thread.
 * The command's one thread.
 */
#ifndef KT_TOOLS_SAMPLES_H
#define KT_TOOLS_SAMPLES_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

#define SAMPLES_NODES (1u << 20)
#define SAMPLES_ZONES 64u

struct samples_result {
	uint64_t samples; /* sample records read (and kept: samples_walk()) */
	uint64_t outside; /* samples_walk(): records its filter left out */
	uint64_t unknown; /* of them, naming no stack entry kept */
	uint64_t folded;  /* cut short at SAMPLES_NODES or SAMPLES_ZONES */
	uint64_t named;   /* addresses a symbol named */
	uint64_t unnamed; /* and those none did */
	uint64_t lines;   /* stacks written */
};

/*
 * samples_collapse - every sample of @r (rewound first) folded, then one
 * line per stack to @out: "THREAD;ZONE...;FRAME... COUNT".
 * Return: 0; a reader's negative code; -ENOMEM; -EIO when a write failed.
 * *@res is filled in every case.
 */
int samples_collapse(kt_reader *r, const struct tables *t, FILE *out, struct samples_result *res);

/*
 * samples_zone_text - `katra stats`' samples section: per zone (the
 * innermost open at each sample), its SAMPLES_TOP_FNS functions that took
 * the most samples (by innermost frame) and their shares, for the
 * SAMPLES_TOP_ZONES zones with the most.  Return as samples_collapse().
 */
#define SAMPLES_TOP_ZONES 20
#define SAMPLES_TOP_FNS 5
int samples_zone_text(kt_reader *r, const struct tables *t, FILE *f);

/*
 * samples_zone_json - the same section, the same figures, for `katra
 * stats --json`: {"samples", "unknown", "zones": [{"zone" (null: none),
 * "samples", "functions": [{"name", "samples", "percent"}]}]}.  *@out
 * NULL unless 0 is returned; return as samples_collapse().
 */
int samples_zone_json(kt_reader *r, const struct tables *t, json_t **out);

/*
 * samples_chrome - @r's samples as `katra export --chrome` has them (the
 * Trace Event Format's): after the "traceEvents" array, where @f stands,
 * a "samples" array, one object per sample ({"pid", "tid", "ts", "name":
 * "sample", "sf", "weight": 1}) on its followed thread's row, and a
 * "stackFrames" object whose entries ({"name", "category", "parent"})
 * are the tree above less its roots: the zones open at the sample
 * ("category": "zone"), then its functions, outermost first ("category":
 * "function").  A sample's "sf" is the entry its stack ends in.  Viewers
 * that read only "traceEvents" (Tracy's import-chrome) ignore both;
 * chrome://tracing shows them.  Nothing is written when @r has no sample
 * with a stack.  @pid: the trace's own.  Return as samples_collapse().
 */
int samples_chrome(kt_reader *r, const struct tables *t, FILE *f, uint64_t pid);

/* The samples samples_walk() keeps: those of the threads @threads holds
 * (NULL: every thread) taken in one of @nwin windows [win[i][0],
 * win[i][1]] ns (@win NULL: at any time); a sample in several windows
 * counts in each.  @sample (or NULL) is called with each sample kept, in
 * the file's order, and the index of the node its stack ends in (in each
 * window; never a root: a sample with no zone and no frame is not kept); its non-zero return stops the pass and is its result. */
struct samples_filter {
	const uint64_t (*win)[2];
	size_t nwin;
	const struct idmap *threads;
	int (*sample)(void *ctx, uint64_t ns, uint32_t thread, uint32_t node);
	void *ctx;
};

/* A node of samples_walk()'s tree: a thread's root, a zone or a function. */
#define SAMPLES_ROOT UINT32_MAX
struct samples_node {
	uint32_t parent; /* the node's index, SAMPLES_ROOT for a root */
	int top;         /* its parent is a root */
	uint32_t window; /* a root's window */
	uint32_t thread; /* a root's thread id */
	uint32_t zone;   /* a zone's name id; 0: not a zone */
	const char *fn;  /* a function's name (not escaped), else NULL */
	uint64_t count;  /* samples whose stack ends here */
};

/*
 * samples_walk - the samples of @r (rewound first) @f keeps, folded as
 * samples_collapse() folds them but rooted per window and thread, then
 * @node called on each node of the tree, a parent before its children
 * (@i counts from 0), its strings valid during the call.  A non-zero
 * return of @node stops the walk and is its result; else return as
 * samples_collapse().
 */
int samples_walk(kt_reader *r, const struct samples_filter *f,
		 int (*node)(void *ctx, size_t i, const struct samples_node *n), void *ctx,
		 struct samples_result *res);

#endif

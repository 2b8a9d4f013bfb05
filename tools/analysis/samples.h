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

#include <katra/reader.h>
#include "tools/pipeline/tables.h"

#define SAMPLES_NODES (1u << 20)
#define SAMPLES_ZONES 64u

struct samples_result {
	uint64_t samples; /* sample records read */
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

#endif

/*
 * stacks.h - a trace's stack entries (SPEC §4.11) kept by id, for the
 * readers of sample records (samples.c's folds, perfetto_samples.c), and
 * its map entries handed to a symbolizer (symbolize.h) on the way.
 * Bounded: STACKS_MAX entries (later ones left out: their samples' stacks
 * unknown), 8 bytes a frame.  One thread.
 */
#ifndef KT_TOOLS_STACKS_H
#define KT_TOOLS_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/symbolize.h"

#define STACKS_MAX (1u << 20)

struct stacks {
	struct idmap ids; /* stack id -> index in at */
	uint64_t *frames; /* every kept stack's addresses */
	size_t nframes, cap_frames;
	uint64_t *at; /* per stack: offset << 8 | depth */
	size_t n, cap;
};

void stacks_init(struct stacks *s);

/* Every frame of @r from where it stands: its stack entries kept, its map
 * entries given to @sym (NULL: none).  0, a reader's code or -ENOMEM. */
int stacks_read(struct stacks *s, kt_reader *r, struct symbolizer *sym);

/* Stack @id's frames, innermost first (*@depth of them), or NULL. */
const uint64_t *stacks_get(const struct stacks *s, uint64_t id, uint32_t *depth);

void stacks_free(struct stacks *s);

#endif

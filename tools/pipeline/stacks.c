/* A trace's stack entries by id (stacks.h). */
#include <errno.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/pipeline/stacks.h"

void stacks_init(struct stacks *s)
{
	memset(s, 0, sizeof(*s));
	idmap_init(&s->ids);
}

static int keep(struct stacks *s, const kt_stack_def *d)
{
	int added;
	if (s->n >= STACKS_MAX)
		return 0;
	uint32_t *v = idmap_slot(&s->ids, d->id, (uint32_t)s->n, &added);
	if (!v)
		return -ENOMEM;
	if (!added)
		return 0; /* a second entry for an id: the first is kept */
	if (grow_array((void **)&s->frames, &s->cap_frames, s->nframes + d->depth, 8) ||
	    grow_array((void **)&s->at, &s->cap, s->n + 1, 8))
		return -ENOMEM;
	memcpy(s->frames + s->nframes, d->frames, 8u * d->depth);
	s->at[s->n++] = (uint64_t)s->nframes << 8 | d->depth;
	s->nframes += d->depth;
	return 0;
}

int stacks_read(struct stacks *s, kt_reader *r, struct symbolizer *sym)
{
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		const kt_stack_def *d = kt_trace_frame_get_stack(&f);
		const kt_map_def *m = kt_trace_frame_get_map(&f);
		if ((d && (rc = keep(s, d))) || (m && sym && (rc = sym_add_map(sym, m))))
			return rc;
	}
	return rc;
}

const uint64_t *stacks_get(const struct stacks *s, uint64_t id, uint32_t *depth)
{
	uint32_t *at = id <= UINT32_MAX ? idmap_find(&s->ids, id) : NULL;
	if (!at)
		return NULL;
	*depth = (uint32_t)(s->at[*at] & 0xff);
	return s->frames + (s->at[*at] >> 8);
}

void stacks_free(struct stacks *s)
{
	idmap_free(&s->ids);
	free(s->frames);
	free(s->at);
}

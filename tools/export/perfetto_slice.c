/*
 * perfetto_slice.c - flows on the slices around them; perfetto_slice.h
 * says the rules.
 */
#include <stdlib.h>

#include <katra/record.h>

#include "tools/pipeline/grow.h"
#include "tools/export/perfetto_slice.h"

/* TrackEvent's flow_ids and terminating_flow_ids (fixed64). */
#define FIELD_FLOW_IDS 47
#define FIELD_TERMINATING 48

struct pslice *pslice_of(struct pslices *all, size_t index)
{
	if (index >= all->n) {
		if (grow_array((void **)&all->s, &all->cap, index + 1, sizeof(*all->s)))
			return NULL;
		memset(all->s + all->n, 0, (index + 1 - all->n) * sizeof(*all->s));
		all->n = index + 1;
	}
	return &all->s[index];
}

int pslice_flow(struct pslice *s, size_t depth, int held, unsigned phase, uint64_t id)
{
	if (!depth)
		return 0;
	if (phase == KT_FLOW_END) {
		unsigned same = 0;
		for (unsigned i = s->nends; i && s->ends[i - 1].level == depth - 1; i--)
			same++;
		if (s->nends >= PSLICE_ENDS || same >= PSLICE_END_FLOWS)
			return 0;
		s->ends[s->nends].level = depth - 1;
		s->ends[s->nends++].id = id;
		return 1;
	}
	if (!held || s->begin_flows >= PSLICE_BEGIN_FLOWS)
		return 0;
	s->begin_ids[s->begin_flows++] = id;
	return 1;
}

void pslice_begin(struct pslice *s, struct pb *te)
{
	for (unsigned i = 0; i < s->begin_flows && te->n + 10 <= sizeof(te->b); i++)
		pb_fixed64(te, FIELD_FLOW_IDS, s->begin_ids[i]);
	s->begin_flows = 0;
}

void pslice_end(struct pslice *s, size_t level, struct pb *te)
{
	/* Ends wait in the order their zones nest, the innermost's last; at
	 * most PSLICE_END_FLOWS of them are this zone's (pslice_flow()), and
	 * a zone inside it has ended first and taken its own. */
	while (s->nends && s->ends[s->nends - 1].level >= level) {
		uint64_t id = s->ends[--s->nends].id;
		if (te->n + 10 <= sizeof(te->b))
			pb_fixed64(te, FIELD_TERMINATING, id);
	}
}

void pslices_free(struct pslices *all)
{
	free(all->s);
	all->s = NULL;
	all->n = all->cap = 0;
}

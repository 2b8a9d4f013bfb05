/*
 * tracks.c - track zones matched per track; tracks.h says how.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/tracks.h"

void tracks_init(struct tracks *k, const struct tables *t, track_zone_fn zone, void *ctx)
{
	memset(k, 0, sizeof(*k));
	k->t = t;
	k->zone = zone;
	k->ctx = ctx;
	idmap_init(&k->tops);
}

static uint64_t top_key(uint32_t track, uint32_t name)
{
	return (uint64_t)track << 32 | name;
}

/* Close the zones of @track above depth @to, innermost first, at @end. */
static int close_to(struct tracks *k, uint32_t track, size_t to, uint64_t end)
{
	while (k->depth[track] > to) {
		size_t d = --k->depth[track];
		const struct track_open *o = &k->stack[track][d];
		uint32_t *top = idmap_find(&k->tops, top_key(track, o->name));
		if (top)
			*top = o->below;
		k->steps++;
		struct track_zone z = { track, o->name, o->begin, end > o->begin ? end : o->begin,
					d };
		int rc = k->zone(k->ctx, &z);
		if (rc)
			return rc;
	}
	return 0;
}

static int begin(struct tracks *k, uint32_t track, uint32_t name, uint64_t at)
{
	if (!k->stack[track] &&
	    !(k->stack[track] = malloc(TRACK_OPEN * sizeof(*k->stack[track]))))
		return -ENOMEM;
	if (k->depth[track] == TRACK_OPEN) {
		k->n.deep++;
		return 0;
	}
	int added;
	uint32_t *top = idmap_slot(&k->tops, top_key(track, name), 0, &added);
	if (!top)
		return -ENOMEM;
	k->stack[track][k->depth[track]] = (struct track_open){ name, *top, at };
	*top = (uint32_t)++k->depth[track];
	struct track_zone z = { track, name, at, 0, 0 };
	return k->open ? k->open(k->ctx, &z) : 0;
}

static int end(struct tracks *k, uint32_t track, uint32_t name, uint64_t at)
{
	const uint32_t *top = idmap_find(&k->tops, top_key(track, name));
	size_t i = top ? *top : 0;
	if (!i) {
		k->n.unbegun++;
		return 0;
	}
	k->n.inner_closed += k->depth[track] - i;
	return close_to(k, track, i - 1, at);
}

int tracks_event(struct tracks *k, const kt_event *ev, uint64_t *ticks)
{
	kt_track_event te;
	uint64_t at;
	int rc = tables_track_ticks(k->t, ev, &te, &at);
	if (rc == 1)
		return 0;
	if (rc) {
		if (rc == -ENOENT)
			k->n.unknown++;
		else
			k->n.unconverted++;
		return 0;
	}
	if (at > k->last[te.track])
		k->last[te.track] = at;
	switch (ev->type) {
	case KT_EV_TRACK_BEGIN:
		return begin(k, te.track, ev->name_id, at);
	case KT_EV_TRACK_END:
		return end(k, te.track, ev->name_id, at);
	default:
		*ticks = at;
		return 1;
	}
}

int tracks_finish(struct tracks *k)
{
	for (uint32_t i = 1; i <= KT_MAX_TRACKS; i++) {
		k->n.unended += k->depth[i];
		int rc = close_to(k, i, 0, k->last[i]);
		if (rc)
			return rc;
	}
	return 0;
}

void tracks_free(struct tracks *k)
{
	for (uint32_t i = 0; i <= KT_MAX_TRACKS; i++)
		free(k->stack[i]);
	memset(k->stack, 0, sizeof(k->stack));
	idmap_free(&k->tops);
}

/*
 * A snapshot's tables: the names, categories and tracks as they are when
 * the snapshot is written, copied under their tables' locks and written
 * after them.  The file may be slow, or stall (a host's own path on a
 * network or FUSE mount), and a kt_name(), a category's switch or a
 * kt_track_calibrate() on another thread must not wait for it.  Names
 * live as long as the process (their strings are never freed,
 * ring/names.c), so a name is copied as its pointers; a track's pairs
 * change under its lock, so they are copied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flush/session_impl.h"

struct tables_copy {
	struct name_ref {
		uint32_t id;
		const char *str;
		size_t len;
		int has_loc;
		kt_srcloc loc;
	} *names;
	size_t nnames, names_cap;
	uint32_t (*cats)[2];       /* id, flags */
	size_t ncats, cats_cap;
	kt_track_def *tracks;      /* each with its pairs, owned */
	size_t ntracks, tracks_cap;
	int rc;                    /* -ENOMEM when a copy failed */
};

/* Room for one more of @size-byte items in *@p, of *@cap. */
static int grow(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	void *more = reallocarray(*(void **)p, *cap * 2 + 64, size);
	if (!more)
		return -ENOMEM;
	*(void **)p = more;
	*cap = *cap * 2 + 64;
	return 0;
}

static void name_cb(void *ctx, uint32_t id, const char *str, size_t len, const kt_srcloc *loc)
{
	struct tables_copy *c = ctx;
	if (c->rc || (c->rc = grow(&c->names, c->nnames, &c->names_cap, sizeof(*c->names))))
		return;
	c->names[c->nnames++] = (struct name_ref){ id, str, len, loc != NULL,
						   loc ? *loc : (kt_srcloc){ 0 } };
}

static void category_cb(void *ctx, uint32_t id, uint32_t flags)
{
	struct tables_copy *c = ctx;
	if (c->rc || (c->rc = grow(&c->cats, c->ncats, &c->cats_cap, sizeof(*c->cats))))
		return;
	c->cats[c->ncats][0] = id;
	c->cats[c->ncats++][1] = flags;
}

static void track_cb(void *ctx, const kt_track_def *t)
{
	struct tables_copy *c = ctx;
	if (c->rc || (c->rc = grow(&c->tracks, c->ntracks, &c->tracks_cap, sizeof(*c->tracks))))
		return;
	kt_track_pair *pairs = malloc((t->pair_count ? t->pair_count : 1) * sizeof(*pairs));
	if (!pairs) {
		c->rc = -ENOMEM;
		return;
	}
	memcpy(pairs, t->pairs, t->pair_count * sizeof(*pairs));
	c->tracks[c->ntracks] = *t;
	c->tracks[c->ntracks++].pairs = pairs;
}

/* The copies' writes, each after the last succeeded. */
static int put_copies(kt_writer *w, const struct tables_copy *c)
{
	int rc = c->rc;
	for (size_t i = 0; i < c->nnames && !rc; i++) {
		rc = kt_writer_name(w, c->names[i].id, c->names[i].str, c->names[i].len);
		if (c->names[i].has_loc && !rc)
			rc = kt_writer_srcloc(w, &c->names[i].loc);
	}
	for (size_t i = 0; i < c->ncats && !rc; i++)
		rc = kt_writer_category(w, c->cats[i][0], c->cats[i][1]);
	for (size_t i = 0; i < c->ntracks && !rc; i++)
		rc = kt_writer_track(w, &c->tracks[i]);
	return rc;
}

int kt__snapshot_tables(kt_writer *w)
{
	struct tables_copy c = { 0 };
	kt__names_after(0, name_cb, &c);
	kt__categories_each(category_cb, &c);
	kt__tracks_each(track_cb, &c);
	int rc = put_copies(w, &c);
	for (size_t i = 0; i < c.ntracks; i++)
		free((void *)c.tracks[i].pairs);
	free(c.names);
	free(c.cats);
	free(c.tracks);
	return rc;
}


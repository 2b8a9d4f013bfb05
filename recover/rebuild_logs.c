/*
 * The rebuild's tables (recover/rebuild.h): the names log, the sites log,
 * the tracks file and the categories file of a crash directory, into the
 * trace being written.
 * Like the rest of the directory they are hostile input: each entry is
 * checked before it is used, a log is read through the window up to a
 * fixed cap, and the tracks file through its KT_MAX_TRACKS fixed slots,
 * whatever its size says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recover/rebuild.h"

/* A log of entries {u32 kind, u32 id, u32 len, len bytes}. */
struct rlog {
	const char *file;
	const char *missing;         /* what a log that does not open costs */
	/* Whether an entry's head may be one of the log's. */
	int (*head_ok)(uint32_t kind, uint32_t id, uint32_t n);
	/* Use a whole entry.  Return: 0; 1 when its body is malformed; a
	 * write error. */
	int (*take)(kt__recovery *R, uint32_t kind, uint32_t id, const uint8_t *s, uint32_t n);
};

static int names_head_ok(uint32_t kind, uint32_t id, uint32_t n)
{
	return (kind == KT__NAMES_NAME || kind == KT__NAMES_THREAD) && id != 0 &&
	       n <= KT_MAX_STRING && (kind != KT__NAMES_NAME || n != 0);
}

static int names_take(kt__recovery *R, uint32_t kind, uint32_t id, const uint8_t *p, uint32_t n)
{
	const char *s = (const char *)p;
	if (memchr(s, 0, n))
		return 1;
	if (kind == KT__NAMES_NAME) {
		kt__rb_put_name(R, id, s, n);
		return R->werr;
	}
	/* Kept aside: only a thread with a ring, events or a drop is one
	 * (kt__rb_name_threads()); a log cannot make threads. */
	void *p2;
	int rc = kt__idmap_get(&R->tnames, id, KT_MAX_SUMMARY_THREADS, &p2);
	if (rc == KT_ETOOBIG) {
		R->tnames_over++;
		return 0;
	}
	char *copy = rc < 0 ? NULL : strndup(s, n);
	if (!copy)
		return kt__rb_werr(R, -ENOMEM);
	struct rtname *tn = p2;
	free(tn->name);
	tn->name = copy;
	return 0;
}

void kt__rb_name_threads(kt__recovery *R)
{
	size_t unused = 0;
	uint32_t first = 0;
	for (size_t i = 0; i < R->tnames.len; i++) {
		struct rtname *tn = KT__IDMAP_AT(&R->tnames, struct rtname, i);
		struct rthread *t = kt__idmap_find(&R->threads, tn->thread_id);
		/* A thread of the trace file or of a ring slot. */
		if (t) {
			free(t->name);
			t->name = tn->name;
			tn->name = NULL;
		} else if (!unused++ || tn->thread_id < first) {
			first = tn->thread_id;
		}
	}
	if (unused)
		kt__rb_problem(R, "names", "%zu thread names for threads with no ring, events or "
			       "drop (the first: thread %u): not written", unused, first);
	if (R->tnames_over)
		kt__rb_problem(R, "names", "%" PRIu64 " thread names past %u threads: not read",
			       R->tnames_over, KT_MAX_SUMMARY_THREADS);
}

static int sites_head_ok(uint32_t kind, uint32_t id, uint32_t n)
{
	return kind == KT__SITES_SITE && id != 0 && n >= KT__SITE_FIXED &&
	       n <= KT__SITE_FIXED + 2 * KT_MAX_STRING;
}

static int sites_take(kt__recovery *R, uint32_t kind, uint32_t id, const uint8_t *p, uint32_t n)
{
	(void)kind;
	kt_srcloc loc;
	if (kt__site_parse(p, n, id, &loc))
		return 1;
	kt__rb_put_loc(R, &loc);
	return R->werr;
}

/* The whole entries in @p (@len bytes from log offset @at).  Return: the
 * bytes they take; *@bad when a malformed one ends the log. */
static size_t log_entries(kt__recovery *R, const struct rlog *L, const uint8_t *p, size_t len,
			  uint64_t at, int *bad)
{
	size_t off = 0;
	while (len - off >= 12) {
		uint32_t kind = kt__get32(p + off), id = kt__get32(p + off + 4);
		uint32_t n = kt__get32(p + off + 8);
		int ok = L->head_ok(kind, id, n), rc = 0;
		if (ok && n > len - off - 12)
			break; /* wait for the rest; the last may be cut by the end */
		if (!ok || (rc = L->take(R, kind, id, p + off + 12, n)) > 0) {
			kt__rb_problem(R, L->file, "offset %" PRIu64 ": malformed entry (kind %u, id "
				       "%u, %u bytes): the entries after it are not read", at + off,
				       kind, id, n);
			*bad = 1;
			break;
		}
		if (rc)
			break;
		off += 12 + (size_t)n;
	}
	return off;
}

/* A file of the directory the control header says it has: one that does
 * not open is a problem, unless the header is older than the file and it
 * is simply not there.  Return: the fd, or -1. */
static int table_file(kt__recovery *R, const char *file, const char *missing)
{
	char why[256];
	struct stat sb;
	int fd = kt__crashdir_file(&R->cd, file, &sb, why, sizeof(why));
	int expected = R->ctl_ok && (R->ctl.flags & KT__CTL_F_TABLES);
	if (fd < 0 && (fd != -ENOENT || expected || !strcmp(file, "names")))
		kt__rb_problem(R, file, "%s: %s", why, missing);
	return fd < 0 ? -1 : fd;
}

static void read_log(kt__recovery *R, const struct rlog *L)
{
	int fd = table_file(R, L->file, L->missing);
	if (fd < 0)
		return;
	uint64_t at = 0, cap = R->caps.names_bytes;
	size_t have = 0;
	for (int bad = 0; !bad && !R->werr && at + have < cap;) {
		size_t want = WIN_MAX - have;
		if (want > cap - (at + have))
			want = (size_t)(cap - (at + have));
		ssize_t n = pread(fd, R->win + have, want, (off_t)(at + have));
		if (n <= 0) {
			if (n < 0)
				kt__rb_problem(R, L->file, "%s: the entries after offset %" PRIu64
					       " are missing", strerror(errno), at);
			break;
		}
		have += (size_t)n;
		size_t used = log_entries(R, L, R->win, have, at, &bad);
		memmove(R->win, R->win + used, have - used);
		have -= used;
		at += used;
	}
	char more;
	if (at + have >= cap && pread(fd, &more, 1, (off_t)cap) == 1)
		kt__rb_problem(R, L->file, "larger than %" PRIu64 " bytes: the entries past that "
			       "are not read", cap);
	close(fd);
}

void kt__rb_read_names(kt__recovery *R)
{
	static const struct rlog names = { "names", "names interned late are missing",
					   names_head_ok, names_take };
	read_log(R, &names);
}

void kt__rb_read_sites(kt__recovery *R)
{
	static const struct rlog sites = { "sites", "the call sites' locations are missing",
					   sites_head_ok, sites_take };
	read_log(R, &sites);
}

void kt__rb_put_loc(kt__recovery *R, const kt_srcloc *loc)
{
	/* A location says where the events named by its id come from: one
	 * for an id with no name would locate nothing. */
	if (kt__idset_has(R->names, R->cap_names, loc->id) &&
	    kt__rb_first(R, &R->locs, &R->nlocs, &R->cap_locs, loc->id))
		kt__rb_werr(R, kt_writer_srcloc(R->w, loc));
}

void kt__rb_put_track(kt__recovery *R, const kt_track_def *t)
{
	if (t->id == 0 || t->id > KT_MAX_TRACKS || R->tracks[t->id])
		return;
	R->tracks[t->id] = 1;
	kt__rb_werr(R, kt_writer_track(R->w, t));
}

void kt__rb_read_tracks(kt__recovery *R)
{
	struct stat sb;
	int fd = table_file(R, "tracks", "the tracks and their clocks are missing");
	if (fd < 0)
		return;
	kt_track_pair *pairs = malloc(KT_MAX_TRACK_PAIRS * sizeof(*pairs));
	if (!pairs || fstat(fd, &sb) < 0) {
		kt__rb_werr(R, pairs ? -errno : -ENOMEM);
		free(pairs);
		close(fd);
		return;
	}
	for (uint32_t i = 0; i < KT_MAX_TRACKS && !R->werr; i++) {
		off_t at = (off_t)i * KT__TRK_SLOT;
		if (at >= sb.st_size)
			break;
		char why[256];
		kt_track_def t;
		ssize_t n = pread(fd, R->win, KT__TRK_SLOT, at);
		int rc = n < 0 ? -1
			       : kt__track_parse(R->win, (size_t)n, i, &t, pairs, why, sizeof(why));
		if (rc < 0)
			kt__rb_problem(R, "tracks", "offset %lld: %s: that track is missing",
				       (long long)at, n < 0 ? strerror(errno) : why);
		else if (rc == 0)
			kt__rb_put_track(R, &t);
	}
	free(pairs);
	close(fd);
}

void kt__rb_put_category(kt__recovery *R, uint32_t id, uint32_t flags)
{
	if (kt__idset_has(R->names, R->cap_names, id) &&
	    kt__rb_first(R, &R->cats, &R->ncats, &R->cap_cats, id))
		kt__rb_werr(R, kt_writer_category(R->w, id, flags));
}

void kt__rb_read_categories(kt__recovery *R)
{
	int fd = table_file(R, "categories", "the categories' states are missing");
	if (fd < 0)
		return;
	ssize_t n = pread(fd, R->win, KT__CATS_SIZE, 0);
	if (n < 0)
		kt__rb_problem(R, "categories", "%s: the categories' states are missing",
			       strerror(errno));
	for (ssize_t at = 0; at + KT__CAT_ENTRY <= n && !R->werr; at += KT__CAT_ENTRY) {
		uint32_t id = kt__get32(R->win + at), flags = kt__get32(R->win + at + 4);
		if (flags & ~(KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP)) {
			kt__rb_problem(R, "categories", "offset %lld: category %u has flags 0x%x: "
				       "its state is missing", (long long)at, id, flags);
			continue;
		}
		if (id)
			kt__rb_put_category(R, id, flags);
	}
	close(fd);
}

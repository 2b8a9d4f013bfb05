/*
 * recover/rebuild.h - private to recover/'s rebuild (rebuild.c, the trace
 * and the rings; rebuild_logs.c, the names and sites logs and the tracks
 * file): the state of one recovery and what both halves use.
 * Single-threaded, like the command.
 */
#ifndef KATRA_RECOVER_REBUILD_H
#define KATRA_RECOVER_REBUILD_H

#include <stdint.h>
#include <sys/stat.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "recover/crash.h"
#include "recover/crashdir.h"

#define WIN_MIN (4u << 10)           /* first read of a ring: a ring of */
#define WIN_MAX (1u << 20)           /* holes costs little; then doubled */

struct rthread {
	uint32_t thread_id;          /* first: kt__idmap's key */
	uint32_t os_tid;
	char *name;
	int listed;                  /* a thread frame is written */
	uint64_t in_file;            /* events of the trace file's prefix */
	uint64_t recovered;          /* events taken from its ring */
	uint64_t dropped;
	uint64_t overwritten;        /* a flight ring's, before its window */
};

/* A thread's name from the names log, the last one for its id. */
struct rtname {
	uint32_t thread_id;          /* first: kt__idmap's key */
	char *name;
};

/* A drop frame of the trace file; equal ones merged, @left of them not
 * yet matched by a loss recovered from a ring. */
struct rdrop {
	uint32_t thread_id;
	uint64_t count, first_ts, last_ts;
	uint64_t left;
};

struct kt__recovery {
	const char *dir;             /* as typed, for messages */
	struct kt__recover_caps caps;
	kt__recover_say_fn say;
	void *say_ctx;
	kt__crashdir cd;
	int ctl_fd;
	int trace_fd;                /* the trace file's, or -1 */
	const char *trace_path;      /* its path, for messages */
	struct stat trace_sb;        /* its stat; st_ino 0 when there is none */
	kt_reader *r;                /* its reader, or NULL */
	uint32_t slot_size;
	unsigned problems;
	kt_writer *w;
	unsigned codec;
	int level;
	kt__ctl ctl;
	int ctl_ok;                  /* the header's fields can be used */
	struct kt__idmap threads;    /* struct rthread; ids in any order */
	struct kt__idmap tnames;     /* struct rtname: the names log's thread
				      * names, given to threads that have a
				      * ring, events or a drop once all are
				      * read (kt__rb_name_threads()) */
	uint64_t tnames_over;        /* thread names past the map's cap */
	uint32_t *names;             /* name ids written (kt__idset_add()) */
	size_t nnames, cap_names;
	uint32_t *locs;              /* ids whose location is written */
	size_t nlocs, cap_locs;
	uint8_t tracks[KT_MAX_TRACKS + 1]; /* track ids written */
	uint32_t *cats;              /* category ids written */
	size_t ncats, cap_cats;
	struct rdrop *drops;         /* drop frames of the trace file */
	size_t ndrops, cap_drops;
	uint64_t from_file, from_rings, dropped, overwritten;
	uint64_t ring_bytes;         /* read so far, against caps.ring_bytes */
	uint8_t *win;                /* WIN_MAX bytes of a log, a ring or a
				      * track's slot */
	/* the ring being walked */
	struct rthread *t;
	uint64_t skip;
	uint64_t markers;
	uint8_t *chunk;
	size_t chunk_len;
	int werr;
};

_Static_assert(WIN_MAX >= KT__RECORD_MAX && WIN_MAX >= 12 + KT_MAX_STRING &&
		       WIN_MAX >= 12 + KT__SITE_FIXED + 2 * KT_MAX_STRING &&
		       WIN_MAX >= KT__TRK_SLOT,
	       "a window holds any record, any log entry and a track's slot");

/* Report a problem with @file of the directory (counted; the message is
 * escaped by the caller's callback). */
__attribute__((format(printf, 3, 4))) void kt__rb_problem(kt__recovery *R, const char *file,
							   const char *fmt, ...);
/* Keep the first write error; return @rc. */
int kt__rb_werr(kt__recovery *R, int rc);
/* Whether @id is new to the set (*@set, *@n, *@cap; kt__idset_add()), and
 * so its entry is written now: 1, or 0 when it is there already or the
 * set could not grow (the write error is then -ENOMEM). */
int kt__rb_first(kt__recovery *R, uint32_t **set, size_t *n, size_t *cap, uint32_t id);
/* Thread @id's record, made on first use; NULL when out of memory. */
struct rthread *kt__rb_thread(kt__recovery *R, uint32_t id);
/* Write name @id unless it is written. */
void kt__rb_put_name(kt__recovery *R, uint32_t id, const char *s, size_t len);

/* rebuild_logs.c: the names log (names and thread names). */
void kt__rb_read_names(kt__recovery *R);
/* Give the names log's thread names to the threads that have a ring,
 * events or a drop; the others are a problem, and not written. */
void kt__rb_name_threads(kt__recovery *R);
/* The sites log: a location for each named id that has none yet. */
void kt__rb_read_sites(kt__recovery *R);
/* Write @loc unless its id has a location already or no name. */
void kt__rb_put_loc(kt__recovery *R, const kt_srcloc *loc);
/* Write track @t unless a track of its id is written. */
void kt__rb_put_track(kt__recovery *R, const kt_track_def *t);
/* The tracks file: each track that is not written yet. */
void kt__rb_read_tracks(kt__recovery *R);
/* Write category @id's @flags unless it is written or has no name. */
void kt__rb_put_category(kt__recovery *R, uint32_t id, uint32_t flags);
/* The categories file: each category that is not written yet. */
void kt__rb_read_categories(kt__recovery *R);

#endif /* KATRA_RECOVER_REBUILD_H */

/*
 * export_state.h - what the binary exports (`--perfetto`, `--fxt`) keep
 * while they stream a trace's events: the threads seen (each gets an index
 * in order of first sight, which becomes its packet sequence or thread
 * reference), each thread's open zones, and the file's drop records, to
 * be marked on their thread's timeline where they happened.
 *
 * Viewers draw a zone from a begin to the next end on its track, so the
 * exports never write an end that closes nothing and always close what is
 * open.  The rule is collapse.h's: an end closes the innermost open zone
 * of its name and every zone opened inside it (those close at the same
 * time, and are counted); an end with no open zone of its name is skipped
 * (counted); zones still open at the end of the trace close at their
 * thread's last event (counted).  At most EXPORT_OPEN zones are open at
 * once; a begin past that is skipped, and its end is then skipped as
 * unmatched.
 *
 * Zone arguments (SPEC §4.2: records that follow their zone's begin and
 * belong to the thread's innermost open zone) go on their zone's slice
 * in every export, one mechanism for all: an export holds a zone's begin
 * (xstate_hold()) until its thread's next event that is not an argument,
 * keeping the arguments that come meanwhile (xstate_arg()), and then
 * writes the begin with them (what Tracy's importers read: they take a
 * zone's arguments from its begin only).  An argument that comes later
 * (after a zone inside it) is kept until its zone ends and goes on the
 * end (Perfetto merges an end's arguments into the slice; Chrome's --complete
 * puts every argument on the one X).  An argument with no open zone, or
 * past EXPORT_ARGS kept arguments or EXPORT_ARG_BYTES kept text, is
 * written where it is, as an instant named after it with its value
 * (counted in loose_args).
 *
 * Bounded whatever the trace: per thread one entry (at most
 * KT_MAX_SUMMARY_THREADS, as the reader), the open zones, the kept
 * arguments, and at most
 * EXPORT_DROPS drop records (later ones are counted, not marked).
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_EXPORT_STATE_H
#define KT_TOOLS_EXPORT_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <katra/reader.h>
#include "tools/pipeline/drops.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/tables.h"
#include "tools/pipeline/tracks.h"

#define EXPORT_OPEN (1u << 20)
#define EXPORT_DROPS DROPS_MAX
#define EXPORT_DIRECT 1024u /* thread ids below this are found without a hash */
/* On the first EXPORT_SMALL_THREADS threads, the innermost open zone of
 * each name below EXPORT_SMALL_NAMES is kept in a table of the thread's
 * (1 KiB, made on its first zone) rather than the hash. */
#define EXPORT_SMALL_THREADS 1024u
#define EXPORT_SMALL_NAMES 256u
#define EXPORT_ARGS (1u << 16)        /* zone arguments kept at once, all threads */
#define EXPORT_ARG_BYTES (16u << 20)  /* their text */
#define EXPORT_ARG_SAME 64u           /* how far back an argument's namesake is sought */


struct xzone {
	uint32_t name;
	uint32_t below; /* 1 + the index of the next open zone of this name, or 0 */
};

/* A zone argument kept until its zone's begin or end goes out. */
struct xarg {
	uint32_t level;  /* its zone's place on the thread's stack */
	uint32_t name;   /* its name id; 0 is the zone's value or text */
	uint8_t type;    /* KT_EV_ARG_I64, _U64, _F64 or _STR */
	uint8_t done;    /* the export wrote it (on the begin) */
	uint32_t nth;    /* earlier arguments of its zone with its name (to tell
			  * them apart: viewers keep one of a name) */
	uint32_t len;    /* the text's bytes */
	uint64_t bits;   /* a number's bits */
	char *text;      /* the text (malloc'd), for KT_EV_ARG_STR */
};

struct xthread {
	uint32_t id;              /* katra's thread id */
	uint32_t index;           /* order of first sight, from 0 */
	struct xzone *stack;
	size_t depth, cap;
	uint32_t *small;          /* name -> 1 + innermost open, or NULL */
	uint64_t last_ts;         /* ticks of its last event */
	uint64_t last_out;        /* the exporter's own: the last time it wrote */
	size_t drop_next, drop_end; /* its drops not yet marked, in xstate.drops */
	/* Kept arguments, by level (never decreasing: those of closed zones
	 * leave before another is kept or another zone opens). */
	struct xarg *args;
	size_t nargs, args_cap;
	int held;                 /* the innermost zone's begin is not written yet */
	uint64_t held_ts, held_ns; /* its time */
};

/* What the exports say they changed; the command prints the non-zero ones. */
struct export_result {
	uint64_t events;        /* events read */
	uint64_t unbegun;       /* ends skipped: no open zone of their name */
	uint64_t inner_closed;  /* zones closed by an outer zone's end */
	uint64_t unended;       /* zones closed at the end of their thread */
	uint64_t untimed;       /* begins skipped past EXPORT_OPEN open zones */
	uint64_t drops_marked;  /* drop records marked */
	uint64_t drops_unmarked;/* drop records past EXPORT_DROPS */
	uint64_t fallback;      /* exporter-specific: names written inline past a table */
	uint64_t cut;           /* zones closed and opened again at a drop window */
	uint64_t deep;          /* chrome --complete: zones past its depth cap, as B/E */
	uint64_t unbound;       /* flows with no zone around them to bind to */
	uint64_t loose_args;    /* arguments written as instants, not on a zone */
	struct track_counts tracks; /* what the tracks' matcher skipped or repaired */
};

struct xstate {
	struct xthread *threads;
	size_t nthreads, threads_cap;
	struct idmap tids;      /* thread id -> index */
	uint32_t direct[EXPORT_DIRECT]; /* small thread id -> 1 + index, or 0 */
	struct idmap inner;     /* index << 32 | name -> 1 + innermost open of that name */
	size_t open;
	struct xdrop *drops;    /* sorted by thread, then first_ts */
	size_t ndrops;
	size_t nargs, arg_bytes; /* kept arguments, all threads, and their text */
	struct export_result *res;
};

/*
 * xstate_init - an empty state, with @r's drop records (a pass over its
 * frames without decoding events; @r is rewound before and after).
 * Returns 0, a reader's negative code, or -ENOMEM; xstate_free() in every
 * case.
 */
int xstate_init(struct xstate *s, kt_reader *r, struct export_result *res);

void xstate_free(struct xstate *s);

/* export_os_tid - thread @id's OS tid as @t has it, or @id when none. */
uint32_t export_os_tid(const struct tables *t, uint32_t id);

/* export_pid - the pid of thread @id's process in a merged trace (SPEC
 * §4.10), or @own (the header's) in a trace of one process. */
uint64_t export_pid(const struct tables *t, uint32_t id, uint64_t own);

/* xstate_thread - the thread @id, added (and *@fresh set) on first sight;
 * NULL when out of memory or past KT_MAX_SUMMARY_THREADS threads. */
struct xthread *xstate_thread_add(struct xstate *s, uint32_t id, int *fresh);

static inline struct xthread *xstate_thread(struct xstate *s, uint32_t id, int *fresh)
{
	if (id < EXPORT_DIRECT && s->direct[id]) {
		*fresh = 0;
		return &s->threads[s->direct[id] - 1];
	}
	return xstate_thread_add(s, id, fresh);
}

/* xstate_drop_due - @t's next unmarked drop record that began at or before
 * @ts (ticks), taken; NULL when none. */
const struct xdrop *xstate_drop_take(struct xstate *s, struct xthread *t, uint64_t ts);

static inline const struct xdrop *xstate_drop_due(struct xstate *s, struct xthread *t,
						  uint64_t ts)
{
	return t->drop_next < t->drop_end ? xstate_drop_take(s, t, ts) : NULL;
}

/* xstate_begin - open zone @name on @t.  Returns 1 when it opened (write
 * its begin), 0 when skipped past EXPORT_OPEN, -ENOMEM. */
int xstate_begin(struct xstate *s, struct xthread *t, uint32_t name);

/* xstate_end - the zones an end of @name on @t closes: write that many
 * ends (the first ones, all but the last, close zones opened inside it).
 * 0: no open zone of that name, write nothing.  The closed zones stay
 * readable, innermost first, at t->stack[t->depth + n - 1] down to
 * t->stack[t->depth], until the next begin on @t. */
size_t xstate_end(struct xstate *s, struct xthread *t, uint32_t name);

/* xstate_close_all - close what @t holds open at its end: returns how
 * many ends to write (the zones readable as after xstate_end()). */
size_t xstate_close_all(struct xstate *s, struct xthread *t);

/* xstate_cut_all - as xstate_close_all(), for zones cut by a drop window
 * (counted as cut, not as unended). */
size_t xstate_cut_all(struct xstate *s, struct xthread *t);

/* xstate_pool_live - count allocation or free @ev at @ns in @m: its
 * pool's live bytes after it into *@live (at most INT64_MAX, as the
 * viewers' counters are signed).  Returns 1; 0 past the pools' cap (no
 * value); -ENOMEM. */
int xstate_pool_live(struct memstats *m, const kt_event *ev, uint64_t ns, uint64_t *live);

/* xstate_hold - @t's zone just opened (xstate_begin() said 1) at @ts
 * ticks, @ns: its begin waits for its arguments. */
static inline void xstate_hold(struct xthread *t, uint64_t ts, uint64_t ns)
{
	t->held = 1;
	t->held_ts = ts;
	t->held_ns = ns;
}

/* xstate_unhold - whether @t holds a begin (then written by the caller
 * now, with xstate_args() of level t->depth - 1); it holds none after. */
static inline int xstate_unhold(struct xthread *t)
{
	int h = t->held;
	t->held = 0;
	return h;
}

/* xstate_is_arg - whether @type is a zone argument's. */
static inline int xstate_is_arg(unsigned type)
{
	return type >= KT_EV_ARG_I64 && type <= KT_EV_ARG_STR;
}

/*
 * xstate_arg - keep argument @ev for @t's innermost open zone.  Returns
 * 1 when kept; 0 when not (no zone open, or past the caps: the caller
 * writes it where it is, and it is counted in loose_args); -ENOMEM.
 */
int xstate_arg(struct xstate *s, struct xthread *t, const kt_event *ev);

/* xstate_args - the kept arguments of @t's zone at @level (the innermost
 * open one, or one xstate_end() just closed, innermost first), *@n of
 * them, in the order they came. */
struct xarg *xstate_args(struct xthread *t, size_t level, size_t *n);

/*
 * An output buffer over a stream: the exports write their records into
 * it and it goes out in large writes.  @failed is set (and stays) when a
 * write failed.
 */
struct xout {
	FILE *f;
	uint8_t *buf;
	size_t len, cap;
	int failed;
	/* Optional: where a full buffer goes instead of @f (whole records:
	 * a buffer is flushed only between two xout_room() calls); 0 or -1. */
	int (*sink)(void *ctx, const uint8_t *buf, size_t len);
	void *ctx;
};

/* xout_init - a buffer of @cap bytes over @f.  Returns 0 or -ENOMEM. */
int xout_init(struct xout *o, FILE *f, size_t cap);

/* xout_room - room for @n more bytes (flushing first if need be), or NULL
 * when @n is over the buffer's size or a write failed.  xout_commit()
 * says how many were used. */
uint8_t *xout_room(struct xout *o, size_t n);

static inline void xout_commit(struct xout *o, uint8_t *end)
{
	o->len = (size_t)(end - o->buf);
}

/* xout_free - write out what is left and release.  Returns 0 or -EIO. */
int xout_free(struct xout *o);

#endif

/*
 * export_fxt.c - a trace in the Fuchsia trace format; export_fxt.h says
 * what is written.  A record is built in words (fx.w) and copied out
 * whole, its size known once its last word is in; so a string record an
 * event needs is written before the event's record starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/export_fxt.h"
#include "tools/export/export_args.h"
#include "tools/pipeline/fmt_mid.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/text.h"
#include "tools/pipeline/tracks.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "export_fxt.c copies words as they are in memory: FXT is little-endian"
#endif

/* Record types and the kinds inside them. */
enum { REC_META = 0, REC_INIT = 1, REC_STRING = 2, REC_THREAD = 3, REC_EVENT = 4, REC_KOBJ = 7,
       REC_SCHED = 8 };
enum { EV_INSTANT = 0, EV_COUNTER = 1, EV_BEGIN = 2, EV_END = 3,
       EV_FLOW_BEGIN = 8, EV_FLOW_STEP = 9, EV_FLOW_END = 10 };
enum { ARG_I32 = 1, ARG_U32 = 2, ARG_I64 = 3, ARG_U64 = 4, ARG_F64 = 5, ARG_STR = 6, ARG_KOID = 8 };
enum { OBJ_PROCESS = 1, OBJ_THREAD = 2 };
#define MAGIC_RECORD UINT64_C(0x0016547846040010)
#define INLINE_STR 0x8000u
#define MAX_WORDS 4095u /* a record's size field: 12 bits */

/* The one string in the table: the category.  Every other string goes
 * inline, as Tracy's importer reads a table's string with a byte of the
 * previous one past its end. */
#define S_CAT 1u
#define FXT_RATE UINT64_C(1000000000) /* times in ns: Tracy's importer ignores the rate */
#define FXT_EVENT_ARGS 15u            /* a header's 4 bits */

/* A name's strings, well-formed UTF-8: its own, and its source location
 * "FILE:LINE" (made on its first begin). */
struct fxname {
	char *s, *loc;
	size_t len, loc_len;
};

struct fx {
	struct xstate xs;
	struct xout out;
	kt_reader *r;
	const struct tables *t;
	uint64_t pid;
	struct idmap names;     /* name id -> 1 + its strings in utf8s */
	struct fxname *utf8s;
	size_t nutf8s, utf8s_cap;
	struct memstats mem;    /* the pools' live bytes, for memory counters */
	struct tracks tracks;   /* zones of tracks with a clock of their own */
	uint32_t track_koid[KT_MAX_TRACKS + 1]; /* each track entry's thread */
	uint64_t w[MAX_WORDS];  /* the record being built */
	size_t n;               /* its words */
	unsigned nargs;
	int err;
};

static inline uint64_t bits(uint64_t v, unsigned shift)
{
	return v << shift;
}

static void rec_start(struct fx *x)
{
	x->n = 1; /* the header, filled in by rec_put() */
	x->nargs = 0;
}

/* Append @n bytes of @s, zero-padded to a word. */
static void rec_bytes(struct fx *x, const char *s, size_t n)
{
	size_t words = (n + 7) / 8;
	x->w[x->n + words - (words > 0)] = 0;
	memcpy(&x->w[x->n], s, n);
	x->n += words;
}

/* Write the record out with @header (its size is added here). */
static void rec_put(struct fx *x, uint64_t header)
{
	x->w[0] = header | bits(x->n, 4);
	uint8_t *o = xout_room(&x->out, x->n * 8);
	if (o)
		xout_commit(&x->out, (uint8_t *)memcpy(o, x->w, x->n * 8) + x->n * 8);
}

/* A string record: @s (cut to FXT_TEXT bytes) at @index. */
static void put_string(struct fx *x, uint32_t index, const char *s, size_t n)
{
	n = n > FXT_TEXT ? FXT_TEXT : n;
	rec_start(x);
	rec_bytes(x, s, n);
	rec_put(x, REC_STRING | bits(index, 16) | bits(n, 32));
}

/* @n bytes of @s as well-formed UTF-8 (free() it), cut to FXT_TEXT bytes
 * at a character's start; NULL when out of memory (noted in x->err). */
static char *utf8(struct fx *x, const char *s, size_t n, size_t *len)
{
	char *u = text_utf8(s, n, len);
	if (!u) {
		x->err = -ENOMEM;
		return NULL;
	}
	if (*len > FXT_TEXT)
		for (*len = FXT_TEXT; *len && ((unsigned char)u[*len] & 0xC0) == 0x80; --*len)
			;
	return u;
}

/* Append @n bytes of well-formed UTF-8 @u as an inline string cut to fit
 * the record with @keep words to spare (at a character's start); returns
 * its reference (0 when empty). */
static uint64_t rec_utf8(struct fx *x, const char *u, size_t n, size_t keep)
{
	size_t room = x->n + keep < MAX_WORDS ? (MAX_WORDS - x->n - keep) * 8 : 0;
	room = room < FXT_TEXT ? room : FXT_TEXT;
	if (n > room)
		for (n = room; n && ((unsigned char)u[n] & 0xC0) == 0x80; n--)
			;
	rec_bytes(x, u, n);
	return n ? INLINE_STR | n : 0;
}

/* rec_utf8() of @n bytes of @s, made well-formed UTF-8 first. */
static uint64_t rec_inline(struct fx *x, const char *s, size_t n, size_t keep)
{
	size_t len;
	char *u = utf8(x, s ? s : "", s ? n : 0, &len);
	uint64_t ref = u ? rec_utf8(x, u, len, keep) : 0;
	free(u);
	return ref;
}

/* Name @id's string, inline ("?" when the file names none), made UTF-8
 * once per name. */
static uint64_t rec_name(struct fx *x, uint32_t id, size_t keep)
{
	int added;
	uint32_t *slot = idmap_slot(&x->names, id, 0, &added);
	if (slot && !*slot) {
		size_t n = 0, len;
		const char *s = tables_name(x->t, id, &n);
		char *u = utf8(x, s ? s : "?", s ? n : 1, &len);
		if (!u || grow_array((void **)&x->utf8s, &x->utf8s_cap, x->nutf8s + 1,
				     sizeof(*x->utf8s))) {
			free(u);
			x->err = -ENOMEM;
			return 0;
		}
		x->utf8s[x->nutf8s] = (struct fxname){ .s = u, .len = len };
		*slot = (uint32_t)++x->nutf8s;
	}
	if (!slot) {
		x->err = -ENOMEM;
		return 0;
	}
	return rec_utf8(x, x->utf8s[*slot - 1].s, x->utf8s[*slot - 1].len, keep);
}

static void put_header(struct fx *x)
{
	const kt_header *h = kt_reader_get_header(x->r);
	rec_start(x);
	rec_put(x, MAGIC_RECORD & ~UINT64_C(0xFFF0)); /* its size goes back in */
	rec_start(x);
	rec_bytes(x, "katra", 5);
	rec_put(x, REC_META | bits(1, 16) | bits(5, 52)); /* provider info, id 0 */
	rec_start(x);
	rec_put(x, REC_META | bits(2, 16));               /* provider section, id 0 */
	rec_start(x);
	x->w[x->n++] = FXT_RATE;
	rec_put(x, REC_INIT);
	put_string(x, S_CAT, "katra", 5);
	const char *wl = h->workload && *h->workload ? h->workload : "katra trace";
	int many = tables_multiprocess(x->t);
	/* A merged trace's processes each a process koid (SPEC §4.10); a file
	 * of one process named by its own entry when it has one. */
	for (size_t i = 0; i < (many ? x->t->nprocs : 1); i++) {
		const struct tproc *p = tables_named_process(x->t, i);
		size_t len;
		char *u = p ? utf8(x, tables_process_name(x->t, p), p->name_len, &len)
			    : utf8(x, wl, strlen(wl), &len);
		if (!u)
			return;
		rec_start(x);
		x->w[x->n++] = p && many ? p->pid : x->pid;
		rec_bytes(x, u, len);
		rec_put(x, REC_KOBJ | bits(OBJ_PROCESS, 16) | bits(INLINE_STR | len, 24));
		free(u);
	}
}

/* The kernel object naming thread @koid @s (@n bytes, or none when NULL)
 * in the process. */
static void put_kobj_thread(struct fx *x, uint64_t pid, uint64_t koid, const char *s, size_t n)
{
	size_t len = 0;
	char *u = utf8(x, s ? s : "", s ? n : 0, &len);
	if (!u)
		return;
	rec_start(x);
	x->w[x->n++] = koid;
	rec_bytes(x, u, len);
	x->w[x->n++] = ARG_KOID | bits(3, 4) | bits(INLINE_STR | 7, 16);
	rec_bytes(x, "process", 7);
	x->w[x->n++] = pid;
	rec_put(x, REC_KOBJ | bits(OBJ_THREAD, 16) | bits(len ? INLINE_STR | len : 0, 24) |
			   bits(1, 40));
	free(u);
}

/* Thread @t on first sight: its thread record and its named kernel object. */
static void put_thread(struct fx *x, struct xthread *t)
{
	uint64_t koid = export_os_tid(x->t, t->id), pid = export_pid(x->t, t->id, x->pid);
	if (t->index < FXT_THREADS) {
		rec_start(x);
		x->w[x->n++] = pid;
		x->w[x->n++] = koid;
		rec_put(x, REC_THREAD | bits(t->index + 1, 16));
	}
	size_t n = 0;
	const char *s = tables_thread(x->t, t->id, &n);
	put_kobj_thread(x, pid, koid, s, n);
}

/*
 * Start event record @type at @ns on thread @thread_ref of the table, or
 * when 0 on thread @koid (inline), named by name @id or, when @id is 0,
 * by @text (NUL-terminated; none when NULL), inline.  Arguments and data
 * words follow; ev_put() writes it.  Returns the header so far.
 */
static uint64_t ev_start_on(struct fx *x, uint64_t thread_ref, uint64_t pid, uint64_t koid,
			    unsigned type, uint64_t ns, uint32_t id, const char *text)
{
	rec_start(x);
	x->w[x->n++] = ns;
	if (!thread_ref) {
		x->w[x->n++] = pid;
		x->w[x->n++] = koid;
	}
	/* Half the record at most: its arguments get the rest. */
	uint64_t ref = id ? rec_name(x, id, MAX_WORDS / 2)
			  : text ? rec_inline(x, text, strlen(text), MAX_WORDS / 2) : 0;
	return REC_EVENT | bits(type, 16) | bits(thread_ref, 24) | bits(S_CAT, 32) | bits(ref, 48);
}

/* ev_start_on() on katra's thread @t. */
static uint64_t ev_start(struct fx *x, struct xthread *t, unsigned type, uint64_t ns,
			 uint32_t id, const char *text)
{
	uint64_t thread_ref = t->index < FXT_THREADS ? t->index + 1 : 0;
	return ev_start_on(x, thread_ref, export_pid(x->t, t->id, x->pid),
			   thread_ref ? 0 : export_os_tid(x->t, t->id), type, ns, id, text);
}

static void ev_put(struct fx *x, uint64_t header)
{
	rec_put(x, header | bits(x->nargs, 20));
}

/* An argument's header word named @name (@n bytes, inline) with @words
 * words of value after the name; the header is completed by arg_done(). */
static size_t arg_start(struct fx *x, unsigned type, const char *name, size_t n)
{
	size_t at = x->n++;
	uint64_t ref = rec_inline(x, name, n, 4);
	x->w[at] = type | bits(ref, 16);
	return at;
}

/* The argument at @at ends here, with @high in its header's top half. */
static void arg_done(struct fx *x, size_t at, uint64_t high)
{
	x->w[at] |= bits(x->n - at, 4) | bits(high, 32);
	x->nargs++;
}

static void arg_u32(struct fx *x, unsigned type, const char *name, uint32_t v)
{
	arg_done(x, arg_start(x, type, name, strlen(name)), v);
}

static void arg_u64(struct fx *x, unsigned type, const char *name, size_t n, uint64_t v)
{
	size_t at = arg_start(x, type, name, n);
	x->w[x->n++] = v;
	arg_done(x, at, 0);
}

/* A string argument @name = @s (@n bytes), cut to fit the record. */
static void arg_str(struct fx *x, const char *name, const char *s, size_t n)
{
	size_t at = arg_start(x, ARG_STR, name, strlen(name));
	arg_done(x, at, rec_inline(x, s, n, 2));
}

/* Zone argument @a (export_state.h), typed as it was given. */
static void arg_kept(struct fx *x, const struct xarg *a)
{
	static const unsigned type[] = { [KT_EV_ARG_I64] = ARG_I64, [KT_EV_ARG_U64] = ARG_U64,
					 [KT_EV_ARG_F64] = ARG_F64 };
	size_t n = 0;
	char *name = xarg_name(x->t, a, &n);
	if (!name) {
		x->err = -ENOMEM;
	} else if (a->type == KT_EV_ARG_STR) {
		size_t at = arg_start(x, ARG_STR, name, n);
		arg_done(x, at, rec_inline(x, a->text, a->len, 2));
	} else {
		arg_u64(x, type[a->type], name, n, a->bits);
	}
	free(name);
}

/* @t's kept arguments of the zone at @level not yet written, as many as
 * the record takes (@keep arguments' room left for the caller's own);
 * marked written.  Numbers first, then texts: Tracy's importer keeps a
 * text's NUL in the zone's text, which its viewer then ends there. */
static void args_kept(struct fx *x, struct xthread *t, size_t level, unsigned keep)
{
	size_t n;
	struct xarg *a = xstate_args(t, level, &n);
	for (int text = 0; text < 2; text++)
		for (size_t i = 0; i < n; i++) {
			if (a[i].done || (a[i].type == KT_EV_ARG_STR) != text)
				continue;
			if (x->nargs + keep >= FXT_EVENT_ARGS || x->n + 16 > MAX_WORDS)
				return;
			arg_kept(x, &a[i]);
			a[i].done = 1;
		}
}

/* A counter's argument, named as the counter @id (Tracy plots a counter
 * by its argument's name, Perfetto by "NAME:ARGUMENT"), then its counter
 * id @cid. */
static void counter_value(struct fx *x, uint32_t id, int i64, uint64_t v, uint64_t cid)
{
	size_t n = 0;
	const char *s = tables_name(x->t, id, &n);
	arg_u64(x, i64 ? ARG_I64 : ARG_F64, s ? s : "?", s ? n : 1, v);
	x->w[x->n++] = cid;
}

/* Argument @a as an instant on @t at @ns named after it, with it: one
 * with no zone open, or one its zone's records had no room for. */
static void put_arg_instant(struct fx *x, struct xthread *t, uint64_t ns, const struct xarg *a)
{
	uint64_t h = ev_start(x, t, EV_INSTANT, ns, a->name, a->name ? NULL : "value");
	arg_kept(x, a);
	ev_put(x, h);
}

/* The begin @t held (export_state.h), with its arguments and its source
 * location ("loc": "FILE:LINE", which Tracy's importer takes). */
static void put_held(struct fx *x, struct xthread *t)
{
	struct xzone *z = &t->stack[t->depth - 1];
	uint64_t h = ev_start(x, t, EV_BEGIN, t->held_ns, z->name, NULL);
	const struct tloc *l = tables_loc(x->t, z->name);
	uint32_t *slot = idmap_find(&x->names, z->name); /* made by ev_start() */
	args_kept(x, t, t->depth - 1, !!l);
	if (l && slot) {
		struct fxname *u = &x->utf8s[*slot - 1];
		char *raw = NULL;
		int n = u->loc ? 0 : asprintf(&raw, "%s:%u", tloc_file(x->t, l), l->line);
		if (n >= 0 && !u->loc)
			u->loc = utf8(x, raw, (size_t)n, &u->loc_len);
		if (n >= 0)
			free(raw); /* undefined after a failed asprintf() */
		if (u->loc) {
			size_t at = arg_start(x, ARG_STR, "loc", 3);
			arg_done(x, at, rec_utf8(x, u->loc, u->loc_len, 2));
		} else {
			x->err = -ENOMEM;
		}
	}
	ev_put(x, h);
}

/* @n zone ends at @ns, the closed zones' names from @t's stack (as
 * xstate_end() leaves them) with their arguments not on their begins; all
 * but the last forced (and so the last too when @last_forced). */
static void put_ends(struct fx *x, struct xthread *t, uint64_t ns, size_t n, int last_forced)
{
	for (size_t i = 0; i < n; i++) {
		size_t level = t->depth + n - 1 - i;
		uint64_t h = ev_start(x, t, EV_END, ns, t->stack[level].name, NULL);
		int forced = i + 1 < n || last_forced;
		args_kept(x, t, level, forced);
		if (forced)
			arg_u32(x, ARG_U32, "closed", 1);
		ev_put(x, h);
		size_t k;
		struct xarg *a = xstate_args(t, level, &k);
		for (size_t j = 0; j < k; j++) /* past FXT_EVENT_ARGS on both records */
			if (!a[j].done)
				put_arg_instant(x, t, ns, &a[j]);
	}
}

static void put_drops(struct fx *x, struct xthread *t, uint64_t ts)
{
	const struct xdrop *d;
	while ((d = xstate_drop_due(&x->xs, t, ts))) {
		char text[80];
		snprintf(text, sizeof(text), "katra: %" PRIu64 " events dropped", d->count);
		ev_put(x, ev_start(x, t, EV_INSTANT, kt_reader_get_time_ns(x->r, d->first_ts), 0,
				   text));
	}
}

/* A message as Tracy's importer reads one: an instant whose name is the
 * text, the event's own name in the argument "event". */
static void on_message(struct fx *x, struct xthread *t, const kt_event *ev, uint64_t ns)
{
	size_t len;
	kt_value v;
	kt_event_get_value(ev, &v);
	char *u = utf8(x, (const char *)v.bytes, v.len, &len);
	if (!u)
		return;
	u[len] = 0;
	uint64_t h = ev_start(x, t, EV_INSTANT, ns, 0, u);
	if (ev->name_id) {
		size_t n = 0;
		const char *s = tables_name(x->t, ev->name_id, &n);
		arg_str(x, "event", s ? s : "?", s ? n : 1);
	}
	ev_put(x, h);
	free(u);
}

/* An allocation or a free: its pool's live bytes after it, as a counter
 * named after the pool (a plot in Tracy, a counter track in Perfetto);
 * its counter id has bit 63 set, apart from the counters'. */
static void on_memory(struct fx *x, struct xthread *t, const kt_event *ev, uint64_t ns)
{
	uint64_t live, h;
	int rc = xstate_pool_live(&x->mem, ev, ns, &live);
	x->err = rc < 0 ? rc : x->err;
	if (rc <= 0)
		return; /* out of memory, or past the pools' cap */
	h = ev_start(x, t, EV_COUNTER, ns, ev->name_id, ev->name_id ? NULL : "memory");
	if (ev->name_id) {
		counter_value(x, ev->name_id, 1, live, UINT64_C(1) << 63 | ev->name_id);
	} else {
		arg_u64(x, ARG_I64, "memory", 6, live);
		x->w[x->n++] = UINT64_C(1) << 63;
	}
	ev_put(x, h);
}

static const unsigned flow_type[] = { EV_FLOW_BEGIN, EV_FLOW_STEP, EV_FLOW_END };

static void on_other(struct fx *x, struct xthread *t, const kt_event *ev, uint64_t ns)
{
	uint64_t h;
	kt_value v;
	kt_event_get_value(ev, &v);
	switch (ev->type) {
	case KT_EV_COUNTER_I64:
	case KT_EV_COUNTER_F64:
		h = ev_start(x, t, EV_COUNTER, ns, ev->name_id, NULL);
		counter_value(x, ev->name_id, v.kind == KT_VALUE_I64, v.bits,
			      ev->name_id);
		break;
	case KT_EV_FLOW:
		h = ev_start(x, t, flow_type[ev->flags <= KT_FLOW_END ? ev->flags : 0], ns,
			     ev->name_id, NULL);
		x->w[x->n++] = v.u64; /* the flow's id */
		break;
	case KT_EV_FRAME:
		h = ev_start(x, t, EV_INSTANT, ns, ev->name_id, NULL);
		arg_u64(x, ARG_U64, "frame", 5, v.u64);
		break;
	case KT_EV_USER:
		h = ev_start(x, t, EV_INSTANT, ns, ev->name_id, NULL);
		arg_u32(x, ARG_U32, "subtype", ev->flags);
		arg_u32(x, ARG_U32, "bytes", (uint32_t)v.len);
		break;
	default:
		h = ev_start(x, t, EV_INSTANT, ns, ev->name_id, NULL);
	}
	ev_put(x, h);
}

/* Zircon's thread states, as the context switch record's outgoing state:
 * a preempted thread is still runnable, which Zircon calls running (and
 * Perfetto's importer shows as Runnable); a blocked one is blocked. */
enum { ZX_RUNNING = 1, ZX_BLOCKED = 3 };
#define SCHED_PRIO 16u /* Zircon's default; priority 0 with process 0 is idle */

/*
 * A scheduler record (SPEC §4.2.1) as FXT's context switch record (type
 * 8, the layout whose top 4 bits are 0): a switch out is the followed
 * thread leaving its CPU for the idle thread (process and koid 0,
 * priority 0: whatever else ran, which the process cannot see), a switch
 * in the idle thread leaving it for the thread.  Both threads inline, the
 * followed one by its OS tid, as its events' records name it.  Follow and
 * loss records have no form here; a CPU past 255 (8 bits) is written 255.
 */
static void on_sched(struct fx *x, const kt_event *ev, uint64_t ns)
{
	kt_value v;
	int in = ev->flags == KT_SCHED_IN;
	if (!kt_event_get_value(ev, &v) || !v.thread ||
	    (!in && ev->flags != KT_SCHED_BLOCKED && ev->flags != KT_SCHED_PREEMPTED))
		return;
	uint64_t pid = export_pid(x->t, v.thread, x->pid), koid = export_os_tid(x->t, v.thread);
	uint64_t cpu = v.cpu < 255 ? v.cpu : 255;
	unsigned state = ev->flags == KT_SCHED_BLOCKED ? ZX_BLOCKED : ZX_RUNNING;
	rec_start(x);
	x->w[x->n++] = ns;
	x->w[x->n++] = in ? 0 : pid; /* the outgoing thread */
	x->w[x->n++] = in ? 0 : koid;
	x->w[x->n++] = in ? pid : 0; /* the incoming one */
	x->w[x->n++] = in ? koid : 0;
	rec_put(x, REC_SCHED | bits(cpu, 16) | bits(state, 24) | bits(in ? 0 : SCHED_PRIO, 44) |
			   bits(in ? SCHED_PRIO : 0, 52));
}

/*
 * Each track entry's thread: a koid that no thread entry of the file
 * has.  TRACK_TID (the track's row in Chrome's export) first: below 2^32,
 * as viewers keep 32 bits of a thread's koid.  Each thread entry that has
 * it (only in a crafted file) moves it down by 256, so the loop ends
 * within the file's thread entries.
 */
static int track_koids(struct fx *x)
{
	struct idmap used;
	int added, rc = 0;
	idmap_init(&used);
	for (size_t i = 0; i < x->t->nthreads && !rc; i++)
		if (!idmap_slot(&used, export_os_tid(x->t, x->t->threads[i].id), 1, &added))
			rc = -ENOMEM;
	for (uint32_t i = 1; i <= KT_MAX_TRACKS && !rc; i++) {
		uint32_t koid = TRACK_TID(i);
		while (idmap_find(&used, koid))
			koid -= 0x100;
		x->track_koid[i] = koid;
	}
	idmap_free(&used);
	return rc;
}

/* Each track entry's thread, named after the track, in the process. */
static int put_track_threads(struct fx *x)
{
	int have = 0;
	for (uint32_t i = 1; i <= KT_MAX_TRACKS; i++)
		have |= tables_track(x->t, i) != NULL;
	int rc = have ? track_koids(x) : 0; /* a pass over the thread entries */
	for (uint32_t i = 1; i <= KT_MAX_TRACKS && !rc && !x->err; i++) {
		const kt_track_def *d = tables_track(x->t, i);
		size_t n = 0;
		const char *s = d ? tables_name(x->t, d->name_id, &n) : NULL;
		if (d)
			put_kobj_thread(x, x->pid, x->track_koid[i], s ? s : "?", s ? n : 1);
	}
	return rc ? rc : x->err;
}

/* A track's zone (tools/pipeline/tracks.h) begins or ends on its thread: on the
 * track's own thread the matcher's balance is the only one. */
static int put_track_zone(struct fx *x, const struct track_zone *z, int end)
{
	ev_put(x, ev_start_on(x, 0, x->pid, x->track_koid[z->track], end ? EV_END : EV_BEGIN,
			      kt_reader_get_time_ns(x->r, end ? z->end : z->begin), z->name, NULL));
	return x->err ? x->err : x->out.failed ? -EIO : 0;
}

static int on_track_open(void *ctx, const struct track_zone *z)
{
	return put_track_zone(ctx, z, 0);
}

static int on_track_close(void *ctx, const struct track_zone *z)
{
	return put_track_zone(ctx, z, 1);
}

/* A track record: zones through the matcher; a counter on the track's
 * thread, its id the track's and the name's (FXT tells counters of one
 * name apart by id), so it is not the emitting thread's of that name. */
static int on_track(struct fx *x, const kt_event *ev)
{
	uint64_t ticks, v;
	int rc = tracks_event(&x->tracks, ev, &ticks);
	if (rc <= 0)
		return rc;
	kt_track_event te;
	kt_event_get_track(ev, &te);
	int i64 = ev->type == KT_EV_TRACK_COUNTER_I64;
	if (i64)
		v = (uint64_t)te.value_i64;
	else
		memcpy(&v, &te.value_f64, sizeof(v));
	uint64_t h = ev_start_on(x, 0, x->pid, x->track_koid[te.track], EV_COUNTER,
				 kt_reader_get_time_ns(x->r, ticks), ev->name_id, NULL);
	counter_value(x, ev->name_id, i64, v, (uint64_t)te.track << 32 | ev->name_id);
	ev_put(x, h);
	return 0;
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	struct fx *x = ctx;
	(void)index;
	x->xs.res->events++;
	int fresh, rc;
	if (ev->type == KT_EV_SCHED) { /* on the followed thread, not its stream */
		on_sched(x, ev, ns);
		return x->err ? x->err : x->out.failed ? -EIO : 0;
	}
	struct xthread *t = xstate_thread(&x->xs, ev->thread_id, &fresh);
	if (!t)
		return -ENOMEM;
	if (fresh)
		put_thread(x, t);
	if (xstate_is_arg(ev->type)) {
		if ((rc = xstate_arg(&x->xs, t, ev)) < 0)
			return rc;
		struct xarg a;
		xarg_of_event(&a, ev);
		if (!rc)
			put_arg_instant(x, t, ns, &a);
		return x->err ? x->err : x->out.failed ? -EIO : 0;
	}
	if (xstate_unhold(t))
		put_held(x, t);
	t->last_ts = ev->ts;
	t->last_out = ns;
	put_drops(x, t, ev->ts);
	if (ev->type == KT_EV_ZONE_BEGIN) {
		if ((rc = xstate_begin(&x->xs, t, ev->name_id)) < 0)
			return rc;
		if (rc)
			xstate_hold(t, ev->ts, ns);
	} else if (ev->type == KT_EV_ZONE_END) {
		put_ends(x, t, ns, xstate_end(&x->xs, t, ev->name_id), 0);
	} else if (ev->type == KT_EV_MESSAGE) {
		on_message(x, t, ev, ns);
	} else if (ev->type == KT_EV_ALLOC || ev->type == KT_EV_FREE) {
		on_memory(x, t, ev, ns);
	} else if (fmt_is_track(ev->type)) {
		if ((rc = on_track(x, ev)) < 0)
			return rc;
	} else {
		on_other(x, t, ev, ns);
	}
	return x->err ? x->err : x->out.failed ? -EIO : 0;
}

/* After the last event: threads known only from drop records, every
 * thread's unmarked drops and open zones, and the cut, if any. */
static void put_trace_end(struct fx *x)
{
	int fresh, rc = tracks_finish(&x->tracks);
	if (rc && !x->err)
		x->err = rc;
	x->xs.res->tracks = x->tracks.n;
	for (size_t i = 0; i < x->xs.ndrops; i++) {
		struct xthread *t = xstate_thread(&x->xs, x->xs.drops[i].thread_id, &fresh);
		if (t && fresh) {
			put_thread(x, t);
			t->last_ts = x->xs.drops[i].first_ts;
			t->last_out = kt_reader_get_time_ns(x->r, t->last_ts);
		}
	}
	struct xthread *last = NULL;
	for (size_t i = 0; i < x->xs.nthreads; i++) {
		struct xthread *t = &x->xs.threads[i];
		if (xstate_unhold(t))
			put_held(x, t);
		put_drops(x, t, UINT64_MAX);
		put_ends(x, t, t->last_out, xstate_close_all(&x->xs, t), 1);
		if (!last || t->last_out > last->last_out)
			last = t;
	}
	if (!x->t->have_summary && last)
		ev_put(x, ev_start(x, last, EV_INSTANT, last->last_out, 0,
				   "katra: the file was cut short here; later events are lost"));
}

int fxt_run(kt_reader *r, const struct tables *t, FILE *out, struct export_result *res)
{
	struct fx *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->r = r;
	x->t = t;
	x->pid = kt_reader_get_header(r)->process_id;
	memstats_init(&x->mem);
	idmap_init(&x->names);
	tracks_init(&x->tracks, t, on_track_close, x);
	x->tracks.open = on_track_open;
	int rc = xstate_init(&x->xs, r, res);
	if (!rc)
		rc = xout_init(&x->out, out, 1 << 20);
	if (!rc) {
		put_header(x);
		rc = put_track_threads(x);
	}
	if (!rc) {
		static const struct pipe_client client = { .event = on_event, .payloads = 1,
							   .merge_ns = 1 };
		rc = pipe_run(r, &client, x);
		if (rc >= 0 && !x->err)
			put_trace_end(x);
	}
	if (!rc && x->err)
		rc = x->err;
	if (xout_free(&x->out) && rc >= 0)
		rc = -EIO;
	xstate_free(&x->xs);
	if (!rc && x->mem.failed)
		rc = -ENOMEM;
	memstats_free(&x->mem);
	for (size_t i = 0; i < x->nutf8s; i++) {
		free(x->utf8s[i].s);
		free(x->utf8s[i].loc);
	}
	free(x->utf8s);
	idmap_free(&x->names);
	tracks_free(&x->tracks);
	free(x);
	return rc;
}

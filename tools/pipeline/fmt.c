/*
 * fmt.c - events as text, JSON lines and Chrome objects; fmt.h says what
 * and why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/flush.h"
#include "tools/pipeline/digits.h"
#include "tools/pipeline/fmt.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/outfile.h"
#include "tools/pipeline/fmt_mid.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/text.h"

static const char *const flow_phase[] = { "begin", "step", "end" };

/*
 * Event output goes through buffers with their own integer formatting:
 * printf's format parsing was most of the time of a dump.  A line is
 * written into room reserved once for its fixed-size parts, so the hot path
 * checks the space once per event rather than once per field.
 */
#define OUT_STREAM_CAP (1u << 20) /* a stream's buffer: 1 MiB writes */
#define OUT_SLACK 128             /* numbers, literals and a time, per line */
#define MID_SLOTS 1024 /* mid_of()'s hash gives 10 bits */

/*
 * The constant middle of an event line, per (thread, name, type, flags,
 * format), in a small direct-mapped cache.  For Chrome JSON it holds the
 * part before the time (head) and the part after it, split at @split.
 */
struct prefix {
	uint64_t id;    /* the name and the thread, as mid_of() keys them */
	uint32_t what;  /* the type, flags and format, with a bit set (0: empty) */
	uint8_t halves; /* Chrome: each half (split) fits put_mid()'s fixed copy */
	size_t len, split;
	char *big; /* a middle too long for s, or NULL */
	char s[128];
};

/* What one formatting thread remembers between events. */
struct fmt_cache {
	uint64_t hi_last; /* put_ns(): the digits above 1e8 printed last */
	size_t hi_n;
	char hi_s[16];
	struct prefix mids[MID_SLOTS];
};

/* An output buffer: a stream's (flushed to @f when full) or, with @f NULL,
 * one that grows in memory (a batch formatted ahead by the merging thread). */
struct out {
	char *buf;
	size_t len, cap;
	FILE *f;
	int err; /* a write to @f failed */
	struct fmt_cache *c;
	int fd;  /* @f's descriptor, written directly; -1: through @f */
};

static struct fmt_cache *fmt_cache_new(void)
{
	struct fmt_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->hi_last = UINT64_MAX;
	return c;
}

static void fmt_cache_free(struct fmt_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < MID_SLOTS; i++)
		free(c->mids[i].big);
	free(c);
}

static int out_errno; /* the first failed write's errno, for main() to say */

/* A write to the stream failed: remember it, and the first errno. */
static void o_failed(struct out *o)
{
	o->err = 1;
	if (!out_errno)
		out_errno = errno ? errno : EIO;
}

static void o_flush(struct out *o)
{
	if (!o->f || !o->len)
		return;
	/* A buffer this large gains nothing from the stream's: fwrite()
	 * would copy every byte into it once more (a tenth of an export's
	 * time).  What the stream holds goes first, so the order stays. */
	if (o->fd >= 0 ? fflush(o->f) || kt__write_all(o->fd, o->buf, o->len)
		       : fwrite(o->buf, 1, o->len, o->f) != o->len)
		o_failed(o);
	o->len = 0;
}

/* Make room for @n more bytes; NULL when memory ran out. */
static __attribute__((noinline)) char *o_room_slow(struct out *o, size_t n)
{
	o_flush(o);
	if (o->cap - o->len >= n)
		return o->buf + o->len;
	size_t cap = o->cap ? o->cap : OUT_STREAM_CAP;
	while (cap - o->len < n)
		cap *= 2;
	char *p = realloc(o->buf, cap);
	if (!p)
		return NULL;
	o->buf = p;
	o->cap = cap;
	return p + o->len;
}

static inline char *o_room(struct out *o, size_t n)
{
	if (__builtin_expect(o->cap - o->len >= n, 1))
		return o->buf + o->len;
	return o_room_slow(o, n);
}

static inline void o_commit(struct out *o, char *end)
{
	o->len = (size_t)(end - o->buf);
}

/* Append @n bytes; 0, or -1 when the buffer could not grow. */
static int o_mem(struct out *o, const void *p, size_t n)
{
	if (o->f && n > OUT_STREAM_CAP) {
		/* Larger than the buffer: written as it is, in order. */
		o_flush(o);
		if (fwrite(p, 1, n, o->f) != n)
			o_failed(o);
		return 0;
	}
	char *d = o_room(o, n);
	if (!d)
		return -1;
	memcpy(d, p, n);
	o_commit(o, d + n);
	return 0;
}

/* The digits of @ns above 1e8.  Consecutive event times share them, so
 * they are formatted only when they change.  Writes up to 16 bytes. */
static inline char *put_hi(struct fmt_cache *c, char *d, uint64_t hi)
{
	if (__builtin_expect(hi != c->hi_last, 0)) {
		char b[16];
		c->hi_n = (size_t)(put_u64(b, hi) - b);
		memcpy(c->hi_s, b, c->hi_n);
		c->hi_last = hi;
	}
	memcpy(d, c->hi_s, sizeof(c->hi_s));
	return d + c->hi_n;
}

/* A time in ns, as put_u64() would write it; at most 24 bytes. */
static inline char *put_ns(struct fmt_cache *c, char *d, uint64_t ns)
{
	if (ns < 100000000u)
		return put_u64(d, ns);
	uint64_t hi = ns / 100000000u;
	d = put_hi(c, d, hi);
	return put_8digits(d, (uint32_t)(ns - hi * 100000000u));
}

/* A time in microseconds with three decimals (Chrome's unit), then a
 * comma: the digits of ns with a point before the last three. */
static inline __attribute__((always_inline)) char *put_us_comma(struct fmt_cache *c, char *d,
								  uint64_t ns)
{
	if (ns < 100000000u)
		return put_small_us_comma(d, ns);
	uint64_t hi = ns / 100000000u;
	d = put_hi(c, d, hi);
	return put_lo_us_comma(d, (uint32_t)(ns - hi * 100000000u));
}

static int o_hex(struct out *o, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *d = o_room(o, 2 * n);
	if (!d)
		return -1;
	for (size_t k = 0; k < n; k++) {
		*d++ = digits[p[k] >> 4];
		*d++ = digits[p[k] & 15];
	}
	o_commit(o, d);
	return 0;
}

/* A miss in the middle cache: build the entry at @p; NULL when out of
 * memory (the slot is left empty). */
static __attribute__((noinline)) const struct prefix *
mid_fill(struct prefix *p, const struct fmt_job *j, const kt_event *ev, uint64_t id,
	 uint32_t what)
{
	char *buf = NULL;
	size_t split;
	int n = fmt_build_mid(&buf, &split, j, ev);
	free(p->big);
	p->big = NULL;
	p->what = 0;
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(p->s)) {
		memcpy(p->s, buf, (size_t)n);
		free(buf);
	} else {
		p->big = buf;
	}
	p->len = (size_t)n;
	p->split = split;
	p->halves = !p->big && split <= 64 && (size_t)n - split <= 64;
	p->id = id;
	p->what = what;
	return p;
}

static inline const struct prefix *mid_of(struct fmt_cache *c, const struct fmt_job *j,
					  const kt_event *ev)
{
	/* The key as two words, compared in two tests, and hashed by one
	 * multiply. */
	uint32_t flags = fmt_mid_flags(ev);
	uint64_t id = (uint64_t)ev->name_id << 32 | ev->thread_id;
	uint32_t what = ev->type | flags << 8 | (uint32_t)j->kind << 16 | 1u << 24;
	unsigned h = (unsigned)(((id ^ (uint64_t)what << 20) * UINT64_C(0x9e3779b97f4a7c15)) >> 54);
	struct prefix *p = &c->mids[h];
	if (__builtin_expect(p->id == id && p->what == what, 1))
		return p;
	return mid_fill(p, j, ev, id, what);
}

/* Copy @len bytes of @m's text from @off.  Short pieces are copied as a
 * fixed 64 bytes, which compiles to a few moves instead of a call: the
 * line's room (OUT_SLACK past the middle) covers the excess, and the
 * bytes past the piece are overwritten by what follows. */
static inline char *put_mid(char *d, const struct prefix *m, size_t off, size_t len)
{
	if (!m->big && len <= 64 && off + 64 <= sizeof(m->s))
		memcpy(d, m->s + off, 64);
	else
		memcpy(d, (m->big ? m->big : m->s) + off, len);
	return d + len;
}

/* %.17g, or null where JSON has no such number (NaN, infinities). */
static inline char *put_f64(char *d, double v, int json)
{
	if (json && (v != v || v - v != 0)) {
		memcpy(d, "null", 4);
		return d + 4;
	}
	int n = snprintf(d, 32, "%.17g", v);
	return d + (n > 0 && n < 32 ? n : 0);
}

/* A message's bytes as a JSON literal, in every format: quoted, escaped,
 * nothing lost.  0, or -1 when out of memory. */
static int o_message(struct out *o, const kt_value *v)
{
	char *lit = text_json((const char *)v->bytes, v->len);
	int rc = lit ? o_mem(o, lit, strlen(lit)) : -1;
	free(lit);
	return rc;
}

/* Start a line: its cached middle @m and room for the line's fixed-size
 * parts; NULL when the buffer could not grow. */
static inline char *line_begin(struct out *o, const struct fmt_job *j, const kt_event *ev,
			       const struct prefix **m)
{
	*m = mid_of(o->c, j, ev);
	return *m ? o_room(o, (*m)->len + OUT_SLACK) : NULL;
}

/* A line that could not be finished: an in-memory buffer drops what it
 * holds of it, so that the writer formats the event again. */
static int line_fail(struct out *o, size_t start)
{
	if (!o->f)
		o->len = start;
	return -1;
}

/* Before a value: its key in a JSON line, a space in a text line. */
static inline char *put_key(char *d, int jsonl, const char *key, size_t n)
{
	if (!jsonl) {
		*d++ = ' ';
		return d;
	}
	memcpy(d, key, n);
	return d + n;
}
#define KEY(s) s, sizeof(s) - 1

/* An allocation's or a free's pointer (hex: a JSON string, as numbers
 * past 2^53 do not survive JSON readers) and an allocation's size. */
static inline char *line_mem(char *d, int jsonl, const kt_value *v)
{
	d = put_hex(put_key(d, jsonl, KEY(",\"ptr\":\"")), v->ptr);
	if (jsonl)
		*d++ = '"';
	if (v->kind == KT_VALUE_ALLOC)
		d = put_u64(put_key(d, jsonl, KEY(",\"size\":")), v->size);
	return d;
}

/* A scheduler record (type 20): what happened, to which thread, on which
 * CPU (or how many switches were lost). */
static inline char *line_sched(char *d, int jsonl, const kt_event *ev, const kt_value *v)
{
	static const char *const what[] = { "follow", "blocked", "preempted", "in", "lost" };
	const char *w = what[ev->flags <= KT_SCHED_LOST ? ev->flags : 0];
	d = put_key(d, jsonl, KEY(",\"sched\":\""));
	memcpy(d, w, strlen(w));
	d += strlen(w);
	if (jsonl)
		*d++ = '"';
	d = put_u64(put_key(d, jsonl, KEY(",\"of\":")), v->thread);
	if (ev->flags == KT_SCHED_LOST)
		return put_u64(put_key(d, jsonl, KEY(",\"lost\":")), v->u64);
	return put_u64(put_key(d, jsonl, KEY(",\"cpu\":")), v->cpu);
}

/* One event as a text line or a JSON object line; 0, or -1 when the
 * buffer could not grow (nothing of the line is kept). */
static inline int fmt_line(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns)
{
	int jsonl = j->kind == FMT_JSONL;
	const struct prefix *m;
	size_t start = o->len;
	char *d = line_begin(o, j, ev, &m);
	if (!d)
		return -1;
	if (jsonl) {
		memcpy(d, "{\"ns\":", 6);
		d += 6;
	}
	d = put_ns(o->c, d, ns);
	/* Everything between the time and the value depends only on the
	 * thread, the name and the type: built once, then copied. */
	d = put_mid(d, m, 0, m->len);
	kt_value v;
	kt_event_get_value(ev, &v);
	switch (v.kind) {
	case KT_VALUE_NONE:
		break;
	case KT_VALUE_I64:
		d = put_i64(put_key(d, jsonl, KEY(",\"value\":")), v.i64);
		break;
	case KT_VALUE_U64:
		d = put_u64(put_key(d, jsonl, KEY(",\"value\":")), v.u64);
		break;
	case KT_VALUE_F64:
		d = put_f64(put_key(d, jsonl, KEY(",\"value\":")), v.f64, jsonl);
		break;
	case KT_VALUE_FRAME:
		d = put_u64(put_key(d, jsonl, KEY(",\"frame\":")), v.u64);
		break;
	case KT_VALUE_FLOW: {
		const char *ph = flow_phase[ev->flags < 3 ? ev->flags : 0];
		d = put_u64(put_key(d, jsonl, KEY(",\"flow\":")), v.u64);
		d = put_key(d, jsonl, KEY(",\"phase\":\""));
		memcpy(d, ph, strlen(ph));
		d += strlen(ph);
		if (jsonl)
			*d++ = '"';
		break;
	}
	case KT_VALUE_TEXT:
		o_commit(o, put_key(d, jsonl, KEY(",\"text\":")));
		if (o_message(o, &v) || !(d = o_room(o, 2)))
			goto fail;
		break;
	case KT_VALUE_BYTES:
		d = put_u64(put_key(d, jsonl, KEY(",\"flags\":")), ev->flags);
		o_commit(o, put_key(d, jsonl, KEY(",\"bytes\":\"")));
		if (o_hex(o, v.bytes, v.len) || !(d = o_room(o, 3)))
			goto fail;
		if (jsonl)
			*d++ = '"';
		break;
	case KT_VALUE_ALLOC:
	case KT_VALUE_FREE:
		d = line_mem(d, jsonl, &v);
		break;
	case KT_VALUE_SCHED:
		d = line_sched(d, jsonl, ev, &v);
		break;
	case KT_VALUE_SAMPLE:
		d = put_u64(put_key(d, jsonl, KEY(",\"of\":")), v.thread);
		d = put_u64(put_key(d, jsonl, KEY(",\"stack\":")), v.u64);
		break;
	default:
		d = fmt_track_tail(d, j, ev);
		break;
	}
	if (jsonl)
		*d++ = '}';
	*d++ = '\n';
	o_commit(o, d);
	return 0;
fail:
	return line_fail(o, start);
}

/* The rest of a Chrome object whose value is a u64 (an argument, a frame
 * number). */
static inline char *chrome_u64(char *d, const kt_event *ev, const kt_value *v)
{
	/* An argument past INT64_MAX as a string: JSON readers (jansson,
	 * viewers' doubles) lose or refuse larger integers. */
	int quote = v->kind == KT_VALUE_U64 && v->u64 > INT64_MAX;
	if (quote)
		*d++ = '"';
	d = put_u64(d, v->u64);
	if (quote)
		*d++ = '"';
	/* A named frame's number is its async id: no args to close. */
	int named = v->kind == KT_VALUE_FRAME && ev->flags && ev->flags <= KT_FRAME_PHASE_END;
	memcpy(d, "}}", 2);
	return d + (named ? 1 : 2);
}

/* The room an extra needs past a line's own: a duration and its args. */
#define EXTRA_SLACK 64

/* A zone begin's tail as a complete event: "ph":"X", its duration, then
 * the begin's tail past its "ph":"B", (9 bytes). */
static inline char *put_complete(struct fmt_cache *c, char *d, const struct prefix *m, uint64_t dur)
{
	static const char ph[] = "\"ph\":\"X\",\"dur\":";
	memcpy(d, ph, sizeof(ph) - 1);
	d = put_us_comma(c, d + sizeof(ph) - 1, dur);
	return put_mid(d, m, m->split + 9, m->len - m->split - 9);
}

/* Add @args (JSON members) to the object ending at @d: into its args when
 * it has them (it ends "}}"), else as a new args. */
static char *put_args(char *d, const char *args)
{
	size_t n = strlen(args);
	int has = d[-2] == '}';
	d -= has ? 2 : 1;
	if (has) {
		*d++ = ',';
	} else {
		memcpy(d, ",\"args\":{", 9);
		d += 9;
	}
	memcpy(d, args, n);
	memcpy(d + n, "}}", 2);
	return d + n + 2;
}

/* The object's part after its time, as @x says. */
static inline char *put_tail(struct fmt_cache *c, char *d, const struct prefix *m,
			     const kt_event *ev, const struct chrome_extra *x)
{
	if (x && x->complete && ev->type == KT_EV_ZONE_BEGIN)
		d = put_complete(c, d, m, x->dur_ns);
	else
		d = put_mid(d, m, m->split, m->len - m->split);
	return x && *x->args ? put_args(d, x->args) : d;
}

/* The object's head (from @skip), its time and its tail, as @x says.
 * Microseconds with nanosecond digits: the format's unit is us.  The head
 * (thread) and the tail (name, type) come from the middle cache. */
static inline __attribute__((always_inline)) char *
put_timed(struct fmt_cache *c, char *d, const struct prefix *m, size_t skip, uint64_t ns,
	  const kt_event *ev, const struct chrome_extra *x)
{
	if (!x && m->halves) {
		/* Most objects: put_mid()'s fixed copies, without its tests. */
		memcpy(d, m->s + skip, 64);
		d = put_us_comma(c, d + m->split - skip, ns);
		memcpy(d, m->s + m->split, 64);
		return d + m->len - m->split;
	}
	d = put_mid(d, m, skip, m->split - skip);
	d = put_us_comma(c, d, ns);
	return put_tail(c, d, m, ev, x);
}

/* The rest of a memory event's Chrome counter: its pool's live bytes
 * after it (the job's memstats, on the writing thread only: pass_ahead()
 * leaves these events to it).  Out of memory, the job's mem_failed says
 * so at the end of the pass. */
static char *chrome_mem(char *d, const struct fmt_job *j, const kt_event *ev, uint64_t ns)
{
	const struct mem_pool *p = NULL;
	if (j->mem && memstats_event(j->mem, ev, ns, &p))
		j->mem->failed = 1;
	/* A pool past memstats' cap (or a job without one) shows 0. */
	d = put_u64(d, p ? p->live : 0);
	memcpy(d, "}}", 2);
	return d + 2;
}

/* The rest of the object of a type without a case below: its type, flags
 * and payload in hex.  NULL out of memory. */
static char *chrome_other(struct out *o, char *d, const kt_event *ev, const kt_value *v)
{
	memcpy(d, "\"type\":", 7);
	d = put_u64(d + 7, ev->type);
	memcpy(d, ",\"flags\":", 9);
	d = put_u64(d + 9, ev->flags);
	memcpy(d, ",\"bytes\":\"", 10);
	o_commit(o, d + 10);
	if (o_hex(o, v->bytes, v->len) || !(d = o_room(o, 3)))
		return NULL;
	memcpy(d, "\"}}", 3);
	return d + 3;
}

/* One event as a Chrome JSON object, after a comma unless it is the first
 * object of the array; with @x, the changes it asks for (a zone begin or
 * end, or an instant: tools/export/chrome.c's).  Returns as fmt_line(). */
static inline __attribute__((always_inline)) int
fmt_chrome_event(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns,
		 uint64_t index, const struct chrome_extra *x)
{
	const struct prefix *m;
	size_t start = o->len;
	char *d = line_begin(o, j, ev, &m);
	if (x && d)
		d = o_room(o, m->len + OUT_SLACK + EXTRA_SLACK + strlen(x->args));
	if (!d)
		return -1;
	d = put_timed(o->c, d, m, index ? 0 : 1, ns, ev, x);
	kt_value v;
	kt_event_get_value(ev, &v);
	switch (v.kind) {
	case KT_VALUE_NONE:
		break;
	case KT_VALUE_I64:
		d = put_i64(d, v.i64);
		memcpy(d, "}}", 2);
		d += 2;
		break;
	case KT_VALUE_F64:
		d = put_f64(d, v.f64, 1);
		memcpy(d, "}}", 2);
		d += 2;
		break;
	case KT_VALUE_U64:
	case KT_VALUE_FRAME:
		d = chrome_u64(d, ev, &v);
		break;
	case KT_VALUE_ALLOC:
	case KT_VALUE_FREE:
		d = chrome_mem(d, j, ev, ns);
		break;
	case KT_VALUE_FLOW:
		d = put_u64(d, v.u64);
		*d++ = '}';
		break;
	case KT_VALUE_TEXT: {
		/* A message's text is its name (Tracy's importer reads it
		 * there): no args to close. */
		size_t close = ev->type == KT_EV_MESSAGE ? 1 : 2;
		o_commit(o, d);
		if (o_message(o, &v) || !(d = o_room(o, close)))
			goto fail;
		memcpy(d, "}}", close);
		d += close;
		break;
	}
	default:
		if (!(d = chrome_other(o, d, ev, &v)))
			goto fail;
		break;
	}
	o_commit(o, d);
	return 0;
fail:
	return line_fail(o, start);
}

/* Whether dump's filter keeps thread @tid at @ns. */
static inline int fmt_keeps(const struct fmt_job *j, uint32_t tid, uint64_t ns)
{
	if (ns < j->from || ns > j->to)
		return 0;
	if (j->nthreads) {
		int keep = 0;
		for (int i = 0; i < j->nthreads; i++)
			keep |= j->threads[i] == tid;
		return keep;
	}
	return 1;
}

/* The events of a pass numbered @index on: dump's filter, then a line. */
static inline int fmt_one(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns,
			  uint64_t index)
{
	if (j->kind == FMT_CHROME)
		return fmt_chrome_event(o, j, ev, ns, j->printed + index, NULL);
	if (!fmt_keeps(j, ev->thread_id, ns))
		return 0;
	return fmt_line(o, j, ev, ns);
}

/* Drop record @d as a text or JSON line where it began, from @a to @b ns:
 * "NS TID THREAD drop COUNT until NS".  0 or -1 (out of memory). */
static int fmt_drop_line(struct out *o, const struct fmt_job *j, const struct xdrop *d,
			 uint64_t a, uint64_t b)
{
	size_t n = 0;
	const char *s = tables_thread(j->t, d->thread_id, &n);
	int json = j->kind == FMT_JSONL, len = -1;
	char *th = json ? text_json(s ? s : "", n) : text_escape(s ? s : "", n), *line = NULL;
	if (th)
		len = asprintf(&line, json ? "{\"ns\":%" PRIu64 ",\"tid\":%u,\"thread\":%s,"
					   "\"type\":\"drop\",\"count\":%" PRIu64 ",\"until_ns\":%"
					   PRIu64 "}\n"
				       : "%" PRIu64 " %u %s drop %" PRIu64 " until %" PRIu64 "\n",
			       a, d->thread_id, th, d->count, b);
	int rc = len < 0 ? -1 : o_mem(o, line, (size_t)len);
	free(th);
	free(line);
	return rc;
}

/* ---- formatters and their passes ----------------------------------------- */

struct fmt {
	struct out o;
	const struct fmt_job *j;
	uint64_t n; /* events seen by fmt_event() */
	size_t drop_next; /* j->drops not yet printed */
};

/* The drop records that began by tick @ts, each as a line where dump's
 * filter keeps it.  Their times convert as the events' do (the merge's
 * calibration, once it has started). */
static int fmt_drops_due(struct fmt *fm, uint64_t ts)
{
	const struct drops *ds = fm->j->drops;
	for (; fm->drop_next < ds->n && ds->d[fm->drop_next].first_ts <= ts; fm->drop_next++) {
		const struct xdrop *d = &ds->d[fm->drop_next];
		uint64_t a = kt_reader_get_time_ns(fm->j->drops_r, d->first_ts);
		uint64_t b = kt_reader_get_time_ns(fm->j->drops_r, d->last_ts);
		if (fmt_keeps(fm->j, d->thread_id, a) && fmt_drop_line(&fm->o, fm->j, d, a, b))
			return -ENOMEM;
	}
	return 0;
}

struct fmt *fmt_new(const struct fmt_job *job, FILE *f)
{
	struct fmt *fm = calloc(1, sizeof(*fm));
	if (!fm || !(fm->o.c = fmt_cache_new())) {
		free(fm);
		return NULL;
	}
	fm->o.f = f;
	/* Chrome's writes fail through -EIO and fmt_write_errno(); a text
	 * pass leaves its stream's error to be found at its end, so it
	 * writes through the stream. */
	fm->o.fd = job->kind == FMT_CHROME ? fileno(f) : -1;
	fm->j = job;
	return fm;
}

/* One event at pass index @index; 0, -ENOMEM, or -EIO for a Chrome
 * output whose writes fail (a text stream's error is left to its end). */
static int fmt_at(struct fmt *fm, const kt_event *ev, uint64_t ns, uint64_t index)
{
	if (fm->j->drops && fmt_drops_due(fm, ev->ts))
		return -ENOMEM;
	if (fmt_one(&fm->o, fm->j, ev, ns, index))
		return -ENOMEM;
	return fm->j->kind == FMT_CHROME && fm->o.err ? -EIO : 0;
}

int fmt_event(struct fmt *fm, const kt_event *ev, uint64_t ns)
{
	return fmt_at(fm, ev, ns, fm->n++);
}

static int pass_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	return fmt_at(ctx, ev, ns, index);
}

static void *pass_ahead_begin(void *ctx)
{
	/* Drop lines go between the events in order: state of the writer. */
	const struct fmt *fm = ctx;
	return fm->j->drops && fm->j->drops->n ? NULL : fmt_cache_new();
}

static void pass_ahead_end(void *state)
{
	fmt_cache_free(state);
}

/* On the merging thread: into the batch's own buffer, with its caches. */
static int pass_ahead(void *ctx, void *state, struct pipe_text *t, const kt_event *ev, uint64_t ns,
		      uint64_t index)
{
	struct fmt *fm = ctx;
	/* A memory counter's value follows the events before it: the writing
	 * thread formats the batch from here on, in order. */
	if (fm->j->kind == FMT_CHROME && (ev->type == KT_EV_ALLOC || ev->type == KT_EV_FREE))
		return 1;
	struct out o = { t->buf, t->len, t->cap, NULL, 0, state, -1 };
	int rc = fmt_one(&o, fm->j, ev, ns, index);
	t->buf = o.buf;
	t->len = o.len;
	t->cap = o.cap;
	return rc;
}

static int pass_text(void *ctx, const char *s, size_t n)
{
	struct fmt *fm = ctx;
	o_flush(&fm->o);
	if (fwrite(s, 1, n, fm->o.f) != n)
		o_failed(&fm->o);
	return fm->j->kind == FMT_CHROME && fm->o.err ? -EIO : 0;
}

int fmt_pass(kt_reader *r, struct fmt *fm)
{
	static const struct pipe_client client = {
		.event = pass_event,
		.ahead_begin = pass_ahead_begin,
		.ahead_end = pass_ahead_end,
		.ahead = pass_ahead,
		.text = pass_text,
		.payloads = 1,
	};
	return pipe_run(r, &client, fm);
}

int fmt_drops_end(struct fmt *fm)
{
	return fm->j->drops ? fmt_drops_due(fm, UINT64_MAX) : 0;
}

int fmt_flush(struct fmt *fm)
{
	o_flush(&fm->o);
	return fm->o.err ? -EIO : 0;
}

void fmt_free(struct fmt *fm)
{
	if (!fm)
		return;
	o_flush(&fm->o);
	free(fm->o.buf);
	fmt_cache_free(fm->o.c);
	free(fm);
}

int fmt_write_errno(void)
{
	return out_errno;
}

int fmt_chrome_put(struct fmt *fm, const kt_event *ev, uint64_t ns, const struct chrome_extra *x)
{
	uint64_t index = fm->j->printed + fm->n++;
	/* Without extras (most objects) the formatter is the one the old
	 * unbalanced pass inlined: no extra's branch, room or strlen. */
	int rc = x ? fmt_chrome_event(&fm->o, fm->j, ev, ns, index, x)
		   : fmt_chrome_event(&fm->o, fm->j, ev, ns, index, NULL);
	if (rc)
		return -ENOMEM;
	return fm->o.err ? -EIO : 0;
}

int fmt_chrome_raw(struct fmt *fm, const char *s, size_t n)
{
	if (o_mem(&fm->o, s, n))
		return -ENOMEM;
	return fm->o.err ? -EIO : 0;
}

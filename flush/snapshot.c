/*
 * Flight sessions' snapshots: read the newest records of every ring while
 * their producers go on (ring/flight.c), encoding them into chunks as they
 * are found (one pass over the ring's bytes, which are not in cache: a
 * copy first, then a walk and an encoding of the copy, took three), cut
 * each thread to its own window (as far back as its ring held, within the
 * caller's age and byte limits), and write them as a trace through the
 * same writer as a session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flush/session_impl.h"
#include "format/compact.h"

/* A run of one ring's records: the events of one chunk, or one drop
 * marker.  Each ring is read a piece at a time (ring/flight.c), newest
 * piece first, in place: each piece is walked into runs and each run
 * encoded as it closes, while its bytes are in cache, into the stage;
 * what a piece made is dropped when the producer lapped it during the
 * read.  Runs end at piece ends: a piece is kept or dropped whole. */
struct run {
	uint64_t from, to;         /* ring positions */
	uint64_t first, last;      /* timestamps (a marker's: of the event
				    * after it) */
	uint32_t count;            /* events; 0: a drop marker */
	uint32_t before;           /* records before it (markers included) */
	size_t at;                 /* events: the payload, at stage + at, */
	uint32_t stored;           /* of @stored bytes, */
	uint8_t codec;             /* in KT_CODEC_COMPACT or KT_CODEC_NONE */
	uint8_t mark_ok;           /* a marker this session wrote: */
	uint64_t lost, lost_first, lost_last; /* its events and times */
};

/* Accepted pieces a ring can have: one per record start a copy knows. */
#define PIECES_MAX (KT__PAGE_FL_MARKS + 2)

struct snap;

/* One ring's copy and the records in it. */
struct snap_ring {
	struct snap *sn;
	struct kt__ring *ring;
	kt__flight_copy cp;        /* its copy, and what of it is intact */
	int more;                  /* older pieces remain to be copied */
	int rc;                    /* the last piece's read: 0 or -errno */
	struct run *runs;          /* by piece, newest first; in ring order
				    * once the copies are done */
	size_t nruns, cap;
	size_t piece[PIECES_MAX];  /* the first run of each piece kept */
	unsigned npieces;
	size_t piece_stage;        /* the stage's length before the last */
	size_t cut_run;            /* the run the first record kept lies in */
	uint64_t cut_pos, cut_ts;  /* its position and timestamp */
	size_t cut;                /* records before it */
	uint64_t win_end;          /* the last event kept (its window's end) */
	uint64_t loss_ns;          /* head_loss() of its window */
};

/* What a session keeps from one snapshot to the next (so that only the
 * first pays to make it): the encoder each run is staged with, a decoder,
 * the stage, and room for one run decoded. */
struct kt__snap_keep {
	kt__compact_enc *enc;
	kt__compact_dec *dec;
	uint8_t *stage;
	size_t stage_cap;
	uint8_t *raw;
	size_t run_max;            /* a run's bytes at most */
};

struct snap {
	kt_session *s;
	struct kt__snap_keep *k;
	size_t staged;             /* bytes of the stage in use */
	kt_snapshot_thread *rows;  /* the caller's, @cap of them */
	uint32_t cap;
	struct snap_ring *rings;
	size_t n;
	uint64_t now;              /* the clock when the copies were done */
	const struct run *raw_of;  /* the run k->raw holds, or NULL */
	int rc;                    /* the first error past the copies */
};

/* The stage's codec for a session's: its own when that is compact (then
 * each staged chunk goes to the file as it is), else compact at level 1,
 * decoded again when written. */
static int stage_level(const kt_session *s)
{
	return s->codec == KT_CODEC_COMPACT ? s->level : 1;
}

static struct kt__snap_keep *keep_of(kt_session *s)
{
	struct kt__snap_keep *k = s->snap_keep;
	if (k)
		return k;
	if (!(k = calloc(1, sizeof(*k))))
		return NULL;
	s->snap_keep = k;
	/* A walk closes a run at KT__CHUNK_MAX bytes or more, by one record. */
	k->run_max = KT__CHUNK_MAX + kt_event_size(UINT16_MAX);
	int lvl = stage_level(s);
	if (kt__compact_enc_new(&k->enc, k->run_max) ||
	    kt__compact_enc_lz4(k->enc, lvl >= 2 ? KT__COMPACT_ALL : KT__COMPACT_P, 1) ||
	    kt__compact_dec_new(&k->dec) || !(k->raw = malloc(k->run_max)))
		return NULL;
	return k;
}

void kt__snapshot_free(kt_session *s)
{
	struct kt__snap_keep *k = s->snap_keep;
	if (s->snap_arena)
		munmap(s->snap_arena, s->snap_arena_len);
	if (!k)
		return;
	kt__compact_enc_free(k->enc);
	kt__compact_dec_free(k->dec);
	if (k->stage)
		munmap(k->stage, k->stage_cap);
	free(k->raw);
	free(k);
}

/* Room for @n more bytes in the stage, which maps what the rings hold
 * and a run more (maps()): a ring's kept bytes are at most the ring, and
 * no run is staged larger than it was raw. */
static int stage_room(const struct snap *sn, size_t n)
{
	return sn->k->stage_cap - sn->staged >= n ? 0 : -EOVERFLOW;
}

/* Add @r, the ring's next run. */
static int add_run(struct snap_ring *t, struct run r)
{
	if (t->nruns == t->cap) {
		struct run *more = reallocarray(t->runs, 2 * t->cap + 64, sizeof(*more));
		if (!more)
			return -ENOMEM;
		t->runs = more;
		t->cap = 2 * t->cap + 64;
	}
	t->runs[t->nruns++] = r;
	return 0;
}

/* The drop marker at @q, ring position @pos, as a run: what it says is
 * kept now (its bytes are gone after the read), for the file when it is
 * of this session. */
static int add_marker(struct snap_ring *t, const uint8_t *q, uint64_t pos)
{
	kt__ring_rec rec = { 0 };
	uint64_t ts;
	memcpy(&ts, q + KT_REC_TS, 8);
	struct run m = { .from = pos, .to = pos + KT__DROP_MARK_SIZE, .first = ts, .last = ts };
	if (kt__ring_decode(q, KT__DROP_MARK_SIZE, pos, &rec) == 1 && !rec.bytes &&
	    rec.marker_gen == (uint32_t)t->sn->s->gen)
		m = (struct run){ m.from, m.to, ts, ts, 0, 0, 0, 0, 0, 1, rec.count, rec.first_ts,
				  rec.last_ts };
	return add_run(t, m);
}

/* The events from ring position @pos (at @q) on, up to @b, KT__CHUNK_MAX
 * bytes of them or to a drop marker, as one run: found and encoded into
 * the stage in one pass (raw where the codec would not shrink them, as a
 * writer stores them).  *@next: where the run ends.  On torn bytes the
 * encoder may refuse them (-EINVAL) or encode nonsense; either way it
 * reads only [@q, @q + @b - @pos), and the piece's check drops the
 * result. */
static int add_events(struct snap_ring *t, const uint8_t *q, uint64_t pos, uint64_t b,
		      uint64_t *next)
{
	struct snap *sn = t->sn;
	int rc = stage_room(sn, sn->k->run_max);
	if (rc)
		return rc;
	kt__compact_run cr;
	uint8_t *out = sn->k->stage + sn->staged;
	long n = kt__compact_encode_upto(sn->k->enc, q, (size_t)(b - pos), KT__CHUNK_MAX, out,
					 sn->k->run_max, &cr);
	uint8_t codec = KT_CODEC_COMPACT;
	if (n == -ENOSPC) {
		memcpy(out, q, cr.used);
		n = (long)cr.used;
		codec = KT_CODEC_NONE;
	}
	if (n <= 0)
		return n ? (int)n : -EINVAL; /* torn, or not a record */
	*next = pos + cr.used;
	rc = add_run(t, (struct run){ .from = pos, .to = pos + cr.used, .first = cr.first,
				      .last = cr.last, .count = cr.count, .at = sn->staged,
				      .stored = (uint32_t)n, .codec = codec });
	sn->staged += rc ? 0 : (size_t)n;
	return rc;
}

/* Walk the records of a piece, ring positions [@a, @b) at @p, into runs:
 * drop markers, and the events between them in runs of KT__CHUNK_MAX bytes,
 * each encoded as it is found.  The bytes are the ring's, which the
 * producer may be overwriting: each step stays within [@a, @b), and the
 * piece's check after the walk drops what torn bytes made. */
static int walk_runs(struct snap_ring *t, const uint8_t *p, uint64_t a, uint64_t b)
{
	uint64_t pos = a;
	int rc = 0;
	while (pos < b && !rc) {
		const uint8_t *q = p + (pos - a);
		/* Whole records end on @b; torn sizes may stop a walk short
		 * of it, with less than a header left to read. */
		if (b - pos < KT_REC_HEAD) {
			rc = -EINVAL; /* torn */
		} else if (q[KT_REC_TYPE] != KT__EV_DROP_MARK) {
			rc = add_events(t, q, pos, b, &pos);
		} else if (b - pos < KT__DROP_MARK_SIZE) {
			rc = -EINVAL; /* torn */
		} else {
			rc = add_marker(t, q, pos);
			pos += KT__DROP_MARK_SIZE;
		}
	}
	return rc;
}

/* kt__flight_copy's read: the piece [@a, @b) at @p, a new piece of the
 * ring. */
static int read_piece(void *ctx, const uint8_t *p, uint64_t a, uint64_t b)
{
	struct snap_ring *t = ctx;
	if (t->npieces == PIECES_MAX)
		return t->rc = -EOVERFLOW; /* more pieces than starts: a bug */
	t->piece[t->npieces++] = t->nruns;
	t->piece_stage = t->sn->staged;
	return t->rc = walk_runs(t, p, a, b);
}

/* kt__flight_copy's drop: the piece just read was lapped (the copy reads
 * its intact part again) or its read failed. */
static void drop_piece(void *ctx)
{
	struct snap_ring *t = ctx;
	t->nruns = t->piece[--t->npieces];
	t->sn->staged = t->piece_stage;
	t->rc = 0;
}

/* *@at, a mapping of *@have bytes that the session keeps from one
 * snapshot to the next, made at least @len bytes (mapped again, its bytes
 * lost, when smaller): NULL when it cannot be.  Mapped, not faulted in:
 * a snapshot touches what it uses of it and no more. */
static uint8_t *mapping(uint8_t **at, size_t *have, size_t len)
{
	if (*have >= len)
		return *at;
	if (*at)
		munmap(*at, *have);
	*have = 0;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return *at = NULL;
	*have = len;
	return *at = p;
}

/* The session's memory for rings of @total bytes together: the encoder,
 * the stage, and the buffer that pieces found lapped (under
 * ThreadSanitizer, every piece) are copied into.  The buffer, or NULL. */
static uint8_t *maps(kt_session *s, size_t total)
{
	struct kt__snap_keep *k = keep_of(s);
	if (!k || !mapping(&k->stage, &k->stage_cap, total + k->run_max))
		return NULL;
	return mapping(&s->snap_arena, &s->snap_arena_len, total ? total : 1);
}

/* The oldest record @t holds so far (its first run's first timestamp, of
 * the newest piece read: pieces come newest first), or UINT64_MAX. */
static uint64_t oldest_ts(const struct snap_ring *t)
{
	if (!t->npieces || t->piece[t->npieces - 1] == t->nruns)
		return UINT64_MAX;
	return t->runs[t->piece[t->npieces - 1]].first;
}

int kt__snapshot_reserve(kt_session *s)
{
	kt__ring_list list = { 0 };
	size_t total = 0;
	int rc = kt__registry_snapshot(&list);
	for (size_t i = 0; !rc && i < list.len; i++)
		total += kt__ring_bytes(list.rings[i]);
	free(list.rings);
	return rc ? rc : !maps(s, total) ? -ENOMEM : 0;
}

/* @t's runs in ring order (the pieces came newest first), each with the
 * records before it. */
static int order_runs(struct snap_ring *t)
{
	struct run *runs = malloc((t->nruns ? t->nruns : 1) * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	size_t n = 0, end = t->nruns;
	for (unsigned i = t->npieces; i-- > 0; end = t->piece[i]) {
		memcpy(runs + n, t->runs + t->piece[i], (end - t->piece[i]) * sizeof(*runs));
		n += end - t->piece[i];
	}
	/* The pieces' starts were taken newest first: end walks back. */
	for (size_t i = 0; i < n; i++) {
		const struct run *last = i ? &runs[i - 1] : NULL;
		runs[i].before = last ? last->before + (last->count ? last->count : 1) : 0;
	}
	free(t->runs);
	t->runs = runs;
	t->cap = t->nruns;
	return 0;
}

/* Start @t's copy: its first (newest) piece, read in place. */
static void begin_ring(struct snap *sn, struct snap_ring *t, struct kt__ring *ring, uint8_t *buf)
{
	t->sn = sn;
	t->ring = ring;
	t->cp.read = read_piece;
	t->cp.drop = drop_piece;
	t->cp.ctx = t;
	t->more = kt__ring_flight_begin(ring, buf, &t->cp);
}

/*
 * Copy every ring, newest pieces first: each ring's newest piece, back to
 * back so that the copies begin at nearly the same time, then always the
 * next older piece of the ring whose copy reaches the least far back, so
 * that they go back in time together and each stops where its producer's
 * overwrites meet it (ring/flight.c): the threads' windows overlap as
 * much as they can, and nothing the producers overwrite is read first.
 * Rings with nothing left are dropped from the list.
 */
static int copy_rings(struct snap *sn, const kt__ring_list *list)
{
	size_t total = 0;
	if (!(sn->rings = calloc(list->len ? list->len : 1, sizeof(*sn->rings))))
		return -ENOMEM;
	for (size_t i = 0; i < list->len; i++)
		total += kt__ring_bytes(list->rings[i]);
	uint8_t *buf = maps(sn->s, total);
	if (!buf)
		return -ENOMEM;
	sn->k = sn->s->snap_keep;
	for (size_t i = 0; i < list->len; i++) {
		begin_ring(sn, &sn->rings[i], list->rings[i], buf);
		buf += kt__ring_bytes(list->rings[i]);
	}
	for (;;) {
		struct snap_ring *next = NULL;
		for (size_t i = 0; i < list->len; i++)
			if (sn->rings[i].more && (!next || oldest_ts(&sn->rings[i]) > oldest_ts(next)))
				next = &sn->rings[i];
		if (!next)
			break;
		next->more = kt__ring_flight_older(&next->cp);
	}
	sn->now = kt_now();
	int rc = 0;
	for (size_t i = 0; i < list->len; i++) {
		struct snap_ring *t = &sn->rings[i];
		rc = rc ? rc : t->rc ? t->rc : order_runs(t);
		if (t->cp.span.len > 0)
			sn->rings[sn->n++] = *t;
		else
			free(t->runs);
	}
	return rc;
}

static void free_snap(struct snap *sn)
{
	for (size_t i = 0; sn->rings && i < sn->n; i++)
		free(sn->rings[i].runs);
	free(sn->rings);
}

/* The records of event run @r (they are in the stage, encoded): at
 * k->raw, decoded, or NULL (sn->rc says why). */
static const uint8_t *run_raw(struct snap *sn, const struct run *r)
{
	struct kt__snap_keep *k = sn->k;
	const uint8_t *in = k->stage + r->at;
	if (r->codec == KT_CODEC_NONE)
		return in;
	if (sn->raw_of == r)
		return k->raw;
	int rc = kt__compact_decode(k->dec, in, r->stored, k->raw, (size_t)(r->to - r->from),
				    r->count);
	if (rc) {
		sn->rc = sn->rc ? sn->rc : rc;
		sn->raw_of = NULL;
		return NULL;
	}
	sn->raw_of = r;
	return k->raw;
}

/* Where @t is cut to start at @ts: its first record at or after @ts
 * (timestamps grow along a ring), as its index, position, run and
 * timestamp. */
struct cut {
	size_t idx, run;
	uint64_t pos, ts;
};

static struct cut lower_bound(struct snap *sn, const struct snap_ring *t, uint64_t ts)
{
	size_t k = 0, hi = t->nruns;
	/* The first run whose last record is at or after @ts... */
	while (k < hi) {
		size_t mid = k + (hi - k) / 2;
		if (t->runs[mid].last < ts)
			k = mid + 1;
		else
			hi = mid;
	}
	if (k == t->nruns)
		return (struct cut){ t->nruns ? t->runs[k - 1].before + (t->runs[k - 1].count
				     ? t->runs[k - 1].count : 1) : 0, k,
				     t->cp.span.from + t->cp.span.len, 0 };
	/* ...and in it, the first such record. */
	const struct run *r = &t->runs[k];
	struct cut c = { r->before, k, r->from, r->first };
	const uint8_t *raw = r->count && r->first < ts ? run_raw(sn, r) : NULL;
	kt__ring_rec rec;
	for (size_t off = 0; raw && c.ts < ts && c.pos < r->to &&
	     kt__ring_decode(raw + off, (size_t)(r->to - c.pos), 0, &rec) == 1;) {
		off += rec.size;
		c.pos += rec.size;
		c.idx++;
		if (c.pos < r->to)
			memcpy(&c.ts, raw + off + KT_REC_TS, 8);
	}
	return c;
}

/* Ring bytes kept if the window starts at @ts. */
static uint64_t bytes_from(struct snap *sn, uint64_t ts)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < sn->n; i++) {
		const kt__flight_span *sp = &sn->rings[i].cp.span;
		sum += sp->from + sp->len - lower_bound(sn, &sn->rings[i], ts).pos;
	}
	return sum;
}

static uint64_t ns_to_ticks(uint64_t ns, uint64_t hz)
{
	unsigned __int128 t = (unsigned __int128)ns * hz / 1000000000u;
	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

static uint64_t ticks_to_ns(uint64_t ticks, uint64_t hz)
{
	unsigned __int128 n = (unsigned __int128)ticks * 1000000000u / hz;
	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

/*
 * Where the window starts, for every thread alike: no earlier than
 * @max_age_ns before the copies, and late enough for @max_bytes.  Each
 * thread's own window then starts at its first record at or after it
 * (lower_bound()): a thread whose ring lost its head starts at its oldest
 * surviving record, and the others keep theirs, so one busy thread's
 * milliseconds do not cut a quiet thread's seconds.
 */
static uint64_t window_start(struct snap *sn, uint64_t max_age_ns, uint64_t max_bytes)
{
	uint64_t hz = sn->s->c0.tick_hz, w = 0, newest = sn->now;
	if (max_age_ns) {
		uint64_t age = ns_to_ticks(max_age_ns, hz);
		w = newest > age ? newest - age : 0;
	}
	if (max_bytes && bytes_from(sn, w) > max_bytes) {
		/* The earliest start that fits: bytes_from() only falls as
		 * the start moves later. */
		uint64_t lo = w, hi = newest + 1;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (bytes_from(sn, mid) > max_bytes)
				lo = mid + 1;
			else
				hi = mid;
		}
		w = lo;
	}
	return w;
}

/* Of the @max_age_ns asked for, what @t's ring no longer held before its
 * window: 0 when its ring reached back that far (or held its whole
 * session).  Spans, not instants: on a machine up for less than
 * @max_age_ns the asked start lies before the clock's zero, and the loss
 * is still what the window lacks of the age. */
static uint64_t head_loss(const struct snap *sn, const struct snap_ring *t, uint64_t max_age_ns)
{
	uint64_t hz = sn->s->c0.tick_hz, age = ns_to_ticks(max_age_ns, hz);
	if (!max_age_ns || t->cp.span.whole || !t->nruns)
		return 0;
	/* The oldest record the ring held, before any cut. */
	uint64_t oldest = t->runs[0].first;
	uint64_t kept = sn->now > oldest ? sn->now - oldest : 0;
	return kept < age ? ticks_to_ns(age - kept, hz) : 0;
}

/* The file being written. */
struct out {
	struct snap *sn;
	kt_session *s;
	kt_writer *w;
	int rc;                    /* first error */
	uint64_t events, chunks, bytes_raw;
	uint64_t newest;           /* the last event's timestamp */
	uint64_t ring_newest;      /* the last event's of the ring being written */
};

static void put(struct out *o, int rc)
{
	if (rc && !o->rc)
		o->rc = rc;
}

/* Event run @r of @t from ring position @from on (its start, or the cut
 * after @skip of its events; @first: the timestamp there) as one chunk:
 * as staged when the whole run is, in the session's codec (or raw, as a
 * compact session's writer stores what does not shrink), else decoded and
 * encoded again in the session's codec. */
static void put_chunk(struct out *o, const struct snap_ring *t, const struct run *r,
		      uint64_t from, uint32_t skip, uint64_t first)
{
	uint32_t count = r->count - skip, tid = kt__ring_thread_id(t->ring);
	unsigned codec = (unsigned)o->s->codec;
	size_t len = (size_t)(r->to - from);
	if (!count || o->rc)
		return;
	if (!skip && (r->codec == codec || (r->codec == KT_CODEC_NONE && codec == KT_CODEC_COMPACT))) {
		put(o, kt__writer_chunk_stored(o->w, tid, r->codec, o->sn->k->stage + r->at,
					       r->stored, len, count, first, r->last));
	} else {
		const uint8_t *raw = run_raw(o->sn, r);
		put(o, raw ? kt__writer_chunk_known(o->w, tid, codec, o->s->level,
						    raw + (from - r->from), len, count, first,
						    r->last)
			   : o->sn->rc);
	}
	o->events += count;
	o->chunks++;
	if (r->last > o->newest)
		o->newest = r->last;
	o->ring_newest = r->last;
	o->bytes_raw += len;
}

/* The kept records of one ring: its runs from the cut, each event run a
 * chunk, each drop marker a drop frame (those of this session). */
static void put_ring(struct out *o, const struct snap_ring *t)
{
	for (size_t k = t->cut_run; k < t->nruns && !o->rc; k++) {
		const struct run *r = &t->runs[k];
		int cut = k == t->cut_run;
		if (r->count)
			/* The run the cut lies in is kept from the cut. */
			put_chunk(o, t, r, cut ? t->cut_pos : r->from,
				  cut ? (uint32_t)(t->cut - r->before) : 0,
				  cut ? t->cut_ts : r->first);
		else if (r->mark_ok)
			put(o, kt_writer_drop(o->w, kt__ring_thread_id(t->ring), r->lost,
					      r->lost_first, r->lost_last));
	}
	/* Events the ring overwrote were lost to a full ring: a drop record,
	 * timed before the window. */
	if (t->cp.span.over && !o->rc)
		put(o, kt_writer_drop(o->w, kt__ring_thread_id(t->ring), t->cp.span.over,
				      t->cp.span.over_first, t->cp.span.over_last));
	if (o->rc)
		return;
	char *name = kt__ring_name_dup(t->ring);
	put(o, kt_writer_thread(o->w, kt__ring_thread_id(t->ring), kt__ring_os_tid(t->ring), name));
	free(name);
}

/* The caller's row for @t, if it has room and the thread is in the file:
 * its own window and what it lost before it. */
static void put_row(const struct snap *sn, kt_snapshot_result *res, const struct snap_ring *t,
		    uint64_t events)
{
	const kt__flight_span *sp = &t->cp.span;
	res->events_overwritten += sp->over;
	if (res->thread_rows >= sn->cap || !(events || sp->over))
		return;
	sn->rows[res->thread_rows++] = (kt_snapshot_thread){
		.thread_id = kt__ring_thread_id(t->ring), .events = events,
		.overwritten = sp->over, .window_start = events ? t->cut_ts : 0,
		.window_end = events ? t->win_end : 0, .overwritten_first = sp->over_first,
		.overwritten_last = sp->over_last, .trimmed = t->cut, .head_loss_ns = t->loss_ns };
}

/* Write the trace to @fd: header, every kept record, names, threads and
 * the summary.  Returns 0 or the first error. */
static int write_trace(struct snap *sn, int fd, kt_snapshot_result *res)
{
	struct out o = { .sn = sn, .s = sn->s };
	kt_header h = sn->s->hdr;
	int rc = kt_writer_open_fd(fd, &h, &o.w);
	if (rc)
		return rc;
	put(&o, kt__write_self_process(o.w, h.start_mono_ns)); /* whose it is, SPEC §4.10 */
	for (size_t i = 0; i < sn->n && !o.rc; i++) {
		uint64_t before = o.events;
		put_ring(&o, &sn->rings[i]);
		sn->rings[i].win_end = o.ring_newest;
		res->thread_count += o.events > before;
		put_row(sn, res, &sn->rings[i], o.events - before);
	}
	if (!o.rc) /* a flight session's scheduler records of the window */
		put(&o, kt__sched_snapshot(sn->s, o.w, res->first_event));
	if (!o.rc)
		put(&o, kt__snapshot_tables(o.w));
	kt_file_summary fs;
	memset(&fs, 0, sizeof(fs));
	kt_clock_calibration c1;
	kt__clock_calibrate(&c1);
	fs.end_wall_ns = kt__wall_ns();
	fs.end_mono_ns = kt__mono_ns();
	fs.clock_ticks1 = c1.ticks;
	fs.clock_ns1 = c1.mono_ns;
	fs.io_backend = KT_IO_PWRITE;
	if (!o.rc)
		put(&o, kt_writer_finish(o.w, &fs));
	res->bytes_on_disk = kt_writer_get_bytes(o.w);
	put(&o, kt_writer_close(o.w));
	res->events = o.events;
	res->window_end = o.newest;
	return o.rc;
}

/* Cut every ring at @w (each thread's window starts at its first record
 * at or after it) and count what that leaves out.  The file's first event
 * is the earliest window's start; every thread is complete from the latest
 * start of a thread that lost its head (or from the first event). */
static void cut_rings(struct snap *sn, uint64_t w, uint64_t max_age_ns, kt_snapshot_result *res)
{
	uint64_t first = UINT64_MAX, complete = 0;
	for (size_t i = 0; i < sn->n; i++) {
		struct snap_ring *t = &sn->rings[i];
		struct cut c = lower_bound(sn, t, w);
		t->cut = c.idx;
		t->cut_pos = c.pos;
		t->cut_ts = c.ts;
		t->cut_run = c.run;
		t->loss_ns = head_loss(sn, t, max_age_ns);
		res->events_trimmed += t->cut;
		res->bytes_lapped += t->cp.span.lapped;
		res->bytes_overwritten += t->cp.span.from - t->cp.span.origin;
		if (t->loss_ns > res->head_loss_ns)
			res->head_loss_ns = t->loss_ns;
		if (c.run >= t->nruns)
			continue;
		first = c.ts < first ? c.ts : first;
		if (!t->cp.span.whole && c.ts > complete)
			complete = c.ts;
	}
	res->first_event = first == UINT64_MAX ? 0 : first;
	res->window_start = complete > res->first_event ? complete : res->first_event;
}

/* Create @path for the snapshot, or use @fd. */
static int open_out(const char *path, int fd)
{
	if (!path)
		return fd < 0 ? -EINVAL : fd;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	return fd < 0 ? -errno : fd;
}

static int snapshot(struct snap sn, const char *path, int fd, uint64_t max_age_ns,
		    uint64_t max_bytes, kt_snapshot_result *res)
{
	kt__ring_list list = { 0 };
	int rc = kt__registry_snapshot(&list);
	if (!rc)
		rc = copy_rings(&sn, &list);
	free(list.rings);
	if (!rc) {
		cut_rings(&sn, window_start(&sn, max_age_ns, max_bytes), max_age_ns, res);
		/* A staged run that would not decode (a bug) fails the snapshot. */
		rc = sn.rc;
	}
	if (!rc) {
		int out = open_out(path, fd);
		rc = out < 0 ? out : write_trace(&sn, out, res);
		if (path && out >= 0) {
			if (rc)
				unlink(path);
			close(out);
		}
	}
	free_snap(&sn);
	return rc;
}

int kt_session_snapshot_threads(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
				uint64_t max_bytes, kt_snapshot_result *res, kt_snapshot_thread *rows,
				uint32_t cap)
{
	kt_snapshot_result scratch;
	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));
	if (!path && fd < 0)
		return -EINVAL;
	/* A host thread's call, which open()s and write()s (cancellation
	 * points) holding the snapshot lock (the names', categories' and
	 * tracks' locks only while they are copied, snapshot_tables.c): a
	 * deferred cancel acting there would leave one held for ever (every
	 * later snapshot and stop waits on it).  It acts at the caller's next
	 * point.
	 * Past RLIMIT_FSIZE its file's write sends this thread SIGXFSZ, whose
	 * default action ends the host: held off, and taken back on EFBIG. */
	int cancel;
	kt__xfsz x;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	kt__xfsz_hold(&x);
	int rc = kt__session_snap_enter(s);
	if (!rc) {
		struct snap sn = { .s = s, .rows = rows, .cap = rows ? cap : 0 };
		rc = snapshot(sn, path, fd, max_age_ns, max_bytes, res);
		kt__session_snap_leave(s);
	}
	kt__xfsz_release(&x, rc == -EFBIG);
	pthread_setcancelstate(cancel, NULL);
	return rc;
}

int kt_session_snapshot(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
			uint64_t max_bytes, kt_snapshot_result *res)
{
	return kt_session_snapshot_threads(s, path, fd, max_age_ns, max_bytes, res, NULL, 0);
}

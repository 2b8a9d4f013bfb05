/*
 * The compact chunk codec's encoder (format/compact.h; the bytes are
 * defined in format/SPEC.md §4.1.1, format version 3).
 *
 * A chunk's records become five streams:
 *   T  each timestamp minus the one before, a varint (one byte for the
 *      few dozen ticks between neighbouring events of a busy thread);
 *   K  the (type, flags, name) key of each record, predicted from the key
 *      before it; only the misses are stored, as tokens that also carry
 *      the run of hits before them;
 *   V  the 8-byte value of counters, frames and flows, predicted per key
 *      (the last value plus the last step; for f64 the last value);
 *   L  the payload length of messages and user records, predicted per key;
 *   P  those payloads' bytes.
 * The decoder (compact_dec.c) runs the same predictors over the same
 * records, so the two agree on every prediction without storing it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include <katra/atomic.h>

#include "format/compact_impl.h"
#include "format/format.h"

#define HASH_BITS 13 /* 2 x KT__COMPACT_KEYS slots: short probes */
#define LZ4_MIN 32   /* shorter streams are not worth a try */
/* A stream whose LZ4 saved under an eighth of it is not tried for this
 * many chunks after: LZ4 on a stream of a byte or two per record costs
 * the flusher ~0.7 ns a record, worth it where the records repeat (a frame
 * loop's T shrinks 3x) and not where they do not (a renderer's shading
 * times: 4% for 2 ns a record). */
#define LZ4_SKIP 15
#define LZ4_JUDGE 4096 /* bytes a stream needs for its gain to set the skip */
#define PREFETCH 4096 /* bytes ahead: records not in cache yet (encode_upto) */

struct hslot {
	uint32_t gen; /* the chunk that filled it; older ones are empty */
	uint16_t idx;
};

/*
 * The encoder's dictionary slot: the one it shares with the decoder, and
 * the slot predicted to follow as a pointer, not the shared slot's index.
 * The walk goes from each record's slot to the next's: with an index that
 * step is a load, a multiply and an add before the next record's key can
 * be compared (8 cycles a record, all of them on the loop's one chain of
 * dependent steps), with a pointer a load alone.
 */
struct eslot {
	struct kt__cmp_slot c; /* c.next unused: .next says it */
	struct eslot *next;
};

struct kt__compact_enc {
	size_t max_raw;
	uint32_t gen;
	uint32_t nkeys;
	unsigned lz4;            /* streams to try LZ4 on */
	int accel;
	/* Chunks left before a stream is tried again: the thread's whose
	 * chunk is encoded (kt__compact_enc_skip), else own_skip. */
	uint8_t *skip;
	uint8_t own_skip[KT__CMP_STREAMS];
	struct eslot slots[KT__COMPACT_KEYS + 1];
	struct hslot hash[1u << HASH_BITS];
	size_t cap[KT__CMP_STREAMS];
	uint8_t *buf;            /* the streams' scratch, one allocation */
	uint8_t *base[KT__CMP_STREAMS];
	uint8_t *zbuf;           /* where LZ4 writes: room for the lz4 streams */
	size_t zcap;
};

/*
 * Worst-case bytes per stream for @max_raw bytes of records, every record
 * at least 16 bytes, a value record 24 and a pair 32: T a varint per
 * record; K a token, a run (under 2^32: 5 bytes), a literal (under 4128:
 * 2 bytes) and a definition (2 bytes and a name) per record; V a run and
 * a literal (10 bytes, or 9 for an f64) per value, two values per 32
 * bytes at most; L a run and a length (3 bytes) per record; P the
 * payloads.
 */
static void stream_caps(size_t max_raw, size_t cap[KT__CMP_STREAMS])
{
	size_t n = max_raw / 16;
	cap[0] = KT__CMP_VARINT_MAX * n;
	cap[1] = (1 + 5 + 2 + 2 + 5) * n;
	cap[2] = (5 + KT__CMP_VARINT_MAX) * (max_raw / 16);
	cap[3] = (5 + 3) * n;
	cap[4] = max_raw;
}

/* Room for LZ4's output of the streams in @mask: each kept only when
 * smaller than the stream, so the stream's own size is enough. */
static size_t zbuf_size(const size_t cap[KT__CMP_STREAMS], unsigned mask)
{
	size_t n = 0;
	for (int i = 0; i < KT__CMP_STREAMS; i++)
		if (mask & (1u << i))
			n += cap[i];
	return n;
}

int kt__compact_enc_new(kt__compact_enc **out, size_t max_raw)
{
	size_t total = 0;

	*out = NULL;
	if (max_raw == 0 || max_raw % 8 || max_raw > KT_MAX_RAW)
		return -EINVAL;
	kt__compact_enc *e = kt__calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	stream_caps(max_raw, e->cap);
	for (int i = 0; i < KT__CMP_STREAMS; i++)
		total += e->cap[i];
	e->lz4 = KT__COMPACT_P;
	e->accel = 1;
	e->skip = e->own_skip;
	e->zcap = zbuf_size(e->cap, e->lz4);
	e->buf = kt__malloc(total);
	e->zbuf = kt__malloc(e->zcap);
	if (!e->buf || !e->zbuf) {
		kt__compact_enc_free(e);
		return -ENOMEM;
	}
	for (size_t i = 0, at = 0; i < KT__CMP_STREAMS; at += e->cap[i], i++)
		e->base[i] = e->buf + at;
	e->max_raw = max_raw;
	*out = e;
	return 0;
}

void kt__compact_enc_free(kt__compact_enc *e)
{
	if (!e)
		return;
	free(e->buf);
	free(e->zbuf);
	free(e);
}

_Static_assert(KT__COMPACT_SKIPS == KT__CMP_STREAMS, "a skip counter a stream");

void kt__compact_enc_skip(kt__compact_enc *e, uint8_t *skip)
{
	e->skip = skip ? skip : e->own_skip;
}

int kt__compact_enc_lz4(kt__compact_enc *e, unsigned streams, int accel)
{
	if (streams & ~KT__COMPACT_ALL)
		return -EINVAL;
	size_t need = zbuf_size(e->cap, streams);
	if (need > e->zcap) {
		uint8_t *z = kt__malloc(need);
		if (!z)
			return -ENOMEM;
		free(e->zbuf);
		e->zbuf = z;
		e->zcap = need;
	}
	e->lz4 = streams;
	e->accel = accel < 1 ? 1 : accel;
	memset(e->own_skip, 0, sizeof(e->own_skip));
	return 0;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint32_t hash_of(uint64_t key)
{
	return (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - HASH_BITS));
}

/* The dictionary slot of @key (48 bits), or -1. */
static int enc_find(const kt__compact_enc *e, uint64_t key)
{
	for (uint32_t h = hash_of(key);; h = (h + 1) & ((1u << HASH_BITS) - 1)) {
		const struct hslot *hs = &e->hash[h];
		if (hs->gen != e->gen)
			return -1;
		if ((e->slots[hs->idx].c.meta & KT__CMP_KEY_BITS) == key)
			return hs->idx;
	}
}

/* Slot @idx as a new key starts it, predicting itself. */
static void eslot_init(kt__compact_enc *e, unsigned idx, uint64_t key, enum kt__cmp_cls c)
{
	kt__cmp_slot_init(&e->slots[idx].c, (uint16_t)idx, key, c);
	e->slots[idx].next = &e->slots[idx];
}

/* A new key's slot: the next in the dictionary while there is room, else
 * the spill slot.  -1 for a (type, flags) pair SPEC §4.2 does not allow. */
static int enc_define(kt__compact_enc *e, uint64_t key)
{
	enum kt__cmp_cls c = kt__cmp_cls((uint8_t)(key >> KT_REC_META_SHIFT(KT_REC_TYPE)),
					 (uint8_t)(key >> KT_REC_META_SHIFT(KT_REC_FLAGS)));
	if (c == KT__CLS_BAD)
		return -1;
	if (e->nkeys == KT__COMPACT_KEYS) {
		eslot_init(e, KT__CMP_OTHER, key, c);
		return KT__CMP_OTHER;
	}
	int idx = (int)e->nkeys++;
	eslot_init(e, (unsigned)idx, key, c);
	uint32_t h = hash_of(key);
	while (e->hash[h].gen == e->gen)
		h = (h + 1) & ((1u << HASH_BITS) - 1);
	e->hash[h] = (struct hslot){ e->gen, (uint16_t)idx };
	return idx;
}

/*
 * A record whose key the prediction from slot @ctx missed, after @run
 * predicted ones: its token into K, then the run's and the literal's
 * overflow varints and, for a new key, its definition; @ctx now predicts
 * it.  Returns its slot, or NULL for a record that is not valid.
 */
static inline struct eslot *enc_key_miss(kt__compact_enc *e, uint8_t **k, uint64_t run,
					 struct eslot *ctx, uint64_t meta)
{
	uint64_t key = meta & KT__CMP_KEY_BITS;
	int idx = enc_find(e, key), fresh = idx < 0;
	uint64_t lit = fresh ? e->nkeys : (uint64_t)idx; /* the dictionary's size: "new" */
	if (fresh && (idx = enc_define(e, key)) < 0)
		return NULL;
	uint8_t *p = *k;
	*p++ = (uint8_t)((run < KT__CMP_RUN_ESC ? run : KT__CMP_RUN_ESC) << 5 |
			 (lit < KT__CMP_LIT_ESC ? lit : KT__CMP_LIT_ESC));
	if (run >= KT__CMP_RUN_ESC)
		p = put_varint(p, run - KT__CMP_RUN_ESC);
	if (lit >= KT__CMP_LIT_ESC)
		p = put_varint(p, lit - KT__CMP_LIT_ESC);
	if (fresh) {
		*p++ = (uint8_t)(key >> KT_REC_META_SHIFT(KT_REC_TYPE));
		*p++ = (uint8_t)(key >> KT_REC_META_SHIFT(KT_REC_FLAGS));
		p = put_varint(p, (uint32_t)key);
	}
	*k = p;
	struct eslot *s = &e->slots[idx];
	if ((meta & s->c.mask) != s->c.meta)
		return NULL; /* a fixed-size type with another length */
	ctx->next = s;
	return s;
}

/* The non-zero XOR of an f64 with the one before: a byte holding its
 * leading and trailing zero bytes (4 bits each), then the bytes between. */
static uint8_t *put_xor(uint8_t *p, uint64_t x)
{
	unsigned lead = (unsigned)__builtin_clzll(x) / 8, trail = (unsigned)__builtin_ctzll(x) / 8;
	*p++ = (uint8_t)(lead << 4 | trail);
	x >>= 8 * trail;
	for (unsigned i = 0; i < 8 - lead - trail; i++, x >>= 8)
		*p++ = (uint8_t)x;
	return p;
}

/* Where the encoder writes V, L and P, and their runs of hits. */
struct wr {
	uint8_t *v, *l, *p;
	uint64_t rv, rl;
};

/* The 8-byte value of a KT__CLS_INT record (or a pair's first) into V:
 * when the prediction (the last plus the last step) misses, the run of
 * hits before it and a literal.  Inline in the walk: a frame loop's flows
 * and counters are a fifth of its records. */
static inline void enc_int(struct kt__cmp_slot *s, uint64_t v, struct wr *w)
{
	uint64_t pred = s->last + s->step;
	if (v == pred) {
		w->rv++;
	} else {
		w->v = put_varint(put_varint(w->v, w->rv), kt__zigzag(v - pred));
		w->rv = 0;
	}
	s->step = v - s->last;
	s->last = v;
}

/* The 8-byte value of a KT__CLS_INT or KT__CLS_F64 record (or a pair's
 * first) into V: when the prediction misses, the run of hits before it
 * and a literal. */
static void enc_value(struct kt__cmp_slot *s, uint64_t v, struct wr *w)
{
	if (s->cls != KT__CLS_F64) {
		enc_int(s, v, w);
		return;
	}
	if (v == s->last) {
		w->rv++;
	} else {
		w->v = put_xor(put_varint(w->v, w->rv), v ^ s->last);
		w->rv = 0;
	}
	s->step = v - s->last;
	s->last = v;
}

/* A KT__CLS_PAIR record's two values into V: the first as an integer's,
 * the second a hit when it equals the slot's last second, else a literal
 * (zigzag of the difference). */
static void enc_pair(struct kt__cmp_slot *s, const uint8_t *payload, struct wr *w)
{
	uint64_t second = kt__get64(payload + 8);
	enc_value(s, kt__get64(payload), w);
	if (second == s->second) {
		w->rv++;
	} else {
		w->v = put_varint(put_varint(w->v, w->rv), kt__zigzag(second - s->second));
		w->rv = 0;
		s->second = second;
	}
}

/* A KT__CLS_BYTES record's length into L and its payload into P.  0, or
 * -1 when its padding is not zero. */
static int enc_bytes(struct kt__cmp_slot *s, const uint8_t *rec, uint16_t plen, struct wr *w)
{
	if (plen == s->plen) {
		w->rl++;
	} else {
		w->l = put_varint(put_varint(w->l, w->rl), plen);
		w->rl = 0;
		s->plen = plen;
	}
	for (size_t i = plen; i < kt__align8(plen); i++)
		if (rec[KT_REC_HEAD + i])
			return -1;
	memcpy(w->p, rec + KT_REC_HEAD, plen);
	w->p += plen;
	return 0;
}

/* The payload of a record of slot @s, @plen bytes, into V, or L and P.
 * The record's size, or -1 when it is not valid or runs past @room. */
static __attribute__((noinline)) long enc_payload(struct kt__cmp_slot *s, const uint8_t *rec,
						  uint16_t plen, size_t room, struct wr *w)
{
	size_t size = kt_event_size(plen);
	if (size > room)
		return -1;
	if (s->cls == KT__CLS_INT || s->cls == KT__CLS_F64)
		enc_value(s, kt__get64(rec + KT_REC_HEAD), w);
	else if (s->cls == KT__CLS_PAIR)
		enc_pair(s, rec + KT_REC_HEAD, w);
	else if (s->cls != KT__CLS_BYTES || enc_bytes(s, rec, plen, w))
		return -1;
	return (long)size;
}

/*
 * A record's header word, read once: kt__compact_encode_upto() walks ring
 * bytes a producer may be overwriting (a flight snapshot reads them in
 * place), and every bound the walk checks comes from this one word.  A
 * plain load would let the compiler read it again after the check; an
 * atomic one may not.  @p is 8-byte aligned.
 */
static inline uint64_t get64_once(const uint8_t *p)
{
	uint64_t v = kt__load_racy((const uint64_t *)(const void *)p);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static void enc_reset(kt__compact_enc *e)
{
	if (++e->gen == 0) {
		/* Once in 2^32 chunks: the tags could repeat, so clear them. */
		memset(e->hash, 0, sizeof(e->hash));
		e->gen = 1;
	}
	e->nkeys = 0;
	eslot_init(e, KT__CMP_OTHER, KT__CMP_NO_KEY, KT__CLS_BAD);
}

/*
 * T's varint of @d at @t, where @d is under 2^14 (two bytes at most):
 * both bytes written and @t moved past one or two, with no branch on
 * which.  A renderer's zone ends are one byte or two at random (shading
 * times of 60 to 220 ticks), and a branch on it missed every sixth
 * record.  The byte past a one-byte varint is in T's own room (cap[0]
 * holds KT__CMP_VARINT_MAX a record) and is written over next.
 */
static inline uint8_t *put_varint14(uint8_t *t, uint64_t d)
{
	uint64_t two = d >= 0x80;
	t[0] = (uint8_t)(d | two << 7);
	t[1] = (uint8_t)(d >> 7);
	return t + 1 + two;
}

/*
 * Walk the records into the streams; end[] receives where each ends.
 * The loop is the hot path of a flusher at tens of millions of records a
 * second: a record without payload whose key was predicted costs a
 * delta, a byte or two, a compare and a load, and the state it keeps
 * from one record to the next is in registers (the walk's position, its
 * one bound, T's end, the last timestamp, the slot, the run of hits;
 * stores through uint8_t pointers may alias anything, so whatever is
 * read through a pointer, as the limit in @u, is read once before).
 * With @upto (a constant: each caller gets its own copy of the loop, the
 * flusher's without the tests it adds) the walk also ends at the first
 * record that starts at or past @u->limit, and before the first whose
 * type and flags the format does not know, counting the records it
 * takes.  Returns 0 or -EINVAL.
 */
static inline __attribute__((always_inline)) int
enc_walk(kt__compact_enc *e, const uint8_t *ev, size_t raw_len, uint8_t *end[KT__CMP_STREAMS],
	 const int upto, kt__compact_run *u)
{
	struct eslot *ctx = &e->slots[KT__CMP_OTHER];
	struct wr w = { e->base[2], e->base[3], e->base[4], 0, 0 };
	uint8_t *t = e->base[0], *k = e->base[1];
	uint64_t prev = 0, rk = 0, taken = 0; /* taken: the records before the run */
	const uint8_t *rec = ev, *const bytes_end = ev + raw_len;
	/* One bound: the last start a record's head fits after, or the limit. */
	size_t stop_at = raw_len < KT_REC_HEAD ? 0 : raw_len - KT_REC_HEAD + 1;
	if (upto && u->limit < stop_at)
		stop_at = u->limit;
	const uint8_t *const stop = ev + stop_at;

	while (rec < stop) {
		if (upto)
			__builtin_prefetch(rec + PREFETCH);
		uint64_t ts = kt__get64(rec + KT_REC_TS);
		uint64_t meta = upto ? get64_once(rec + KT_REC_NAME) : kt__get64(rec + KT_REC_NAME);
		uint64_t d = ts - prev;
		uint8_t *t0 = t, *k0 = k;
		prev = ts;
		t = __builtin_expect(d < 0x4000, 1) ? put_varint14(t, d) : put_varint(t, d);
		struct eslot *s = ctx->next;
		if (__builtin_expect((meta & s->c.mask) == s->c.meta, 1)) {
			rk++;
		} else {
			s = enc_key_miss(e, &k, rk, ctx, meta);
			if (!s && upto && k == k0) {
				/* A key the format does not allow, refused
				 * before its token: the walk ends before it. */
				t = t0;
				prev = ts - d;
				break;
			}
			if (!s)
				return -EINVAL;
			taken += rk + 1;
			rk = 0;
		}
		ctx = s;
		if (s->c.cls == KT__CLS_NONE) {
			rec += KT_REC_HEAD;
			continue;
		}
		/* An integer's length is the slot's (its mask kept it). */
		if (s->c.cls == KT__CLS_INT && bytes_end - rec >= KT_REC_HEAD + 8) {
			enc_int(&s->c, kt__get64(rec + KT_REC_HEAD), &w);
			rec += KT_REC_HEAD + 8;
			continue;
		}
		long size = enc_payload(&s->c, rec, (uint16_t)(meta >> KT_REC_META_SHIFT(KT_REC_LEN)),
					(size_t)(bytes_end - rec), &w);
		if (size < 0)
			return -EINVAL;
		rec += size;
	}
	/* The hits after the last miss of each stream are not written: a
	 * stream that ends predicts the rest. */
	end[0] = t;
	end[1] = k;
	end[2] = w.v;
	end[3] = w.l;
	end[4] = w.p;
	size_t at = (size_t)(rec - ev), n = taken + rk;
	if (upto)
		*u = (kt__compact_run){ u->limit, at, (uint32_t)n, n ? kt__get64(ev + KT_REC_TS) : 0,
					prev };
	return upto || at == raw_len ? 0 : -EINVAL;
}

static int enc_streams(kt__compact_enc *e, const uint8_t *ev, size_t raw_len,
		       uint8_t *end[KT__CMP_STREAMS])
{
	return enc_walk(e, ev, raw_len, end, 0, NULL);
}

/* LZ4 on the streams that ask for it, kept where smaller: each stream's
 * bytes as stored into @src/@len, and the flag bits. */
static unsigned enc_lz4(kt__compact_enc *e, const uint8_t *src[KT__CMP_STREAMS],
			size_t len[KT__CMP_STREAMS])
{
	unsigned flags = 0;
	size_t zat = 0;
	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		if (!(e->lz4 & (1u << i)) || len[i] < LZ4_MIN)
			continue;
		if (e->skip[i]) {
			e->skip[i]--;
			continue;
		}
		int n = LZ4_compress_fast((const char *)src[i], (char *)e->zbuf + zat, (int)len[i],
					  (int)len[i] - 1, e->accel);
		/* P's bytes are the user's: always tried.  A stream under
		 * LZ4_JUDGE (a drain's short tail chunk) says too little of the
		 * thread's next chunks to turn LZ4 off for them. */
		if (i != 4 && len[i] >= LZ4_JUDGE && (n <= 0 || (size_t)n > len[i] - len[i] / 8))
			e->skip[i] = LZ4_SKIP;
		if (n <= 0)
			continue; /* it would not shrink */
		src[i] = e->zbuf + zat;
		len[i] = (size_t)n;
		zat += (size_t)n;
		flags |= 1u << i;
	}
	return flags;
}

/* Stored T, K, V and L plain again, when LZ4 made the payload expand past
 * kt__compact_ratio_ok(); P alone cannot (LZ4 expands 255 times at most,
 * and every record keeps a byte of T). */
static unsigned keep_ratio(kt__compact_enc *e, size_t raw_len, unsigned flags,
			   const uint8_t *src[KT__CMP_STREAMS], size_t len[KT__CMP_STREAMS],
			   const size_t plain[KT__CMP_STREAMS])
{
	size_t total = KT__CMP_STREAMS; /* the head is at least a byte per stream */
	for (int i = 0; i < KT__CMP_STREAMS; i++)
		total += len[i];
	if (kt__compact_ratio_ok(raw_len, total))
		return flags;
	for (int i = 0; i < KT__CMP_STREAMS - 1; i++) {
		src[i] = e->base[i];
		len[i] = plain[i];
	}
	return flags & KT__COMPACT_P;
}

/* The head (flags, stored lengths, decoded lengths of LZ4 streams) and the
 * streams into @out.  The length, or -ENOSPC over @cap. */
static long enc_write(unsigned flags, const uint8_t *src[KT__CMP_STREAMS],
		      const size_t len[KT__CMP_STREAMS], const size_t plain[KT__CMP_STREAMS],
		      uint8_t *out, size_t cap)
{
	uint8_t head[KT__CMP_HEAD_MAX], *h = head;
	*h++ = (uint8_t)flags;
	for (int i = 0; i < KT__CMP_STREAMS - 1; i++)
		h = put_varint(h, len[i]);
	for (int i = 0; i < KT__CMP_STREAMS; i++)
		if (flags & (1u << i))
			h = put_varint(h, plain[i]);
	size_t total = (size_t)(h - head);
	for (int i = 0; i < KT__CMP_STREAMS; i++)
		total += len[i];
	if (total > cap)
		return -ENOSPC;
	memcpy(out, head, (size_t)(h - head));
	out += h - head;
	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		memcpy(out, src[i], len[i]);
		out += len[i];
	}
	return (long)total;
}

/* The streams walked, ending at @end, for @raw_len bytes of records:
 * LZ4 where it pays, then head and streams into @out (at most @cap). */
static long enc_finish(kt__compact_enc *e, size_t raw_len, uint8_t *end[KT__CMP_STREAMS],
		       uint8_t *out, size_t cap)
{
	const uint8_t *src[KT__CMP_STREAMS];
	size_t len[KT__CMP_STREAMS], plain[KT__CMP_STREAMS], sum = 0;

	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		src[i] = e->base[i];
		len[i] = plain[i] = (size_t)(end[i] - e->base[i]);
		sum += len[i];
	}
	if (sum > raw_len)
		return -ENOSPC; /* a decoder holds at most raw_len of streams */
	unsigned flags = enc_lz4(e, src, len);
	if (flags & ~KT__COMPACT_P)
		flags = keep_ratio(e, raw_len, flags, src, len, plain);
	return enc_write(flags, src, len, plain, out, cap);
}

long kt__compact_encode(kt__compact_enc *e, const void *events, size_t raw_len, uint8_t *out,
			size_t cap)
{
	uint8_t *end[KT__CMP_STREAMS];

	if (raw_len == 0 || raw_len % 8 || raw_len > e->max_raw)
		return -EINVAL;
	enc_reset(e);
	if (enc_streams(e, events, raw_len, end))
		return -EINVAL;
	return enc_finish(e, raw_len, end, out, cap);
}

long kt__compact_encode_upto(kt__compact_enc *e, const void *events, size_t avail, size_t limit,
			     uint8_t *out, size_t cap, kt__compact_run *run)
{
	uint8_t *end[KT__CMP_STREAMS];

	*run = (kt__compact_run){ .limit = limit };
	size_t big = kt_event_size(UINT16_MAX); /* the largest record */
	if (limit == 0 || limit % 8 || avail % 8 || (uintptr_t)events % 8 || e->max_raw < big ||
	    limit > e->max_raw - big)
		return -EINVAL;
	enc_reset(e);
	if (enc_walk(e, events, avail, end, 1, run))
		return -EINVAL;
	if (!run->used)
		return 0;
	return enc_finish(e, run->used, end, out, cap < run->used ? cap : run->used);
}

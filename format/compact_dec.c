/*
 * The compact chunk codec's decoder (format/compact.h): bytes nothing
 * vouches for back into records.  It runs the encoder's predictors
 * (compact.c) over the records it rebuilds; every length it meets is
 * checked against the bytes that remain before it is used, and every
 * record it writes against the room left in raw_len.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include "format/compact_impl.h"
#include "format/format.h"

/* A run that lasts to the end of the chunk: its stream has ended. */
#define RUN_REST UINT64_MAX

struct kt__compact_dec {
	uint32_t nkeys;
	struct kt__cmp_slot slots[KT__COMPACT_KEYS + 1];
	uint8_t *buf;     /* the LZ4 streams, decoded */
	size_t cap;
};

int kt__compact_dec_new(kt__compact_dec **out)
{
	*out = kt__calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void kt__compact_dec_free(kt__compact_dec *d)
{
	if (!d)
		return;
	free(d->buf);
	free(d);
}

size_t kt__compact_dec_bytes(const kt__compact_dec *d)
{
	return d ? sizeof(*d) + d->cap : 0;
}

/* A stream being read: [p, end). */
struct in {
	const uint8_t *p, *end;
};

/*
 * A varint of at most 10 bytes whose value fits 64 bits, with no useless
 * trailing zero group (so a varint has one spelling).  0 or -1.
 */
static int get_varint_slow(struct in *s, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < KT__CMP_VARINT_MAX; i++) {
		if (s->p == s->end)
			return -1;
		uint8_t b = *s->p++;
		if (i == KT__CMP_VARINT_MAX - 1 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (b < 0x80) {
			if (b == 0 && i > 0)
				return -1;
			*v = x;
			return 0;
		}
	}
	return -1;
}

static inline int get_varint(struct in *s, uint64_t *v)
{
	if (s->p < s->end && *s->p < 0x80) {
		*v = *s->p++;
		return 0;
	}
	return get_varint_slow(s, v);
}

/* The T stream's slow path, returned in registers so the hot loop keeps
 * its position in one: the position after the varint, or NULL. */
struct vr {
	const uint8_t *p;
	uint64_t v;
};

static __attribute__((noinline)) struct vr varint_slow(const uint8_t *p, const uint8_t *end)
{
	struct in s = { p, end };
	struct vr r = { NULL, 0 };
	if (!get_varint_slow(&s, &r.v))
		r.p = s.p;
	return r;
}

/* Where the decoder reads; each run coder's hits left before its next
 * literal (RUN_REST once its stream has ended) and whether a literal is
 * still to come. */
struct rd {
	struct in t, k, v, l, p;
	uint64_t rk, rv, rl;
	unsigned lit5;     /* the pending K token's literal field */
	int pk, pv, pl;    /* a literal is pending in K, V, L */
};

/* The next K token: the run before the next miss, and its literal field
 * kept for the miss.  At K's end every record left is predicted. */
static int next_token(struct rd *r)
{
	if (r->k.p == r->k.end) {
		r->rk = RUN_REST;
		r->pk = 0;
		return 0;
	}
	uint8_t t = *r->k.p++;
	r->rk = t >> 5;
	r->lit5 = t & 31u;
	r->pk = 1;
	if (r->rk == KT__CMP_RUN_ESC) {
		uint64_t more;
		if (get_varint(&r->k, &more) || more > UINT32_MAX)
			return KT_EFRAME;
		r->rk += more;
	}
	return 0;
}

/* The run before V's or L's next literal; at the stream's end, the rest. */
static int next_run(struct in *s, uint64_t *run, int *pending)
{
	if (s->p == s->end) {
		*run = RUN_REST;
		*pending = 0;
		return 0;
	}
	*pending = 1;
	return get_varint(s, run) ? KT_EFRAME : 0;
}

/*
 * The record at a K miss: the pending token's literal (a dictionary
 * index, or the dictionary's size and the key spelled out), which slot
 * @ctx now predicts; then the next token.  The slot, or KT_EFRAME /
 * KT_EEVENT.
 */
static inline int dec_key_miss(kt__compact_dec *d, struct rd *r, unsigned ctx)
{
	uint64_t lit = r->lit5, more, name;
	int idx;
	if (!r->pk)
		return KT_EFRAME;
	if (lit == KT__CMP_LIT_ESC) {
		if (get_varint(&r->k, &more) || more > KT__COMPACT_KEYS)
			return KT_EFRAME;
		lit += more;
	}
	if (lit < d->nkeys) {
		idx = (int)lit;
	} else {
		if (lit > d->nkeys || r->k.end - r->k.p < 2)
			return KT_EFRAME;
		uint8_t type = r->k.p[0], flags = r->k.p[1];
		r->k.p += 2;
		if (get_varint(&r->k, &name) || name > UINT32_MAX)
			return KT_EFRAME;
		enum kt__cmp_cls c = kt__cmp_cls(type, flags);
		if (c == KT__CLS_BAD)
			return KT_EEVENT;
		uint64_t key = name | (uint64_t)type << KT_REC_META_SHIFT(KT_REC_TYPE) |
			       (uint64_t)flags << KT_REC_META_SHIFT(KT_REC_FLAGS);
		idx = d->nkeys == KT__COMPACT_KEYS ? (int)KT__CMP_OTHER : (int)d->nkeys++;
		kt__cmp_slot_init(&d->slots[idx], (uint16_t)idx, key, c);
	}
	d->slots[ctx].next = (uint16_t)idx;
	return next_token(r) ? KT_EFRAME : idx;
}

static int get_xor(struct in *s, uint64_t *x)
{
	if (s->p == s->end)
		return -1;
	unsigned lead = *s->p >> 4, trail = *s->p & 15u, n;
	s->p++;
	if (lead + trail > 7 || (size_t)(s->end - s->p) < (n = 8 - lead - trail))
		return -1;
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)s->p[i] << (8 * i);
	s->p += n;
	*x = v << (8 * trail);
	return 0;
}

/* The value of a KT__CLS_INT or KT__CLS_F64 record, or a pair's first.
 * 0 or KT_EFRAME. */
static int dec_value(struct kt__cmp_slot *s, struct rd *r, uint64_t *out)
{
	uint64_t v, lit;
	if (r->rv) {
		r->rv--; /* RUN_REST outlasts any chunk's 2^32 records */
		v = s->cls != KT__CLS_F64 ? s->last + s->step : s->last;
	} else if (s->cls != KT__CLS_F64) {
		if (get_varint(&r->v, &lit) || next_run(&r->v, &r->rv, &r->pv))
			return KT_EFRAME;
		v = s->last + s->step + kt__unzigzag(lit);
	} else {
		if (get_xor(&r->v, &lit) || next_run(&r->v, &r->rv, &r->pv))
			return KT_EFRAME;
		v = s->last ^ lit;
	}
	s->step = v - s->last;
	s->last = v;
	*out = v;
	return 0;
}

/* A KT__CLS_PAIR record's two values into @o: the first as
 * dec_value()'s, the second the slot's last unless V has a literal.  0 or
 * KT_EFRAME. */
static int dec_pair(struct kt__cmp_slot *s, struct rd *r, uint8_t *o)
{
	uint64_t v, lit;
	if (dec_value(s, r, &v))
		return KT_EFRAME;
	if (r->rv) {
		r->rv--;
	} else {
		if (get_varint(&r->v, &lit) || next_run(&r->v, &r->rv, &r->pv))
			return KT_EFRAME;
		s->second += kt__unzigzag(lit);
	}
	kt__put64(o, v);
	kt__put64(o + 8, s->second);
	return 0;
}

/* A KT__CLS_BYTES record's length from L.  0 or KT_EFRAME. */
static int dec_plen(struct kt__cmp_slot *s, struct rd *r)
{
	uint64_t n;
	if (r->rl) {
		r->rl--;
		return 0;
	}
	if (get_varint(&r->l, &n) || n > UINT16_MAX || next_run(&r->l, &r->rl, &r->pl))
		return KT_EFRAME;
	s->plen = (uint16_t)n;
	return 0;
}

/* A record with a payload at @o (with @room bytes left) from slot @s;
 * its size, or a negative code. */
static __attribute__((noinline)) long dec_payload(struct kt__cmp_slot *s, uint64_t ts,
						  struct rd *r, uint8_t *o, size_t room)
{
	uint64_t v;
	size_t plen = 8;
	if (s->cls == KT__CLS_BAD)
		return KT_EFRAME; /* the empty spill slot: unreachable (dec_start) */
	if (s->cls == KT__CLS_PAIR) {
		plen = 16;
		if (room < kt_event_size(16))
			return KT_ERAWLEN;
		if (dec_pair(s, r, o + KT_REC_HEAD))
			return KT_EFRAME;
	} else if (s->cls != KT__CLS_BYTES) {
		if (room < kt_event_size(8))
			return KT_ERAWLEN;
		if (dec_value(s, r, &v))
			return KT_EFRAME;
		kt__put64(o + KT_REC_HEAD, v);
	} else {
		if (dec_plen(s, r))
			return KT_EFRAME;
		plen = s->plen;
		if (room < kt_event_size(plen))
			return KT_ERAWLEN;
		if ((size_t)(r->p.end - r->p.p) < plen)
			return KT_EFRAME;
		memcpy(o + KT_REC_HEAD, r->p.p, plen);
		memset(o + KT_REC_HEAD + plen, 0, kt__align8(plen) - plen);
		r->p.p += plen;
	}
	kt__put64(o + KT_REC_TS, ts);
	kt__put64(o + KT_REC_NAME, s->meta | (uint64_t)plen << KT_REC_META_SHIFT(KT_REC_LEN));
	return (long)kt_event_size(plen);
}

/* The LZ4 stream @st (@slen bytes) into the decoder's buffer at @at,
 * exactly @dlen bytes, and @st then reads from there.  0 or KT_EFRAME. */
static int unlz4(kt__compact_dec *d, struct in *st, size_t at, uint64_t slen, uint64_t dlen)
{
	if (slen == 0 || dlen == 0)
		return KT_EFRAME;
	int n = LZ4_decompress_safe((const char *)st->p, (char *)d->buf + at, (int)slen, (int)dlen);
	if (n != (int)dlen)
		return KT_EFRAME;
	*st = (struct in){ d->buf + at, d->buf + at + dlen };
	return 0;
}

/* Room for @need bytes of decoded streams (at most raw_len, which the
 * caller has bounded).  0 or -ENOMEM. */
static int dec_room(kt__compact_dec *d, size_t need)
{
	if (need <= d->cap)
		return 0;
	uint8_t *b = kt__realloc(d->buf, need);
	if (!b)
		return -ENOMEM;
	d->buf = b;
	d->cap = need;
	return 0;
}

/*
 * The payload's head: the flags, the stored length of T, K, V and L (P is
 * the rest), then the decoded length of each LZ4 stream.  Splits the
 * payload into its streams, decompressing those that are LZ4.
 */
static int dec_split(kt__compact_dec *d, const uint8_t *in, size_t len, size_t raw_len,
		     struct rd *r)
{
	struct in *st[KT__CMP_STREAMS] = { &r->t, &r->k, &r->v, &r->l, &r->p };
	uint64_t slen[KT__CMP_STREAMS], dlen[KT__CMP_STREAMS], total = 0, lz = 0;
	if (len == 0)
		return KT_EFRAME; /* before any pointer arithmetic: @in may be NULL */
	struct in h = { in, in + len };
	unsigned flags = *h.p++;
	if (flags & ~KT__COMPACT_ALL)
		return KT_ERESERVED;
	for (int i = 0; i < KT__CMP_STREAMS - 1; i++)
		if (get_varint(&h, &slen[i]))
			return KT_EFRAME;
	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		if (!(flags & (1u << i)))
			continue;
		if (get_varint(&h, &dlen[i]))
			return KT_EFRAME;
		if (dlen[i] > raw_len)
			return KT_ERAWLEN;
	}
	slen[KT__CMP_STREAMS - 1] = 0;
	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		size_t left = (size_t)(h.end - h.p);
		if (i == KT__CMP_STREAMS - 1)
			slen[i] = left;
		if (slen[i] > left || slen[i] > INT32_MAX)
			return KT_EFRAME;
		*st[i] = (struct in){ h.p, h.p + slen[i] };
		h.p += slen[i];
		if (!(flags & (1u << i)))
			dlen[i] = slen[i];
		else
			lz += dlen[i];
		total += dlen[i];
	}
	if (total > raw_len)
		return KT_ERAWLEN;
	if (dec_room(d, (size_t)lz))
		return -ENOMEM;
	size_t at = 0;
	for (int i = 0; i < KT__CMP_STREAMS; i++) {
		if (!(flags & (1u << i)))
			continue;
		if (unlz4(d, st[i], at, slen[i], dlen[i]))
			return KT_EFRAME;
		at += (size_t)dlen[i];
	}
	return 0;
}

static void dec_reset(kt__compact_dec *d)
{
	d->nkeys = 0;
	kt__cmp_slot_init(&d->slots[KT__CMP_OTHER], KT__CMP_OTHER, KT__CMP_NO_KEY, KT__CLS_BAD);
}

/* The runs' first values.  The first record has nothing to be predicted
 * from (the spill slot is empty), so K's first run must be 0; after it
 * every prediction names a defined slot. */
static int dec_start(struct rd *r)
{
	if (r->k.p == r->k.end || next_token(r) || r->rk)
		return KT_EFRAME;
	if (next_run(&r->v, &r->rv, &r->pv) || next_run(&r->l, &r->rl, &r->pl))
		return KT_EFRAME;
	return 0;
}

/* Every stream read to its end and no literal left pending. */
static int dec_done(const struct rd *r)
{
	if (r->t.p != r->t.end || r->k.p != r->k.end || r->v.p != r->v.end ||
	    r->l.p != r->l.end || r->p.p != r->p.end)
		return KT_EFRAME;
	return r->pk || r->pv || r->pl ? KT_EFRAME : 0;
}

/*
 * The hot path mirrors the encoder's: a record without payload whose key
 * was predicted costs a byte, an add and two stores.
 */
int kt__compact_decode(kt__compact_dec *d, const uint8_t *in, size_t len, uint8_t *out,
		       size_t raw_len, uint32_t count)
{
	struct kt__cmp_slot *slots = d->slots, *ctx = &slots[KT__CMP_OTHER];
	struct rd r;
	uint64_t ts = 0, dt;
	size_t at = 0;
	int rc;

	if (count == 0)
		return KT_ECOUNT;
	if (raw_len > KT_MAX_RAW || !kt__compact_ratio_ok(raw_len, len))
		return KT_ERAWLEN;
	if ((rc = dec_split(d, in, len, raw_len, &r)) || (rc = dec_start(&r)))
		return rc;
	dec_reset(d);
	const uint8_t *tp = r.t.p, *tend = r.t.end;
	uint64_t rk = r.rk;
	for (uint32_t i = 0; i < count; i++) {
		if (tp < tend && *tp < 0x80) {
			dt = *tp++;
		} else {
			struct vr x = varint_slow(tp, tend);
			if (!x.p)
				return KT_EFRAME;
			tp = x.p;
			dt = x.v;
		}
		ts += dt;
		struct kt__cmp_slot *s;
		if (__builtin_expect(rk != 0, 1)) {
			rk--; /* RUN_REST outlasts any chunk */
			s = &slots[ctx->next];
		} else {
			int idx = dec_key_miss(d, &r, (unsigned)(ctx - slots));
			if (idx < 0)
				return idx;
			rk = r.rk;
			s = &slots[idx];
		}
		ctx = s;
		if (s->cls == KT__CLS_NONE) {
			if (raw_len - at < KT_REC_HEAD)
				return KT_ERAWLEN;
			kt__put64(out + at + KT_REC_TS, ts);
			kt__put64(out + at + KT_REC_NAME, s->meta);
			at += KT_REC_HEAD;
			continue;
		}
		long size = dec_payload(s, ts, &r, out + at, raw_len - at);
		if (size < 0)
			return (int)size;
		at += (size_t)size;
	}
	r.t.p = tp;
	return at != raw_len ? KT_ERAWLEN : dec_done(&r);
}

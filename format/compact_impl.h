/*
 * format/compact_impl.h - what the compact codec's encoder (compact.c) and
 * decoder (compact_dec.c) share: the dictionary slot, the predictors'
 * state and the payload layout's constants.  Nothing else includes it.
 */
#ifndef KATRA_FORMAT_COMPACT_IMPL_H
#define KATRA_FORMAT_COMPACT_IMPL_H

#include <stdint.h>

#include <katra/trace.h>
#include "format/compact.h"

#define KT__CMP_OTHER KT__COMPACT_KEYS          /* the spill slot */
#define KT__CMP_NO_KEY UINT64_MAX               /* the empty spill slot's meta */
/* A record's key: name, type and flags of its bytes 8-15, not the length. */
#define KT__CMP_KEY_BITS ((UINT64_C(1) << KT_REC_META_SHIFT(KT_REC_LEN)) - 1)
#define KT__CMP_VARINT_MAX 10
#define KT__CMP_STREAMS 5                       /* T K V L P */
#define KT__CMP_HEAD_MAX (1 + 9 * KT__CMP_VARINT_MAX)

/* A K token: the run of predicted records before a miss in its top 3 bits
 * (7: 7 plus a varint), the miss's literal in its low 5 (31: 31 plus a
 * varint). */
#define KT__CMP_RUN_ESC 7u
#define KT__CMP_LIT_ESC 31u

/* KT__CLS_PAIR: an integer as KT__CLS_INT's, then a second one predicted
 * equal to the slot's last second (an allocation's pointer and size). */
enum kt__cmp_cls { KT__CLS_NONE, KT__CLS_INT, KT__CLS_F64, KT__CLS_BYTES, KT__CLS_PAIR, KT__CLS_BAD };

/* The class of a payload: 8-byte integers share their predictor. */
static inline enum kt__cmp_cls kt__cmp_cls_of(kt_payload payload)
{
	switch (payload) {
	case KT_PAYLOAD_NONE:
		return KT__CLS_NONE;
	case KT_PAYLOAD_I64:
	case KT_PAYLOAD_U64:
		return KT__CLS_INT;
	case KT_PAYLOAD_F64:
		return KT__CLS_F64;
	case KT_PAYLOAD_BYTES:
		return KT__CLS_BYTES;
	case KT_PAYLOAD_U64X2:
		return KT__CLS_PAIR;
	}
	return KT__CLS_BAD;
}

/* What payload a (type, flags) pair carries, or KT__CLS_BAD where
 * katra/record.h's table does not allow the pair. */
static inline enum kt__cmp_cls kt__cmp_cls(uint8_t type, uint8_t flags)
{
	switch (type) {
#define KT__CMP_CLS(code, name, text, payload, max_flags, value) \
	case code:                                          \
		return kt__flags_fit(flags, max_flags) ? kt__cmp_cls_of(payload) : KT__CLS_BAD;
		KT_EVENT_TYPES(KT__CMP_CLS)
#undef KT__CMP_CLS
	default:
		return KT__CLS_BAD;
	}
}

/*
 * One dictionary slot: a key and what is predicted from it.  A record's
 * bytes 8-15 (name, type, flags, payload length: katra/record.h's meta
 * word) match the slot when,
 * masked, they equal @meta: for a fixed-size type the mask keeps the
 * length, so one compare checks it too.
 */
struct kt__cmp_slot {
	uint64_t meta;    /* name | type << 32 | flags << 40 | fixed length << 48 */
	uint64_t mask;    /* all ones, or KT__CMP_KEY_BITS for a variable length */
	uint64_t last;    /* the last 8-byte value under this key */
	uint64_t step;    /* last minus the value before it */
	uint64_t second;  /* KT__CLS_PAIR: the last second value */
	uint16_t next;    /* the slot predicted to follow this one */
	uint16_t plen;    /* the last payload length under this key */
	uint8_t cls;
};

/* A slot as a new key starts it: predicting itself, values and lengths 0. */
static inline void kt__cmp_slot_init(struct kt__cmp_slot *s, uint16_t self, uint64_t key,
				     enum kt__cmp_cls c)
{
	uint64_t fixed = c == KT__CLS_PAIR ? 16 : c == KT__CLS_INT || c == KT__CLS_F64 ? 8 : 0;
	s->meta = key | fixed << KT_REC_META_SHIFT(KT_REC_LEN);
	s->mask = c == KT__CLS_BYTES ? KT__CMP_KEY_BITS : UINT64_MAX;
	s->last = 0;
	s->step = 0;
	s->second = 0;
	s->next = self;
	s->plen = 0;
	s->cls = (uint8_t)c;
}

static inline uint64_t kt__zigzag(uint64_t v)
{
	return (v << 1) ^ (uint64_t)-(int64_t)(v >> 63);
}

static inline uint64_t kt__unzigzag(uint64_t z)
{
	return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
}

#endif /* KATRA_FORMAT_COMPACT_IMPL_H */

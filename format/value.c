/*
 * An event's value: its payload's bytes read as its type's row of
 * KT_EVENT_TYPES (katra/record.h) says.  The one reader of a payload's
 * numbers in the tree: every tool shows what this hands it
 * (scripts/check-layering.sh fails on a payload read anywhere else).
 */
#include <string.h>

#include <katra/reader.h>
#include "format/format.h"

/* Each row's value kind is stored as its payload column says: a table
 * edited wrong fails to compile, not to read. */
#define KT__VALUE_FITS(code, name, text, payload, max_flags, value)                 \
	_Static_assert(KT__VALUE_PAYLOAD(value) == (payload),                          \
		       "KT_EVENT_TYPES: " text "'s value kind is not its payload");
KT_EVENT_TYPES(KT__VALUE_FITS)
#undef KT__VALUE_FITS

/* The kind of @type's values, or -1 for a type no row names. */
static int kind_of(uint8_t type)
{
	switch (type) {
#define KT__VALUE_KIND(code, name, text, payload, max_flags, value) \
	case code:                                                    \
		return value;
		KT_EVENT_TYPES(KT__VALUE_KIND)
#undef KT__VALUE_KIND
	default:
		return -1;
	}
}

/* Fill @out's fields of @kind from @p, a payload of the kind's size. */
static void fill(kt_value *out, kt_value_kind kind, const kt_event *ev, const uint8_t *p)
{
	uint64_t first = kind == KT_VALUE_NONE || kind == KT_VALUE_TEXT || kind == KT_VALUE_BYTES
				 ? 0
				 : kt__get64(p);
	uint64_t second = KT__VALUE_PAYLOAD(kind) == KT_PAYLOAD_U64X2 ? kt__get64(p + 8) : 0;
	out->kind = kind;
	switch (kind) {
	case KT_VALUE_I64:
		out->i64 = (int64_t)first;
		out->bits = first;
		break;
	case KT_VALUE_F64:
		memcpy(&out->f64, &first, 8);
		out->bits = first;
		break;
	case KT_VALUE_U64:
	case KT_VALUE_FRAME:
	case KT_VALUE_FLOW:
		out->u64 = out->bits = first;
		break;
	case KT_VALUE_ALLOC:
		out->size = second;
		/* fall through */
	case KT_VALUE_FREE:
		out->ptr = first;
		break;
	case KT_VALUE_TRACK_I64:
		out->i64 = (int64_t)second;
		out->bits = second;
		/* fall through */
	case KT_VALUE_TRACK:
		out->track = ev->flags;
		out->track_ts = first;
		break;
	case KT_VALUE_TRACK_F64:
		memcpy(&out->f64, &second, 8);
		out->bits = second;
		out->track = ev->flags;
		out->track_ts = first;
		break;
	case KT_VALUE_SCHED:
		/* Ids and CPUs past 32 bits are no thread's or CPU's: 0. */
		out->thread = first <= UINT32_MAX ? (uint32_t)first : 0;
		out->u64 = second;
		out->cpu = ev->flags != KT_SCHED_LOST && second <= UINT32_MAX ? (uint32_t)second : 0;
		break;
	case KT_VALUE_SAMPLE:
		out->thread = first <= UINT32_MAX ? (uint32_t)first : 0;
		out->u64 = second;
		break;
	case KT_VALUE_TEXT:
	case KT_VALUE_BYTES:
	case KT_VALUE_NONE:
		break;
	}
}

int kt_event_get_value(const kt_event *ev, kt_value *out)
{
	memset(out, 0, sizeof(*out));
	out->bytes = ev->payload;
	out->len = ev->payload_len;
	int kind = kind_of(ev->type);
	if (kind < 0)
		return 0;
	kt_payload payload = KT__VALUE_PAYLOAD(kind);
	/* A fixed-size payload is read only when all of it is there. */
	if (!kt__payload_fits(payload, ev->payload_len) || (ev->payload_len && !ev->payload))
		return 0;
	fill(out, (kt_value_kind)kind, ev, ev->payload);
	return 1;
}

/* The two numbers @v's kind stores, as fill() reads them back. */
static void unfill(const kt_value *v, uint64_t *first, uint64_t *second)
{
	*first = *second = 0;
	switch (v->kind) {
	case KT_VALUE_I64:
	case KT_VALUE_F64:
	case KT_VALUE_U64:
	case KT_VALUE_FRAME:
	case KT_VALUE_FLOW:
		*first = v->bits;
		break;
	case KT_VALUE_ALLOC:
	case KT_VALUE_FREE:
		*first = v->ptr;
		*second = v->size;
		break;
	case KT_VALUE_TRACK:
	case KT_VALUE_TRACK_I64:
	case KT_VALUE_TRACK_F64:
		*first = v->track_ts;
		*second = v->bits;
		break;
	case KT_VALUE_SCHED:
	case KT_VALUE_SAMPLE:
		*first = v->thread;
		*second = v->u64;
		break;
	case KT_VALUE_TEXT:
	case KT_VALUE_BYTES:
	case KT_VALUE_NONE:
		break;
	}
}

int kt_event_set_value(kt_event *ev, const kt_value *v, uint8_t buf[16])
{
	int kind = kind_of(ev->type);
	if (kind < 0 || (kt_value_kind)kind != v->kind)
		return 0;
	kt_payload payload = KT__VALUE_PAYLOAD(kind);
	size_t len = payload == KT_PAYLOAD_U64X2 ? 16
		     : payload == KT_PAYLOAD_NONE || payload == KT_PAYLOAD_BYTES ? 0
										 : 8;
	if (!len)
		return 0;
	uint64_t first, second;
	unfill(v, &first, &second);
	kt__put64(buf, first);
	if (len == 16)
		kt__put64(buf + 8, second);
	ev->payload = buf;
	ev->payload_len = (uint16_t)len;
	return 1;
}

int kt_event_get_track(const kt_event *ev, kt_track_event *out)
{
	kt_value v;
	if (ev->type < KT_EV_TRACK_BEGIN || ev->type > KT_EV_TRACK_COUNTER_F64 ||
	    !kt_event_get_value(ev, &v))
		return 0;
	memset(out, 0, sizeof(*out));
	out->track = v.track;
	out->track_ts = v.track_ts;
	/* Both views of a counter's one value, as the struct promises. */
	out->value_i64 = (int64_t)v.bits;
	memcpy(&out->value_f64, &v.bits, 8);
	return 1;
}

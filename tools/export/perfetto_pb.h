/*
 * perfetto_pb.h - the hand encoder of Perfetto's per-event packets: a
 * message of a few fields in a stack buffer (tools/export/export_perfetto.c and
 * tools/export/perfetto_slice.c).  protobuf-c's packer walks every field's
 * descriptor for each message, which at tens of millions of events was
 * most of the export's time; the rare packets go through it still.
 *
 * Callers keep within the buffer: each message's fields are few and short.
 */
#ifndef KT_TOOLS_PERFETTO_PB_H
#define KT_TOOLS_PERFETTO_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <katra/reader.h>

/* A message being encoded.  Callers set .n = 0 rather than zero-initialize
 * it: zeroing the buffer for every event was a fifth of the writer's time. */
struct pb {
	uint8_t b[192];
	size_t n;
};

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline void pb_varint(struct pb *m, unsigned field, uint64_t v)
{
	uint8_t *p = put_varint(m->b + m->n, (uint64_t)field << 3);
	m->n = (size_t)(put_varint(p, v) - m->b);
}

static inline void pb_fixed64(struct pb *m, unsigned field, uint64_t v)
{
	uint8_t *p = put_varint(m->b + m->n, (uint64_t)field << 3 | 1);
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	m->n = (size_t)(p - m->b);
}

/* A length-delimited field; @n must fit (callers keep their strings short). */
static inline void pb_bytes(struct pb *m, unsigned field, const void *s, size_t n)
{
	uint8_t *p = put_varint(m->b + m->n, (uint64_t)field << 3 | 2);
	p = put_varint(p, n);
	memcpy(p, s, n);
	m->n = (size_t)(p + n - m->b);
}

/* A debug annotation {name_iid, uint or bool value} inside a TrackEvent. */
static inline void pb_annotation(struct pb *m, unsigned name_iid, unsigned value_field,
				 uint64_t v)
{
	struct pb a;
	a.n = 0;
	pb_varint(&a, 1, name_iid);
	pb_varint(&a, value_field, v);
	pb_bytes(m, 4, a.b, a.n);
}

/* A counter's value in a TrackEvent: an int64 as a varint (two's
 * complement), a double as its fixed64 bits. */
static inline void pb_counter_value(struct pb *m, const kt_value *v)
{
	if (v->kind == KT_VALUE_I64)
		pb_varint(m, 30, v->bits);
	else
		pb_fixed64(m, 44, v->bits);
}

#endif

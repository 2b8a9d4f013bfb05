/*
 * katra/record.h - the event record: its bytes and its types.
 *
 * A record is what one emit writes into a thread's ring and what a chunk's
 * decoded payload holds, back to back (format/SPEC.md §4.2, the normative
 * text; this header is its one copy in code):
 *
 *     offset  size  field
 *      0       8    ts, ticks                  KT_REC_TS
 *      8       4    name_id (0 = none)         KT_REC_NAME
 *     12       1    type (the table below)     KT_REC_TYPE
 *     13       1    flags                      KT_REC_FLAGS
 *     14       2    payload_len P              KT_REC_LEN
 *     16       P    payload                    KT_REC_HEAD
 *     16+P          zero pad to a multiple of 8
 *
 * Every integer is little-endian.  The producer stores bytes 8-15 as one
 * 64-bit word, name_id | type << 32 | flags << 40 | P << 48, each shift
 * KT_REC_META_SHIFT() of its field.
 *
 * Everything that knows a type's rules - the enum, the names, the check a
 * producer makes before a record enters its ring and the one a reader makes
 * on a record from a file - is generated from KT_EVENT_TYPES below, so the
 * two sides accept exactly the same records.
 *
 * Threads: only constants and pure functions here; any thread.
 */
#ifndef KATRA_RECORD_H
#define KATRA_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offsets of a record's fields. */
#define KT_REC_TS 0
#define KT_REC_NAME 8
#define KT_REC_TYPE 12
#define KT_REC_FLAGS 13
#define KT_REC_LEN 14
#define KT_REC_HEAD 16          /* the fixed part; the payload starts here */
#define KT_REC_MAX_PAYLOAD 65535u

/* Bytes 8-15 read as one little-endian word: where @field sits in it. */
#define KT_REC_META_SHIFT(field) (8 * ((field) - KT_REC_NAME))

/** kt_event_size - bytes one record with @payload_len bytes of payload
 * takes: the head, the payload and the pad that keeps the next record
 * 8-byte aligned. */
static inline size_t kt_event_size(size_t payload_len)
{
	return KT_REC_HEAD + ((payload_len + 7) & ~(size_t)7);
}

/** What a record's payload holds (SPEC §4.2's payload column). */
typedef enum kt_payload {
	KT_PAYLOAD_NONE = 0,  /* P = 0 */
	KT_PAYLOAD_I64 = 1,   /* P = 8: a two's-complement value */
	KT_PAYLOAD_F64 = 2,   /* P = 8: an IEEE-754 binary64 */
	KT_PAYLOAD_U64 = 3,   /* P = 8: an unsigned number */
	KT_PAYLOAD_BYTES = 4, /* P = 0..65535: bytes */
	KT_PAYLOAD_U64X2 = 5, /* P = 16: two unsigned numbers */
} kt_payload;

/** Flow phases, carried in the flags of a KT_EV_FLOW record. */
typedef enum kt_flow_phase {
	KT_FLOW_BEGIN = 0,
	KT_FLOW_STEP = 1,
	KT_FLOW_END = 2,
} kt_flow_phase;

/** Message severities, carried in the flags of a KT_EV_MESSAGE record. */
typedef enum kt_severity {
	KT_SEV_NONE = 0,  /* kt_message(): no severity given */
	KT_SEV_TRACE = 1,
	KT_SEV_DEBUG = 2,
	KT_SEV_INFO = 3,
	KT_SEV_WARN = 4,
	KT_SEV_ERROR = 5,
	KT_SEV_FATAL = 6,
} kt_severity;

/** What a KT_EV_FRAME record marks, in its flags: the end of a frame of
 * a continuous loop, or the start or end of a discontinuous (named)
 * frame. */
typedef enum kt_frame_phase {
	KT_FRAME_PHASE_MARK = 0,
	KT_FRAME_PHASE_BEGIN = 1,
	KT_FRAME_PHASE_END = 2,
} kt_frame_phase;

/*
 * What a KT_EV_SCHED record (type 20, SPEC §4.2) says of the thread its
 * payload names, in its flags.  The records are the kernel's context
 * switches of that thread (flush/sched.c), written by the flusher into a
 * stream of their own (a katra thread id of its own, named "katra.sched TID"),
 * in time order.  The payload is the followed thread's katra id, then the
 * CPU (or, for KT_SCHED_LOST, how many switches the kernel lost).
 */
typedef enum kt_sched_what {
	KT_SCHED_FOLLOW = 0,    /* followed from here on: before it, no data */
	KT_SCHED_BLOCKED = 1,   /* switched out waiting (sleep, lock, I/O) */
	KT_SCHED_PREEMPTED = 2, /* switched out while runnable */
	KT_SCHED_IN = 3,        /* switched in */
	KT_SCHED_LOST = 4,      /* the kernel's buffer overflowed: states
				 * unknown from here to the next record */
} kt_sched_what;

/*
 * Track records (types 16-19, katra/track.h) carry their track's id
 * (1..KT_MAX_TRACKS) in the flags byte: a track is one key of the compact
 * codec per zone name, so its timestamps are predicted apart from other
 * tracks'.  Their payload starts with the track's own timestamp; a
 * counter's value follows it.
 */

/* The flag rules of the table: the highest flags value a type allows. */
#define KT_REC_FLAGS_ZERO 0u     /* flags must be 0 */
#define KT_REC_FLAGS_ANY 0xffu   /* free for the user */

/** What a record's payload means, as kt_event_get_value() (katra/reader.h)
 * hands it over: the table's last column.  Each kind has one payload
 * (KT__VALUE_PAYLOAD below); a reader shows a kind, not a type, so a
 * new type of a known kind is shown without a change to any reader. */
typedef enum kt_value_kind {
	KT_VALUE_NONE = 0,      /* no value (or a payload a pass did not copy) */
	KT_VALUE_I64 = 1,       /* .i64: a signed number */
	KT_VALUE_U64 = 2,       /* .u64: an unsigned number */
	KT_VALUE_F64 = 3,       /* .f64: a double */
	KT_VALUE_FRAME = 4,     /* .u64: a frame's number */
	KT_VALUE_FLOW = 5,      /* .u64: a flow's id */
	KT_VALUE_TEXT = 6,      /* .bytes, .len: text, as the user gave it */
	KT_VALUE_BYTES = 7,     /* .bytes, .len: opaque bytes */
	KT_VALUE_ALLOC = 8,     /* .ptr, .size: an allocation */
	KT_VALUE_FREE = 9,      /* .ptr: a free */
	KT_VALUE_TRACK = 10,    /* .track, .track_ts: a time on a track */
	KT_VALUE_TRACK_I64 = 11, /* .track, .track_ts, .i64: a track's counter */
	KT_VALUE_TRACK_F64 = 12, /* .track, .track_ts, .f64: a track's counter */
	KT_VALUE_SCHED = 13,    /* .thread, .cpu (.u64 for KT_SCHED_LOST: how
				 * many): a thread's scheduling */
	KT_VALUE_SAMPLE = 14,   /* .thread, .u64 (the stack entry's id): a
				 * sampled call chain of a thread */
} kt_value_kind;

/* The payload a value kind is stored as: a constant expression, so the
 * table's two columns are checked against each other at compile time
 * (format/value.c). */
#define KT__VALUE_PAYLOAD(kind)                                                          \
	((kind) == KT_VALUE_NONE                                        ? KT_PAYLOAD_NONE  \
	 : (kind) == KT_VALUE_I64                                       ? KT_PAYLOAD_I64   \
	 : (kind) == KT_VALUE_F64                                       ? KT_PAYLOAD_F64   \
	 : (kind) == KT_VALUE_TEXT || (kind) == KT_VALUE_BYTES          ? KT_PAYLOAD_BYTES \
	 : (kind) == KT_VALUE_ALLOC || (kind) == KT_VALUE_TRACK_I64 ||                      \
			   (kind) == KT_VALUE_TRACK_F64 || (kind) == KT_VALUE_SCHED || \
			   (kind) == KT_VALUE_SAMPLE \
		 ? KT_PAYLOAD_U64X2                                                        \
		 : KT_PAYLOAD_U64)

/*
 * The one list of event types: X(code, enum name, display name, payload,
 * highest flags, value kind).  Append only: the codes are in every trace
 * file.  A new type is one row here; kt_event_get_value() and every tool
 * that shows values by kind (dump, stats, the exports) take it from here,
 * and only what a tool shows by type (a Chrome phase, a viewer's record)
 * needs a line more (ARCHITECTURE.md, "Adding an event type").
 */
#define KT_EVENT_TYPES(X)                                                                                   \
	X(1, KT_EV_ZONE_BEGIN,  "zone_begin",  KT_PAYLOAD_NONE,  KT_REC_FLAGS_ZERO,  KT_VALUE_NONE)         \
	X(2, KT_EV_ZONE_END,    "zone_end",    KT_PAYLOAD_NONE,  KT_REC_FLAGS_ZERO,  KT_VALUE_NONE)         \
	X(3, KT_EV_INSTANT,     "instant",     KT_PAYLOAD_NONE,  KT_REC_FLAGS_ZERO,  KT_VALUE_NONE)         \
	X(4, KT_EV_COUNTER_I64, "counter_i64", KT_PAYLOAD_I64,   KT_REC_FLAGS_ZERO,  KT_VALUE_I64)          \
	X(5, KT_EV_COUNTER_F64, "counter_f64", KT_PAYLOAD_F64,   KT_REC_FLAGS_ZERO,  KT_VALUE_F64)          \
	X(6, KT_EV_FRAME,       "frame",       KT_PAYLOAD_U64,   KT_FRAME_PHASE_END, KT_VALUE_FRAME)        \
	X(7, KT_EV_FLOW,        "flow",        KT_PAYLOAD_U64,   KT_FLOW_END,        KT_VALUE_FLOW)         \
	X(8, KT_EV_MESSAGE,     "message",     KT_PAYLOAD_BYTES, KT_SEV_FATAL,       KT_VALUE_TEXT)         \
	X(9, KT_EV_USER,        "user",        KT_PAYLOAD_BYTES, KT_REC_FLAGS_ANY,   KT_VALUE_BYTES)        \
	X(10, KT_EV_ARG_I64,    "arg_i64",     KT_PAYLOAD_I64,   KT_REC_FLAGS_ZERO,  KT_VALUE_I64)          \
	X(11, KT_EV_ARG_U64,    "arg_u64",     KT_PAYLOAD_U64,   KT_REC_FLAGS_ZERO,  KT_VALUE_U64)          \
	X(12, KT_EV_ARG_F64,    "arg_f64",     KT_PAYLOAD_F64,   KT_REC_FLAGS_ZERO,  KT_VALUE_F64)          \
	X(13, KT_EV_ARG_STR,    "arg_str",     KT_PAYLOAD_BYTES, KT_REC_FLAGS_ZERO,  KT_VALUE_TEXT)         \
	X(14, KT_EV_ALLOC,      "alloc",       KT_PAYLOAD_U64X2, KT_REC_FLAGS_ZERO,  KT_VALUE_ALLOC)        \
	X(15, KT_EV_FREE,       "free",        KT_PAYLOAD_U64,   KT_REC_FLAGS_ZERO,  KT_VALUE_FREE)         \
	X(16, KT_EV_TRACK_BEGIN, "track_begin", KT_PAYLOAD_U64,  KT_REC_FLAGS_ANY,   KT_VALUE_TRACK)        \
	X(17, KT_EV_TRACK_END,  "track_end",   KT_PAYLOAD_U64,   KT_REC_FLAGS_ANY,   KT_VALUE_TRACK)        \
	X(18, KT_EV_TRACK_COUNTER_I64, "track_counter_i64", KT_PAYLOAD_U64X2, KT_REC_FLAGS_ANY, KT_VALUE_TRACK_I64) \
	X(19, KT_EV_TRACK_COUNTER_F64, "track_counter_f64", KT_PAYLOAD_U64X2, KT_REC_FLAGS_ANY, KT_VALUE_TRACK_F64) \
	X(20, KT_EV_SCHED,      "sched",       KT_PAYLOAD_U64X2, KT_SCHED_LOST,      KT_VALUE_SCHED)        \
	X(21, KT_EV_SAMPLE,     "sample",      KT_PAYLOAD_U64X2, KT_REC_FLAGS_ZERO,  KT_VALUE_SAMPLE)

/** Event record types (SPEC §4.2). */
typedef enum kt_event_type {
#define KT__EV_ENUM(code, name, text, payload, max_flags, value) name = code,
	KT_EVENT_TYPES(KT__EV_ENUM)
#undef KT__EV_ENUM
} kt_event_type;

/* The payload length of a fixed-size @payload (0 for KT_PAYLOAD_BYTES,
 * whose length varies). */
static inline size_t kt__payload_len(kt_payload payload)
{
	return payload == KT_PAYLOAD_U64X2 ? 16u
	       : payload == KT_PAYLOAD_NONE || payload == KT_PAYLOAD_BYTES ? 0u : 8u;
}

/* Whether a payload of @len bytes is what @payload holds.  The 65535-byte
 * bound of variable payloads is the length field's; whoever fills one
 * checks it. */
static inline int kt__payload_fits(kt_payload payload, size_t len)
{
	return payload == KT_PAYLOAD_BYTES || len == kt__payload_len(payload);
}

/* A function, not an expression in the table's expansion, so a rule of
 * KT_REC_FLAGS_ANY is no "always true" comparison of a uint8_t. */
static inline int kt__flags_fit(unsigned flags, unsigned max_flags)
{
	return flags <= max_flags;
}

/*
 * kt__record_ok - whether a record of @type with @flags and @len bytes of
 * payload is one SPEC §4.2 allows.  The producer checks it before a
 * record enters its ring (the reader refuses a whole chunk over one bad
 * record); the reader checks every record of a file with it.
 */
static inline int kt__record_ok(uint8_t type, uint8_t flags, size_t len)
{
	switch (type) {
#define KT__EV_OK(code, name, text, payload, max_flags, value) \
	case code:                                        \
		return kt__payload_fits(payload, len) && kt__flags_fit(flags, max_flags);
		KT_EVENT_TYPES(KT__EV_OK)
#undef KT__EV_OK
	default:
		return 0;
	}
}

#ifdef __cplusplus
}
#endif
#endif /* KATRA_RECORD_H */

/*
 * format/format.h - internal: format/'s door for the rooms above it.
 *
 * The bytes of a trace (format/SPEC.md is the definition; the event
 * record's layout and types are katra/record.h's): where every field
 * sits, the little-endian loads and stores, the encoder (every kt__enc_*
 * fills a caller's buffer), the record check the reader and the writer
 * share, the id tables the readers use (and kt__grow, the arrays'
 * doubling), and the writer's entry points for
 * the flusher, and the interface of the sink the writer hands its bytes
 * to.  The synchronous sink over an fd is format/fd_sink.h's (so the
 * writer and kt_rewrite() need no flusher); io_uring's is flush/'s.
 */
#ifndef KATRA_FORMAT_FORMAT_H
#define KATRA_FORMAT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include <katra/record.h>
#include <katra/trace.h>
#include <katra/version.h>
#include <katra/writer.h>

/*
 * Where every field sits (format/SPEC.md; the event record's fields are
 * katra/record.h's).  Offsets inside a body count from the body's start.
 */

/* §2: the preamble, from the file's first byte. */
#define KT__MAGIC "\x89KTR\r\n\x1a\n"
#define KT__MAGIC_LEN 8
#define KT__PRE_VERSION 8            /* u32 format_version */
#define KT__PRE_HLEN 12              /* u32 header_len */
#define KT__PREAMBLE_LEN 16

/* §2.1: the header body's fixed part; the strings follow it. */
#define KT__HDR_VERSION 0            /* u32 */
#define KT__HDR_FLAGS 4              /* u32, KT_HDR_* */
#define KT__HDR_SCHEMA 8             /* u64 schema_hash */
#define KT__HDR_WALL 16              /* u64 start_wall_ns */
#define KT__HDR_MONO 24              /* u64 start_mono_ns */
#define KT__HDR_PID 32               /* u64 process_id */
#define KT__HDR_CLOCK 40             /* u8 clock_source, then 7 reserved */
#define KT__HDR_CLOCK_PAD 41
#define KT__HDR_TICK_HZ 48           /* u64 */
#define KT__HDR_TICKS0 56            /* u64 clock_ticks0 */
#define KT__HDR_NS0 64               /* u64 clock_ns0 */
#define KT__HDR_RING 72              /* u64 ring_size */
#define KT__HDR_OVERFLOW 80          /* u8 */
#define KT__HDR_CODEC 81             /* u8 */
#define KT__HDR_IO 82                /* u8, then 1 reserved */
#define KT__HDR_IO_PAD 83
#define KT__HDR_LEVEL 84             /* i32 codec_level */
#define KT__HDR_FLUSH 88             /* u64 flush_period_ns */
#define KT__HDR_FSYNC 96             /* u64 fsync_interval_ns */
#define KT__HDR_MAX_DURATION 104     /* u64 */
#define KT__HDR_MAX_BYTES 112        /* u64 */
#define KT__HDR_EPOCH 120            /* u64 */
#define KT__HEADER_FIXED 128
/* The fixed part, five empty strings and a note count of 0. */
#define KT__HEADER_MIN (KT__HEADER_FIXED + 5 * 4 + 4)

/* §3: a frame's head, then its body, pad and checksum. */
#define KT__FRAME_LEN 0              /* u32 body_len */
#define KT__FRAME_KIND 4             /* u8 */
#define KT__FRAME_FLAGS 5            /* u8, reserved */
#define KT__FRAME_CHECK 6            /* u16 head_check of bytes [0, 6) */
#define KT__FRAME_HEAD 8
#define KT__FRAME_TRAILER 8          /* u64 checksum */

/* §4.1: an event chunk's body. */
#define KT__CHUNK_TID 0              /* u32 thread_id */
#define KT__CHUNK_CODEC 4            /* u8, then 3 reserved */
#define KT__CHUNK_PAD 5
#define KT__CHUNK_SEQ 8              /* u64 chunk_seq */
#define KT__CHUNK_COUNT 16           /* u32 event_count */
#define KT__CHUNK_RAW 20             /* u32 raw_len */
#define KT__CHUNK_FIRST 24           /* u64 first_ts */
#define KT__CHUNK_LAST 32            /* u64 last_ts */
#define KT__CHUNK_FIXED 40           /* the payload starts here */
#define KT__EVENT_HEAD KT_REC_HEAD  /* old name; katra/record.h has the layout */
/* The raw bytes a writer of live or recovered events puts in one chunk:
 * LZ4 works well at this size, and a reader's buffers stay small. */
#define KT__CHUNK_MAX (256u << 10)

/* §4.3: a name entry's body. */
#define KT__NAME_ID 0                /* u32 */
#define KT__NAME_LEN 4               /* u32 */
#define KT__NAME_FIXED 8             /* the name's bytes start here */

/* §4.4: a thread entry's body. */
#define KT__THREAD_TID 0             /* u32 thread_id */
#define KT__THREAD_OS_TID 4          /* u32 */
#define KT__THREAD_NAME_LEN 8        /* u32 */
#define KT__THREAD_PAD 12            /* u32 reserved before version 4 */
#define KT__THREAD_PROCESS 12        /* u32 process id (version 4) */
#define KT__THREAD_FIXED 16          /* the name's bytes start here */

/* §4.7: a source location entry's body. */
#define KT__LOC_ID 0                 /* u32 name id */
#define KT__LOC_LINE 4               /* u32 */
#define KT__LOC_CATEGORY 8           /* u32 name id, 0 = none */
#define KT__LOC_FILE_LEN 12          /* u32 */
#define KT__LOC_FUNC_LEN 16          /* u32 */
#define KT__LOC_PAD 20               /* u32 reserved */
#define KT__LOC_FIXED 24             /* the file's bytes, then the function's */

/* §4.8: a category entry's body. */
#define KT__CAT_ID 0                 /* u32 name id */
#define KT__CAT_FLAGS 4              /* u32, KT_CATEGORY_ON_* */
#define KT__CAT_BODY 8

/* §4.9: a track entry's body, then its calibration pairs. */
#define KT__TRACK_ID 0               /* u32 1..KT_MAX_TRACKS */
#define KT__TRACK_NAME 4             /* u32 name id */
#define KT__TRACK_HZ 8               /* u64 */
#define KT__TRACK_COUNT 16           /* u32 pair count */
#define KT__TRACK_PAD 20             /* u32 reserved */
#define KT__TRACK_FIXED 24           /* pairs of u64 track_ts, u64 ticks */
#define KT__TRACK_PAIR 16

/* §4.10: a process entry's body (version 4), then its name and command line. */
#define KT__PROC_ID 0                /* u32, 0 = the file's own process */
#define KT__PROC_FLAGS 4             /* u32, KT_PROCESS_* */
#define KT__PROC_PID 8               /* u64 */
#define KT__PROC_PPID 16             /* u64 */
#define KT__PROC_START 24            /* u64 CLOCK_MONOTONIC ns */
#define KT__PROC_END 32              /* u64 CLOCK_MONOTONIC ns */
#define KT__PROC_NAME_LEN 40         /* u32 */
#define KT__PROC_CMD_LEN 44          /* u32 */
#define KT__PROC_FIXED 48            /* the name's bytes, then the command line's */
#define KT__PROCESS_FLAGS (KT_PROCESS_COMPLETE | KT_PROCESS_RECOVERED)

/* §4.11: a stack entry's body (version 5), then depth u64 addresses. */
#define KT__STACK_ID 0               /* u32, non-zero */
#define KT__STACK_DEPTH 4            /* u32, 1..KT_MAX_STACK_DEPTH */
#define KT__STACK_FIXED 8

/* §4.12: a map entry's body (version 5), then the path's bytes. */
#define KT__MAP_TS 0                 /* u64 ticks when seen; 0: at the start */
#define KT__MAP_START 8              /* u64 */
#define KT__MAP_LEN 16               /* u64 */
#define KT__MAP_PGOFF 24             /* u64 file offset of start */
#define KT__MAP_PROCESS 32           /* u32 process entry id, 0 = own */
#define KT__MAP_PATH_LEN 36          /* u32, 1..KT_MAX_MAP_PATH */
#define KT__MAP_FIXED 40

/* §4.5: a drop record's body. */
#define KT__DROP_TID 0               /* u32 thread_id, then u32 reserved */
#define KT__DROP_PAD 4
#define KT__DROP_COUNT 8             /* u64 */
#define KT__DROP_FIRST 16            /* u64 first_ts */
#define KT__DROP_LAST 24             /* u64 last_ts */
#define KT__DROP_BODY 32

/* §4.6: the session summary's body, then one row per thread. */
#define KT__SUM_FLAGS 0              /* u32, KT_SUMMARY_* */
#define KT__SUM_THREADS 4            /* u32 thread_count */
#define KT__SUM_WRITTEN 8            /* u64 events_written */
#define KT__SUM_DROPPED 16           /* u64 events_dropped */
#define KT__SUM_CHUNKS 24            /* u64 */
#define KT__SUM_RAW 32               /* u64 bytes_raw */
#define KT__SUM_STORED 40            /* u64 bytes_stored */
#define KT__SUM_END_WALL 48          /* u64 end_wall_ns */
#define KT__SUM_END_MONO 56          /* u64 end_mono_ns */
#define KT__SUM_TICKS1 64            /* u64 clock_ticks1 */
#define KT__SUM_NS1 72               /* u64 clock_ns1 */
#define KT__SUM_IO 80                /* u8 io_backend, then 3 reserved */
#define KT__SUM_IO_PAD 81
#define KT__SUM_IO_ERROR 84          /* i32 */
#define KT__SUMMARY_FIXED 88
#define KT__ROW_TID 0                /* u32 thread_id, then u32 reserved */
#define KT__ROW_PAD 4
#define KT__ROW_WRITTEN 8            /* u64 */
#define KT__ROW_DROPPED 16           /* u64 */
#define KT__SUMMARY_ROW 24

/* XXH3 of the schema string in SPEC §6, for the version written and for
 * versions 1 to 3; test_format.c recomputes them. */
#define KT__SCHEMA_HASH UINT64_C(0x50201e670d4835ee)
#define KT__SCHEMA_HASH_V4 UINT64_C(0xfa8c086269ee6c98)
#define KT__SCHEMA_HASH_V3 UINT64_C(0xf5f0996189c5e77d)
#define KT__SCHEMA_HASH_V2 UINT64_C(0xe89f64418cadbe8d)
#define KT__SCHEMA_HASH_V1 UINT64_C(0xe9c05376473abc76)
/* The version scheduler records (type 20) and the header's sched flags
 * join: the one written (version 4, shared with process entries, SPEC §8).
 * A reader refuses the flags in an older file. */
#define KT__SCHED_VERSION 4u
/* Stack and map entries (kinds 10, 11) and sample records (type 21). */
#define KT__SAMPLE_VERSION 5u
extern const char kt__schema_string[];
extern const char kt__schema_string_v4[];
extern const char kt__schema_string_v3[];
extern const char kt__schema_string_v2[];
extern const char kt__schema_string_v1[];

/* The schema hash a file of @version (one this library reads) carries. */
static inline uint64_t kt__schema_hash(uint32_t version)
{
	return version == 1   ? KT__SCHEMA_HASH_V1
	       : version == 2 ? KT__SCHEMA_HASH_V2
	       : version == 3 ? KT__SCHEMA_HASH_V3
	       : version == 4 ? KT__SCHEMA_HASH_V4
			      : KT__SCHEMA_HASH;
}

static inline size_t kt__align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * Little-endian stores and loads through memcpy: no alignment assumed, and
 * the compiler turns them into single moves on little-endian targets.
 * KT__LE_ACCESS(bits) makes kt__put<bits>() and kt__get<bits>().
 */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define KT__LE(bits, v) __builtin_bswap##bits(v)
#else
#define KT__LE(bits, v) (v)
#endif
#define KT__LE_ACCESS(bits)                                              \
	static inline void kt__put##bits(uint8_t *p, uint##bits##_t v)   \
	{                                                                \
		v = KT__LE(bits, v);                                     \
		memcpy(p, &v, sizeof(v));                                \
	}                                                                \
	static inline uint##bits##_t kt__get##bits(const uint8_t *p)     \
	{                                                                \
		uint##bits##_t v;                                        \
		memcpy(&v, p, sizeof(v));                                \
		return KT__LE(bits, v);                                  \
	}
KT__LE_ACCESS(16)
KT__LE_ACCESS(32)
KT__LE_ACCESS(64)
#undef KT__LE_ACCESS

/* XXH3-64 with seed 0 over one contiguous span. */
uint64_t kt__xxh3(const void *p, size_t n);

/* Low 16 bits of XXH3 over a frame head's first 6 bytes. */
uint16_t kt__head_check(const uint8_t head[6]);

/* Whether @kind is one of SPEC §4's kinds (a reader skips the others). */
static inline int kt__frame_kind_known(unsigned kind)
{
	switch (kind) {
#define KT__FRAME_KNOWN(code, name, text) case code:
		KT_FRAME_KINDS(KT__FRAME_KNOWN)
#undef KT__FRAME_KNOWN
		return 1;
	default:
		return 0;
	}
}

/* The highest chunk codec a file of @version may use (SPEC §4.1, §8). */
static inline unsigned kt__max_codec(uint32_t version)
{
	return version >= 3 ? KT_CODEC_COMPACT_ZSTD : version == 2 ? KT_CODEC_LZ4_DELTA : KT_CODEC_LZ4;
}

/*
 * The overflow byte of the header and of the crash control (SPEC §2.1,
 * §7) keeps version 1's 0 = drop, 1 = block and adds 2 = wait in version
 * 3, while kt_overflow numbers WAIT 0 so that a zeroed kt_config asks for
 * the default.  The two numberings are each other's mirror: one map
 * serves both ways.  A value past 2 passes through as it is, for the
 * reader to refuse.
 */
static inline uint8_t kt__overflow_flip(unsigned v)
{
	static const uint8_t map[3] = { 2, 1, 0 };
	return v < 3 ? map[v] : (uint8_t)v;
}

/* The highest overflow byte a file of @version may hold. */
static inline unsigned kt__max_overflow_byte(uint32_t version)
{
	return version >= 3 ? 2 : 1;
}

/* Total bytes a frame with a @body_len body occupies. */
static inline size_t kt__frame_size(size_t body_len)
{
	return KT__FRAME_HEAD + kt__align8(body_len) + KT__FRAME_TRAILER;
}

/* Check the header the way kt__enc_header() needs it: 0 or -EINVAL. */
int kt__header_validate(const kt_header *h);

/*
 * Where a layout keeps a kt_header's start times, clock and capture
 * settings (the u8 and u64 fields as SPEC §2.1 sizes them, level an i32).
 * A trace's header (§2.1) and a crash file's control header
 * (recover/crash.h) hold the same fields at offsets of their own: each
 * names its offsets in one of these, and kt__enc_start_fields() is the
 * one list of which field of @h goes where.
 */
typedef struct kt__start_at {
	uint16_t wall, mono;                              /* u64 */
	uint16_t clock;                                   /* u8 clock.source */
	uint16_t tick_hz, ticks0, ns0, ring;              /* u64 */
	uint16_t overflow, codec, io;                     /* u8 */
	uint16_t level;                                   /* i32 */
} kt__start_at;

/* Store @h's start times, clock and capture settings into @b at @at's
 * offsets; no other byte is touched.  Any thread. */
void kt__enc_start_fields(uint8_t *b, const kt_header *h, const kt__start_at *at);

/*
 * Encode preamble, header body, pad and checksum.  Returns the total size;
 * when it exceeds @cap nothing past @cap is written (call with cap 0 to
 * size the buffer).  @h must pass kt__header_validate().
 */
size_t kt__enc_header(uint8_t *buf, size_t cap, const kt_header *h);

/* The writer's room for a frame body of @body_len bytes (format/writer.c),
 * then the frame of @kind around what was put there: for entries encoded
 * outside writer.c (format/stack.c).  NULL with *@rc set (KT_ESTATE after
 * the summary, -ENOMEM). */
uint8_t *kt__writer_body(kt_writer *w, size_t body_len, int *rc);
int kt__writer_emit(kt_writer *w, uint8_t kind, uint32_t body_len);

/* Write the 8-byte frame head. */
void kt__enc_frame_head(uint8_t head[KT__FRAME_HEAD], uint32_t body_len, uint8_t kind);

/*
 * Finish a frame whose head and body are already at @frame: zero the pad
 * and store the checksum.  @frame must have kt__frame_size(body_len) bytes.
 * Returns that size.
 */
size_t kt__enc_frame_seal(uint8_t *frame, uint32_t body_len);

/*
 * The 48 bytes that open a chunk frame: head plus the fixed chunk fields.
 * The payload (stored_len bytes) follows; the caller seals the frame, or,
 * when the payload lives elsewhere, checksums with kt__chunk_checksum().
 */
void kt__enc_chunk_prefix(uint8_t out[KT__FRAME_HEAD + KT__CHUNK_FIXED],
			  uint32_t thread_id, uint8_t codec, uint64_t seq,
			  uint32_t count, uint32_t raw_len, uint32_t stored_len,
			  uint64_t first_ts, uint64_t last_ts);

/* Checksum and pad of a chunk whose prefix and payload are separate. */
uint64_t kt__chunk_checksum(const uint8_t prefix[KT__FRAME_HEAD + KT__CHUNK_FIXED],
			    const void *payload, uint32_t stored_len);

/* Bodies of the small frames; each returns the body length. */
uint32_t kt__enc_name_body(uint8_t *body, uint32_t id, const char *s, uint32_t len);
uint32_t kt__enc_thread_body(uint8_t *body, uint32_t thread_id, uint32_t os_tid,
			     const char *name, uint32_t name_len, uint32_t process);
/* A process entry's body (§4.10) from @p, already checked (lengths). */
uint32_t kt__enc_process_body(uint8_t *body, const kt_process_def *p);
uint32_t kt__enc_srcloc_body(uint8_t *body, const kt_srcloc *loc);
uint32_t kt__enc_category_body(uint8_t *body, uint32_t id, uint32_t flags);
/* A track entry's body (§4.9) from @t, already checked (kt__track_bad()). */
uint32_t kt__enc_track_body(uint8_t *body, const kt_track_def *t);
/* Whether @t is a track entry §4.9 allows: 0, or a static reason. */
const char *kt__track_bad(const kt_track_def *t);
uint32_t kt__enc_drop_body(uint8_t *body, uint32_t thread_id, uint64_t count,
			   uint64_t first_ts, uint64_t last_ts);
uint32_t kt__enc_summary_body(uint8_t *body, const kt_file_summary *s);
static inline uint32_t kt__summary_body_len(uint32_t threads)
{
	return KT__SUMMARY_FIXED + KT__SUMMARY_ROW * threads;
}

/* The types whose records are a bare head (no payload, flags 0), as a
 * mask by code, made from KT_EVENT_TYPES. */
#define KT__EV_BARE_BIT(code, name, text, payload, max_flags, value)            \
	| ((payload) == KT_PAYLOAD_NONE && (max_flags) == KT_REC_FLAGS_ZERO \
		   ? UINT64_C(1) << (code)                                  \
		   : 0)
#define KT__EV_BARE (0 KT_EVENT_TYPES(KT__EV_BARE_BIT))

/*
 * Validate one event record at @p with @avail bytes left: kt__record_ok()
 * (the producer's own check), a payload inside @avail, a zero pad.
 * Returns the record's size, or a negative KT_EEVENT.  Shared by the
 * reader and the writer so both accept exactly the same records; inline
 * for the reader's loop over every record of a chunk, where most records
 * are zones and instants: a bare head passes with one test.
 */
static inline long kt__event_check_inline(const uint8_t *p, size_t avail)
{
	if (avail < KT_REC_HEAD)
		return KT_EEVENT;
	uint8_t type = p[KT_REC_TYPE];
	uint16_t plen = kt__get16(p + KT_REC_LEN);
	if (type < 64 && (KT__EV_BARE >> type & 1) && !(p[KT_REC_FLAGS] | plen))
		return KT_REC_HEAD;
	size_t size = kt_event_size(plen);
	if (size > avail || !kt__record_ok(type, p[KT_REC_FLAGS], plen))
		return KT_EEVENT;
	for (size_t i = KT_REC_HEAD + plen; i < size; i++)
		if (p[i])
			return KT_EEVENT;
	return (long)size;
}
long kt__event_check(const uint8_t *p, size_t avail);

/*
 * Find, or insert zeroed in key order, the element of a sorted array whose
 * first member is the uint32_t @key.  Elements are @size bytes; the array
 * grows by doubling up to @max elements.  Returns the element, or NULL when
 * full or out of memory.  Pointers into the array die at the next insert.
 * An insertion moves every element after it: O(n), so ids from a file,
 * which may come in any order, go in a kt__idmap instead.
 */
void *kt__idtab_get(void **arr, size_t *len, size_t *cap, size_t size, uint32_t key,
		    size_t max);

/*
 * Room for one more element in the array *@arr of *@cap elements of @size
 * bytes, @len of them used: when full it doubles (from @first), through
 * kt__realloc().  Return: 0, or -ENOMEM with *@arr and *@cap unchanged.
 */
int kt__grow(void **arr, size_t *cap, size_t len, size_t size, size_t first);

/*
 * A table of @size-byte elements whose first member is a uint32_t key,
 * each key once, with O(1) expected find and insert in any key order
 * (format/idtab.c).  Elements sit in @items in insertion order, or in key
 * order after kt__idmap_sort() until the next insert.  Zero-fill with
 * kt__idmap_init().  Pointers into @items die at the next insert.
 */
struct kt__idmap {
	uint8_t *items;
	size_t len, cap;   /* elements in use and allocated */
	size_t size;
	uint64_t *slots;   /* the hash index */
	size_t mask;
	uint64_t seed;
};
void kt__idmap_init(struct kt__idmap *m, size_t size);
/* The element with @key, or NULL. */
void *kt__idmap_find(const struct kt__idmap *m, uint32_t key);
/* Find or append (zeroed, key set) the element with @key into *@out.
 * Return: 0 found, 1 appended, KT_ETOOBIG when @max elements are there
 * already, -ENOMEM. */
int kt__idmap_get(struct kt__idmap *m, uint32_t key, size_t max, void **out);
/* Put the elements in key order: O(n log n). */
void kt__idmap_sort(struct kt__idmap *m);
/* Forget every element, keeping the memory. */
void kt__idmap_clear(struct kt__idmap *m);
/* Bytes allocated, for the reader's accounting. */
size_t kt__idmap_bytes(const struct kt__idmap *m);
void kt__idmap_free(struct kt__idmap *m);
#define KT__IDMAP_AT(m, type, i) ((type *)(void *)((m)->items + (i) * sizeof(type)))

/*
 * A set of ids, any order, O(1) expected per call: 1 if @id was not in it
 * (and now is), 0 if it was, -ENOMEM.  *@set is a hash table that only this
 * function reads (start from NULL, 0, 0; free() it); *@len counts the ids.
 */
int kt__idset_add(uint32_t **set, size_t *len, size_t *cap, uint32_t id);
/* Whether @id is in the set: 1 or 0. */
int kt__idset_has(const uint32_t *set, size_t cap, uint32_t id);

/*
 * For tests that check complexity by counting: slots probed and elements
 * compared or moved by the tables above, on the calling thread.
 */
extern _Thread_local uint64_t kt__idtab_work;

/*
 * The readers' allocations (reader.c, merge.c, idtab.c, rewrite.c), with a
 * hook for tests: when kt__alloc_fail_at is non-zero, the allocation on
 * this thread that brings kt__alloc_count to it fails, so a test can fail
 * each allocation of a run in turn and see -ENOMEM come back.
 */
extern _Thread_local uint64_t kt__alloc_count, kt__alloc_fail_at;
static inline int kt__alloc_fails(void)
{
	return kt__alloc_fail_at && ++kt__alloc_count == kt__alloc_fail_at;
}
static inline void *kt__malloc(size_t n)
{
	return kt__alloc_fails() ? NULL : malloc(n);
}
static inline void *kt__calloc(size_t n, size_t size)
{
	return kt__alloc_fails() ? NULL : calloc(n, size);
}
static inline void *kt__realloc(void *p, size_t n)
{
	return kt__alloc_fails() ? NULL : realloc(p, n);
}

/*
 * The writer's chunk path for callers that already walked the records (the
 * flusher): no validation, count and timestamps as given.
 */
struct kt_writer;
int kt__writer_chunk_known(struct kt_writer *w, uint32_t thread_id, unsigned codec, int level,
			   const void *events, size_t raw_len, uint32_t count, uint64_t first,
			   uint64_t last);
/* The same for a payload already encoded in @codec (@stored bytes that
 * decode to @raw_len of records): the flight snapshot's chunks, encoded
 * as it read them (flush/snapshot.c). */
int kt__writer_chunk_stored(struct kt_writer *w, uint32_t thread_id, unsigned codec,
			    const void *payload, size_t stored, size_t raw_len, uint32_t count,
			    uint64_t first, uint64_t last);
/*
 * Where a writer's bytes go.  The writer fills a buffer it took from
 * acquire() and hands it to write() with its file offset; from then the
 * sink owns it until a later acquire() gives it back.  The default sink
 * writes synchronously with pwrite(); flush/ provides an io_uring one.
 */
typedef struct kt__sink kt__sink;
struct kt__sink {
	/* An empty buffer and its size, waiting for one if all are in flight;
	 * NULL on error (see error). */
	uint8_t *(*acquire)(kt__sink *s, size_t *cap);
	/* Write @len bytes of @buf at @off: 0 or the sink's sticky error. */
	int (*write)(kt__sink *s, uint8_t *buf, size_t len, uint64_t off);
	/* fdatasync what was written.  wait 0: start it, 1: finish it,
	 * -1: only wait for every write in flight (no sync).  0 or -errno. */
	int (*sync)(kt__sink *s, int wait);
	/*
	 * Write @head (copied, at most 64 bytes), then @body_len bytes at
	 * @body (not copied: they must stay unchanged until @done runs), then
	 * @tail (copied, at most 16 bytes), at @off.  @done(ctx, res) runs
	 * exactly once, with the bytes written or -errno, on the calling
	 * thread: before write_ref returns or inside a later sink call.
	 * Returns 0, or an error after which @done has already run.
	 */
	int (*write_ref)(kt__sink *s, const uint8_t *head, size_t head_len, const void *body,
			 size_t body_len, const uint8_t *tail, size_t tail_len, uint64_t off,
			 void (*done)(void *ctx, int res), void *ctx);
	/* Handle whatever has completed, without waiting (runs write_ref
	 * callbacks).  NULL for a sink that completes everything at once. */
	void (*poll)(kt__sink *s);
	void (*close)(kt__sink *s);
	/* Write to @fd from now on (nothing may be in flight: see
	 * kt__writer_release()).  0 or the sink's sticky error. */
	int (*retarget)(kt__sink *s, int fd);
	int backend;  /* kt_io_backend that this sink is */
	int error;    /* first error, -errno; sticky */
};

/*
 * Open a writer over @sink, which it owns from success on (closed by
 * kt_writer_close()); the header goes at file offset @off.  @fd is closed
 * with the writer when @own_fd.  On failure the caller keeps both.
 */
int kt__writer_open_sink(struct kt_writer **out, kt__sink *sink, int fd, int own_fd,
			 uint64_t off, const kt_header *h);

/*
 * A raw chunk written straight from the caller's memory (the ring): the
 * prefix and the checksum trailer are built here, the events are not
 * copied.  @done(ctx, res) runs when the bytes are written, as for
 * kt__sink.write_ref.  Returns 0 or the writer's error (@done has run).
 */
int kt__writer_chunk_ref(struct kt_writer *w, uint32_t thread_id, const void *events,
			 size_t raw_len, uint32_t count, uint64_t first, uint64_t last,
			 void (*done)(void *ctx, int res), void *ctx);

/*
 * kt_writer_close() that keeps the sink: every write is waited for and
 * *@sink handed back, to be retargeted to the next file of a segmented
 * trace without setting up a new one.  Returns what kt_writer_close()
 * would; *@sink is NULL if the writer had none.
 */
int kt__writer_release(struct kt_writer *w, kt__sink **sink);

/* Let the writer's sink handle completed writes (kt__sink.poll). */
void kt__writer_poll(struct kt_writer *w);

/* The kt_io_backend that writes now: a sink may change it (io_uring
 * refused after set-up goes on with pwrite). */
int kt__writer_backend(const struct kt_writer *w);

/* Hand buffered bytes to the sink and sync: wait as for kt__sink.sync. */
int kt__writer_sync(struct kt_writer *w, int wait);

/* Hand buffered bytes to the sink without waiting for them.  0 or the
 * writer's error. */
int kt__writer_push(struct kt_writer *w);

/* The old names of kt_rewrite() and its structs (katra/writer.h), for the
 * callers that still use them (tools/). */
typedef kt_rewrite_options kt__rewrite_opts;
typedef kt_rewrite_result kt__rewrite_result;
static inline int kt__rewrite(const kt__rewrite_opts *o, kt__rewrite_result *res)
{
	return kt_rewrite(o, res);
}

#endif /* KATRA_FORMAT_FORMAT_H */

/*
 * format/compact.h - internal: the compact chunk codec.
 *
 * Pure bytes: a span of event records (SPEC §4.2, exactly as a raw chunk
 * holds them) in, the compact encoding out, and back.  The encoding is
 * defined in format/SPEC.md §4.1.1 (codec 3) and §4.1.2 (codec 4,
 * compact-zstd): five streams (timestamp deltas, record keys, 8-byte values,
 * payload lengths, payload bytes), each field predicted from the chunk so
 * far and stored only where the prediction misses, and any stream LZ4
 * compressed where that pays.
 *
 * Each encoder and decoder holds its scratch state, allocated once; neither
 * allocates per chunk.  Threads: an encoder or decoder is used by one
 * thread at a time; different ones are independent.
 */
#ifndef KATRA_FORMAT_COMPACT_H
#define KATRA_FORMAT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include <katra/trace.h>

/* Distinct (type, flags, name) keys a chunk's dictionary holds; keys past
 * it are still encoded, each spelled out again where it misses. */
#define KT__COMPACT_KEYS 4096u

/* The streams, in payload order, as bits of a mask. */
#define KT__COMPACT_T 0x01u  /* timestamp deltas */
#define KT__COMPACT_K 0x02u  /* keys */
#define KT__COMPACT_V 0x04u  /* 8-byte values */
#define KT__COMPACT_L 0x08u  /* payload lengths */
#define KT__COMPACT_P 0x10u  /* payload bytes */
#define KT__COMPACT_ALL 0x1fu

/*
 * How far a stored payload of @stored bytes may expand: raw_len at most
 * 1024 x stored + 4096, for codecs compact and compact-zstd alike, so that
 * decoding a file costs time linear in its size.  Encoders stay within it
 * (the archival one says -ERANGE where it cannot); decoders refuse more.
 */
static inline int kt__compact_ratio_ok(size_t raw_len, size_t stored)
{
	return raw_len <= 1024 * (uint64_t)stored + 4096;
}

typedef struct kt__compact_enc kt__compact_enc;
typedef struct kt__compact_dec kt__compact_dec;

/*
 * kt__compact_enc_new - an encoder for chunks of at most @max_raw bytes
 * (a multiple of 8, at most KT_MAX_RAW), which tries LZ4 on the payload
 * bytes (KT__COMPACT_P) only.  Its scratch is about 4.7 x @max_raw plus
 * 230 KiB, allocated here once.  Return: 0 and *@out; -EINVAL; -ENOMEM.
 */
int kt__compact_enc_new(kt__compact_enc **out, size_t max_raw);

/* kt__compact_enc_free - release; NULL is a no-op. */
void kt__compact_enc_free(kt__compact_enc *e);

/*
 * kt__compact_enc_lz4 - the streams (a mask of KT__COMPACT_*) the encoder
 * tries LZ4 on from now on, at LZ4 acceleration @accel (values below 1
 * mean 1).  A stream is stored compressed only where that makes it
 * smaller; a stream other than P whose LZ4 saved less than an eighth of
 * it is not tried for the next 15 chunks (its time is not worth it); and
 * where the payload then still keeps within
 * kt__compact_ratio_ok() (else T, K, V and L are stored plain: P alone
 * cannot expand past it).  May allocate (up to 2.7 x max_raw more): call
 * it when setting up, not per chunk.  Return: 0; -EINVAL for bits outside
 * KT__COMPACT_ALL; -ENOMEM (the encoder is unchanged).
 */
int kt__compact_enc_lz4(kt__compact_enc *e, unsigned streams, int accel);

/* The counters kt__compact_enc_lz4() keeps for its skip: one a stream. */
#define KT__COMPACT_SKIPS 5

/*
 * kt__compact_enc_skip - the skip counters @e reads and updates from now
 * on: @skip (KT__COMPACT_SKIPS bytes, zeroed at first, owned by the
 * caller and kept while @e uses them), or NULL for the encoder's own.
 * A writer of several threads' chunks gives each thread's before its
 * chunk: one thread's stream that LZ4 cannot shrink (a sampler's) then
 * stops no other's, and a copy that meets the threads' chunks in another
 * interleaving (kt_rewrite) decides as the session did.  Allocates nothing.
 */
void kt__compact_enc_skip(kt__compact_enc *e, uint8_t *skip);

/*
 * kt__compact_encode - encode the @raw_len bytes of records at @events
 * into @out, at most @cap bytes.  Allocates nothing.
 *
 * The records must be valid (SPEC §4.2: known type, the flags and payload
 * length the type allows, zero padding) and end exactly at @raw_len.
 * Return: the encoded length (> 0); -ENOSPC when it would exceed @cap, or
 * when the streams before LZ4 would exceed @raw_len (a writer passes the
 * raw length as @cap and writes the chunk raw on -ENOSPC); -EINVAL for an
 * invalid record, @raw_len 0, not a multiple of 8, or over @max_raw.
 */
long kt__compact_encode(kt__compact_enc *e, const void *events, size_t raw_len, uint8_t *out,
			size_t cap);

/* What kt__compact_encode_upto() took: @used bytes of records (ending at
 * the first record start at or past @limit, or before the first record
 * the format does not know), @count of them, timestamps @first to @last. */
typedef struct kt__compact_run {
	size_t limit, used;
	uint32_t count;
	uint64_t first, last;
} kt__compact_run;

/*
 * kt__compact_encode_upto - as kt__compact_encode(), of the records at
 * @events (@avail bytes at hand) from the first on, up to the first that
 * starts at or past @limit bytes or whose type and flags the format does
 * not allow (a reader's own record, such as a ring's drop marker; a
 * record it refuses otherwise makes it -EINVAL), into *@run.  For a
 * reader whose records are not walked yet: one pass finds and encodes
 * them.  @events is 8-byte aligned, and @limit plus the largest record
 * (kt_event_size(UINT16_MAX)) at most the encoder's @max_raw.  Reads
 * nothing outside events[0, @avail), whatever the bytes are, even while
 * they change: each record's header word is read once.
 * Return: the encoded length, at most @cap and at most run->used; 0 when
 * the first record is not taken (run->used 0); -ENOSPC (run->used says
 * how many bytes a caller then stores raw); -EINVAL.
 */
long kt__compact_encode_upto(kt__compact_enc *e, const void *events, size_t avail, size_t limit,
			     uint8_t *out, size_t cap, kt__compact_run *run);

/*
 * kt__compact_dec_new - a decoder: 170 KiB of tables, and a buffer for
 * LZ4-compressed streams that grows to the largest chunk's raw_len.
 * Return: 0 and *@out; -ENOMEM.
 */
int kt__compact_dec_new(kt__compact_dec **out);

/* kt__compact_dec_free - release; NULL is a no-op. */
void kt__compact_dec_free(kt__compact_dec *d);

/* kt__compact_dec_bytes - the bytes @d holds now (0 for NULL), for a
 * reader's accounting of its memory. */
size_t kt__compact_dec_bytes(const kt__compact_dec *d);

/*
 * kt__compact_decode - decode @len bytes at @in, which nothing vouches
 * for, into exactly @count records filling exactly @raw_len bytes at @out.
 * The caller has checked @raw_len against the format's limit
 * (KT_MAX_RAW); the decoder allocates at most @raw_len bytes, only when
 * the payload has LZ4-compressed streams.
 *
 * Time is linear in @len + @raw_len; nothing outside in[0, len) is read
 * or outside out[0, raw_len) written.  Every record written is valid
 * (SPEC §4.2).  @out's contents are unspecified on failure.
 * Return: 0; KT_ERAWLEN when @raw_len fails kt__compact_ratio_ok(@len) (so
 * that time is linear in @len); KT_EFRAME for malformed streams (a varint too long or spelled
 * with a useless zero group, a stream overrunning the payload or left
 * with bytes unread, a dictionary index out of range, an LZ4 stream that
 * does not decode to its stated length); KT_EEVENT for a key of an
 * unknown type or flags; KT_ERESERVED for a flag bit the format does not
 * define; KT_ERAWLEN when the records do not fill @raw_len exactly or the
 * streams would exceed it; KT_ECOUNT for @count 0; -ENOMEM.
 */
int kt__compact_decode(kt__compact_dec *d, const uint8_t *in, size_t len, uint8_t *out,
		       size_t raw_len, uint32_t count);

/* ---- the codecs as the writer and the reader take them ----------------
 *
 * kt__codec is a chunk codec's operations, one table per codec, picked by
 * codec id (kt__codec_of()), so that the writer and the reader hold one
 * encoder or decoder slot per codec and say each step once.  Encoders and
 * decoders are opaque; the contract of each operation is written here
 * once, and each codec's table says what is its own.  A call through the
 * table costs one indirect call per chunk, never per event.  Threads: an
 * encoder or decoder is used by one thread at a time; the tables are
 * constant.
 */
typedef struct kt__codec {
	/* The highest level the codec takes: a writer clamps its level into
	 * [0, level_max] (enc_new() and enc_level() of a codec with a range
	 * refuse a level outside it with -EINVAL). */
	int level_max;
	/* An encoder for chunks of at most @max_raw bytes (a multiple of 8,
	 * at most KT_MAX_RAW) at @level, allocated here once.  Return: 0 and
	 * *@out; -EINVAL (*@out NULL); -ENOMEM (*@out NULL). */
	int (*enc_new)(void **out, size_t max_raw, int level);
	/* The level @e encodes at from now on: cheap, for a writer whose
	 * level changes.  Return: 0; -EINVAL; -ENOMEM (@e unchanged). */
	int (*enc_level)(void *e, int level);
	/* Release; NULL is a no-op. */
	void (*enc_free)(void *e);
	/* As kt__compact_enc_skip(), for @e's compact encoder. */
	void (*enc_skip)(void *e, uint8_t *skip);
	/* As kt__compact_encode(), in this codec.  Allocates nothing. */
	long (*encode)(void *e, const void *events, size_t raw_len, uint8_t *out, size_t cap);
	/* A decoder, whose buffers grow to the largest raw_len met.
	 * Return: 0 and *@out; -ENOMEM (*@out NULL). */
	int (*dec_new)(void **out);
	/* Release; NULL is a no-op. */
	void (*dec_free)(void *d);
	/* The bytes @d holds now (0 for NULL), for a reader's accounting. */
	size_t (*dec_bytes)(const void *d);
	/* As kt__compact_decode(), in this codec. */
	int (*decode)(void *d, const uint8_t *in, size_t len, uint8_t *out, size_t raw_len,
		      uint32_t count);
} kt__codec;

/* A codec's table, in the codec's own file, from its static functions
 * named as the members they fill (enc_new, enc_level, ...), so that the
 * list of operations stands here alone. */
#define KT__CODEC_TABLE(max_level)                                                   \
	{ .level_max = (max_level), .enc_new = enc_new, .enc_level = enc_level,      \
	  .enc_free = enc_free, .enc_skip = enc_skip, .encode = encode,              \
	  .dec_new = dec_new, .dec_free = dec_free, .dec_bytes = dec_bytes,          \
	  .decode = decode }

/* KT_CODEC_COMPACT (format/compact_codec.c): the functions above.  Level:
 * LZ4 on the payload bytes (KT__COMPACT_P) at 0 and below; at 1, a
 * session's default, on T, K and P, each where it pays (a frame loop's
 * timestamps shrink 3x for ~0.7 ns of the flusher a record); on every
 * stream from 2 (format/SPEC.md, bench/RESULTS.md); level_max INT_MAX. */
extern const kt__codec kt__codec_compact;

/*
 * KT_CODEC_COMPACT_ZSTD (format/compact_zstd.c), the archival codec: one
 * zstd frame whose content is a compact payload (written without LZ4:
 * zstd's own entropy coding does better) of at most raw_len bytes.
 * Level: zstd's, 1 to 19 (level_max), 0 meaning 3.  Its encoder's scratch
 * is about 5.7 x @max_raw plus zstd's context; its dec_bytes counts zstd's
 * context too.  encode: -ENOSPC also when the zstd frame is over @cap;
 * -ERANGE when the frame is so small that kt__compact_ratio_ok() fails (a
 * writer stores that chunk as compact); -EIO when zstd fails otherwise.
 * decode: the frame must decode to at most @raw_len bytes (KT_EFRAME
 * otherwise, or when it is not a zstd frame), which must then decode as
 * compact; KT_ERAWLEN when @raw_len fails kt__compact_ratio_ok(@len).
 */
extern const kt__codec kt__codec_compact_zstd;

/* The codecs with a table: KT_CODEC_COMPACT + i for i below this. */
#define KT__CODEC_TABLES 2u

/* Codec @codec's table: KT_CODEC_COMPACT's or KT_CODEC_COMPACT_ZSTD's,
 * NULL for any other codec. */
static inline const kt__codec *kt__codec_of(unsigned codec)
{
	if (codec == KT_CODEC_COMPACT)
		return &kt__codec_compact;
	return codec == KT_CODEC_COMPACT_ZSTD ? &kt__codec_compact_zstd : NULL;
}

#endif /* KATRA_FORMAT_COMPACT_H */

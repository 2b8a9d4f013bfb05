/*
 * format/compact.h - internal: the compact chunk codec.
 *
 * Pure bytes: a span of event records (SPEC §4.2, exactly as a raw chunk
 * holds them) in, the compact encoding out, and back.  The encoding is
 * defined in /work/brief/out/codec.md (to become a section of SPEC.md
 * version 3): five streams (timestamp deltas, record keys, 8-byte values,
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
 * smaller, and where the payload then still keeps within
 * kt__compact_ratio_ok() (else T, K, V and L are stored plain: P alone
 * cannot expand past it).  May allocate (up to 2.7 x max_raw more): call
 * it when setting up, not per chunk.  Return: 0; -EINVAL for bits outside
 * KT__COMPACT_ALL; -ENOMEM (the encoder is unchanged).
 */
int kt__compact_enc_lz4(kt__compact_enc *e, unsigned streams, int accel);

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

/* ---- compact, then zstd: the archival codec (format/compact_zstd.c) ----
 *
 * One zstd frame whose content is a compact payload (written without LZ4:
 * zstd's own entropy coding does better) of at most raw_len bytes.
 */
typedef struct kt__czstd_enc kt__czstd_enc;
typedef struct kt__czstd_dec kt__czstd_dec;

/* An encoder for chunks of at most @max_raw bytes, at zstd @level (1..19;
 * 0 means 3).  Its scratch is about 5.7 x @max_raw plus zstd's context.
 * Return: 0 and *@out; -EINVAL; -ENOMEM. */
int kt__czstd_enc_new(kt__czstd_enc **out, size_t max_raw, int level);
void kt__czstd_enc_free(kt__czstd_enc *e);

/* As kt__compact_encode(), the result compressed by zstd.  Allocates
 * nothing.  Return: the length; -ENOSPC (as kt__compact_encode(), or the
 * zstd frame over @cap); -ERANGE when the frame is so small that
 * kt__compact_ratio_ok() fails (a writer stores that chunk as compact);
 * -EINVAL; -EIO when zstd fails otherwise. */
long kt__czstd_encode(kt__czstd_enc *e, const void *events, size_t raw_len, uint8_t *out,
		      size_t cap);

/* A decoder; its buffers grow to the largest raw_len met.
 * Return: 0 and *@out; -ENOMEM. */
int kt__czstd_dec_new(kt__czstd_dec **out);
void kt__czstd_dec_free(kt__czstd_dec *d);
/* The bytes @d holds now, zstd's context included (0 for NULL). */
size_t kt__czstd_dec_bytes(const kt__czstd_dec *d);

/* As kt__compact_decode(), for a zstd frame of a compact payload: the
 * frame must decode to at most @raw_len bytes (KT_EFRAME otherwise, or
 * when it is not a zstd frame), which must then decode as compact.
 * KT_ERAWLEN when @raw_len fails kt__compact_ratio_ok(@len). */
int kt__czstd_decode(kt__czstd_dec *d, const uint8_t *in, size_t len, uint8_t *out,
		     size_t raw_len, uint32_t count);

#endif /* KATRA_FORMAT_COMPACT_H */

/*
 * The reader's header parser: the preamble, the header body and its
 * checksum (SPEC §2), checked in the order the SPEC gives, so a given
 * corruption always gives the same error at the same offset.
 */
#include <errno.h>
#include <string.h>

#include "format/reader_impl.h"

/*
 * The preamble (magic, version, header_len), then the whole header's
 * checksum and pad: *@p is then the header's bytes from the file's start,
 * and r->first_frame is set.
 */
static int check_preamble(kt_reader *r, kt_reader_error *e, uint32_t *version, uint32_t *hlen,
			  const uint8_t **p)
{
	uint8_t pre[KT__PREAMBLE_LEN];
	int rc;

	if (r->size == 0)
		return kt__rd_fail(e, KT_ETRUNCATED, 0, "the file is empty");
	size_t have = r->size < KT__PREAMBLE_LEN ? (size_t)r->size : KT__PREAMBLE_LEN;
	if ((rc = kt__rd_bytes(r, 0, have, p)))
		return kt__rd_fail(e, rc, 0, "reading the preamble (%zu bytes)", have);
	memcpy(pre, *p, have);
	if (memcmp(pre, KT__MAGIC, have < KT__MAGIC_LEN ? have : KT__MAGIC_LEN))
		return kt__rd_fail(e, KT_EMAGIC, 0,
				   "the first bytes are not the katra magic 89 4B 54 52 0D 0A 1A 0A");
	if (have < KT__PREAMBLE_LEN)
		return kt__rd_fail(e, KT_ETRUNCATED, r->size, "the file ends inside the preamble");
	*version = kt__get32(pre + KT__PRE_VERSION);
	if (*version < KT_FORMAT_VERSION_MIN || *version > KT_FORMAT_VERSION)
		return kt__rd_fail(e, KT_EVERSION, KT__PRE_VERSION,
				   "format version %u; this reader reads versions %u to %u", *version,
				   KT_FORMAT_VERSION_MIN, KT_FORMAT_VERSION);
	*hlen = kt__get32(pre + KT__PRE_HLEN);
	if (*hlen < KT__HEADER_MIN || *hlen > KT_MAX_HEADER)
		return kt__rd_fail(e, KT_EHEADER, KT__PRE_HLEN, "header_len %u outside [%u, %u]",
				   *hlen, KT__HEADER_MIN, KT_MAX_HEADER);
	uint64_t sum_at = KT__PREAMBLE_LEN + kt__align8(*hlen);
	r->first_frame = sum_at + 8;
	if (r->size < r->first_frame)
		return kt__rd_fail(e, KT_ETRUNCATED, r->size,
				   "the file ends inside the header (%llu of %llu bytes)",
				   (unsigned long long)r->size, (unsigned long long)r->first_frame);
	if ((rc = kt__rd_bytes(r, 0, (size_t)r->first_frame, p)))
		return kt__rd_fail(e, rc, 0, "reading the header (%llu bytes)",
				   (unsigned long long)r->first_frame);
	uint64_t want = kt__get64(*p + sum_at);
	uint64_t got = kt__xxh3(*p + KT__PRE_VERSION, (size_t)sum_at - KT__PRE_VERSION);
	if (want != got)
		return kt__rd_fail(e, KT_EHDRSUM, sum_at, "stored %016llx, computed %016llx",
				   (unsigned long long)want, (unsigned long long)got);
	for (uint64_t i = KT__PREAMBLE_LEN + *hlen; i < sum_at; i++)
		if ((*p)[i])
			return kt__rd_fail(e, KT_ERESERVED, i, "header pad byte is not zero");
	return 0;
}

/* Version, flags, schema and the clock: the fields that say how to read
 * the rest.  @b is the header body at file offset @base. */
static int parse_identity(kt_header *h, const uint8_t *b, uint32_t version, kt_reader_error *e)
{
	const uint64_t base = KT__PREAMBLE_LEN;

	h->format_version = kt__get32(b + KT__HDR_VERSION);
	if (h->format_version != version)
		return kt__rd_fail(e, KT_EHEADER, base + KT__HDR_VERSION,
				   "header says version %u, preamble %u", h->format_version, version);
	h->flags = kt__get32(b + KT__HDR_FLAGS);
	uint32_t known = version >= KT__SCHED_VERSION ? KT_HDR_FLAGS_KNOWN : KT_HDR_CAPTURE;
	if ((h->flags & ~known) || (h->flags & KT_HDR_SCHED && h->flags & KT_HDR_SCHED_ABSENT))
		return kt__rd_fail(e, KT_ERESERVED, base + KT__HDR_FLAGS, "unknown header flags 0x%x",
				   h->flags);
	h->schema_hash = kt__get64(b + KT__HDR_SCHEMA);
	if (h->schema_hash != kt__schema_hash(version))
		return kt__rd_fail(e, KT_EVERSION, base + KT__HDR_SCHEMA,
				   "schema hash %016llx is not version %u's",
				   (unsigned long long)h->schema_hash, version);
	h->start_wall_ns = kt__get64(b + KT__HDR_WALL);
	h->start_mono_ns = kt__get64(b + KT__HDR_MONO);
	h->process_id = kt__get64(b + KT__HDR_PID);
	h->clock.source = b[KT__HDR_CLOCK];
	if (h->clock.source != KT_CLOCK_TSC && h->clock.source != KT_CLOCK_MONOTONIC)
		return kt__rd_fail(e, KT_EHEADER, base + KT__HDR_CLOCK, "clock source %u",
				   h->clock.source);
	for (int i = KT__HDR_CLOCK_PAD; i < KT__HDR_TICK_HZ; i++)
		if (b[i])
			return kt__rd_fail(e, KT_ERESERVED, base + (uint64_t)i, "reserved header byte");
	h->clock.tick_hz = kt__get64(b + KT__HDR_TICK_HZ);
	if (h->clock.tick_hz == 0)
		return kt__rd_fail(e, KT_EHEADER, base + KT__HDR_TICK_HZ, "clock tick rate is 0");
	h->clock.ticks = kt__get64(b + KT__HDR_TICKS0);
	h->clock.mono_ns = kt__get64(b + KT__HDR_NS0);
	return 0;
}

/* The capture options and the epoch. */
static int parse_capture(kt_header *h, const uint8_t *b, uint32_t version, kt_reader_error *e)
{
	const uint64_t base = KT__PREAMBLE_LEN;
	kt_capture_options *c = &h->capture;

	c->ring_size = kt__get64(b + KT__HDR_RING);
	c->codec = b[KT__HDR_CODEC];
	c->io = b[KT__HDR_IO];
	if (b[KT__HDR_IO_PAD])
		return kt__rd_fail(e, KT_ERESERVED, base + KT__HDR_IO_PAD, "reserved header byte");
	if (b[KT__HDR_OVERFLOW] > kt__max_overflow_byte(version) ||
	    c->codec > kt__max_codec(version) || c->io > KT_IO_PWRITE)
		return kt__rd_fail(e, KT_EHEADER, base + KT__HDR_OVERFLOW,
				   "capture option out of range");
	c->overflow = kt__overflow_flip(b[KT__HDR_OVERFLOW]);
	c->codec_level = (int32_t)kt__get32(b + KT__HDR_LEVEL);
	c->flush_period_ns = kt__get64(b + KT__HDR_FLUSH);
	c->fsync_interval_ns = kt__get64(b + KT__HDR_FSYNC);
	c->max_duration_ns = kt__get64(b + KT__HDR_MAX_DURATION);
	c->max_bytes = kt__get64(b + KT__HDR_MAX_BYTES);
	h->epoch = kt__get64(b + KT__HDR_EPOCH);
	return 0;
}

/* A cursor over the header body's strings, each copied with its NUL to
 * *dst. */
struct hcur {
	const uint8_t *p;
	size_t len, pos;
	uint64_t base; /* file offset of p[0] */
	char *dst;
	kt_reader_error *e;
};

static int h_str(struct hcur *c, const char **out, const char *what)
{
	if (c->len - c->pos < 4)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos,
				   "header ends inside the length of %s", what);
	uint32_t n = kt__get32(c->p + c->pos);
	if (n > KT_MAX_STRING)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos, "%s is %u bytes, over 65535",
				   what, n);
	c->pos += 4;
	if (c->len - c->pos < n)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos - 4,
				   "%s runs past the header end", what);
	if (memchr(c->p + c->pos, 0, n))
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos, "%s holds a zero byte", what);
	memcpy(c->dst, c->p + c->pos, n);
	c->dst[n] = 0;
	*out = c->dst;
	c->dst += n + 1;
	c->pos += n;
	return 0;
}

/* The notes: their count, then each note, ending exactly at the body's
 * end. */
static int parse_notes(kt_reader *r, struct hcur *c)
{
	kt_header *h = &r->hdr;
	int rc;

	if (c->len - c->pos < 4)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos,
				   "header ends inside note_count");
	h->note_count = kt__get32(c->p + c->pos);
	if (h->note_count > KT_MAX_NOTES)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos, "%u notes, over 1024",
				   h->note_count);
	/* Each note takes at least its 4-byte length, so this bounds the array. */
	if (h->note_count > (c->len - c->pos - 4) / 4)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos, "%u notes cannot fit",
				   h->note_count);
	c->pos += 4;
	size_t slots = h->note_count ? h->note_count : 1;
	r->notes = kt__calloc(slots, sizeof(*r->notes));
	if (!r->notes)
		return kt__rd_fail(c->e, -ENOMEM, 0, "header notes");
	kt__reader_account(r, (int64_t)(slots * sizeof(*r->notes)));
	for (uint32_t i = 0; i < h->note_count; i++)
		if ((rc = h_str(c, &r->notes[i], "a note")))
			return rc;
	h->notes = r->notes;
	if (c->pos != c->len)
		return kt__rd_fail(c->e, KT_EHEADER, c->base + c->pos,
				   "%zu bytes after the last note", c->len - c->pos);
	return 0;
}

/* The strings after the fixed part, into r->hdr_strings. */
static int parse_strings(kt_reader *r, const uint8_t *b, uint32_t hlen, kt_reader_error *e)
{
	kt_header *h = &r->hdr;
	int rc;

	/* The strings can take no more room than the header body itself. */
	r->hdr_strings = kt__malloc(hlen);
	if (!r->hdr_strings)
		return kt__rd_fail(e, -ENOMEM, 0, "header strings (%u bytes)", hlen);
	kt__reader_account(r, hlen);
	struct hcur c = { b, hlen, KT__HEADER_FIXED, KT__PREAMBLE_LEN, r->hdr_strings, e };
	if ((rc = h_str(&c, &h->tool_version, "tool_version")) ||
	    (rc = h_str(&c, &h->workload, "workload")) || (rc = h_str(&c, &h->host, "host")) ||
	    (rc = h_str(&c, &h->run_id, "run_id")) ||
	    (rc = h_str(&c, &h->capture_id, "capture_id")))
		return rc;
	return parse_notes(r, &c);
}

int kt__rd_parse_header(kt_reader *r, kt_reader_error *e)
{
	const uint8_t *p = NULL;
	uint32_t version = 0, hlen = 0;
	int rc;

	if ((rc = check_preamble(r, e, &version, &hlen, &p)))
		return rc;
	const uint8_t *b = p + KT__PREAMBLE_LEN;
	if ((rc = parse_identity(&r->hdr, b, version, e)) ||
	    (rc = parse_capture(&r->hdr, b, version, e)) ||
	    (rc = parse_strings(r, b, hlen, e)))
		return rc;
	r->pos = r->first_frame;
	return 0;
}

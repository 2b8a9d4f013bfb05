/*
 * The reader: checks and decodes a .katra file frame by frame.
 *
 * Every check follows format/SPEC.md in the order it gives, so a given
 * corruption always produces the same error at the same offset.  Nothing
 * sized by the file is allocated before the file has been shown to hold the
 * bytes (frame bodies) or the SPEC's bound has been checked (decoded chunks).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4.h>

#include <katra/reader.h>
#include "format/format.h"
#include "format/reader_internal.h"

/* One thread's accounting, kept to check the summary against the file. */
struct thread_acct {
	uint32_t thread_id;
	int has_seq;
	uint64_t last_seq;
	uint64_t written;
	uint64_t dropped;
};

struct kt_reader {
	int fd;            /* -1 when reading memory */
	int own_fd;
	const uint8_t *mem;
	uint64_t size;
	uint64_t base;     /* file offset of the trace's first byte (fd readers) */

	kt_header hdr;
	char *hdr_strings; /* every header string, NUL-terminated */
	const char **notes;
	uint64_t first_frame;
	uint64_t pos;
	int done;

	uint8_t *frame_buf;    /* one whole frame, for fd readers */
	size_t frame_cap;
	uint8_t *win;          /* the sequential pass's read-ahead */
	size_t win_cap, win_len;
	uint64_t win_off;      /* file offset of win[0] */
	uint8_t *raw_buf;      /* one decoded LZ4 chunk */
	size_t raw_cap;
	char *str_buf;         /* a name or thread name plus NUL */
	size_t str_cap;

	struct kt__idmap acct;    /* struct thread_acct, by thread_id */
	size_t acct_hint;
	size_t acct_bytes;        /* of acct, counted in st.buffer_bytes */
	uint64_t bytes_raw, bytes_stored;
	kt_summary_thread *rows;  /* summary rows handed to the caller */
	size_t rows_bytes;

	kt_reader_status st;
	kt_reader_error err;
	int rereading;             /* kt__reader_frame_at(): skip accounting */
	int headers_only;          /* kt__reader_set_headers_only() */
	struct kt__merge *merge;   /* kt_reader_next() state */
};

static int fail(kt_reader_error *e, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(kt_reader_error *e, int code, uint64_t off, const char *fmt, ...)
{
	char detail[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	e->code = code;
	e->offset = off;
	/* libc says "Cannot allocate memory"; say what it means here. */
	snprintf(e->message, sizeof(e->message), "offset %llu: %s: %s",
		 (unsigned long long)off, code == -ENOMEM ? "out of memory" : kt_strerror(code),
		 detail);
	return code;
}

static int rfail(kt_reader *r, int code, uint64_t off, const char *detail)
{
	r->st.error = code;
	r->st.error_offset = off;
	r->done = 1;
	return fail(&r->err, code, off, "%s", detail);
}

/* The highest chunk codec a file of @version may use. */
static unsigned max_codec(uint32_t version)
{
	return version >= 2 ? KT_CODEC_LZ4_DELTA : KT_CODEC_LZ4;
}

void kt__reader_account(kt_reader *r, int64_t delta)
{
	r->st.buffer_bytes += (uint64_t)delta;
	if (r->st.buffer_bytes > r->st.peak_buffer_bytes)
		r->st.peak_buffer_bytes = r->st.buffer_bytes;
}

static int grow(kt_reader *r, void **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	/* An eighth more, so a run of slightly growing frames reallocates
	 * rarely; no more, as the merge keeps one such buffer per thread
	 * (a page each would be 64 times a small chunk). */
	size_t n = (need + need / 8 + 63) & ~(size_t)63;
	void *p = kt__realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	kt__reader_account(r, (int64_t)(n - *cap));
	*buf = p;
	*cap = n;
	return 0;
}

/* Read @len bytes at @off into @dst, and up to @max if the file has them:
 * the count, or a negative code. */
static ssize_t read_at(kt_reader *r, uint8_t *dst, size_t len, size_t max, uint64_t off)
{
	size_t got = 0;
	while (got < max) {
		ssize_t n = pread(r->fd, dst + got, max - got, (off_t)(r->base + off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return got < len ? KT_ETRUNCATED : (ssize_t)got; /* the file shrank under us */
}

/*
 * The sequential pass reads through a window of KT__READ_WINDOW bytes, so
 * a file of small frames costs a read every 256 KiB rather than two a
 * frame.  Frames larger than the window, and frames read again out of
 * order (kt__reader_frame_at, whose events the merge takes over), are
 * read alone into frame_buf.
 */
#define KT__READ_WINDOW (256u << 10)

static int window_bytes(kt_reader *r, uint64_t off, size_t len, const uint8_t **out)
{
	if (off < r->win_off || off + len > r->win_off + r->win_len) {
		uint64_t left = r->size - off;
		size_t want = left < KT__READ_WINDOW ? (size_t)left : KT__READ_WINDOW;
		int rc = grow(r, (void **)&r->win, &r->win_cap, want);
		if (rc)
			return rc;
		r->win_len = 0;
		ssize_t n = read_at(r, r->win, len, want, off);
		if (n < 0)
			return (int)n;
		r->win_off = off;
		r->win_len = (size_t)n;
	}
	*out = r->win + (off - r->win_off);
	return 0;
}

/*
 * Point *out at @len bytes of the file at @off.  The caller has already
 * checked that [off, off+len) lies inside the file.
 */
static int get_bytes(kt_reader *r, uint64_t off, size_t len, const uint8_t **out)
{
	if (r->mem) {
		*out = r->mem + off;
		return 0;
	}
	if (len <= KT__READ_WINDOW && !r->rereading)
		return window_bytes(r, off, len, out);
	int rc = grow(r, (void **)&r->frame_buf, &r->frame_cap, len);
	if (rc)
		return rc;
	ssize_t n = read_at(r, r->frame_buf, len, len, off);
	if (n < 0)
		return (int)n;
	*out = r->frame_buf;
	return 0;
}

/* ---- header ---------------------------------------------------------- */

struct hcur {
	const uint8_t *p;
	size_t len, pos;
	uint64_t base; /* file offset of p[0] */
};

static int h_str(struct hcur *c, char **dst, const char **out, kt_reader_error *e,
		 const char *what)
{
	if (c->len - c->pos < 4)
		return fail(e, KT_EHEADER, c->base + c->pos, "header ends inside the length of %s", what);
	uint32_t n = kt__get32(c->p + c->pos);
	if (n > KT_MAX_STRING)
		return fail(e, KT_EHEADER, c->base + c->pos, "%s is %u bytes, over 65535", what, n);
	c->pos += 4;
	if (c->len - c->pos < n)
		return fail(e, KT_EHEADER, c->base + c->pos - 4, "%s runs past the header end", what);
	if (memchr(c->p + c->pos, 0, n))
		return fail(e, KT_EHEADER, c->base + c->pos, "%s holds a zero byte", what);
	memcpy(*dst, c->p + c->pos, n);
	(*dst)[n] = 0;
	*out = *dst;
	*dst += n + 1;
	c->pos += n;
	return 0;
}

static int parse_header(kt_reader *r, kt_reader_error *e)
{
	uint8_t pre[KT__PREAMBLE_LEN];
	const uint8_t *p = NULL;
	int rc;

	if (r->size == 0)
		return fail(e, KT_ETRUNCATED, 0, "the file is empty");
	size_t have = r->size < KT__PREAMBLE_LEN ? (size_t)r->size : KT__PREAMBLE_LEN;
	if ((rc = get_bytes(r, 0, have, &p)))
		return fail(e, rc, 0, "reading the preamble (%zu bytes)", have);
	memcpy(pre, p, have);
	if (memcmp(pre, KT__MAGIC, have < KT__MAGIC_LEN ? have : KT__MAGIC_LEN))
		return fail(e, KT_EMAGIC, 0, "the first bytes are not \\x89KTR\\r\\n\\x1a\\n");
	if (have < KT__PREAMBLE_LEN)
		return fail(e, KT_ETRUNCATED, r->size, "the file ends inside the preamble");
	uint32_t version = kt__get32(pre + KT__PRE_VERSION);
	if (version < KT_FORMAT_VERSION_MIN || version > KT_FORMAT_VERSION)
		return fail(e, KT_EVERSION, KT__PRE_VERSION, "format version %u; this reader reads versions %u to %u",
			    version, KT_FORMAT_VERSION_MIN, KT_FORMAT_VERSION);
	uint32_t hlen = kt__get32(pre + KT__PRE_HLEN);
	if (hlen < KT__HEADER_MIN || hlen > KT_MAX_HEADER)
		return fail(e, KT_EHEADER, KT__PRE_HLEN, "header_len %u outside [%u, %u]", hlen,
			    KT__HEADER_MIN, KT_MAX_HEADER);
	uint64_t sum_at = KT__PREAMBLE_LEN + kt__align8(hlen);
	r->first_frame = sum_at + 8;
	if (r->size < r->first_frame)
		return fail(e, KT_ETRUNCATED, r->size, "the file ends inside the header (%llu of %llu bytes)",
			    (unsigned long long)r->size, (unsigned long long)r->first_frame);
	if ((rc = get_bytes(r, 0, (size_t)r->first_frame, &p)))
		return fail(e, rc, 0, "reading the header (%llu bytes)",
			    (unsigned long long)r->first_frame);
	uint64_t want = kt__get64(p + sum_at);
	uint64_t got = kt__xxh3(p + KT__PRE_VERSION, (size_t)sum_at - KT__PRE_VERSION);
	if (want != got)
		return fail(e, KT_EHDRSUM, sum_at, "stored %016llx, computed %016llx",
			    (unsigned long long)want, (unsigned long long)got);
	for (uint64_t i = KT__PREAMBLE_LEN + hlen; i < sum_at; i++)
		if (p[i])
			return fail(e, KT_ERESERVED, i, "header pad byte is not zero");

	const uint8_t *b = p + KT__PREAMBLE_LEN;
	kt_header *h = &r->hdr;
	const uint64_t base = KT__PREAMBLE_LEN;
	h->format_version = kt__get32(b + KT__HDR_VERSION);
	if (h->format_version != version)
		return fail(e, KT_EHEADER, base + KT__HDR_VERSION, "header says version %u, preamble %u",
			    h->format_version, version);
	h->flags = kt__get32(b + KT__HDR_FLAGS);
	if (h->flags & ~KT_HDR_CAPTURE)
		return fail(e, KT_ERESERVED, base + KT__HDR_FLAGS, "unknown header flags 0x%x", h->flags);
	h->schema_hash = kt__get64(b + KT__HDR_SCHEMA);
	if (h->schema_hash != (version == 1 ? KT__SCHEMA_HASH_V1 : KT__SCHEMA_HASH))
		return fail(e, KT_EVERSION, base + KT__HDR_SCHEMA, "schema hash %016llx is not version %u's",
			    (unsigned long long)h->schema_hash, version);
	h->start_wall_ns = kt__get64(b + KT__HDR_WALL);
	h->start_mono_ns = kt__get64(b + KT__HDR_MONO);
	h->process_id = kt__get64(b + KT__HDR_PID);
	h->clock.source = b[KT__HDR_CLOCK];
	if (h->clock.source != KT_CLOCK_TSC && h->clock.source != KT_CLOCK_MONOTONIC)
		return fail(e, KT_EHEADER, base + KT__HDR_CLOCK, "clock source %u", h->clock.source);
	for (int i = KT__HDR_CLOCK_PAD; i < KT__HDR_TICK_HZ; i++)
		if (b[i])
			return fail(e, KT_ERESERVED, base + (uint64_t)i, "reserved header byte");
	h->clock.tick_hz = kt__get64(b + KT__HDR_TICK_HZ);
	if (h->clock.tick_hz == 0)
		return fail(e, KT_EHEADER, base + KT__HDR_TICK_HZ, "clock tick rate is 0");
	h->clock.ticks = kt__get64(b + KT__HDR_TICKS0);
	h->clock.mono_ns = kt__get64(b + KT__HDR_NS0);
	h->capture.ring_size = kt__get64(b + KT__HDR_RING);
	h->capture.overflow = b[KT__HDR_OVERFLOW];
	h->capture.codec = b[KT__HDR_CODEC];
	h->capture.io = b[KT__HDR_IO];
	if (b[KT__HDR_IO_PAD])
		return fail(e, KT_ERESERVED, base + KT__HDR_IO_PAD, "reserved header byte");
	if (h->capture.overflow > KT_OVERFLOW_BLOCK || h->capture.codec > max_codec(version) ||
	    h->capture.io > KT_IO_PWRITE)
		return fail(e, KT_EHEADER, base + KT__HDR_OVERFLOW, "capture option out of range");
	h->capture.codec_level = (int32_t)kt__get32(b + KT__HDR_LEVEL);
	h->capture.flush_period_ns = kt__get64(b + KT__HDR_FLUSH);
	h->capture.fsync_interval_ns = kt__get64(b + KT__HDR_FSYNC);
	h->capture.max_duration_ns = kt__get64(b + KT__HDR_MAX_DURATION);
	h->capture.max_bytes = kt__get64(b + KT__HDR_MAX_BYTES);
	h->epoch = kt__get64(b + KT__HDR_EPOCH);

	/* The strings can take no more room than the header body itself. */
	r->hdr_strings = kt__malloc(hlen);
	if (!r->hdr_strings)
		return fail(e, -ENOMEM, 0, "header strings (%u bytes)", hlen);
	kt__reader_account(r, hlen);
	char *dst = r->hdr_strings;
	struct hcur c = { b, hlen, KT__HEADER_FIXED, base };
	if ((rc = h_str(&c, &dst, &h->tool_version, e, "tool_version")) ||
	    (rc = h_str(&c, &dst, &h->workload, e, "workload")) ||
	    (rc = h_str(&c, &dst, &h->host, e, "host")) ||
	    (rc = h_str(&c, &dst, &h->run_id, e, "run_id")) ||
	    (rc = h_str(&c, &dst, &h->capture_id, e, "capture_id")))
		return rc;
	if (c.len - c.pos < 4)
		return fail(e, KT_EHEADER, base + c.pos, "header ends inside note_count");
	h->note_count = kt__get32(b + c.pos);
	if (h->note_count > KT_MAX_NOTES)
		return fail(e, KT_EHEADER, base + c.pos, "%u notes, over 1024", h->note_count);
	/* Each note takes at least its 4-byte length, so this bounds the array. */
	if (h->note_count > (c.len - c.pos - 4) / 4)
		return fail(e, KT_EHEADER, base + c.pos, "%u notes cannot fit", h->note_count);
	c.pos += 4;
	r->notes = kt__calloc(h->note_count ? h->note_count : 1, sizeof(*r->notes));
	if (!r->notes)
		return fail(e, -ENOMEM, 0, "header notes");
	kt__reader_account(r, (int64_t)((h->note_count ? h->note_count : 1) * sizeof(*r->notes)));
	for (uint32_t i = 0; i < h->note_count; i++)
		if ((rc = h_str(&c, &dst, &r->notes[i], e, "a note")))
			return rc;
	h->notes = r->notes;
	if (c.pos != c.len)
		return fail(e, KT_EHEADER, base + c.pos, "%zu bytes after the last note",
			    c.len - c.pos);
	r->pos = r->first_frame;
	return 0;
}

static int open_common(kt_reader *r, kt_reader **out, kt_reader_error *err)
{
	kt_reader_error local;
	kt_reader_error *e = err ? err : &local;

	memset(e, 0, sizeof(*e));
	int rc = parse_header(r, e);
	if (rc) {
		kt_reader_close(r);
		*out = NULL;
		return rc;
	}
	*out = r;
	return 0;
}

static kt_reader *reader_new(void)
{
	kt_reader *r = kt__calloc(1, sizeof(*r));
	if (r) {
		r->fd = -1;
		kt__idmap_init(&r->acct, sizeof(struct thread_acct));
	}
	return r;
}

/* What a file that is not a trace is, for the message. */
static const char *file_kind(mode_t mode)
{
	return S_ISFIFO(mode)	? "a FIFO or pipe"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISBLK(mode)	? "a block device"
	       : S_ISSOCK(mode) ? "a socket"
				: "not a regular file";
}

int kt_reader_open_fd(kt_reader **out, int fd, kt_reader_error *err)
{
	return kt__reader_open_fd_at(out, fd, 0, err);
}

/*
 * Open over @fd, which must be a regular file: the reader seeks (pread),
 * trusts the size fstat gave and must never wait for a writer, and only a
 * regular file gives all three.  @name is the path, for the message.
 */
static int open_fd(kt_reader **out, int fd, uint64_t base, const char *name,
		   kt_reader_error *err)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return fail(err, -errno, 0, "fstat failed");
	if (S_ISDIR(sb.st_mode))
		return fail(err, -EISDIR, 0, "a directory is not a trace");
	if (!S_ISREG(sb.st_mode))
		return fail(err, KT_ENOTFILE, 0, "%s%s%s", name ? name : "", name ? " is " : "",
			    file_kind(sb.st_mode));
	kt_reader *r = reader_new();
	if (!r)
		return fail(err, -ENOMEM, 0, "the reader");
	r->fd = fd;
	r->base = base;
	r->size = (uint64_t)sb.st_size > base ? (uint64_t)sb.st_size - base : 0;
	return open_common(r, out, err);
}

int kt__reader_open_fd_at(kt_reader **out, int fd, uint64_t base, kt_reader_error *err)
{
	kt_reader_error local;

	*out = NULL;
	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	return open_fd(out, fd, base, NULL, err);
}

int kt_reader_open(kt_reader **out, const char *path, kt_reader_error *err)
{
	kt_reader_error local;

	*out = NULL;
	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	/* O_NONBLOCK: opening a FIFO would wait for a writer.  The open
	 * returns at once, and open_fd() refuses what is not a file. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fail(err, -errno, 0, "cannot open %s", path);
	int rc = open_fd(out, fd, 0, path, err);
	if (rc) {
		close(fd);
		return rc;
	}
	/* A regular file ignores O_NONBLOCK; clear it all the same, so the
	 * fd says what it is. */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	(*out)->own_fd = 1;
	return 0;
}

int kt_reader_open_mem(kt_reader **out, const void *buf, size_t len, kt_reader_error *err)
{
	kt_reader_error local;

	*out = NULL;
	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	kt_reader *r = reader_new();
	if (!r)
		return fail(err, -ENOMEM, 0, "the reader");
	/* A zero-length buffer may come with a NULL pointer; any non-NULL
	 * address marks memory mode, and nothing is read from it. */
	r->mem = buf ? buf : (const uint8_t *)"";
	r->size = len;
	return open_common(r, out, err);
}

const kt_header *kt_reader_get_header(const kt_reader *r)
{
	return &r->hdr;
}

void kt_reader_close(kt_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	free(r->hdr_strings);
	free(r->notes);
	free(r->frame_buf);
	free(r->win);
	free(r->raw_buf);
	free(r->str_buf);
	kt__idmap_free(&r->acct);
	free(r->rows);
	kt__merge_free(r, r->merge);
	free(r);
}

void kt_reader_get_status(const kt_reader *r, kt_reader_status *st)
{
	*st = r->st;
	st->file_size = r->size;
}

const kt_reader_error *kt_reader_get_last_error(const kt_reader *r)
{
	return &r->err;
}

struct kt__merge *kt__reader_merge(kt_reader *r)
{
	if (!r->merge)
		r->merge = kt__merge_new(r);
	return r->merge;
}

int kt__reader_frame_at(kt_reader *r, uint64_t off, kt_trace_frame *f)
{
	uint64_t pos = r->pos;
	int done = r->done;
	kt_reader_status st = r->st;
	kt_reader_error err = r->err;

	r->pos = off;
	r->done = 0;
	r->st.error = 0;
	r->rereading = 1;
	int rc = kt_reader_next_frame(r, f);
	r->rereading = 0;
	uint64_t held = r->st.buffer_bytes, peak = r->st.peak_buffer_bytes;
	if (rc < 0)
		err = r->err; /* say why */
	else if (rc == 0) /* the pass found the whole frame there before */
		fail(&err, rc = KT_ETRUNCATED, off, "the file shrank while it was read");
	r->pos = pos;
	r->done = done;
	r->st = st;
	r->st.buffer_bytes = held;
	r->st.peak_buffer_bytes = peak;
	r->err = err;
	return rc < 0 ? rc : 0;
}

int kt__reader_fail(kt_reader *r, int code, uint64_t off, const char *detail)
{
	return fail(&r->err, code, off, "%s", detail);
}

int kt_reader_rewind(kt_reader *r)
{
	kt__merge_free(r, r->merge);
	r->merge = NULL;
	return kt__reader_restart(r);
}

const uint8_t *kt__reader_steal_events(kt_reader *r, const kt_trace_frame *f, uint8_t **buf,
				       size_t *cap)
{
	const uint8_t *ev = f->u.chunk.events;
	uint8_t **owner;
	size_t *owner_cap;

	if (r->raw_buf && ev == r->raw_buf) {
		owner = &r->raw_buf;
		owner_cap = &r->raw_cap;
	} else if (r->frame_buf && ev >= r->frame_buf && ev < r->frame_buf + r->frame_cap) {
		owner = &r->frame_buf;
		owner_cap = &r->frame_cap;
	} else {
		return ev; /* the caller's memory (a memory reader): stable already */
	}
	/* Trade buffers: the caller's old one becomes the reader's scratch. */
	size_t at = (size_t)(ev - *owner);
	uint8_t *mine = *owner;
	size_t mine_cap = *owner_cap;
	*owner = *buf;
	*owner_cap = *cap;
	*buf = mine;
	*cap = mine_cap;
	return mine + at;
}

void kt__reader_set_headers_only(kt_reader *r, int on)
{
	r->headers_only = on;
}

int kt_reader_skip_events(kt_reader *r, int on)
{
	kt__reader_set_headers_only(r, on != 0);
	return 0;
}

int kt__reader_restart(kt_reader *r)
{
	r->pos = r->first_frame;
	r->done = 0;
	kt__idmap_clear(&r->acct);
	r->acct_hint = 0;
	r->bytes_raw = r->bytes_stored = 0;
	uint64_t held = r->st.buffer_bytes, peak = r->st.peak_buffer_bytes;
	memset(&r->st, 0, sizeof(r->st));
	r->st.buffer_bytes = held;
	r->st.peak_buffer_bytes = peak;
	memset(&r->err, 0, sizeof(r->err));
	return 0;
}

/* ---- per-thread accounting ------------------------------------------- */

/* The accounting of thread @tid into *@out: 0, KT_ETOOBIG past
 * KT_MAX_SUMMARY_THREADS threads, or -ENOMEM. */
static int acct_get(kt_reader *r, uint32_t tid, struct thread_acct **out)
{
	struct kt__idmap *m = &r->acct;
	/* Chunks of one thread tend to come in runs: try the last hit first. */
	if (r->acct_hint < m->len) {
		struct thread_acct *a = KT__IDMAP_AT(m, struct thread_acct, r->acct_hint);
		if (a->thread_id == tid) {
			*out = a;
			return 0;
		}
	}
	int rc = kt__idmap_get(m, tid, KT_MAX_SUMMARY_THREADS, (void **)out);
	if (rc < 0)
		return rc;
	r->acct_hint = (size_t)((uint8_t *)*out - m->items) / sizeof(**out);
	if (rc > 0) {
		size_t bytes = kt__idmap_bytes(m);
		kt__reader_account(r, (int64_t)bytes - (int64_t)r->acct_bytes);
		r->acct_bytes = bytes;
	}
	return 0;
}

/* ---- frames ---------------------------------------------------------- */

static int nonzero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 1;
	return 0;
}

static int copy_str(kt_reader *r, const uint8_t *s, uint32_t n, const char **out)
{
	if (grow(r, (void **)&r->str_buf, &r->str_cap, (size_t)n + 1))
		return -ENOMEM;
	memcpy(r->str_buf, s, n);
	r->str_buf[n] = 0;
	*out = r->str_buf;
	return 0;
}

#define BAD(code, off, ...) \
	(snprintf(msg, sizeof(msg), __VA_ARGS__), rfail(r, (code), (off), msg))

static int decode_chunk(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			kt_trace_frame *f)
{
	char msg[160];

	if (blen < KT__CHUNK_FIXED)
		return BAD(KT_EFRAME, off, "chunk body is %u bytes, under %u", blen, KT__CHUNK_FIXED);
	uint32_t tid = kt__get32(b + KT__CHUNK_TID);
	uint8_t codec = b[KT__CHUNK_CODEC];
	uint64_t seq = kt__get64(b + KT__CHUNK_SEQ);
	uint32_t count = kt__get32(b + KT__CHUNK_COUNT);
	uint32_t raw_len = kt__get32(b + KT__CHUNK_RAW);
	uint64_t first = kt__get64(b + KT__CHUNK_FIRST), last = kt__get64(b + KT__CHUNK_LAST);
	uint32_t stored = blen - KT__CHUNK_FIXED;
	const uint8_t *payload = b + KT__CHUNK_FIXED;
	const uint8_t *events = NULL;
	uint64_t boff = off + KT__FRAME_HEAD;

	if (tid == 0)
		return BAD(KT_EFRAME, boff + KT__CHUNK_TID, "chunk thread_id is 0");
	if (codec > max_codec(r->hdr.format_version))
		return BAD(KT_ECODEC, boff + KT__CHUNK_CODEC, "codec %u (version %u knows: 0 none, 1 lz4%s)", codec,
			   r->hdr.format_version, r->hdr.format_version > 1 ? ", 2 lz4 delta" : "");
	if (nonzero(b + KT__CHUNK_PAD, KT__CHUNK_SEQ - KT__CHUNK_PAD))
		return BAD(KT_ERESERVED, boff + KT__CHUNK_PAD, "chunk reserved bytes");
	if (count == 0)
		return BAD(KT_ECOUNT, boff + KT__CHUNK_COUNT, "event_count is 0");
	if (raw_len > KT_MAX_RAW)
		return BAD(KT_ETOOBIG, boff + KT__CHUNK_RAW, "raw_len %u over the 64 MiB limit", raw_len);
	if (raw_len < KT_REC_HEAD || raw_len % 8)
		return BAD(KT_ERAWLEN, boff + KT__CHUNK_RAW, "raw_len %u is not a multiple of 8 of at least 16",
			   raw_len);
	if (r->headers_only)
		goto counted; /* the checksum held; the payload is checked on load */
	if (codec == KT_CODEC_NONE) {
		if (stored != raw_len)
			return BAD(KT_ERAWLEN, boff + KT__CHUNK_RAW, "raw_len %u but %u payload bytes", raw_len,
				   stored);
		events = payload;
	} else {
		if (stored == 0 || (uint64_t)raw_len > 255ull * stored + 64)
			return BAD(KT_ERAWLEN, boff + KT__CHUNK_RAW,
				   "raw_len %u is more than %u LZ4 bytes can expand to", raw_len,
				   stored);
		if (grow(r, (void **)&r->raw_buf, &r->raw_cap, raw_len))
			return rfail(r, -ENOMEM, off, "decoded chunk buffer");
		int n = LZ4_decompress_safe((const char *)payload, (char *)r->raw_buf,
					    (int)stored, (int)raw_len);
		if (n != (int)raw_len)
			return BAD(KT_ERAWLEN, boff + KT__CHUNK_RAW,
				   "lz4 payload does not decode to raw_len %u bytes", raw_len);
		events = r->raw_buf;
	}

	uint32_t n = 0;
	uint64_t ev_first = 0, ev_last = 0, ts = 0;
	int delta = codec == KT_CODEC_LZ4_DELTA; /* events is then our raw_buf */
	for (size_t at = 0; at < raw_len; n++) {
		const uint8_t *p = events + at;
		if (delta && raw_len - at >= KT_REC_TS + 8) {
			/* Each record stored its timestamp minus the one before
			 * (SPEC §4.1); wrapping sums undo wrapping differences. */
			ts += kt__get64(p + KT_REC_TS);
			kt__put64(r->raw_buf + at + KT_REC_TS, ts);
		}
		long sz = kt__event_check_inline(p, raw_len - at);
		if (sz < 0)
			return BAD(KT_EEVENT, off, "chunk of thread %u, event %u at payload byte %zu",
				   tid, n, at);
		if (n == 0)
			ev_first = kt__get64(p + KT_REC_TS);
		ev_last = kt__get64(p + KT_REC_TS);
		at += (size_t)sz;
	}
	if (n != count)
		return BAD(KT_ECOUNT, boff + KT__CHUNK_COUNT, "event_count %u but the payload holds %u", count, n);
	if (ev_first != first || ev_last != last)
		return BAD(KT_EFRAME, boff + KT__CHUNK_FIRST, "first/last ts do not match the events");
counted:

	if (r->rereading)
		goto out;
	struct thread_acct *a;
	int rc = acct_get(r, tid, &a);
	if (rc == -ENOMEM)
		return rfail(r, rc, off, "the table of threads");
	if (rc)
		return BAD(KT_ETOOBIG, boff + KT__CHUNK_TID, "more than %u threads", KT_MAX_SUMMARY_THREADS);
	if (a->has_seq && seq <= a->last_seq)
		return BAD(KT_EORDER, boff + KT__CHUNK_SEQ, "thread %u chunk_seq %llu after %llu", tid,
			   (unsigned long long)seq, (unsigned long long)a->last_seq);
	a->has_seq = 1;
	a->last_seq = seq;
	a->written += count;
	r->bytes_raw += raw_len;
	r->bytes_stored += stored;
	r->st.chunks++;
	r->st.events += count;
out:
	f->u.chunk.thread_id = tid;
	f->u.chunk.codec = codec;
	f->u.chunk.seq = seq;
	f->u.chunk.event_count = count;
	f->u.chunk.raw_len = raw_len;
	f->u.chunk.stored_len = stored;
	f->u.chunk.first_ts = first;
	f->u.chunk.last_ts = last;
	f->u.chunk.events = events;
	return 0;
}

static int decode_summary(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			  kt_trace_frame *f)
{
	char msg[160];
	kt_file_summary *s = &f->u.summary;
	uint64_t boff = off + KT__FRAME_HEAD;

	if (blen < KT__SUMMARY_FIXED)
		return BAD(KT_EFRAME, off, "summary body is %u bytes, under %u", blen,
			   KT__SUMMARY_FIXED);
	s->flags = kt__get32(b + KT__SUM_FLAGS);
	s->thread_count = kt__get32(b + KT__SUM_THREADS);
	if (s->thread_count > KT_MAX_SUMMARY_THREADS ||
	    blen != kt__summary_body_len(s->thread_count))
		return BAD(KT_EFRAME, boff + KT__SUM_THREADS, "thread_count %u does not fit a %u-byte body",
			   s->thread_count, blen);
	if (s->flags & ~(KT_SUMMARY_RECOVERED | KT_SUMMARY_IO_ERROR))
		return BAD(KT_ERESERVED, boff + KT__SUM_FLAGS, "unknown summary flags 0x%x", s->flags);
	s->events_written = kt__get64(b + KT__SUM_WRITTEN);
	s->events_dropped = kt__get64(b + KT__SUM_DROPPED);
	s->chunks = kt__get64(b + KT__SUM_CHUNKS);
	s->bytes_raw = kt__get64(b + KT__SUM_RAW);
	s->bytes_stored = kt__get64(b + KT__SUM_STORED);
	s->end_wall_ns = kt__get64(b + KT__SUM_END_WALL);
	s->end_mono_ns = kt__get64(b + KT__SUM_END_MONO);
	s->clock_ticks1 = kt__get64(b + KT__SUM_TICKS1);
	s->clock_ns1 = kt__get64(b + KT__SUM_NS1);
	s->io_backend = b[KT__SUM_IO];
	if (nonzero(b + KT__SUM_IO_PAD, KT__SUM_IO_ERROR - KT__SUM_IO_PAD))
		return BAD(KT_ERESERVED, boff + KT__SUM_IO_PAD, "summary reserved bytes");
	if (s->io_backend > KT_IO_PWRITE)
		return BAD(KT_EFRAME, boff + KT__SUM_IO, "io_backend %u", s->io_backend);
	s->io_error = (int32_t)kt__get32(b + KT__SUM_IO_ERROR);

	if (s->events_written != r->st.events || s->chunks != r->st.chunks ||
	    s->bytes_raw != r->bytes_raw || s->bytes_stored != r->bytes_stored ||
	    s->events_dropped != r->st.dropped)
		return BAD(KT_ESUMMARY, boff + KT__SUM_WRITTEN,
			   "totals %llu written/%llu dropped/%llu chunks; the file holds %llu/%llu/%llu",
			   (unsigned long long)s->events_written,
			   (unsigned long long)s->events_dropped, (unsigned long long)s->chunks,
			   (unsigned long long)r->st.events, (unsigned long long)r->st.dropped,
			   (unsigned long long)r->st.chunks);
	if (s->thread_count != r->acct.len)
		return BAD(KT_ESUMMARY, boff + KT__SUM_THREADS, "%u thread rows; the file has %zu threads",
			   s->thread_count, r->acct.len);
	free(r->rows);
	kt__reader_account(r, -(int64_t)r->rows_bytes);
	r->rows_bytes = (s->thread_count ? s->thread_count : 1) * sizeof(*r->rows);
	r->rows = kt__calloc(1, r->rows_bytes);
	if (!r->rows) {
		r->rows_bytes = 0;
		return rfail(r, -ENOMEM, off, "the summary's rows");
	}
	kt__reader_account(r, (int64_t)r->rows_bytes);
	/* The rows come in thread_id order; so does the table, once sorted.
	 * The summary is the last frame: no thread is added after it. */
	kt__idmap_sort(&r->acct);
	r->acct_hint = 0;
	const uint8_t *row = b + KT__SUMMARY_FIXED;
	for (uint32_t i = 0; i < s->thread_count; i++, row += KT__SUMMARY_ROW) {
		uint64_t roff = boff + KT__SUMMARY_FIXED + (uint64_t)i * KT__SUMMARY_ROW;
		kt_summary_thread *t = &r->rows[i];
		t->thread_id = kt__get32(row + KT__ROW_TID);
		t->written = kt__get64(row + KT__ROW_WRITTEN);
		t->dropped = kt__get64(row + KT__ROW_DROPPED);
		if (kt__get32(row + KT__ROW_PAD))
			return BAD(KT_ERESERVED, roff + KT__ROW_PAD, "summary row reserved bytes");
		const struct thread_acct *a = KT__IDMAP_AT(&r->acct, struct thread_acct, i);
		if (t->thread_id != a->thread_id || t->written != a->written ||
		    t->dropped != a->dropped)
			return BAD(KT_ESUMMARY, roff,
				   "row %u says thread %u wrote %llu dropped %llu; the file has thread %u %llu/%llu",
				   i, t->thread_id, (unsigned long long)t->written,
				   (unsigned long long)t->dropped, a->thread_id,
				   (unsigned long long)a->written, (unsigned long long)a->dropped);
	}
	s->threads = r->rows;
	return 0;
}

static int decode_body(kt_reader *r, uint64_t off, uint8_t kind, const uint8_t *b,
		       uint32_t blen, kt_trace_frame *f)
{
	char msg[160];
	uint64_t boff = off + KT__FRAME_HEAD;

	switch (kind) {
	case KT_FRAME_CHUNK:
		return decode_chunk(r, off, b, blen, f);
	case KT_FRAME_NAME: {
		if (blen < KT__NAME_FIXED)
			return BAD(KT_EFRAME, off, "name body is %u bytes, under %u", blen,
				   KT__NAME_FIXED);
		uint32_t id = kt__get32(b + KT__NAME_ID), len = kt__get32(b + KT__NAME_LEN);
		if (id == 0)
			return BAD(KT_EFRAME, boff + KT__NAME_ID, "name id 0");
		if (len == 0 || len > KT_MAX_STRING || len != blen - KT__NAME_FIXED)
			return BAD(KT_EFRAME, boff + KT__NAME_LEN, "name length %u in a %u-byte body",
				   len, blen);
		if (memchr(b + KT__NAME_FIXED, 0, len))
			return BAD(KT_EFRAME, boff + KT__NAME_FIXED, "name holds a zero byte");
		f->u.name.id = id;
		f->u.name.len = len;
		return copy_str(r, b + KT__NAME_FIXED, len, &f->u.name.str) ? rfail(r, -ENOMEM, off, "a name")
							       : 0;
	}
	case KT_FRAME_THREAD: {
		if (blen < KT__THREAD_FIXED)
			return BAD(KT_EFRAME, off, "thread body is %u bytes, under %u", blen,
				   KT__THREAD_FIXED);
		uint32_t tid = kt__get32(b + KT__THREAD_TID);
		uint32_t len = kt__get32(b + KT__THREAD_NAME_LEN);
		if (tid == 0)
			return BAD(KT_EFRAME, boff + KT__THREAD_TID, "thread_id 0");
		if (len > KT_MAX_STRING || len != blen - KT__THREAD_FIXED)
			return BAD(KT_EFRAME, boff + KT__THREAD_NAME_LEN,
				   "thread name length %u in a %u-byte body", len, blen);
		if (kt__get32(b + KT__THREAD_PAD))
			return BAD(KT_ERESERVED, boff + KT__THREAD_PAD, "thread entry reserved bytes");
		if (memchr(b + KT__THREAD_FIXED, 0, len))
			return BAD(KT_EFRAME, boff + KT__THREAD_FIXED, "thread name holds a zero byte");
		f->u.thread.thread_id = tid;
		f->u.thread.os_tid = kt__get32(b + KT__THREAD_OS_TID);
		f->u.thread.name_len = len;
		return copy_str(r, b + KT__THREAD_FIXED, len, &f->u.thread.name)
			       ? rfail(r, -ENOMEM, off, "a thread name")
			       : 0;
	}
	case KT_FRAME_DROP: {
		if (blen != KT__DROP_BODY)
			return BAD(KT_EFRAME, off, "drop body is %u bytes, not %u", blen, KT__DROP_BODY);
		uint32_t tid = kt__get32(b + KT__DROP_TID);
		uint64_t count = kt__get64(b + KT__DROP_COUNT);
		if (tid == 0)
			return BAD(KT_EFRAME, boff + KT__DROP_TID, "drop thread_id 0");
		if (kt__get32(b + KT__DROP_PAD))
			return BAD(KT_ERESERVED, boff + KT__DROP_PAD, "drop reserved bytes");
		if (count == 0)
			return BAD(KT_EFRAME, boff + KT__DROP_COUNT, "drop count 0");
		struct thread_acct *a;
		int rc = acct_get(r, tid, &a);
		if (rc == -ENOMEM)
			return rfail(r, rc, off, "the table of threads");
		if (rc)
			return BAD(KT_ETOOBIG, boff + KT__DROP_TID, "more than %u threads",
				   KT_MAX_SUMMARY_THREADS);
		a->dropped += count;
		r->st.dropped += count;
		f->u.drop.thread_id = tid;
		f->u.drop.count = count;
		f->u.drop.first_ts = kt__get64(b + KT__DROP_FIRST);
		f->u.drop.last_ts = kt__get64(b + KT__DROP_LAST);
		return 0;
	}
	case KT_FRAME_SUMMARY:
		return decode_summary(r, off, b, blen, f);
	default:
		return 1; /* unknown kind: skip */
	}
}

int kt_reader_next_frame(kt_reader *r, kt_trace_frame *f)
{
	char msg[160];
	const uint8_t *p;
	int rc;

	for (;;) {
		if (r->st.error)
			return r->st.error;
		if (r->done)
			return 0;
		uint64_t off = r->pos;
		uint64_t left = r->size - off;
		if (left < KT__FRAME_HEAD) {
			/* Zero bytes left without a summary is a cut at a frame
			 * boundary; a few bytes left is a cut inside a head. */
			r->st.truncated = 1;
			r->st.valid_end = off;
			r->done = 1;
			snprintf(msg, sizeof(msg), "no session summary; %llu bytes of a frame head",
				 (unsigned long long)left);
			fail(&r->err, KT_ETRUNCATED, off, "%s", msg);
			return 0;
		}
		if ((rc = get_bytes(r, off, KT__FRAME_HEAD, &p)))
			return rfail(r, rc, off, "reading a frame head");
		uint32_t blen = kt__get32(p + KT__FRAME_LEN);
		uint8_t kind = p[KT__FRAME_KIND], flags = p[KT__FRAME_FLAGS];
		uint16_t check = kt__get16(p + KT__FRAME_CHECK);
		if (check != kt__head_check(p))
			return BAD(KT_EFRAMEHEAD, off, "head check %04x, computed %04x (length %u, kind %u)",
				   check, kt__head_check(p), blen, kind);
		if (blen > KT_MAX_FRAME_BODY)
			return BAD(KT_EFRAMELEN, off, "body_len %u over the 64 MiB limit", blen);
		uint64_t total = kt__frame_size(blen);
		if (total > left) {
			r->st.truncated = 1;
			r->st.valid_end = off;
			r->done = 1;
			fail(&r->err, KT_ETRUNCATED, off,
			     "a %llu-byte %s frame is cut after %llu bytes",
			     (unsigned long long)total, kt_frame_kind_name(kind),
			     (unsigned long long)left);
			return 0;
		}
		if ((rc = get_bytes(r, off, (size_t)total, &p)))
			return rfail(r, rc, off, "reading a frame");
		size_t padded = KT__FRAME_HEAD + kt__align8(blen);
		uint64_t want = kt__get64(p + padded), got = kt__xxh3(p, padded);
		if (want != got)
			return BAD(KT_ECHECKSUM, off, "%s frame: stored %016llx, computed %016llx",
				   kt_frame_kind_name(kind), (unsigned long long)want,
				   (unsigned long long)got);
		if (kt__frame_kind_known(kind) && flags)
			return BAD(KT_ERESERVED, off + KT__FRAME_FLAGS, "frame flags 0x%x", flags);
		if (nonzero(p + KT__FRAME_HEAD + blen, padded - KT__FRAME_HEAD - blen))
			return BAD(KT_ERESERVED, off + KT__FRAME_HEAD + blen, "frame pad not zero");

		memset(f, 0, sizeof(*f));
		f->offset = off;
		f->body_len = blen;
		f->kind = kind;
		rc = decode_body(r, off, kind, p + KT__FRAME_HEAD, blen, f);
		if (rc < 0)
			return rc;
		r->pos = off + total;
		r->st.valid_end = r->pos;
		if (rc == 1) {
			r->st.unknown_frames++;
			continue;
		}
		r->st.frames++;
		if (kind == KT_FRAME_SUMMARY) {
			r->st.complete = 1;
			r->done = 1;
			if (r->pos != r->size) {
				/* Report the summary first; the next call reports
				 * what follows it. */
				snprintf(msg, sizeof(msg), "%llu bytes follow the summary",
					 (unsigned long long)(r->size - r->pos));
				r->st.error = KT_ETRAILING;
				r->st.error_offset = r->pos;
				fail(&r->err, KT_ETRAILING, r->pos, "%s", msg);
			}
		}
		return 1;
	}
}

void kt_chunk_iter_init(kt_chunk_iter *it, const kt_trace_frame *f)
{
	if (f->kind != KT_FRAME_CHUNK || !f->u.chunk.events) {
		it->pos = it->end = NULL;
		it->thread_id = 0;
		return;
	}
	it->pos = f->u.chunk.events;
	it->end = f->u.chunk.events + f->u.chunk.raw_len;
	it->thread_id = f->u.chunk.thread_id;
}

int kt_chunk_next(kt_chunk_iter *it, kt_event *ev)
{
	return kt__chunk_next(it, ev);
}

void kt__conv_init(struct kt__conv *cv, const kt_clock_calibration *c, const kt_file_summary *stop)
{
	cv->t0 = c->ticks;
	cv->ns0 = c->mono_ns;
	cv->num = 1000000000u;
	cv->den = c->tick_hz ? c->tick_hz : 1;
	if (stop && stop->clock_ticks1 > c->ticks && stop->clock_ns1 >= c->mono_ns) {
		cv->num = stop->clock_ns1 - c->mono_ns;
		cv->den = stop->clock_ticks1 - c->ticks;
	}
	cv->ratio = (double)cv->num / (double)cv->den;
}

/*
 * floor(dt * num / den), exactly, without a 128-bit division in the common
 * case: a double-precision estimate, then integer corrections (products
 * only), which settle in a step or two; far off, the division after all.
 * Saturates at UINT64_MAX.
 */
static uint64_t conv_scale(const struct kt__conv *cv, uint64_t dt)
{
	unsigned __int128 x = (unsigned __int128)dt * cv->num;
	if ((uint64_t)(x >> 64) >= cv->den)
		return UINT64_MAX;
	double est = (double)dt * cv->ratio;
	uint64_t q = est >= 18446744073709549568.0 ? UINT64_MAX - 1 : (uint64_t)est;
	unsigned __int128 qd = (unsigned __int128)q * cv->den;
	for (int i = 0; i < 4; i++) {
		if (qd > x) {
			q--;
			qd -= cv->den;
		} else if (x - qd >= cv->den) {
			q++;
			qd += cv->den;
		} else {
			return q;
		}
	}
	return (uint64_t)(x / cv->den);
}

uint64_t kt__conv_apply(const struct kt__conv *cv, uint64_t ticks)
{
	if (ticks >= cv->t0) {
		uint64_t add = conv_scale(cv, ticks - cv->t0);
		return add > UINT64_MAX - cv->ns0 ? UINT64_MAX : cv->ns0 + add;
	}
	/* Before the calibration point: rare, so the plain way, truncating
	 * toward zero as C division does. */
	unsigned __int128 back = (unsigned __int128)(cv->t0 - ticks) * cv->num / cv->den;
	return back >= cv->ns0 ? 0 : cv->ns0 - (uint64_t)back;
}

uint64_t kt_ticks_to_ns(const kt_clock_calibration *c, const kt_file_summary *stop,
			uint64_t ticks)
{
	struct kt__conv cv;
	kt__conv_init(&cv, c, stop);
	return kt__conv_apply(&cv, ticks);
}

const char *kt_event_type_name(unsigned type)
{
	switch (type) {
#define KT__EV_NAME(code, name, text, payload, max_flags) \
	case code:                                        \
		return text;
		KT_EVENT_TYPES(KT__EV_NAME)
#undef KT__EV_NAME
	default:
		return "unknown";
	}
}

const char *kt_frame_kind_name(unsigned kind)
{
	switch (kind) {
#define KT__FRAME_NAME(code, name, text) \
	case code:                       \
		return text;
		KT_FRAME_KINDS(KT__FRAME_NAME)
#undef KT__FRAME_NAME
	default:
		return "unknown";
	}
}

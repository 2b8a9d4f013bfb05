/*
 * format/reader_impl.h - private to the reader's files: the reader object
 * (reader.c: opening, reading bytes, accounting), its header parser
 * (reader_header.c) and its frame decoder (reader_frame.c).  Nothing
 * outside those three includes it; the rest of katra sees the reader
 * through katra/reader.h and format/reader_internal.h.
 */
#ifndef KATRA_FORMAT_READER_IMPL_H
#define KATRA_FORMAT_READER_IMPL_H

#include <stdarg.h>

#include <katra/reader.h>
#include "format/compact.h"
#include "format/format.h"
#include "format/reader_internal.h"

/* One thread's accounting, kept to check the summary against the file. */
struct kt__thread_acct {
	uint32_t thread_id;
	int has_seq;
	uint64_t last_seq;
	int has_ts;
	uint64_t last_ts;  /* of its last chunk so far */
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
	void *dec[KT__CODEC_TABLES]; /* codec KT_CODEC_COMPACT + i's decoder
				      * (kt__codec_of()), made on first use */
	size_t dec_bytes;      /* both decoders' memory, counted in st.buffer_bytes */
	char *str_buf;         /* a name or thread name plus NUL */
	size_t str_cap;

	struct kt__idmap acct;    /* struct kt__thread_acct, by thread_id */
	size_t acct_hint;
	size_t acct_bytes;        /* of acct, counted in st.buffer_bytes */
	uint64_t bytes_raw, bytes_stored;
	kt_summary_thread *rows;  /* summary rows handed to the caller */
	size_t rows_bytes;

	kt_reader_status st;
	uint64_t ts_back;          /* kt__reader_ts_backwards() */
	uint64_t ts_back_off;
	kt_reader_error err;
	int rereading;             /* kt__reader_frame_at(): skip accounting */
	int headers_only;          /* kt__reader_set_headers_only() */
	int salvage;               /* kt_reader_set_salvage() */
	kt_reader_skipped skipped; /* what salvage skipped this pass */
	int filtered;              /* kt_reader_set_filter() */
	kt_reader_filter filter;
	struct kt__merge *merge;   /* kt_reader_next() state */
};

/* Fill @e with @code at @off and the message "offset N: what: detail".
 * Return: @code. */
int kt__rd_fail(kt_reader_error *e, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int kt__rd_vfail(kt_reader_error *e, int code, uint64_t off, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* kt__rd_fail() into the reader's own error, which also ends its pass
 * with @code as the sticky status.  Return: @code. */
int kt__rd_stop(kt_reader *r, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* SPEC §4.10: a process entry (format/process.c) into @f: 0 or the
 * code kt__rd_stop() set. */
int kt__rd_decode_process(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			  kt_trace_frame *f);
/* SPEC §4.11, §4.12: stack and map entries (format/stack.c). */
int kt__rd_decode_stack(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			kt_trace_frame *f);
int kt__rd_decode_map(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
		      kt_trace_frame *f);
/* A track entry's body (SPEC §4.9, format/track.c) into @f: 0 or the
 * code kt__rd_stop() set. */
int kt__rd_decode_track(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			kt_trace_frame *f);

/* An entry whose body ends in two strings of @a and @b bytes after
 * @fixed bytes (a call site's file and function, a process's name and
 * command line): each length is bounded before the two are added, and
 * their sum must be the rest of the @blen-byte body, so nothing is sized
 * by them beyond it.  @at is the first length's offset in the file, @what
 * names the entry in the message.  0 or the code kt__rd_stop() set. */
int kt__rd_two_lengths(kt_reader *r, uint64_t at, uint32_t a, uint32_t b, uint32_t blen,
		       uint32_t fixed, const char *what);

/* Copies the @a and @b bytes at @s into the reader's string buffer, each
 * ended by a zero byte, and points *@sa and *@sb at them (valid until the
 * next frame).  The caller has checked the lengths
 * (kt__rd_two_lengths()).  0 or the code kt__rd_stop() set. */
int kt__rd_two_strings(kt_reader *r, uint64_t off, const uint8_t *s, uint32_t a, uint32_t b,
		       const char *what, const char **sa, const char **sb);

/* The @n bytes at @s, at file offset @at of the frame at @off, as the
 * @what of the frame (a name, a thread's name, a map's path): a copy
 * ended by a zero byte in the reader's string buffer, *@out pointed at
 * it (valid until the next frame).  A zero byte among them is
 * KT_EFRAME.  The caller has bounded @n by the body.  0 or the code
 * kt__rd_stop() set. */
int kt__rd_body_str(kt_reader *r, uint64_t off, const uint8_t *s, uint32_t n, uint64_t at,
		    const char *what, const char **out);

/* Make *@buf (of *@cap bytes, counted in the reader's accounting) hold at
 * least @need bytes.  0 or -ENOMEM. */
int kt__rd_grow(kt_reader *r, void **buf, size_t *cap, size_t need);

/* Point *@out at @len bytes of the file at @off, which the caller has
 * shown lie inside it.  0 or a negative code. */
int kt__rd_bytes(kt_reader *r, uint64_t off, size_t len, const uint8_t **out);

/* Read and check the preamble and header into r->hdr; r->pos is then the
 * first frame.  0, or a negative code with @e filled. */
int kt__rd_parse_header(kt_reader *r, kt_reader_error *e);

#endif /* KATRA_FORMAT_READER_IMPL_H */

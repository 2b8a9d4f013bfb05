/*
 * The reader object: opening a trace (file, fd or memory), reading its
 * bytes through a read-ahead window, the accounting of what it holds, and
 * the entry points merge.c and rewrite.c use to read frames again.  The
 * header is parsed in reader_header.c and frames in reader_frame.c.
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

#include <katra/reader.h>
#include "format/compact.h"
#include "format/reader_impl.h"

int kt__rd_vfail(kt_reader_error *e, int code, uint64_t off, const char *fmt, va_list ap)
{
	char detail[160];

	vsnprintf(detail, sizeof(detail), fmt, ap);
	e->code = code;
	e->offset = off;
	/* libc says "Cannot allocate memory"; say what it means here. */
	snprintf(e->message, sizeof(e->message), "offset %llu: %s: %s",
		 (unsigned long long)off, code == -ENOMEM ? "out of memory" : kt_strerror(code),
		 detail);
	return code;
}

int kt__rd_fail(kt_reader_error *e, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kt__rd_vfail(e, code, off, fmt, ap);
	va_end(ap);
	return code;
}

int kt__rd_stop(kt_reader *r, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	r->st.error = code;
	r->st.error_offset = off;
	r->done = 1;
	va_start(ap, fmt);
	kt__rd_vfail(&r->err, code, off, fmt, ap);
	va_end(ap);
	return code;
}

void kt__reader_account(kt_reader *r, int64_t delta)
{
	r->st.buffer_bytes += (uint64_t)delta;
	if (r->st.buffer_bytes > r->st.peak_buffer_bytes)
		r->st.peak_buffer_bytes = r->st.buffer_bytes;
}

int kt__rd_grow(kt_reader *r, void **buf, size_t *cap, size_t need)
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
		int rc = kt__rd_grow(r, (void **)&r->win, &r->win_cap, want);
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

int kt__rd_bytes(kt_reader *r, uint64_t off, size_t len, const uint8_t **out)
{
	if (r->mem) {
		*out = r->mem + off;
		return 0;
	}
	if (len <= KT__READ_WINDOW && !r->rereading)
		return window_bytes(r, off, len, out);
	int rc = kt__rd_grow(r, (void **)&r->frame_buf, &r->frame_cap, len);
	if (rc)
		return rc;
	ssize_t n = read_at(r, r->frame_buf, len, len, off);
	if (n < 0)
		return (int)n;
	*out = r->frame_buf;
	return 0;
}

static int open_common(kt_reader *r, kt_reader **out, kt_reader_error *err)
{
	kt_reader_error local;
	kt_reader_error *e = err ? err : &local;

	memset(e, 0, sizeof(*e));
	int rc = kt__rd_parse_header(r, e);
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
		kt__idmap_init(&r->acct, sizeof(struct kt__thread_acct));
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

int kt_reader_open_fd(int fd, kt_reader_error *err, kt_reader **out)
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
		return kt__rd_fail(err, -errno, 0, "fstat failed");
	if (S_ISDIR(sb.st_mode))
		return kt__rd_fail(err, -EISDIR, 0, "a directory is not a trace");
	if (!S_ISREG(sb.st_mode))
		return kt__rd_fail(err, KT_ENOTFILE, 0, "%s%s%s", name ? name : "", name ? " is " : "",
			    file_kind(sb.st_mode));
	kt_reader *r = reader_new();
	if (!r)
		return kt__rd_fail(err, -ENOMEM, 0, "the reader");
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

int kt_reader_open(const char *path, kt_reader_error *err, kt_reader **out)
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
		return kt__rd_fail(err, -errno, 0, "cannot open %s", path);
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

int kt_reader_open_mem(const void *buf, size_t len, kt_reader_error *err, kt_reader **out)
{
	kt_reader_error local;

	*out = NULL;
	if (!err)
		err = &local;
	memset(err, 0, sizeof(*err));
	kt_reader *r = reader_new();
	if (!r)
		return kt__rd_fail(err, -ENOMEM, 0, "the reader");
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
	for (unsigned i = 0; i < KT__CODEC_TABLES; i++)
		kt__codec_of(KT_CODEC_COMPACT + i)->dec_free(r->dec[i]);
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
		kt__rd_fail(&err, rc = KT_ETRUNCATED, off, "the file shrank while it was read");
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
	return kt__rd_fail(&r->err, code, off, "%s", detail);
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

int kt_reader_set_salvage(kt_reader *r, int on)
{
	r->salvage = on != 0;
	return 0;
}

void kt_reader_get_skipped(const kt_reader *r, kt_reader_skipped *out)
{
	*out = r->skipped;
}

int kt__reader_salvage(kt_reader *r, int code, uint64_t off, uint64_t bytes)
{
	/* Verdicts on bytes only: a stated limit, a cut, I/O and memory end
	 * the pass whatever salvage says. */
	int bytes_fault = (code <= KT_EFRAMEHEAD && code >= KT_EORDER && code != KT_ETOOBIG &&
			   code != KT_ETRUNCATED) || code == KT_ESUMMARY;
	if (!r->salvage || !bytes_fault)
		return 0;
	if (!r->skipped.frames++) {
		r->skipped.first_offset = off;
		r->skipped.first_error = code;
	}
	r->skipped.bytes += bytes;
	return 1;
}

int kt_reader_set_filter(kt_reader *r, const kt_reader_filter *f)
{
	r->filtered = f != NULL;
	if (f)
		r->filter = *f;
	return 0;
}

int kt__reader_keeps(kt_reader *r, const kt_event *ev)
{
	const kt_reader_filter *f = &r->filter;
	if (!r->filtered)
		return 1;
	uint64_t ns = kt_reader_get_time_ns(r, ev->ts);
	if (ns < f->from_ns || ns > f->to_ns)
		return 0;
	if (!f->threads || !f->nthreads)
		return 1;
	for (size_t i = 0; i < f->nthreads; i++)
		if (f->threads[i] == ev->thread_id)
			return 1;
	return 0;
}

int kt_reader_skip_events(kt_reader *r, int on)
{
	kt__reader_set_headers_only(r, on != 0);
	return 0;
}

uint64_t kt__reader_ts_backwards(const kt_reader *r, uint64_t *first_off)
{
	if (first_off)
		*first_off = r->ts_back_off;
	return r->ts_back;
}

int kt__reader_restart(kt_reader *r)
{
	r->pos = r->first_frame;
	r->done = 0;
	kt__idmap_clear(&r->acct);
	r->acct_hint = 0;
	r->bytes_raw = r->bytes_stored = 0;
	r->ts_back = r->ts_back_off = 0;
	memset(&r->skipped, 0, sizeof(r->skipped));
	uint64_t held = r->st.buffer_bytes, peak = r->st.peak_buffer_bytes;
	memset(&r->st, 0, sizeof(r->st));
	r->st.buffer_bytes = held;
	r->st.peak_buffer_bytes = peak;
	memset(&r->err, 0, sizeof(r->err));
	return 0;
}

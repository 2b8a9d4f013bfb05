/* The reader against damaged input: corrupt fields, torn tails, huge claims. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include <lz4.h>
#include <xxhash.h>

#include "format/format.h"

/* Where each frame of the sample starts and ends, found by reading it. */
struct layout {
	uint64_t first_frame;
	size_t n;
	uint64_t off[32], end[32];
	uint8_t kind[32];
	uint64_t events_before_end[32]; /* events in chunks ending at or before end[i] */
};

static void map_sample(const uint8_t *buf, size_t len, struct layout *l)
{
	kt_reader *r;
	kt_trace_frame f;
	uint64_t events = 0;
	memset(l, 0, sizeof(*l));
	cr_assert_eq(kt_reader_open_mem(buf, len, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		cr_assert_lt(l->n, 32);
		if (l->n == 0)
			l->first_frame = f.offset;
		l->off[l->n] = f.offset;
		l->end[l->n] = f.offset + kt__frame_size(f.body_len);
		l->kind[l->n] = f.kind;
		if (f.kind == KT_FRAME_CHUNK)
			events += f.u.chunk.event_count;
		l->events_before_end[l->n] = events;
		l->n++;
	}
	kt_reader_close(r);
}

static uint64_t nth_of_kind(const struct layout *l, uint8_t kind, int nth)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->kind[i] == kind && nth-- == 0)
			return l->off[i];
	cr_assert_fail("no frame of kind %u", kind);
	return 0;
}

/* Recompute a frame's head check and checksum after a deliberate edit,
 * so only the field under test is wrong. */
static void rehead(uint8_t *buf, uint64_t off)
{
	kt__put16(buf + off + 6, kt__head_check(buf + off));
}

static void reseal(uint8_t *buf, uint64_t off)
{
	uint32_t blen = kt__get32(buf + off);
	size_t padded = KT__FRAME_HEAD + kt__align8(blen);
	kt__put64(buf + off + padded, XXH3_64bits(buf + off, padded));
}

/* Read the damaged buffer to the end; return the error and its offset. */
static int read_err(const uint8_t *buf, size_t len, uint64_t *offset, kt_reader_status *out)
{
	kt_reader *r;
	kt_reader_error e;
	int rc = kt_reader_open_mem(buf, len, &e, &r);
	if (rc) {
		*offset = e.offset;
		return rc;
	}
	rc = t_drain(r, NULL);
	*offset = kt_reader_get_last_error(r)->offset;
	if (out)
		kt_reader_get_status(r, out);
	kt_reader_close(r);
	return rc;
}

struct fixture {
	uint8_t *buf;
	size_t len;
	struct layout l;
	uint64_t raw, lz4, summary;
};

static void fx_init(struct fixture *fx)
{
	fx->buf = t_sample(&fx->len, 1);
	cr_assert_not_null(fx->buf);
	map_sample(fx->buf, fx->len, &fx->l);
	fx->raw = nth_of_kind(&fx->l, KT_FRAME_CHUNK, 0);
	fx->lz4 = nth_of_kind(&fx->l, KT_FRAME_CHUNK, 1);
	fx->summary = nth_of_kind(&fx->l, KT_FRAME_SUMMARY, 0);
	cr_assert_eq(fx->buf[fx->raw + 8 + 4], KT_CODEC_NONE);
	cr_assert_eq(fx->buf[fx->lz4 + 8 + 4], KT_CODEC_LZ4);
}

Test(corrupt, length_field_breaks_the_head_check)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	fx.buf[fx.raw] ^= 0x08;
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_EFRAMEHEAD);
	cr_assert_eq(at, fx.raw);
	free(fx.buf);
}

Test(corrupt, length_with_valid_head_check_fails_the_checksum)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	kt__put32(fx.buf + fx.raw, kt__get32(fx.buf + fx.raw) + 8);
	rehead(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECHECKSUM);
	cr_assert_eq(at, fx.raw);
	free(fx.buf);
}

Test(corrupt, kind_field)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	fx.buf[fx.raw + 4] = KT_FRAME_NAME;
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_EFRAMEHEAD);
	cr_assert_eq(at, fx.raw);
	rehead(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECHECKSUM);
	cr_assert_eq(at, fx.raw);
	/* A kind that parses as a name with a checksum that agrees is caught
	 * by the name's own shape. */
	reseal(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_EFRAME);
	cr_assert_eq(at, fx.raw + 8 + 4);
	free(fx.buf);
}

Test(corrupt, checksum_field)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	uint32_t blen = kt__get32(fx.buf + fx.lz4);
	fx.buf[fx.lz4 + 8 + kt__align8(blen) + 3] ^= 0x40;
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECHECKSUM);
	cr_assert_eq(at, fx.lz4);
	free(fx.buf);
}

Test(corrupt, payload_byte_fails_the_checksum)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	fx.buf[fx.lz4 + 8 + 40 + 2] ^= 0x01;
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECHECKSUM);
	cr_assert_eq(at, fx.lz4);
	free(fx.buf);
}

Test(corrupt, raw_length_field)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	kt__put32(fx.buf + fx.raw + 8 + 20, kt__get32(fx.buf + fx.raw + 8 + 20) + 8);
	reseal(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ERAWLEN);
	cr_assert_eq(at, fx.raw + 8 + 20);
	free(fx.buf);

	fx_init(&fx);
	kt__put32(fx.buf + fx.lz4 + 8 + 20, kt__get32(fx.buf + fx.lz4 + 8 + 20) - 8);
	reseal(fx.buf, fx.lz4);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ERAWLEN);
	cr_assert_eq(at, fx.lz4 + 8 + 20);
	free(fx.buf);
}

Test(corrupt, count_field)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	kt__put32(fx.buf + fx.lz4 + 8 + 16, T_EVENTS_PER_SET + 1);
	reseal(fx.buf, fx.lz4);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECOUNT);
	cr_assert_eq(at, fx.lz4 + 8 + 16);
	free(fx.buf);

	fx_init(&fx);
	kt__put32(fx.buf + fx.raw + 8 + 16, T_EVENTS_PER_SET - 1);
	reseal(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECOUNT);
	cr_assert_eq(at, fx.raw + 8 + 16);
	free(fx.buf);
}

Test(corrupt, codec_field)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	fx.buf[fx.raw + 8 + 4] = 7;
	reseal(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ECODEC);
	cr_assert_eq(at, fx.raw + 8 + 4);
	free(fx.buf);
}

Test(corrupt, event_record_inside_a_chunk)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	fx.buf[fx.raw + 8 + 40 + 12] = 99; /* first record's type */
	reseal(fx.buf, fx.raw);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_EEVENT);
	cr_assert_eq(at, fx.raw);
	free(fx.buf);
}

Test(corrupt, chunk_sequence_must_increase_per_thread)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	kt__put64(fx.buf + fx.lz4 + 8 + 8, 0); /* same seq as the raw chunk */
	reseal(fx.buf, fx.lz4);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_EORDER);
	cr_assert_eq(at, fx.lz4 + 8 + 8);
	free(fx.buf);
}

Test(corrupt, pad_bytes_must_be_zero)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	uint64_t name = nth_of_kind(&fx.l, KT_FRAME_NAME, 0); /* "frame_zone": 18-byte body */
	cr_assert_eq(kt__get32(fx.buf + name), 18);
	fx.buf[name + 8 + 18] = 1;
	reseal(fx.buf, name);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ERESERVED);
	cr_assert_eq(at, name + 8 + 18);
	free(fx.buf);
}

Test(corrupt, summary_that_disagrees_with_the_file)
{
	struct fixture fx;
	uint64_t at;
	fx_init(&fx);
	kt__put64(fx.buf + fx.summary + 8 + 8, 45);
	reseal(fx.buf, fx.summary);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ESUMMARY);
	cr_assert_eq(at, fx.summary + 8 + 8);
	free(fx.buf);

	fx_init(&fx);
	/* second row's dropped count */
	kt__put64(fx.buf + fx.summary + 8 + 88 + 24 + 16, 16);
	reseal(fx.buf, fx.summary);
	cr_assert_eq(read_err(fx.buf, fx.len, &at, NULL), KT_ESUMMARY);
	free(fx.buf);
}

Test(corrupt, bytes_after_the_summary)
{
	struct fixture fx;
	uint64_t at;
	kt_reader_status st;
	fx_init(&fx);
	uint8_t *more = malloc(fx.len + 24);
	memcpy(more, fx.buf, fx.len);
	memset(more + fx.len, 0, 24);
	cr_assert_eq(read_err(more, fx.len + 24, &at, &st), KT_ETRAILING);
	cr_assert_eq(at, fx.len);
	cr_assert_eq(st.complete, 1);
	cr_assert_eq(st.frames, fx.l.n);
	free(more);
	free(fx.buf);
}

/* Every prefix of a trace is a valid trace: the complete frames before the
 * cut come back, and the status says where the cut is. */
static void check_every_cut(int use_fd)
{
	struct fixture fx;
	fx_init(&fx);
	int fd = -1;
	if (use_fd) {
		fd = memfd_create("cut", MFD_CLOEXEC);
		cr_assert_geq(fd, 0);
	}
	for (size_t cut = 0; cut <= fx.len; cut++) {
		kt_reader *r;
		kt_reader_error e;
		int rc;
		if (use_fd) {
			cr_assert_eq(ftruncate(fd, 0), 0);
			cr_assert_eq(pwrite(fd, fx.buf, cut, 0), (ssize_t)cut);
			rc = kt_reader_open_fd(fd, &e, &r);
		} else {
			rc = kt_reader_open_mem(fx.buf, cut, &e, &r);
		}
		if (cut < fx.l.first_frame) {
			cr_assert_eq(rc, KT_ETRUNCATED, "cut %zu: %s", cut, e.message);
			cr_assert_null(r);
			continue;
		}
		cr_assert_eq(rc, 0, "cut %zu: %s", cut, e.message);
		uint64_t frames;
		cr_assert_eq(t_drain(r, &frames), 0, "cut %zu: %s", cut,
			     kt_reader_get_last_error(r)->message);
		size_t whole = 0;
		uint64_t valid_end = fx.l.first_frame, events = 0;
		while (whole < fx.l.n && fx.l.end[whole] <= cut) {
			valid_end = fx.l.end[whole];
			events = fx.l.events_before_end[whole];
			whole++;
		}
		kt_reader_status st;
		kt_reader_get_status(r, &st);
		cr_assert_eq(frames, whole, "cut %zu", cut);
		cr_assert_eq(st.events, events, "cut %zu", cut);
		cr_assert_eq(st.valid_end, valid_end, "cut %zu", cut);
		cr_assert_eq(st.error, 0, "cut %zu", cut);
		cr_assert_eq(st.complete, cut == fx.len, "cut %zu", cut);
		cr_assert_eq(st.truncated, cut != fx.len, "cut %zu", cut);
		if (cut != fx.len)
			cr_assert_eq(kt_reader_get_last_error(r)->offset, valid_end, "cut %zu", cut);
		kt_reader_close(r);
	}
	if (fd >= 0)
		close(fd);
	free(fx.buf);
}

Test(truncate, every_cut_is_a_valid_prefix_in_memory)
{
	check_every_cut(0);
}

Test(truncate, every_cut_is_a_valid_prefix_through_an_fd)
{
	check_every_cut(1);
}

/* Claims far beyond the file are refused before any allocation: the fd
 * reader's buffers never exceed what the genuine frames needed. */
static int open_fd_of(const uint8_t *buf, size_t len, kt_reader **r)
{
	int fd = memfd_create("claim", MFD_CLOEXEC);
	cr_assert_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
	cr_assert_eq(kt_reader_open_fd(fd, NULL, r), 0);
	return fd;
}

Test(limits, frame_claiming_4_gib_is_refused_without_allocating)
{
	struct fixture fx;
	kt_reader *r;
	fx_init(&fx);
	kt__put32(fx.buf + fx.raw, UINT32_C(0xFFFFFFF0));
	rehead(fx.buf, fx.raw);
	int fd = open_fd_of(fx.buf, fx.len, &r);
	cr_assert_eq(t_drain(r, NULL), KT_EFRAMELEN);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.error_offset, fx.raw);
	cr_assert_lt(st.peak_buffer_bytes, 64 * 1024);
	kt_reader_close(r);
	close(fd);
	free(fx.buf);
}

Test(limits, frame_claiming_60_mib_past_the_end_reads_as_truncated)
{
	struct fixture fx;
	kt_reader *r;
	fx_init(&fx);
	kt__put32(fx.buf + fx.raw, 60u << 20);
	rehead(fx.buf, fx.raw);
	int fd = open_fd_of(fx.buf, fx.len, &r);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.truncated, 1);
	cr_assert_eq(st.valid_end, fx.raw);
	cr_assert_lt(st.peak_buffer_bytes, 64 * 1024);
	kt_reader_close(r);
	close(fd);
	free(fx.buf);
}

Test(limits, lz4_chunk_claiming_4_gib_raw_is_refused_without_allocating)
{
	struct fixture fx;
	kt_reader *r;
	fx_init(&fx);
	/* raw_len is a u32, so 4 GiB - 8 is the largest claim the format can
	 * even express (a 1 TiB claim cannot be written). */
	kt__put32(fx.buf + fx.lz4 + 8 + 20, UINT32_C(0xFFFFFFF8));
	reseal(fx.buf, fx.lz4);
	int fd = open_fd_of(fx.buf, fx.len, &r);
	cr_assert_eq(t_drain(r, NULL), KT_ETOOBIG);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.error_offset, fx.lz4 + 8 + 20);
	cr_assert_lt(st.peak_buffer_bytes, 64 * 1024);
	kt_reader_close(r);
	close(fd);
	free(fx.buf);
}

Test(limits, lz4_raw_length_beyond_what_the_payload_can_expand_to)
{
	struct fixture fx;
	kt_reader *r;
	fx_init(&fx);
	kt__put32(fx.buf + fx.lz4 + 8 + 20, 60u << 20);
	reseal(fx.buf, fx.lz4);
	int fd = open_fd_of(fx.buf, fx.len, &r);
	cr_assert_eq(t_drain(r, NULL), KT_ERAWLEN);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_lt(st.peak_buffer_bytes, 64 * 1024);
	kt_reader_close(r);
	close(fd);
	free(fx.buf);
}

Test(limits, lz4_expansion_bound_holds_for_the_most_compressible_input)
{
	/* SPEC §4.1 rejects raw_len > 255 * stored + 64.  Zeros are LZ4's best
	 * case; if they compressed further the bound would refuse real files. */
	static uint8_t zeros[1 << 20];
	static char out[(1 << 20) + (1 << 20) / 255 + 16];
	for (int size = 16; size <= (1 << 20); size *= 4) {
		int n = LZ4_compress_fast((const char *)zeros, out, size, (int)sizeof(out), 1);
		cr_assert_gt(n, 0);
		cr_assert_leq((uint64_t)size, 255ull * (uint64_t)n + 64, "size %d -> %d", size, n);
	}
}

Test(open, paths_that_are_not_traces)
{
	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open("/nonexistent/trace.katra", &e, &r), -ENOENT);
	cr_assert_null(r);
	cr_assert_eq(kt_reader_open("/tmp", &e, &r), -EISDIR);
	cr_assert_eq(kt_reader_open("/dev/null", &e, &r), KT_ENOTFILE);
	cr_assert_str_eq(e.message, "offset 0: not a regular file (traces are read from files: "
				    "save a stream to a file first): /dev/null is a character device");
	char path[] = "/tmp/katra-empty-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(kt_reader_open(path, &e, &r), KT_ETRUNCATED);
	cr_assert_str_eq(e.message, "offset 0: file is truncated: the file is empty");
	close(fd);
	unlink(path);
}

/* A pass that skips events sees every other frame and counts the events,
 * without decoding them; the bad record shows on the pass that decodes. */
Test(skip_events, frames_without_decoding_then_the_fault_on_decode)
{
	struct fixture fx;
	fx_init(&fx);
	fx.buf[fx.raw + 8 + 40 + 12] = 99; /* first record's type */
	reseal(fx.buf, fx.raw);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(fx.buf, fx.len, NULL, &r), 0);
	cr_assert_eq(kt_reader_skip_events(r, 1), 0);
	kt_trace_frame f;
	int rc, chunks = 0, summary = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			cr_assert_null(f.u.chunk.events);
			chunks++;
		}
		summary |= f.kind == KT_FRAME_SUMMARY;
	}
	cr_assert_eq(rc, 0);
	cr_assert(chunks > 0 && summary);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete && st.events > 0);
	kt_reader_skip_events(r, 0);
	kt_reader_rewind(r);
	kt_event ev;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		;
	cr_assert_eq(rc, KT_EEVENT);
	kt_reader_close(r);
	free(fx.buf);
}

/* Issue 12: a FIFO named as the trace blocked the open until a writer
 * came, and a pipe failed with a terse "Illegal seek".  Both are refused
 * at once, saying why; the timeout fails the old blocking open. */
Test(open, fifo_is_refused_without_waiting_for_a_writer, .timeout = 10)
{
	char dir[] = "/tmp/katra-fifo-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/trace.katra", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open(path, &e, &r), KT_ENOTFILE);
	cr_assert_null(r);
	cr_assert_eq(e.code, KT_ENOTFILE);
	cr_assert_not_null(strstr(e.message, "trace.katra is a FIFO or pipe"), "%s", e.message);
	cr_assert_not_null(strstr(e.message, "save a stream to a file first"), "%s", e.message);
	unlink(path);
	rmdir(dir);
}

Test(open, pipes_and_sockets_are_refused)
{
	int p[2], s[2];
	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	cr_assert_eq(kt_reader_open_fd(p[0], &e, &r), KT_ENOTFILE);
	cr_assert_str_eq(e.message, "offset 0: not a regular file (traces are read from files: "
				    "save a stream to a file first): a FIFO or pipe");
	cr_assert_eq(kt_reader_open_fd(s[0], &e, &r), KT_ENOTFILE);
	cr_assert_not_null(strstr(e.message, "a socket"));
	cr_assert_null(r);
	/* The fds are the caller's: still open. */
	cr_assert_eq(write(p[1], "x", 1), 1);
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
}

/* A file cut inside its header is truncated, not corrupt, however it is
 * opened: the status verify maps to exit 3, which every command can use. */
Test(open, a_cut_inside_the_header_is_truncated_through_a_path)
{
	struct fixture fx;
	fx_init(&fx);
	char dir[] = "/tmp/katra-cut-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/cut.katra", dir);
	for (size_t cut = 0; cut < fx.l.first_frame; cut++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, fx.buf, cut), (ssize_t)cut);
		close(fd);
		kt_reader *r;
		kt_reader_error e;
		cr_assert_eq(kt_reader_open(path, &e, &r), KT_ETRUNCATED, "cut %zu: %s", cut,
			     e.message);
		cr_assert_eq(e.code, KT_ETRUNCATED);
		cr_assert_eq(e.offset, cut, "cut %zu", cut);
		cr_assert_null(r);
	}
	unlink(path);
	rmdir(dir);
	free(fx.buf);
}

/*
 * The fd reader reads ahead through a 256 KiB window.  Over a file of
 * frames of every size, some across the window's edges and some larger
 * than it, it must return exactly what the memory reader returns.
 */
Test(window, fd_reader_matches_memory_reader_across_window_edges)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("window", MFD_CLOEXEC);
	kt_writer *w;
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	static uint8_t ev[12 * (65536 + 16)], payload[65535];
	char name[4096];
	memset(name, 'n', sizeof(name));
	uint64_t ts = 1000;
	for (uint32_t i = 1; i <= 300; i++) {
		/* 1 to 12 messages of up to 64 KiB: chunks from 16 bytes to
		 * three windows. */
		size_t n = 0;
		for (uint32_t k = 0; k <= i % 12; k++) {
			kt_event m = { .ts = ts++, .name_id = i, .type = KT_EV_MESSAGE,
				       .payload_len = (uint16_t)(i * 977u % 65536u),
				       .payload = payload };
			n += kt_event_encode(ev + n, sizeof(ev) - n, &m);
		}
		cr_assert_eq(kt_writer_chunk(w, i % 5 + 1, KT_CODEC_NONE, 1, ev, n), 0);
		cr_assert_eq(kt_writer_name(w, i, name, i * 13 % sizeof(name) + 1), 0);
	}
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	size_t len = 0;
	uint8_t *buf = t_slurp_fd(fd, &len);
	cr_assert_gt(len, 4u << 20);

	kt_reader *a, *b;
	cr_assert_eq(kt_reader_open_fd(fd, NULL, &a), 0);
	cr_assert_eq(kt_reader_open_mem(buf, len, NULL, &b), 0);
	kt_trace_frame fa, fb;
	int ra, rb;
	uint64_t frames = 0;
	while ((ra = kt_reader_next_frame(a, &fa)) > 0) {
		rb = kt_reader_next_frame(b, &fb);
		cr_assert_eq(rb, 1);
		cr_assert_eq(fa.offset, fb.offset);
		cr_assert_eq(fa.kind, fb.kind);
		cr_assert_eq(fa.body_len, fb.body_len);
		if (fa.kind == KT_FRAME_CHUNK)
			cr_assert_eq(memcmp(fa.u.chunk.events, fb.u.chunk.events, fa.u.chunk.raw_len), 0,
				     "chunk at %llu", (unsigned long long)fa.offset);
		if (fa.kind == KT_FRAME_NAME)
			cr_assert_str_eq(fa.u.name.str, fb.u.name.str);
		frames++;
	}
	cr_assert_eq(ra, 0, "%s", kt_reader_get_last_error(a)->message);
	cr_assert_eq(kt_reader_next_frame(b, &fb), 0);
	cr_assert_eq(frames, 601);
	kt_reader_status st;
	kt_reader_get_status(a, &st);
	cr_assert(st.complete);
	/* The window, one frame and the header: not the file. */
	cr_assert_lt(st.peak_buffer_bytes, 2u << 20);
	kt_reader_close(a);
	kt_reader_close(b);
	free(buf);
	close(fd);
}

/* kt_reader_set_filter(): kt_reader_next() returns only the events of the
 * window and the threads named (golden_v1: 22 events a thread; thread 2's
 * zone spans 123789400..123789403 ns, 11 events), keeps it over a rewind,
 * and NULL takes it away. */
static int count_filtered(kt_reader *r)
{
	kt_event ev;
	int n = 0, rc;
	kt_reader_rewind(r);
	while ((rc = kt_reader_next(r, &ev)) > 0)
		n++;
	cr_assert_eq(rc, 0);
	return n;
}

Test(filter, the_reader_keeps_only_the_window_and_threads_named)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(KT_TEST_DATA "/golden_v1.katra", NULL, &r), 0);
	static const uint32_t two[] = { 2 }, one[] = { 1 };
	kt_reader_filter f = { 0, UINT64_MAX, two, 1 };
	cr_assert_eq(kt_reader_set_filter(r, &f), 0);
	cr_assert_eq(count_filtered(r), 22);
	f = (kt_reader_filter){ 123789400, 123789403, NULL, 0 };
	kt_reader_set_filter(r, &f);
	cr_assert_eq(count_filtered(r), 11);
	f.threads = one;
	f.nthreads = 1;
	kt_reader_set_filter(r, &f);
	cr_assert_eq(count_filtered(r), 0);
	kt_reader_set_filter(r, NULL);
	cr_assert_eq(count_filtered(r), 44);
	kt_reader_close(r);
}

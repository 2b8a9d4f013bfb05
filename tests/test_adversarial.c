/* Valid traces built to hurt a reader: ids in the worst order, many
 * threads at once, and every allocation failing in turn.  Complexity is
 * asserted by counting the id tables' work (kt__idtab_work), never by
 * timing. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <criterion/criterion.h>

#include "format/format.h"

/* A header that asks for no capture flag, so nothing of t_header's
 * matters but the clock. */
static int t_open_writer(kt_writer **w)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("katra-adversarial", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(kt_writer_open_fd(fd, &h, w), 0);
	return fd;
}

/* Two events, a zone begin at @ts and its end at @ts + 1. */
static size_t t_zone(uint8_t *buf, uint64_t ts, uint32_t name)
{
	kt_event b = { .ts = ts, .name_id = name, .type = KT_EV_ZONE_BEGIN };
	kt_event e = { .ts = ts + 1, .name_id = name, .type = KT_EV_ZONE_END };
	size_t n = kt_event_encode(buf, 64, &b);
	return n + kt_event_encode(buf + n, 64, &e);
}

static int t_finish(kt_writer *w, int fd)
{
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	return fd;
}

/* @n names with ids n..1, descending, then one thread whose events use
 * them all. */
static int t_names_descending(uint32_t n)
{
	kt_writer *w;
	int fd = t_open_writer(&w);
	char name[32];
	for (uint32_t id = n; id >= 1; id--) {
		int len = snprintf(name, sizeof(name), "name-%u", id);
		cr_assert_eq(kt_writer_name(w, id, name, (size_t)len), 0);
	}
	uint8_t ev[64];
	for (uint32_t id = 1; id <= n; id += n / 8 + 1)
		cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, ev, t_zone(ev, 1000 + id, id)), 0);
	return t_finish(w, fd);
}

/* @n threads with ids n..1, descending, each with a thread entry, one
 * LZ4 chunk of a zone at the same time as every other's, and (one in
 * seven) a drop record. */
static int t_threads_descending(uint32_t n)
{
	kt_writer *w;
	int fd = t_open_writer(&w);
	uint8_t ev[64];
	for (uint32_t tid = n; tid >= 1; tid--) {
		cr_assert_eq(kt_writer_thread(w, tid, tid + 100, ""), 0);
		cr_assert_eq(kt_writer_chunk(w, tid, KT_CODEC_LZ4, 3, ev, t_zone(ev, 5000, 1)), 0);
		if (tid % 7 == 0)
			cr_assert_eq(kt_writer_drop(w, tid, 3, 4000, 4500), 0);
	}
	return t_finish(w, fd);
}

static uint64_t t_size(int fd)
{
	struct stat sb;
	cr_assert_eq(fstat(fd, &sb), 0);
	return (uint64_t)sb.st_size;
}

/* Issue 12: names in descending id order made every rewrite (compress,
 * decompress, slice, the capture's trim) quadratic in the names. */
Test(adversarial, rewrite_with_names_in_descending_order_is_linear)
{
	const uint32_t n = 40000;
	int in = t_names_descending(n);
	int out = memfd_create("katra-rewrite", MFD_CLOEXEC);
	kt_rewrite_options o = { .in_fds = &in, .n_in = 1, .out_fd = out, .codec = -1 };
	kt_rewrite_result res;
	kt__idtab_work = 0;
	cr_assert_eq(kt_rewrite(&o, &res), 0, "%s", res.in_err.message);
	/* A hash probe or two per name; the sorted array moved n^2/2. */
	cr_assert_leq(kt__idtab_work, 8 * (uint64_t)n, "work %llu for %u names",
		      (unsigned long long)kt__idtab_work, n);
	/* Same frames in the same order through the same writer: the same
	 * bytes. */
	size_t a_len = 0, b_len = 0;
	uint8_t *a = t_slurp_fd(in, &a_len), *b = t_slurp_fd(out, &b_len);
	cr_assert(a && b);
	cr_assert_eq(a_len, b_len);
	cr_assert_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
	close(in);
	close(out);
}

/* A slice by thread over many threads asks the kept set once a frame. */
Test(adversarial, slice_by_many_threads_is_linear)
{
	const uint32_t n = 4000;
	int in = t_threads_descending(n);
	uint32_t *keep = malloc(n / 2 * sizeof(*keep));
	for (uint32_t i = 0; i < n / 2; i++)
		keep[i] = 2 * i + 1; /* the odd ones */
	int out = memfd_create("katra-slice", MFD_CLOEXEC);
	kt_rewrite_options o = { .in_fds = &in, .n_in = 1, .out_fd = out, .codec = -1,
			       .filter = 1, .to_ns = UINT64_MAX, .threads = keep,
			       .nthreads = n / 2 };
	kt_rewrite_result res;
	cr_assert_eq(kt_rewrite(&o, &res), 0, "%s", res.in_err.message);
	cr_assert_eq(res.events_in, 2 * (uint64_t)n);
	cr_assert_eq(res.events_out, (uint64_t)n);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_fd(out, NULL, &r), 0);
	kt_trace_frame f;
	uint64_t threads = 0, chunks = 0, drops = 0;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		uint32_t tid = f.kind == KT_FRAME_THREAD  ? f.u.thread.thread_id
			       : f.kind == KT_FRAME_CHUNK ? f.u.chunk.thread_id
			       : f.kind == KT_FRAME_DROP  ? f.u.drop.thread_id
							  : 1;
		cr_assert_eq(tid % 2, 1, "thread %u was not kept", tid);
		threads += f.kind == KT_FRAME_THREAD;
		chunks += f.kind == KT_FRAME_CHUNK;
		drops += f.kind == KT_FRAME_DROP;
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	cr_assert_eq(threads, n / 2);
	cr_assert_eq(chunks, n / 2);
	/* Odd multiples of 7 up to n. */
	cr_assert_eq(drops, (n / 7 + 1) / 2);
	kt_reader_close(r);
	free(keep);
	close(in);
	close(out);
}

/* Issue 12: threads in descending id order made every reader pass
 * quadratic, verify's included. */
Test(adversarial, reader_passes_with_threads_in_descending_order_are_linear)
{
	const uint32_t n = 20000;
	int fd = t_threads_descending(n);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_fd(fd, NULL, &r), 0);

	kt__idtab_work = 0;
	uint64_t frames;
	cr_assert_eq(t_drain(r, &frames), 0, "%s", kt_reader_get_last_error(r)->message);
	cr_assert_eq(frames, 2 * (uint64_t)n + n / 7 + 1);
	/* The checked pass: a probe or two per frame, plus sorting the
	 * table once for the summary. */
	cr_assert_leq(kt__idtab_work, 8 * (uint64_t)n, "pass: work %llu",
		      (unsigned long long)kt__idtab_work);

	kt__idtab_work = 0;
	cr_assert_eq(kt_reader_rewind(r), 0);
	kt_event ev;
	uint64_t events = 0;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		/* Every begin (ts 5000) by thread id, then every end. */
		uint32_t want_tid = (uint32_t)(events % n) + 1;
		cr_assert_eq(ev.thread_id, want_tid, "event %llu", (unsigned long long)events);
		cr_assert_eq(ev.ts, 5000 + events / n);
		events++;
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	cr_assert_eq(events, 2 * (uint64_t)n);
	/* Index pass and merge: the tables' share stays linear. */
	cr_assert_leq(kt__idtab_work, 16 * (uint64_t)n, "merge: work %llu",
		      (unsigned long long)kt__idtab_work);
	kt_reader_close(r);
	close(fd);
}

/*
 * A merge of many threads whose events all overlap holds a decoded chunk
 * per thread at once.  Each is held at its own size: rounding each to a
 * page (as before) made a 2 MB file take 80 MB.  The reader's accounting
 * and the heap itself must stay within a few times the file.
 */
Test(adversarial, merge_of_many_small_chunks_holds_memory_linear_in_the_file)
{
	const uint32_t n = 20000;
	int fd = t_threads_descending(n);
	uint64_t size = t_size(fd);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_fd(fd, NULL, &r), 0);
	struct mallinfo2 before = mallinfo2();
	kt_event ev;
	/* After the n begins every thread's chunk is loaded at once. */
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(kt_reader_next(r, &ev), 1);
	struct mallinfo2 during = mallinfo2();
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_leq(st.buffer_bytes, 4 * size, "%llu bytes held for a %llu-byte file",
		      (unsigned long long)st.buffer_bytes, (unsigned long long)size);
	cr_assert_leq(st.peak_buffer_bytes, 4 * size);
	if (!T_SANITIZED) {
		/* What malloc says, beside what the reader counts. */
		uint64_t heap = during.uordblks + during.hblkhd - before.uordblks - before.hblkhd;
		cr_assert_leq(heap, 5 * size, "heap grew %llu for a %llu-byte file",
			      (unsigned long long)heap, (unsigned long long)size);
	}
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		;
	cr_assert_eq(rc, 0);
	kt_reader_close(r);
	close(fd);
}

/* ---- out of memory ------------------------------------------------------ */

/* Open @path, check every frame, then merge every event: the first
 * failure, with the reader's error in *@e. */
static int t_read_all(const char *path, const uint8_t *mem, size_t len, kt_reader_error *e)
{
	kt_reader *r;
	int rc = mem ? kt_reader_open_mem(mem, len, e, &r) : kt_reader_open(path, e, &r);
	if (rc)
		return rc;
	rc = t_drain(r, NULL);
	if (rc == 0) {
		kt_event ev;
		kt_reader_rewind(r);
		while ((rc = kt_reader_next(r, &ev)) > 0)
			;
	}
	if (rc)
		*e = *kt_reader_get_last_error(r);
	kt_reader_close(r);
	return rc;
}

/*
 * Make allocation 1, 2, 3, ... of a run fail in turn, until a run needs
 * fewer: each failure must come back as -ENOMEM saying "out of memory",
 * never as corruption or without a message.
 */
static void t_fail_each_allocation(const char *what, const char *path, const uint8_t *mem,
				   size_t len)
{
	uint64_t n;
	for (n = 1;; n++) {
		kt_reader_error e = { 0 };
		kt__alloc_count = 0;
		kt__alloc_fail_at = n;
		int rc = t_read_all(path, mem, len, &e);
		int fired = kt__alloc_count >= n;
		kt__alloc_fail_at = 0;
		if (!fired) {
			cr_assert_eq(rc, 0, "%s: %s", what, e.message);
			break;
		}
		cr_assert_eq(rc, -ENOMEM, "%s: allocation %llu failed: %d %s", what,
			     (unsigned long long)n, rc, e.message);
		cr_assert_eq(e.code, -ENOMEM, "%s: allocation %llu", what, (unsigned long long)n);
		cr_assert_not_null(strstr(e.message, "out of memory"), "%s: allocation %llu: \"%s\"",
				   what, (unsigned long long)n, e.message);
	}
	/* Header, tables, buffers, the merge: a real run allocates. */
	cr_assert_geq(n, 8, "%s: only %llu allocations", what, (unsigned long long)n);
}

Test(out_of_memory, every_failed_allocation_of_a_read_is_enomem)
{
	static const char *const files[] = { KT_TEST_DATA "/golden_v2.katra",
					     KT_TEST_DATA "/golden_v1.katra",
					     KT_TEST_DATA "/delta_v2.katra",
					     KT_TEST_DATA "/compact_v5.katra",
					     KT_TEST_DATA "/compact_zstd_v5.katra" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		size_t len = 0;
		uint8_t *mem = t_slurp(files[i], &len);
		cr_assert_not_null(mem);
		t_fail_each_allocation(files[i], files[i], NULL, 0);
		t_fail_each_allocation(files[i], NULL, mem, len);
		free(mem);
	}
}

Test(out_of_memory, every_failed_allocation_of_a_rewrite_is_enomem)
{
	int in = open(KT_TEST_DATA "/golden_v2.katra", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(in, 0);
	static const uint32_t keep[] = { 1, 2 };
	static const char *const note[] = { "trimmed" };
	uint64_t n;
	for (n = 1;; n++) {
		int out = memfd_create("katra-rewrite", MFD_CLOEXEC);
		kt_rewrite_options o = { .in_fds = &in, .n_in = 1, .out_fd = out, .codec = -1,
				       .filter = 1, .from_ns = 1, .to_ns = UINT64_MAX - 1,
				       .threads = keep, .nthreads = 2, .extra_notes = note,
				       .n_extra_notes = 1 };
		kt_rewrite_result res;
		kt__alloc_count = 0;
		kt__alloc_fail_at = n;
		int rc = kt_rewrite(&o, &res);
		int fired = kt__alloc_count >= n;
		kt__alloc_fail_at = 0;
		close(out);
		if (!fired) {
			cr_assert_eq(rc, 0, "%s", res.in_err.message);
			break;
		}
		cr_assert_eq(rc, -ENOMEM, "allocation %llu failed: %d", (unsigned long long)n, rc);
		if (res.in_index >= 0)
			cr_assert_not_null(strstr(res.in_err.message, "out of memory"),
					   "allocation %llu: \"%s\"", (unsigned long long)n,
					   res.in_err.message);
	}
	cr_assert_geq(n, 8);
	close(in);
}

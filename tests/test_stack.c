/*
 * Stack and map entries (SPEC §4.11, §4.12, format version 5) and sample
 * records (type 21) both ways; hostile entries refused before they size
 * anything; a version 4 file skips the kinds.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>

#include "helpers.h"

#include <katra/reader.h>
#include <xxhash.h>

#include "format/format.h"

static const uint64_t frames[3] = { 0x401234, 0x7f0000001000, 0x400010 };

/* A stack of id 7, a map, a sample naming the stack. */
static uint8_t *stack_file(size_t *len, uint32_t version)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("stack", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	kt_stack_def s = { 7, 3, frames };
	kt_map_def m = { 0, 0x7f0000000000, 0x2000, 0x1000, 0, 13, "/lib/libx.so1" };
	cr_assert_eq(kt_writer_stack(w, &s), 0);
	cr_assert_eq(kt_writer_map(w, &m), 0);
	uint8_t p[16] = { 0 }, ev[64];
	p[0] = 1;
	p[8] = 7;
	kt_event e = { .ts = 100, .type = KT_EV_SAMPLE, .payload_len = 16, .payload = p };
	size_t at = kt_event_encode(ev, sizeof(ev), &e);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_NONE, 1, ev, at), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	uint8_t *file = t_slurp_fd(fd, len);
	close(fd);
	if (version != KT_FORMAT_VERSION) {
		/* The same bytes under an older version: preamble, header and
		 * its checksum. */
		uint32_t hlen = kt__get32(file + 12);
		kt__put32(file + 8, version);
		kt__put32(file + 16, version);
		kt__put64(file + 16 + 8, kt__schema_hash(version));
		size_t sum_at = 16 + kt__align8(hlen);
		kt__put64(file + sum_at, XXH3_64bits(file + 8, sum_at - 8));
	}
	return file;
}

Test(stack, entries_and_a_sample_round_trip)
{
	size_t len;
	uint8_t *file = stack_file(&len, KT_FORMAT_VERSION);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	kt_trace_frame f;
	int stacks = 0, maps = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_stack_def *s = kt_trace_frame_get_stack(&f);
		const kt_map_def *m = kt_trace_frame_get_map(&f);
		cr_assert(!(s && m));
		if (s) {
			stacks++;
			cr_assert(s->id == 7 && s->depth == 3);
			cr_assert_eq(memcmp(s->frames, frames, sizeof(frames)), 0);
		}
		if (m) {
			maps++;
			cr_assert(m->ts == 0 && m->start == 0x7f0000000000 && m->len == 0x2000 &&
			          m->pgoff == 0x1000 && m->process == 0 && m->path_len == 13);
			cr_assert_str_eq(m->path, "/lib/libx.so1");
		}
	}
	cr_assert_eq(stacks, 1);
	cr_assert_eq(maps, 1);
	kt_reader_close(r);
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	kt_event ev;
	kt_value v;
	cr_assert_eq(kt_reader_next(r, &ev), 1);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert(ev.type == KT_EV_SAMPLE && ev.thread_id == 2 && ev.ts == 100);
	cr_assert(v.kind == KT_VALUE_SAMPLE && v.thread == 1 && v.u64 == 7);
	kt_reader_close(r);
	free(file);
}

/* A version 4 reader did not know kinds 10 and 11: in a version 4 file
 * they are unknown kinds, skipped. */
Test(stack, a_version_4_file_skips_them)
{
	size_t len;
	uint8_t *file = stack_file(&len, 4);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	kt_trace_frame f;
	while (kt_reader_next_frame(r, &f) > 0)
		cr_assert(f.kind != KT_FRAME_STACK && f.kind != KT_FRAME_MAP);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.unknown_frames, 2);
	kt_reader_close(r);
	free(file);
}

/* The first frame of kind @kind in @file: its body's offset. */
static size_t body_of(const uint8_t *file, size_t len, uint8_t kind)
{
	size_t off = 24 + kt__align8(kt__get32(file + 12));
	while (off + 8 <= len) {
		uint32_t b = kt__get32(file + off);
		if (file[off + 4] == kind)
			return off + 8;
		off += 16 + kt__align8(b);
	}
	cr_assert_fail("no frame of kind %u", kind);
	return 0;
}

/* Patch 4 bytes at @at of the body of the first @kind frame, re-seal it,
 * and read: the first error. */
static int read_patched(uint8_t kind, size_t at, uint32_t value, uint32_t blen)
{
	size_t len;
	uint8_t *file = stack_file(&len, KT_FORMAT_VERSION);
	size_t body = body_of(file, len, kind), head = body - 8;
	kt__put32(file + body + at, value);
	if (blen) {
		/* A body length the frame does not have: head and all re-sealed
		 * over the same bytes, so only the entry's own check can
		 * refuse it. */
		uint32_t old = kt__get32(file + head);
		cr_assert(kt__align8(blen) == kt__align8(old));
		kt__enc_frame_head(file + head, blen, kind);
	}
	kt__enc_frame_seal(file + head, kt__get32(file + head));
	kt_reader *r;
	int rc = kt_reader_open_mem(file, len, NULL, &r);
	cr_assert_eq(rc, 0);
	kt_trace_frame f;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		;
	kt_reader_close(r);
	free(file);
	return rc;
}

Test(stack, hostile_entries_are_refused)
{
	/* Depth past the cap, depth 0, a depth the body does not hold, id 0. */
	cr_assert_eq(read_patched(KT_FRAME_STACK, KT__STACK_DEPTH, KT_MAX_STACK_DEPTH + 1, 0),
	             KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_STACK, KT__STACK_DEPTH, 0, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_STACK, KT__STACK_DEPTH, 2, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_STACK, KT__STACK_DEPTH, UINT32_MAX, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_STACK, KT__STACK_ID, 0, 0), KT_EFRAME);
	/* A path longer than the body, past the cap, empty, holding a zero. */
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_PATH_LEN, 14, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_PATH_LEN, KT_MAX_MAP_PATH + 1, 0),
	             KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_PATH_LEN, 0, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_FIXED + 4, 0, 0), KT_EFRAME);
	/* An empty range, one that wraps. */
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_LEN, 0, 0), KT_EFRAME);
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_LEN + 4, UINT32_MAX, 0), KT_EFRAME);
	/* The same path length in a shorter body. */
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_PATH_LEN, 13, KT__MAP_FIXED + 12),
	             KT_EFRAME);
	/* Untouched, it reads clean. */
	cr_assert_eq(read_patched(KT_FRAME_MAP, KT__MAP_PROCESS, 0, 0), 0);
}

Test(stack, the_writer_refuses_what_the_format_cannot_hold)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("stack", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	uint64_t deep[KT_MAX_STACK_DEPTH + 1] = { 0 };
	cr_assert_eq(kt_writer_stack(w, &(kt_stack_def){ 1, KT_MAX_STACK_DEPTH + 1, deep }),
	             -EINVAL);
	cr_assert_eq(kt_writer_stack(w, &(kt_stack_def){ 0, 1, deep }), -EINVAL);
	cr_assert_eq(kt_writer_stack(w, &(kt_stack_def){ 1, KT_MAX_STACK_DEPTH, deep }), 0);
	cr_assert_eq(kt_writer_map(w, &(kt_map_def){ 0, 1, 0, 0, 0, 1, "x" }), -EINVAL);
	cr_assert_eq(kt_writer_map(w, &(kt_map_def){ 0, 1, 1, 0, 0, 2, "x\0" }), -EINVAL);
	cr_assert_eq(kt_writer_map(w, &(kt_map_def){ 0, 1, 1, 0, 0, 1, "x" }), 0);
	kt_writer_close(w);
	close(fd);
}

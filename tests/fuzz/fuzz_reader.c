/*
 * libFuzzer target over the whole reader: header, every frame kind, LZ4
 * decoding, event iteration, time conversion, rewinding, the merged
 * (kt_reader_next) order and the rewrite behind compress and slice; then
 * the same read with one allocation failing.  Every error must come with
 * its code and a message, and a failed allocation must read as -ENOMEM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <katra/reader.h>
#include "format/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int saw_enomem;

/* An error comes back with its code and says something; out of memory
 * says so. */
static void check_error(int rc, const kt_reader_error *e)
{
	if (rc >= 0)
		return;
	if (e->code != rc || !e->message[0])
		abort();
	if (rc == -ENOMEM) {
		if (!strstr(e->message, "out of memory"))
			abort();
		saw_enomem = 1;
	}
}

static void walk_frames(kt_reader *r)
{
	const kt_header *h = kt_reader_get_header(r);
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			kt_chunk_iter it;
			kt_event ev;
			uint64_t sum = 0;
			kt_chunk_iter_init(&it, &f);
			while (kt_chunk_next(&it, &ev)) {
				sum += ev.payload_len ? ev.payload[ev.payload_len - 1] : 0;
				sum += kt_ticks_to_ns(&h->clock, NULL, ev.ts);
			}
			(void)sum;
		} else if (f.kind == KT_FRAME_SUMMARY) {
			(void)kt_ticks_to_ns(&h->clock, &f.u.summary, f.u.summary.clock_ticks1);
		}
	}
	check_error(rc, kt_reader_get_last_error(r));
}

/* Both passes and the merged order; returns the first error. */
static int read_all(const uint8_t *data, size_t size)
{
	kt_reader *r;
	kt_reader_error err;
	int rc = kt_reader_open_mem(data, size, &err, &r);
	check_error(rc, &err);
	if (rc)
		return rc;
	for (int pass = 0; pass < 2; pass++) {
		walk_frames(r);
		kt_reader_rewind(r);
	}
	/* The merged order: re-reads chunks at their offsets. */
	kt_event ev;
	uint64_t last = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		last += ev.ts + ev.payload_len + kt_reader_get_time_ns(r, ev.ts);
	(void)last;
	check_error(rc, kt_reader_get_last_error(r));
	kt_reader_close(r);
	return rc;
}

/* The rewrite, whole and through a window over one thread. */
static void rewrite(const uint8_t *data, size_t size)
{
	int in = memfd_create("fuzz-in", MFD_CLOEXEC);
	if (in < 0 || write(in, data, size) != (ssize_t)size)
		abort();
	static const uint32_t keep[] = { 1 };
	for (int filter = 0; filter < 2; filter++) {
		int out = memfd_create("fuzz-out", MFD_CLOEXEC);
		if (out < 0)
			abort();
		kt_rewrite_options o = { .in_fds = &in, .n_in = 1, .out_fd = out,
				       .codec = filter ? KT_CODEC_LZ4_DELTA : -1, .filter = filter,
				       .from_ns = 1000, .to_ns = UINT64_MAX / 2,
				       .threads = keep, .nthreads = 1 };
		kt_rewrite_result res;
		int rc = kt_rewrite(&o, &res);
		if (res.in_index >= 0)
			check_error(rc, &res.in_err);
		close(out);
	}
	close(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (read_all(data, size) == 0)
		rewrite(data, size);
	/* Again with one allocation failing, chosen by the input. */
	if (size) {
		saw_enomem = 0;
		kt__alloc_count = 0;
		kt__alloc_fail_at = 1 + data[size - 1] % 32;
		read_all(data, size);
		int fired = kt__alloc_count >= kt__alloc_fail_at;
		kt__alloc_fail_at = 0;
		if (fired && !saw_enomem)
			abort(); /* a failed allocation went unreported */
	}
	return 0;
}

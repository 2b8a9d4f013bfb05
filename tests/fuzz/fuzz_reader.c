/*
 * libFuzzer target over the whole reader: header, every frame kind, LZ4
 * decoding, event iteration, time conversion, rewinding and the merged
 * (kt_reader_next) order.
 */
#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	kt_reader_error err;
	if (kt_reader_open_mem(&r, data, size, &err))
		return 0;
	const kt_header *h = kt_reader_header(r);
	for (int pass = 0; pass < 2; pass++) {
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
		kt_reader_rewind(r);
	}
	/* The merged order: re-reads chunks at their offsets. */
	kt_event ev;
	uint64_t last = 0;
	while (kt_reader_next(r, &ev) > 0)
		last += ev.ts + ev.payload_len;
	(void)last;
	kt_reader_close(r);
	return 0;
}

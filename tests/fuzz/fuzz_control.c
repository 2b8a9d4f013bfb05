/*
 * libFuzzer target over the crash files' reading side (recover/crash_read.c):
 * the control header, every ring slot it holds, ring records and a
 * /proc/PID/stat line, from arbitrary bytes.  The input is read as a
 * control file, and also as ring bytes: walked whole from position 0, and
 * fed in pieces as `katra recover` feeds them (each walk resumes where the
 * last stopped for want of bytes), which must find the same records.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recover/crash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
	uint64_t records, sum;
};

static int count(void *ctx, const kt__ring_rec *rec)
{
	struct tally *t = ctx;
	t->records++;
	t->sum += rec->bytes ? rec->bytes[rec->size - 1] : rec->count;
	return 0;
}

/* Walk @data in pieces of @step bytes; returns the bytes walked. */
static size_t walk_pieces(const uint8_t *data, size_t size, size_t step, struct tally *t)
{
	char why[256];
	size_t done = 0, have = 0;
	enum kt__walk_end end = KT__WALK_MORE;
	while (end == KT__WALK_MORE && done + have < size) {
		have += step < size - done - have ? step : size - done - have;
		size_t used = kt__ring_records(data + done, have, done, count, t, &end, why,
					       sizeof(why));
		done += used;
		have -= used;
	}
	return done;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];
	kt__ctl c;
	int rc = kt__ctl_parse(data, size, &c, why, sizeof(why));
	uint64_t slot = rc >= 0 ? c.slot_size : 4096;
	for (uint64_t i = 0; (i + 2) * slot <= size; i++) {
		kt__slot s;
		int st = kt__slot_parse(data + (i + 1) * slot, (size_t)slot, (uint32_t)i,
					rc >= 0 ? c.flags : 0, &s, why, sizeof(why));
		/* A flight window, when found, lies within a ring below head. */
		if (st == 0 && (s.from > s.head || s.head - s.from > s.size))
			abort();
	}
	struct tally whole = { 0 }, pieces = { 0 };
	enum kt__walk_end end;
	size_t n = kt__ring_records(data, size, 0, count, &whole, &end, why, sizeof(why));
	size_t step = size ? 1 + data[0] % 97 : 1;
	if (walk_pieces(data, size, step, &pieces) != n || pieces.records != whole.records ||
	    pieces.sum != whole.sum)
		abort();
	uint64_t start;
	kt__stat_start_time((const char *)data, size, &start);
	return 0;
}

/*
 * libFuzzer target over the crash files' reading side (ring/crash_read.c):
 * the control header, every ring slot it holds, and ring records, from
 * arbitrary bytes.  The input is read as a control file, and also as a
 * ring's bytes: the walk from each good slot's checkpoint to its head, and
 * the walk of the whole input from position 0.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ring/crash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, const kt__ring_rec *rec)
{
	uint64_t *n = ctx;
	*n += rec->bytes ? rec->bytes[rec->size - 1] : rec->count;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];
	kt__ctl c;
	uint64_t n = 0;
	int rc = kt__ctl_parse(data, size, &c, why, sizeof(why));
	uint64_t slot = rc >= 0 ? c.slot_size : 4096;
	/* The largest power of two the input holds, as a ring's size. */
	size_t ring = 8;
	while (ring * 2 <= size)
		ring *= 2;
	uint8_t *buf = ring <= size ? malloc(ring) : NULL;
	for (uint64_t i = 0; (i + 2) * slot <= size; i++) {
		kt__slot s;
		if (kt__slot_parse(data + (i + 1) * slot, (size_t)slot, (uint32_t)i, &s, why,
				   sizeof(why)) == 0 && buf)
			kt__ring_walk(data, ring, s.ck_tail, s.head, buf, count, &n, why,
				      sizeof(why));
	}
	if (buf)
		kt__ring_walk(data, ring, 0, ring, buf, count, &n, why, sizeof(why));
	free(buf);
	(void)n;
	return 0;
}

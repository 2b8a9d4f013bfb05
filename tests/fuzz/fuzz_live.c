/*
 * libFuzzer target for `katra top`'s reading of a live page
 * (flush/live.h): another process's memory, so any bytes.  The input is
 * laid over a zeroed page (a valid magic and size first, so that the
 * bounds after them are reached), copied out by kt__live_copy(), and a
 * window taken between it and itself and since the start, each printed as
 * `--once --json` would (tools/cmd/top_data.c).  Anything out of bounds
 * aborts under ASan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/top_data.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kt__live_page src, a, b;
	static struct top_view v;
	memset(&src, 0, sizeof(src));
	memcpy(&src, data, size < sizeof(src) ? size : sizeof(src));
	if (size && (data[0] & 1)) {
		src.magic = KT__LIVE_MAGIC;
		src.size = sizeof(src);
		src.seq &= ~1u;
	}
	if (kt__live_copy(&a, &src, sizeof(src)))
		return 0;
	b = a;
	const char *filter = size > 1 && (data[1] & 1) ? "a" : NULL;
	for (int w = 0; w < 2; w++) {
		top_window(&a, w ? &b : NULL, filter, (enum top_sort)(size % TOP_SORTS), &v);
		json_t *j = top_json(&v, 1);
		char *s = j ? json_dumps(j, 0) : NULL;
		free(s);
		json_decref(j);
	}
	return 0;
}

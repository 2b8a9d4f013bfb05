/*
 * libFuzzer target over `katra merge` (tools/cmd/merge.c): two traces
 * made of the input's bytes, merged through merge_traces() as the command
 * and `katra record` do.  Whatever the bytes, the merge must not crash,
 * block or leak, and an output it writes (status 0 or EXIT_PARTIAL) must
 * read back whole: complete, every frame and checksum good, as katra
 * verify wants it.
 *
 * Input: u16 split (little-endian), then the bytes: the first input is
 * the bytes before the split, the second those after it.  The corpus
 * starts from tests/data's version 4 files.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <katra/reader.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int put_file(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;
	return (f && fclose(f)) || !ok ? -1 : 0;
}

/* The output must be a whole, valid trace. */
static void reads_whole(const char *path)
{
	kt_reader *r;
	if (kt_reader_open(path, NULL, &r))
		abort();
	kt_event ev;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		;
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	if (rc || !st.complete || st.error)
		abort();
	kt_reader_close(r);
}

static char dir[64], a[96], b[96], out[96];

/* The private folder goes with the fuzzer. */
static void cleanup(void)
{
	unlink(a);
	unlink(b);
	unlink(out);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_merge.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(a, sizeof(a), "%s/a.katra", dir);
		snprintf(b, sizeof(b), "%s/b.katra", dir);
		snprintf(out, sizeof(out), "%s/out.katra", dir);
		atexit(cleanup);
	}
	if (size < 2)
		return 0;
	size_t split = (size_t)(data[0] | data[1] << 8);
	data += 2;
	size -= 2;
	if (split > size)
		split = size;
	if (put_file(a, data, split) || put_file(b, data + split, size - split))
		abort();
	unlink(out);
	const char *const paths[2] = { a, b };
	struct merge_proc procs[2];
	int rc = merge_traces(paths, 2, out, procs);
	if (rc == EXIT_OK || rc == EXIT_PARTIAL)
		reads_whole(out);
	else if (!access(out, F_OK))
		abort(); /* a failed merge leaves nothing at OUT */
	unlink(out);
	return 0;
}

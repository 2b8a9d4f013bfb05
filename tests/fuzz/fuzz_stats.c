/*
 * fuzz_stats - `katra stats` over any bytes, as text and as JSON: the
 * names and threads pass, the merged events pass through the pipeline
 * (tools/pipe.h), zone matching, the histograms and both printers.  It
 * must never crash or leak, and what it prints must be inert: valid JSON
 * when it says it printed JSON.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <katra/reader.h>
#include "tests/fuzz/parses.h"
#include "tools/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	if (kt_reader_open_mem(&r, data, size, NULL))
		return 0;
	FILE *devnull = fopen("/dev/null", "w");
	int truncated = 0;
	if (devnull && stats_run(r, "fuzz\x1b.katra", 0, devnull, &truncated) > 0)
		__builtin_trap(); /* 0 or a negative code, nothing else */
	if (devnull)
		fclose(devnull);
	/* JSON into memory, to check it parses whenever it was printed. */
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	kt_reader_rewind(r);
	int rc = m ? stats_run(r, "fuzz\xff.katra", 1, m, &truncated) : -1;
	if (m)
		fclose(m);
	if (rc == 0)
		must_parse(text, len);
	free(text);
	kt_reader_close(r);
	return 0;
}

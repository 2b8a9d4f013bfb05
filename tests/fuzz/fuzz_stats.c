/*
 * fuzz_stats - `katra stats` over any bytes, as text and as JSON: the
 * names and threads pass, the merged events pass through the pipeline
 * (tools/pipeline/pipe.h), zone matching, the histograms and both printers.  It
 * must never crash or leak, and what it prints must be inert: valid JSON
 * when it says it printed JSON.  The same events then go through the
 * collapsed stacks of `katra export --collapsed` (tools/analysis/collapse.h): every
 * line must be one stack and a number, with no control byte.  And through
 * the binary exports: the Perfetto trace must decode with the generated
 * protobuf-c code, the FXT must be whole records whose size words tile it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include "tests/fuzz/parses.h"
#include "tools/analysis/collapse.h"
#include "tools/export/export_fxt.h"
#include "tools/export/export_perfetto.h"
#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/analysis/stats.h"
#include "tools/pipeline/tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each line of @s: printable bytes (or UTF-8), ending " DIGITS\n". */
static void check_collapsed(const char *s, size_t len)
{
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c != '\n') {
			if (c < 0x20 || c == 0x7F)
				__builtin_trap();
			continue;
		}
		size_t k = i;
		while (k > start && s[k - 1] >= '0' && s[k - 1] <= '9')
			k--;
		if (k == i || k == start || s[k - 1] != ' ')
			__builtin_trap();
		start = i + 1;
	}
	if (start != len)
		__builtin_trap();
}

static void collapsed(kt_reader *r)
{
	struct tables t;
	char *text = NULL;
	size_t len = 0;
	struct collapse_result res;
	kt_reader_rewind(r);
	int rc = tables_load(r, &t);
	FILE *m = rc >= 0 ? open_memstream(&text, &len) : NULL;
	if (m) {
		rc = collapse_run(r, &t, m, &res);
		fclose(m);
		if (rc == 0)
			check_collapsed(text, len);
	}
	free(text);
	tables_free(&t);
}

static void check_perfetto(const char *s, size_t len)
{
	Perfetto__Protos__Trace *tr =
		perfetto__protos__trace__unpack(NULL, len, (const uint8_t *)s);
	if (!tr)
		__builtin_trap();
	perfetto__protos__trace__free_unpacked(tr, NULL);
}

/* Both binary exports of @r into memory, checked when they succeed. */
static void exported(kt_reader *r)
{
	struct tables t;
	kt_reader_rewind(r);
	if (tables_load(r, &t) < 0) {
		tables_free(&t);
		return;
	}
	for (int fxt = 0; fxt < 2; fxt++) {
		char *text = NULL;
		size_t len = 0;
		struct export_result res;
		FILE *m = open_memstream(&text, &len);
		if (!m)
			break;
		int rc = fxt ? fxt_run(r, &t, m, &res) : perfetto_run(r, &t, m, PERFETTO_PLAIN, &res);
		fclose(m);
		if (rc == 0 && fxt)
			must_tile_fxt((const uint8_t *)text, len);
		else if (rc == 0)
			check_perfetto(text, len);
		free(text);
	}
	tables_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	if (kt_reader_open_mem(data, size, NULL, &r))
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
	/* The JSON pass and the collapsed one salvage, as the commands do:
	 * every skip and resync is reached from hostile bytes too. */
	kt_reader_set_salvage(r, 1);
	kt_reader_rewind(r);
	int rc = m ? stats_run(r, "fuzz\xff.katra", 1, m, &truncated) : -1;
	if (m)
		fclose(m);
	if (rc == 0)
		must_parse(text, len);
	free(text);
	collapsed(r);
	exported(r);
	kt_reader_close(r);
	return 0;
}

/*
 * fuzz_format - the event formats of `katra dump`, `replay` and `export
 * --chrome` over any bytes: text and JSON lines through the two-thread
 * pipeline and one event at a time (as paced replay does), and the Chrome
 * document (with its samples' members, tools/analysis/samples.h), whose
 * output must parse whenever the pass succeeded.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <katra/reader.h>
#include "tests/fuzz/parses.h"
#include "tools/analysis/samples.h"
#include "tools/export/chrome.h"
#include "tools/pipeline/fmt.h"
#include "tools/pipeline/tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Text through the pipeline, with a filter, into @f. */
static void text_pass(kt_reader *r, const struct tables *t, FILE *f)
{
	static const uint32_t threads[] = { 1, 2, 0xFFFFFFFF };
	struct fmt_job job = { .t = t, .kind = FMT_TEXT, .to = UINT64_MAX, .threads = threads,
			       .nthreads = (int)(t->nnames % 2 ? 3 : 0) };
	struct fmt *fm = fmt_new(&job, f);
	kt_reader_rewind(r);
	if (fm)
		(void)fmt_pass(r, fm);
	fmt_free(fm);
}

/* JSON lines one event at a time, as paced replay formats them. */
static void jsonl_each(kt_reader *r, const struct tables *t, FILE *f)
{
	struct fmt_job job = { .t = t, .kind = FMT_JSONL, .to = UINT64_MAX };
	struct fmt *fm = fmt_new(&job, f);
	kt_event ev;
	kt_reader_rewind(r);
	while (fm && kt_reader_next(r, &ev) > 0)
		if (fmt_event(fm, &ev, kt_reader_get_time_ns(r, ev.ts)))
			break;
	fmt_free(fm);
}

struct samples_ctx {
	kt_reader *r;
	const struct tables *t;
};

static int samples(void *ctx, FILE *f)
{
	struct samples_ctx *c = ctx;
	return samples_chrome(c->r, c->t, f, 1);
}

static void chrome(kt_reader *r, const struct tables *t)
{
	struct samples_ctx sc = { r, t };
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		return;
	kt_reader_rewind(r);
	struct chrome_opts o = { .to_ns = UINT64_MAX, .samples = samples, .samples_ctx = &sc };
	struct export_result res;
	int rc = chrome_run(r, t, m, &o, &res);
	fclose(m);
	if (rc == 0)
		must_parse(text, len);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	if (kt_reader_open_mem(data, size, NULL, &r))
		return 0;
	struct tables t;
	FILE *devnull = fopen("/dev/null", "w");
	if (tables_load(r, &t) >= 0 && devnull) {
		text_pass(r, &t, devnull);
		jsonl_each(r, &t, devnull);
		chrome(r, &t);
	}
	if (devnull)
		fclose(devnull);
	tables_free(&t);
	kt_reader_close(r);
	return 0;
}

/*
 * diff_run.c - one trace read for `katra diff`; diff_run.h says what it keeps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/diff_run.h"
#include "tools/grow.h"
#include "tools/progress.h"

static int on_zone(void *ctx, uint32_t thread, uint32_t name, uint64_t begin, uint64_t dur,
		   uint64_t self)
{
	struct diff_run *run = ctx;
	(void)thread;
	(void)begin;
	uint32_t *found = idmap_find(&run->ids, name);
	if (!found) {
		if (run->nnames == DIFF_NAMES) {
			run->unsampled++;
			return 0;
		}
		int added;
		if (grow_array((void **)&run->names, &run->cap, run->nnames + 1, sizeof(*run->names)) ||
		    !(found = idmap_slot(&run->ids, name, (uint32_t)run->nnames, &added)))
			return -ENOMEM;
		run->names[run->nnames++] = (struct diff_name){ .id = name };
	}
	return diff_sample_add(&run->names[*found].s, dur, self);
}

static int on_frame(void *ctx, uint32_t thread, uint64_t ns, uint64_t interval)
{
	struct diff_run *run = ctx;
	(void)thread;
	(void)ns;
	return diff_sample_add(&run->frames, interval, 0);
}

/* The header's run id, epoch and capture id, copied. */
static void run_header(struct diff_run *run, const kt_header *h)
{
	run->captured = h->run_id && h->run_id[0];
	snprintf(run->run_id, sizeof(run->run_id), "%s", h->run_id ? h->run_id : "");
	snprintf(run->capture_id, sizeof(run->capture_id), "%s", h->capture_id ? h->capture_id : "");
	run->epoch = h->epoch;
}

int diff_run_read(struct diff_run *run)
{
	struct input in;
	int rc = input_open(&in, run->path);
	if (rc)
		return rc;
	idmap_init(&run->ids);
	run_header(run, kt_reader_get_header(in.r));
	struct stats_hooks hooks = { .zone = on_zone, .frame = on_frame, .ctx = run };
	progress_init(0, in.r);
	rc = stats_collect(in.r, &hooks, &run->stats);
	progress_end();
	kt_reader_status st;
	kt_reader_get_status(in.r, &st);
	run->dropped = st.dropped;
	run->truncated = run->stats ? stats_truncated(run->stats) : 0;
	int result = rc ? pass_failed(run->path, in.r, rc) : EXIT_OK;
	input_close(&in);
	return result;
}

const char *diff_run_name(const struct diff_run *run, uint32_t id, size_t *len)
{
	const char *s = id ? tables_name(stats_tables(run->stats), id, len) : NULL;
	if (!s) {
		*len = 1;
		return "?";
	}
	return s;
}

void diff_run_free(struct diff_run *run)
{
	for (size_t i = 0; i < run->nnames; i++)
		diff_sample_free(&run->names[i].s);
	free(run->names);
	idmap_free(&run->ids);
	diff_sample_free(&run->frames);
	stats_free(run->stats);
	run->stats = NULL;
}

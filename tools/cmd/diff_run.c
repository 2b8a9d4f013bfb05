/*
 * diff_run.c - one trace read for `katra diff`; diff_run.h says what it keeps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/atomic.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/diff_run.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/progress.h"

static int on_zone(void *ctx, uint32_t thread, uint32_t name, uint64_t begin, uint64_t dur,
		   uint64_t self)
{
	struct diff_run *run = ctx;
	(void)begin;
	if (!run->have_last || run->last_tid != thread) {
		run->last_tid = thread;
		run->last_proc = tables_thread_process(stats_tables(*run->pass), thread);
		run->have_last = 1;
	}
	uint64_t key = (uint64_t)run->last_proc << 32 | name;
	uint32_t *found = idmap_find(&run->ids, key);
	if (!found) {
		if (run->nnames == DIFF_NAMES) {
			run->unsampled++;
			return 0;
		}
		int added;
		if (grow_array((void **)&run->names, &run->cap, run->nnames + 1, sizeof(*run->names)) ||
		    !(found = idmap_slot(&run->ids, key, (uint32_t)run->nnames, &added)))
			return -ENOMEM;
		run->names[run->nnames++] = (struct diff_name){ .id = name, .proc = run->last_proc,
								 .s.limit = run->keep };
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

/* @len bytes of @b, malloc'd (at least one byte); NULL without memory. */
static char *copy_bytes(const char *b, size_t len)
{
	char *s = malloc(len ? len : 1);
	if (s && len)
		memcpy(s, b, len);
	return s;
}

/* Each sampled name's bytes copied out of @s ("?" when the file has none),
 * and its process's name ("" when the file has none).  0 or -ENOMEM. */
static int copy_names(struct diff_run *run, const struct stats *s)
{
	const struct tables *t = stats_tables(s);
	for (size_t i = 0; i < run->nnames; i++) {
		struct diff_name *dn = &run->names[i];
		size_t len = 1;
		const char *b = dn->id ? tables_name(t, dn->id, &len) : NULL;
		if (!b) {
			b = "?";
			len = 1;
		}
		const struct tproc *p = tables_process(t, dn->proc);
		dn->plen = p ? p->name_len : 0;
		dn->len = len;
		if (!(dn->name = copy_bytes(b, len)) ||
		    !(dn->process = copy_bytes(p ? tables_process_name(t, p) : "", dn->plen)))
			return -ENOMEM;
	}
	return 0;
}

int diff_run_read(struct diff_run *run, int progress)
{
	struct input in;
	int rc = input_open(&in, run->path);
	if (rc)
		return rc;
	idmap_init(&run->ids);
	run->frames.limit = run->keep;
	run_header(run, kt_reader_get_header(in.r));
	struct stats_hooks hooks = { .zone = on_zone, .frame = on_frame, .ctx = run };
	struct stats *stats = NULL;
	run->pass = &stats; /* stats_collect() sets it before the first zone */
	if (progress)
		progress_init(0, in.r);
	rc = stats_collect(in.r, &hooks, &stats);
	if (progress)
		progress_end();
	kt_reader_status st;
	kt_reader_get_status(in.r, &st);
	run->dropped = st.dropped;
	run->truncated = stats ? stats_truncated(stats) : 0;
	rc = rc ? rc : copy_names(run, stats);
	rc = rc ? rc : diff_sched_take(&run->sched, stats);
	stats_free(stats);
	run->pass = NULL;
	int result = rc ? pass_failed(run->path, in.r, rc) : EXIT_OK;
	input_close(&in);
	return result;
}

struct readers {
	struct diff_run *runs;
	int *rc;
	size_t n;
	size_t next;
	int failed;
};

static void *reader_main(void *arg)
{
	struct readers *r = arg;
	/* Relaxed, both: the counter only hands each index to one thread and
	 * the flag only saves work; the runs and results reach the caller
	 * through pthread_join(). */
	for (size_t i; !kt__load_stale(&r->failed) && (i = kt__add_relaxed(&r->next, 1)) < r->n;) {
		r->rc[i] = diff_run_read(&r->runs[i], r->n == 1);
		if (r->rc[i] != EXIT_OK)
			kt__store_relaxed(&r->failed, 1);
	}
	return NULL;
}

int diff_runs_read(struct diff_run *runs, size_t n)
{
	int *rc = calloc(n ? n : 1, sizeof(*rc));
	if (!rc) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	size_t side[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++)
		side[runs[i].side]++;
	for (size_t i = 0; i < n; i++) {
		size_t keep = DIFF_POOL / side[runs[i].side];
		runs[i].keep = (uint32_t)(keep < DIFF_SAMPLE ? keep : DIFF_SAMPLE);
	}
	struct readers r = { .runs = runs, .rc = rc, .n = n };
	pthread_t t[DIFF_READERS - 1];
	size_t started = 0;
	/* A thread that cannot start leaves its runs to the others. */
	while (started + 1 < DIFF_READERS && started + 1 < n &&
	       !pthread_create(&t[started], NULL, reader_main, &r))
		started++;
	reader_main(&r);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	int result = EXIT_OK;
	for (size_t i = 0; i < n && result == EXIT_OK; i++)
		result = rc[i];
	free(rc);
	return result;
}

void diff_run_free(struct diff_run *run)
{
	for (size_t i = 0; i < run->nnames; i++) {
		diff_sample_free(&run->names[i].s);
		free(run->names[i].name);
		free(run->names[i].process);
	}
	free(run->names);
	idmap_free(&run->ids);
	diff_sample_free(&run->frames);
	diff_sched_free(&run->sched);
}

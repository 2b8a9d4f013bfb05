/*
 * stats_procs.c - `katra stats` of a merged trace (SPEC §4.10): a row per
 * process (its threads' events and drops added up), before the threads'.
 * A trace of one process has no such table: its output stays as it was.
 * And which zone names two processes share, so that each row says whose.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/stats.h"
#include "tools/analysis/stats_impl.h"
#include "tools/pipeline/text.h"

/* Per process of c->t (its index in t->procs): threads, events, drops. */
struct prow {
	uint64_t threads, events, dropped;
};

/* The rows, calloc'd (t->nprocs of them); NULL when out of memory.  A
 * thread of a process with no entry is counted nowhere. */
static struct prow *proc_rows(const struct stats *c)
{
	const struct tables *t = &c->t;
	struct prow *r = calloc(t->nprocs ? t->nprocs : 1, sizeof(*r));
	for (size_t i = 0; r && i < c->th.n; i++) {
		const struct sthread *th = thread_at(c, (long)i);
		const struct tproc *p = tables_process(t, tables_thread_process(t, th->id));
		if (!p)
			continue;
		struct prow *row = &r[p - t->procs];
		row->threads++;
		row->events += th->events;
		row->dropped += th->dropped;
	}
	return r;
}

int stats_text_processes(FILE *f, const struct stats *c)
{
	const struct tables *t = &c->t;
	if (!tables_multiprocess(t))
		return 0;
	struct prow *r = proc_rows(c);
	if (!r)
		return -ENOMEM;
	fprintf(f, "\n%-8s %-8s %-20s %8s %12s %10s\n", "process", "pid", "name", "threads",
		"events", "dropped");
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		char *e = text_escape(tables_process_name(t, p), p->name_len);
		if (!e) {
			free(r);
			return -ENOMEM;
		}
		fprintf(f, "%-8u %-8" PRIu64 " %-20s %8" PRIu64 " %12" PRIu64 " %10" PRIu64 "\n",
			p->id, p->pid, e, r[i].threads, r[i].events, r[i].dropped);
		free(e);
	}
	free(r);
	return 0;
}

json_t *stats_json_processes(const struct stats *c)
{
	const struct tables *t = &c->t;
	struct prow *r = proc_rows(c);
	json_t *a = json_array();
	if (!r || !a) {
		free(r);
		json_decref(a);
		return NULL;
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		if (c->filtered && !r[i].threads)
			continue; /* a process the filter left out */
		json_t *o = json_pack("{s:I,s:I,s:I,s:o,s:I,s:I,s:I}", "process", (json_int_t)p->id,
				      "pid", (json_int_t)p->pid, "parent_pid", (json_int_t)p->parent_pid,
				      "name", text_json_string(tables_process_name(t, p), p->name_len),
				      "threads", (json_int_t)r[i].threads, "events",
				      (json_int_t)r[i].events, "dropped", (json_int_t)r[i].dropped);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			a = NULL;
			break;
		}
	}
	free(r);
	return a;
}

/* qsort's context: names compared by their bytes. */
static const struct stats *by_name_c;

static int by_name(const void *a, const void *b)
{
	const struct tables *t = &by_name_c->t;
	const struct sname *x = name_at(by_name_c, *(const long *)a);
	const struct sname *y = name_at(by_name_c, *(const long *)b);
	size_t nx = 0, ny = 0;
	const char *sx = x->id ? tables_name(t, x->id, &nx) : NULL;
	const char *sy = y->id ? tables_name(t, y->id, &ny) : NULL;
	if (!sx || !sy)
		return !sx - !sy;
	int d = memcmp(sx, sy, nx < ny ? nx : ny);
	return d ? d : (nx > ny) - (nx < ny);
}

uint8_t *stats_name_clashes(const struct stats *c, int *rc)
{
	size_t n = c->names.n;
	if (!tables_multiprocess(&c->t) || n < 2)
		return NULL;
	long *ix = malloc(n * sizeof(*ix));
	uint8_t *clash = calloc(n, 1);
	if (!ix || !clash) {
		free(ix);
		free(clash);
		*rc = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		ix[i] = (long)i;
	by_name_c = c; /* the command's one thread */
	qsort(ix, n, sizeof(*ix), by_name);
	/* A run of one name: every row of it is said when two processes
	 * have one (a zone and a frame mark of one name in one process are
	 * told apart by "(frame mark)" already). */
	for (size_t a = 0, b; a < n; a = b) {
		int mixed = 0;
		for (b = a + 1; b < n && name_at(c, ix[a])->id && !by_name(&ix[a], &ix[b]); b++)
			mixed |= name_at(c, ix[b])->proc != name_at(c, ix[a])->proc;
		for (size_t i = a; mixed && i < b; i++)
			clash[ix[i]] = 1;
	}
	free(ix);
	return clash;
}

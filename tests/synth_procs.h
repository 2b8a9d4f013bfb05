/*
 * A merged trace of four processes with known zones, for the report and
 * diff tests of issue #30: four one-process files written with the public
 * writer API (a process entry each, CLOCK_MONOTONIC, so a tick is a ns)
 * and made one by `katra merge`, as `katra record` makes its trace.
 * t_ prefix, as in helpers.h.
 */
#ifndef KATRA_TESTS_SYNTH_PROCS_H
#define KATRA_TESTS_SYNTH_PROCS_H

#include <criterion/criterion.h>

#include <katra/writer.h>
#include "cli.h"
#include "helpers.h"

/* A zone of one of a process's names: name index, begin and length (ns). */
struct t_pzone {
	uint32_t name;
	uint64_t begin, dur;
};

/* One process's file. */
struct t_pfile {
	uint64_t pid, parent;
	const char *name, *thread;
	const char *const *names; /* names[0] is id 1, ... */
	uint32_t nnames;
	const struct t_pzone *zones; /* in begin order; zones[i + 1] may nest in zones[i] */
	size_t nzones;
	uint64_t dropped; /* one drop record of this many events, when not 0 */
};

struct t_prec {
	uint64_t ts;
	uint32_t name;
	uint8_t type;
};

/* The zones' records in time order (a nested zone's inside its parent's). */
static inline size_t t_pfile_events(const struct t_pfile *f, uint8_t *buf, size_t cap)
{
	struct t_prec ev[64];
	size_t n = 0, at = 0;
	for (size_t i = 0; i < f->nzones && n + 2 <= 64; i++) {
		ev[n++] = (struct t_prec){ f->zones[i].begin, f->zones[i].name, KT_EV_ZONE_BEGIN };
		ev[n++] = (struct t_prec){ f->zones[i].begin + f->zones[i].dur, f->zones[i].name,
					   KT_EV_ZONE_END };
	}
	for (size_t i = 1; i < n; i++) /* insertion sort by time, stable */
		for (size_t j = i; j > 0 && ev[j - 1].ts > ev[j].ts; j--) {
			struct t_prec x = ev[j];
			ev[j] = ev[j - 1];
			ev[j - 1] = x;
		}
	for (size_t i = 0; i < n; i++) {
		kt_event e = { .ts = ev[i].ts, .name_id = ev[i].name, .type = ev[i].type };
		size_t k = kt_event_encode(buf + at, cap - at, &e);
		cr_assert_gt(k, 0);
		at += k;
	}
	return at;
}

/* @f as a trace at @path. */
static inline void t_pfile_write(const char *path, const struct t_pfile *f)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	h.process_id = f->pid;
	h.clock = (kt_clock_calibration){ KT_CLOCK_MONOTONIC, 1000000000, 0, 0 };
	unlink(path);
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	kt_process_def p = { 0, 0, f->pid, f->parent, 1000, 0, (uint32_t)strlen(f->name), 0,
			     f->name, NULL };
	cr_assert_eq(kt_writer_process(w, &p), 0);
	for (uint32_t i = 0; i < f->nnames; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, f->names[i], strlen(f->names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, (uint32_t)f->pid, f->thread), 0);
	uint8_t ev[2048];
	size_t len = t_pfile_events(f, ev, sizeof(ev));
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, (uint32_t)(2 * f->nzones), ev, len), 0);
	if (f->dropped)
		cr_assert_eq(kt_writer_drop(w, 1, f->dropped, 100, 200), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* @n processes' files merged into @out (removed first); the inputs removed. */
static inline void t_procs_merge(const char *out, const struct t_pfile *f, size_t n)
{
	char in[8][96];
	const char *argv[16] = { "merge" };
	size_t k = 1;
	cr_assert_leq(n, 8);
	for (size_t i = 0; i < n; i++) {
		snprintf(in[i], sizeof(in[i]), "%s.in%zu.katra", out, i);
		t_pfile_write(in[i], &f[i]);
		argv[k++] = in[i];
	}
	argv[k++] = "-o";
	argv[k++] = out;
	argv[k] = NULL;
	unlink(out);
	struct proc p;
	run_katra(&p, argv);
	cr_assert_eq(p.status, 0, "merge: %.*s", (int)p.err_len, p.err);
	for (size_t i = 0; i < n; i++)
		unlink(in[i]);
}

/*
 * The four processes: "server" (pid 500; work [1000, 5000) holding parse
 * [2000, 3000), work [10000, 12000); 3 events dropped), two "client"s
 * (501: work [3000, 3500) and [5000, 6500); 502: work [4000, 4700)), and
 * "helper" (503: idle [6000, 6300)).  "work" is a zone name of two
 * process names, and of two processes of one name.
 */
static const char *const t_server_names[] = { "work", "parse" };
static const char *const t_client_names[] = { "work" };
static const char *const t_helper_names[] = { "idle" };
static const struct t_pzone t_server_zones[] = { { 1, 1000, 4000 }, { 2, 2000, 1000 },
						 { 1, 10000, 2000 } };
static const struct t_pzone t_client1_zones[] = { { 1, 3000, 500 }, { 1, 5000, 1500 } };
static const struct t_pzone t_client2_zones[] = { { 1, 4000, 700 } };
static const struct t_pzone t_helper_zones[] = { { 1, 6000, 300 } };

static const struct t_pfile t_four_procs[] = {
	{ 500, 1, "server", "main", t_server_names, 2, t_server_zones, 3, 3 },
	{ 501, 500, "client", "main", t_client_names, 1, t_client1_zones, 2, 0 },
	{ 502, 500, "client", "main", t_client_names, 1, t_client2_zones, 1, 0 },
	{ 503, 500, "helper", "helper", t_helper_names, 1, t_helper_zones, 1, 0 },
};

#endif

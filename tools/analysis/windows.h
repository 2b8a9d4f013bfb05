/*
 * windows.h - each thread's window in a trace, for `katra stats` and
 * `katra report`: from its first event to its last, every event of the
 * thread between them is in the file (SPEC §4.6).  A flight snapshot
 * keeps a window per thread, each as far back as the thread's own ring
 * held; what the ring overwrote before it is the thread's drop record
 * timed before its first event (its loss).  Zone ends whose begins are
 * not in the file are counted per thread: in a snapshot, zones open from
 * before the window, listed (the first WIN_OPEN_MAX) as begun at the
 * window's start, which is as long as the file can say they ran.
 *
 * Shown only for files with such a loss (a snapshot whose rings wrapped):
 * elsewhere every thread's window is its span, which stats already says.
 * Times are ns since the session's start (the header's calibration).
 *
 * Each thread's row is found in O(1) expected (tools/pipeline/idmap.h) while the
 * events are read, by binary search once sorted: a file of a million
 * threads costs no more per thread than one of ten.
 *
 * One thread per table.
 */
#ifndef KT_TOOLS_WINDOWS_H
#define KT_TOOLS_WINDOWS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/drops.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

struct win_thread {
	uint32_t id;
	uint64_t first_ns, last_ns;     /* its window */
	uint64_t lost, lost_first_ns, lost_last_ns; /* overwritten before it */
	uint64_t unbegun;               /* zone ends whose begin is not in the file */
};

#define WIN_OPEN_MAX 64

/* A zone open from its thread's window start: the first event kept. */
struct win_open {
	uint32_t tid, name;
	uint64_t end_ns;
};

struct windows {
	struct win_thread *t;
	size_t n, cap;
	struct idmap ids;               /* id -> index in t, until sorted */
	struct win_open open[WIN_OPEN_MAX];
	size_t nopen;
	uint64_t origin_ns;             /* the session's start */
	int any;                        /* a thread lost events before its window */
};

/* windows_unbegun - a zone end of thread @id, of name @name at @ns,
 * found no begin.  0 or -ENOMEM. */
int windows_unbegun(struct windows *w, uint32_t id, uint32_t name, uint64_t ns);

/* windows_add - thread @id's window [@first_ns, @last_ns] (ns as the
 * reader converts), after every event was read.  0 or -ENOMEM. */
int windows_add(struct windows *w, uint32_t id, uint64_t first_ns, uint64_t last_ns);

/* windows_finish - each thread's loss before its window, from @d (sorted
 * by thread) converted by @r; threads in id order. */
void windows_finish(struct windows *w, const struct drops *d, kt_reader *r);

/* windows_text - the "thread windows" table, when w->any.  0 or -ENOMEM. */
int windows_text(FILE *f, const struct windows *w, const struct tables *t);

/* windows_json - the "windows" array (NULL when out of memory). */
json_t *windows_json(const struct windows *w, const struct tables *t);

void windows_free(struct windows *w);

#endif

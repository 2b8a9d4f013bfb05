/*
 * schedstats.h - on-CPU and off-CPU time per zone from a trace's
 * scheduler records (SPEC §4.2.1, type 20), for `katra stats`.
 *
 * Per followed thread, in the merged order: its state (on a CPU, off it
 * blocked, off it preempted) and the off-CPU time so far of each kind.  A
 * zone of a followed thread takes, at its end, the off-CPU time that
 * passed since its begin (an off interval still open at either end
 * counted up to it, so a switch in that sorts just after the zone's end
 * takes nothing away); the rest of its duration is on-CPU.  A zone is
 * *covered* when its thread was followed at its begin and no loss
 * (flags 4) came before its end; only covered zones count, the others are
 * counted as not covered.  Per name: covered zones, on-CPU, blocked and
 * preempted ns, and the off-CPU share of their time.
 *
 * The header says whether there is anything to say: KT_HDR_SCHED (the
 * records), KT_HDR_SCHED_ABSENT (refused: the note says why), neither
 * (nothing printed, no JSON key).
 *
 * Bounded whatever the file: SCHED_THREADS followed threads (records of
 * others only counted), one entry per name with covered zones; lookups
 * O(1) expected (tools/idmap.h): time linear in the events.
 *
 * One thread per struct schedstats.
 */
#ifndef KT_TOOLS_SCHEDSTATS_H
#define KT_TOOLS_SCHEDSTATS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

#define SCHED_THREADS (1u << 20)

/* What a zone's begin saw of its thread, for its end. */
struct sched_mark {
	uint64_t blocked, preempted; /* the thread's off-CPU ns so far */
	uint32_t epoch;              /* its follows and losses so far */
	uint32_t ok;                 /* it was followed */
};

struct sched_thread {
	uint32_t id;       /* the followed thread's id */
	uint32_t epoch;
	int followed;
	int state;         /* 0 on a CPU, else the kt_sched_what it left with */
	uint64_t since;    /* when it left */
	uint64_t blocked, preempted;
};

struct sched_name {
	uint32_t id;
	uint64_t zones, not_covered;
	uint64_t on_ns, blocked_ns, preempted_ns;
};

struct schedstats {
	int asked;         /* the header has KT_HDR_SCHED or _ABSENT */
	int present;       /* KT_HDR_SCHED */
	char *why;         /* absent: the note's reason, or NULL */
	struct sched_thread *t;
	size_t n, cap;
	struct idmap tmap;
	struct sched_name *nm;
	size_t nn, capn;
	struct idmap nmap;
	uint64_t records, lost, ignored;
};

/* schedstats_init - empty, told by @h whether the file has scheduler
 * records.  0 or -ENOMEM. */
int schedstats_init(struct schedstats *s, const kt_header *h);

/* schedstats_event - a type 20 record, at @ns.  0 or -ENOMEM. */
int schedstats_event(struct schedstats *s, const kt_event *ev, uint64_t ns);

/* schedstats_mark - what a zone beginning at @ns on @thread needs at its end. */
void schedstats_mark(const struct schedstats *s, uint32_t thread, uint64_t ns,
		     struct sched_mark *m);

/* schedstats_zone - a zone of @name on @thread, begun as @m says, ended at
 * @ns after @dur ns.  0 or -ENOMEM. */
int schedstats_zone(struct schedstats *s, uint32_t thread, uint32_t name,
		    const struct sched_mark *m, uint64_t ns, uint64_t dur);

/* schedstats_sort - the names in id order, for printing. */
void schedstats_sort(struct schedstats *s);

/* schedstats_text - the table (or the absence and why) to @f; nothing when
 * nobody asked.  0, -ENOMEM or -EIO. */
int schedstats_text(FILE *f, const struct schedstats *s, const struct tables *t);

/* schedstats_json - the "sched" object; NULL when out of memory. */
json_t *schedstats_json(const struct schedstats *s, const struct tables *t);

void schedstats_free(struct schedstats *s);

#endif

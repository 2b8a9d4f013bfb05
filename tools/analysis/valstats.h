/*
 * valstats.h - the values of `katra stats`: counters (SPEC §4.2, types 4
 * and 5) per name, and zones' own values and texts (an argument named 0,
 * types 10-13: kt_zone_value_*(), kt_zone_text()) per zone name.
 *
 * Per name, of its values: count, min, mean, max and the last (the latest
 * in the merged order the pass gives).  An integer counter's min, max and
 * last stay integers; a name with any floating-point value is given in
 * doubles.  A zone's texts are counted (their bytes go to its slice in the
 * exports and report).  A zone value or text with no zone open on its
 * thread is counted apart.
 *
 * Bounded as the input: one row per distinct name with a value (idmap.h:
 * O(1) expected per event, whatever the ids).
 *
 * One thread per struct valstats.
 */
#ifndef KT_TOOLS_VALSTATS_H
#define KT_TOOLS_VALSTATS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

/* The values of one name. */
struct vstat {
	uint32_t id;
	uint64_t n;             /* numeric values */
	int f64;                /* one of them was a double */
	int64_t imin, imax, ilast;
	double dmin, dmax, dlast, sum;
	uint64_t texts;         /* zone texts */
};

/* Rows of one kind, in first-seen order until valstats_sort(). */
struct vtable {
	struct vstat *a;
	size_t n, cap;
	struct idmap ids;
};

struct valstats {
	struct vtable counters; /* by counter name */
	struct vtable zones;    /* by the name of the zone a value belongs to */
	uint64_t outside;       /* zone values and texts with no zone open */
};

/* valstats_init - empty. */
void valstats_init(struct valstats *v);

/* valstats_counter - count counter event @ev (other events and a record
 * whose payload is missing are ignored).  0 or -ENOMEM. */
int valstats_counter(struct valstats *v, const kt_event *ev);

/* valstats_zone_value - zone value or text @ev (an argument named 0) of
 * the innermost open zone, named @zone; @zone 0: none was open.  0 or
 * -ENOMEM. */
int valstats_zone_value(struct valstats *v, uint32_t zone, const kt_event *ev);

/* valstats_sort - the rows in id order, for printing (after the pass). */
void valstats_sort(struct valstats *v);

/* valstats_text - the "counters" and "zone values and texts" sections,
 * each only when it has rows.  0, -ENOMEM or -EIO. */
int valstats_text(FILE *f, const struct valstats *v, const struct tables *t);

/* valstats_json - set "counters" and "zone_values" in @o when they have
 * rows.  Returns how many keys it set, or -ENOMEM. */
int valstats_json(json_t *o, const struct valstats *v, const struct tables *t);

/* valstats_free - release @v's memory. */
void valstats_free(struct valstats *v);

#endif

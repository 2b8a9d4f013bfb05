/*
 * export_args.h - a zone argument (export_state.h's struct xarg) as the
 * exports write it: its name (a name 0 is the zone's own "value" or
 * "text", as Tracy's ZoneValue and ZoneText), a Perfetto DebugAnnotation
 * typed as it was given (int_value, uint_value, double_value,
 * string_value; named inline), a Chrome args member.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_EXPORT_ARGS_H
#define KT_TOOLS_EXPORT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "tools/pipeline/export_state.h"
#include "tools/pipeline/tables.h"

#define XARG_PB_MAX (192u << 10) /* one event's annotations: under a Perfetto batch */

/* Growing bytes: the debug annotations of one event. */
struct abuf {
	uint8_t *b;
	size_t n, cap;
};

/* xarg_name - @a's key (malloc'd, well-formed UTF-8, *@n bytes): its
 * name ("?" when the file names none), and "#N" after it for the Nth of
 * its zone's arguments of that name (N > 1), as a viewer keeps one value
 * of a key.  NULL when out of memory. */
char *xarg_name(const struct tables *t, const struct xarg *a, size_t *n);

/* xarg_of_event - argument @ev as a kept one would be (its text still
 * @ev's payload). */
void xarg_of_event(struct xarg *a, const kt_event *ev);

/*
 * xarg_pb - @a as TrackEvent field 4 (a DebugAnnotation) appended to @ab.
 * Returns 0, 1 when it would take @ab past XARG_PB_MAX (nothing added),
 * or -ENOMEM.
 */
int xarg_pb(const struct tables *t, const struct xarg *a, struct abuf *ab);

/* xarg_pb_kept - xarg_pb() of each of @th's kept arguments of its zone
 * at @level not yet written, while they fit; those added are marked
 * written.  Returns 0 or -ENOMEM. */
int xarg_pb_kept(const struct tables *t, struct xthread *th, size_t level, struct abuf *ab);

/*
 * xarg_json_kept - @th's kept arguments of its zone at @level not yet
 * written as JSON members "NAME":VALUE after @base's (members too, or ""),
 * into *@out (malloc'd; NULL when there are none), marked written.  A u64
 * past INT64_MAX and a double that is not finite are strings: JSON
 * readers lose or refuse them as numbers.  Returns 0 or -ENOMEM.
 */
int xarg_json_kept(const struct tables *t, struct xthread *th, size_t level, const char *base,
		   char **out);

#endif

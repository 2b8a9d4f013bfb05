/*
 * perfetto_slice.h - flows on the slices around them, for `katra export
 * --perfetto`: Perfetto binds a TrackEvent's flow_ids and
 * terminating_flow_ids to the slice that event begins or ends, and its
 * importer takes the events in time order, so:
 *
 *  - a zone's begin is held until its thread's next event that is not
 *    one of its arguments (export_state.h), and a flow begun or stepped
 *    on that thread before then (right inside the zone, nothing but
 *    arguments and flows between) goes out on it as flow_ids: bound to
 *    the zone at its begin, before any later zone that ends the flow;
 *  - a flow ended inside a zone goes out on that zone's end as
 *    terminating_flow_ids (at or after the flow's end, so after its begin
 *    wherever that was bound);
 *  - a flow outside every zone, a flow begun after other events of its
 *    zone, or one past the caps below, has no slice to bind to here: the
 *    caller writes it as an instant carrying it, and counts it.
 *
 * Memory: per thread, PSLICE_BEGIN_FLOWS flow ids for the held begin and
 * PSLICE_ENDS waiting for their zones' ends.  One thread (the export's).
 */
#ifndef KT_TOOLS_PERFETTO_SLICE_H
#define KT_TOOLS_PERFETTO_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/export/perfetto_pb.h"

#define PSLICE_BEGIN_FLOWS 8u /* flows on one held begin */
#define PSLICE_ENDS 32u       /* flow ends waiting per thread */
#define PSLICE_END_FLOWS 8u   /* flow ends on one zone's end */

/* One thread's. */
struct pslice {
	uint64_t begin_ids[PSLICE_BEGIN_FLOWS]; /* flows on the held begin */
	unsigned begin_flows;
	unsigned nends;
	struct {
		size_t level;    /* the zone's: 0 outermost */
		uint64_t id;
	} ends[PSLICE_ENDS];
};

/* Every thread's, by its index (export_state.h's xthread.index). */
struct pslices {
	struct pslice *s;
	size_t n, cap;
};

/* pslice_of - thread @index's, made (zeroed) on first use; NULL when out
 * of memory. */
struct pslice *pslice_of(struct pslices *all, size_t index);

/* pslice_flow - bind flow @id (phase @phase, a kt_flow_phase) of a thread
 * with @depth zones open, the innermost's begin held when @held, as
 * above.  Returns 1 when bound, 0 when the caller must write it as an
 * instant (after the held begin). */
int pslice_flow(struct pslice *s, size_t depth, int held, unsigned phase, uint64_t id);

/* pslice_begin - the held begin goes out as the TrackEvent @te: the flows
 * bound to it go on @te. */
void pslice_begin(struct pslice *s, struct pb *te);

/* pslice_end - the zone at @level ends with the TrackEvent @te: the flow
 * ends waiting for it (and for zones inside it) go on @te. */
void pslice_end(struct pslice *s, size_t level, struct pb *te);

void pslices_free(struct pslices *all);

#endif

/*
 * perfetto_samples.h - sample records (SPEC §4.2.2) as Perfetto's
 * callstack samples, for `katra export --perfetto`: each a TracePacket
 * holding a PerfSample (pid, tid, callstack_iid), on one packet sequence
 * of their own whose interned data carries, the first time each is used,
 * the function names (symbolize.h), one mapping, the frames (a frame per
 * address: its function, the mapping, the address as rel_pc) and the
 * callstacks (outermost frame first).  Perfetto shows them under the
 * thread, as the CPU profile of that span.
 */
#ifndef KT_TOOLS_PERFETTO_SAMPLES_H
#define KT_TOOLS_PERFETTO_SAMPLES_H

#include <stdint.h>

#include <katra/reader.h>
#include "tools/pipeline/export_state.h"
#include "tools/pipeline/tables.h"

/* The samples' packet sequence: none of the threads' (numbered up). */
#define PSAMPLES_SEQ 0x7ffffff0u

struct psamples;

/*
 * psamples_new - the stacks and maps of @r (read from where it stands;
 * the caller rewinds after).  *@rc: 0, a reader's code or -ENOMEM.
 */
struct psamples *psamples_new(kt_reader *r, int *rc);

/* psamples_put - sample record @ev at @ns into @o.  0, -ENOMEM, -EIO. */
int psamples_put(struct psamples *ps, struct xout *o, const struct tables *t, const kt_event *ev,
                 uint64_t ns);

void psamples_free(struct psamples *ps);

#endif

/*
 * export_perfetto.h - a trace as a Perfetto protobuf trace (`katra export
 * --perfetto`): a Trace whose TracePackets (field 1, written one by one as
 * the events stream) hold, per katra thread, one packet sequence
 * (trusted_packet_sequence_id = 2 + the thread's index; 1 is the trace's
 * own packets):
 *
 *  - sequence 1: SEQ_INCREMENTAL_STATE_CLEARED, a clock snapshot relating
 *    CLOCK_REALTIME to CLOCK_MONOTONIC at the trace's start, with
 *    MONOTONIC as the trace's clock; track descriptors of the process
 *    (pid, workload) and of a "Frames" track; at the end, when the file
 *    was cut short, an instant on the process track saying so;
 *  - each thread's first packet: SEQ_INCREMENTAL_STATE_CLEARED, the
 *    defaults (its thread track, clock 64), its thread track descriptor,
 *    the debug annotation names it may use; then a clock snapshot that
 *    starts clock 64, incremental nanoseconds, at CLOCK_MONOTONIC's value:
 *    every later packet's timestamp is its delta from the one before;
 *  - event names interned on first use per sequence (iid = katra's name
 *    id), with the zone's source location (file, function, line; the
 *    same iid) when the file gives one, which each slice begin names;
 *    message bodies interned as log message bodies; every packet after
 *    the first of a thread's sequence that uses its state (the defaults,
 *    clock 64, interned data) is flagged SEQ_NEEDS_INCREMENTAL_STATE;
 *  - zones as TYPE_SLICE_BEGIN / TYPE_SLICE_END, balanced as
 *    export_state.h says (a forced end has the annotation "closed");
 *    counters as TYPE_COUNTER on a counter track per name (described on
 *    first use); instants as TYPE_INSTANT; frame marks as instants on the
 *    Frames track with annotation "frame"; flows on the slices around
 *    them, as tools/export/perfetto_slice.h says (flow_ids on a zone's begin,
 *    terminating_flow_ids on its end), and where it cannot, as instants
 *    carrying them; messages as instants with a log_message
 *    (PRIO_INFO); user records as instants with annotations "subtype" and
 *    "bytes"; each drop record as an instant "katra: N events dropped" on
 *    its thread where the loss began.
 *
 * Strings go out as well-formed UTF-8 (text_utf8()).  Memory: the state of
 * export_state.h, a 1 MiB output buffer, and one entry per (thread, name)
 * interned (at most PERFETTO_INTERNED; past that names go inline).
 *
 * The command's one thread (and pipe.h's merging thread, inside).
 */
#ifndef KT_TOOLS_EXPORT_PERFETTO_H
#define KT_TOOLS_EXPORT_PERFETTO_H

#include <stdio.h>

#include <katra/reader.h>
#include "tools/pipeline/export_state.h"
#include "tools/pipeline/tables.h"

#define PERFETTO_INTERNED (1u << 22)
#define PERFETTO_BATCH (256u << 10) /* packets compressed together, at most */

/* How the packets go out: as they are, or in batches of PERFETTO_BATCH
 * bytes, each one TracePacket holding them compressed: zstd in
 * zstd_compressed_packets (field 133: Perfetto v58 and later read it;
 * older ones see an empty trace) or zlib's deflate in compressed_packets
 * (field 50, read by every Perfetto). */
enum { PERFETTO_PLAIN, PERFETTO_ZSTD, PERFETTO_DEFLATE };

/*
 * perfetto_run - every event of @r as above, to @out, packed as @codec
 * says (PERFETTO_*).  @t names names and threads (and says whether the
 * file has its summary).
 *
 * Return: 0; a reader's negative code (what came before it is written);
 * -ENOMEM; -EIO when a write to @out failed.  *@res is filled in every case.
 */
int perfetto_run(kt_reader *r, const struct tables *t, FILE *out, int codec,
		 struct export_result *res);

#endif

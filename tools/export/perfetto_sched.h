/*
 * perfetto_sched.h - scheduler records (SPEC §4.2.1) as Perfetto's
 * thread states, for `katra export --perfetto`.
 *
 * Perfetto makes a thread's state track (Running, Runnable, Sleeping)
 * and its CPU's slices from the kernel's sched_switch events, so each
 * switch becomes one TracePacket of an FtraceEventBundle of its CPU
 * holding one sched_switch: a switch out is the followed thread leaving
 * for pid 0 with prev_state 0 (runnable: preempted) or 1 (sleeping:
 * blocked); a switch in is pid 0 leaving for it.  Pid 0 stands for
 * whatever else ran there, which the process cannot see.  The thread is
 * named by its OS tid (the tid its ThreadDescriptor carries, so both are
 * one thread in Perfetto) and its name.  Follow and loss records have no
 * ftrace form and are left out.  Ftrace's timestamps are CLOCK_BOOTTIME:
 * the export's clock snapshot states BOOTTIME equal to MONOTONIC when
 * the file has scheduler records, which puts these on the monotonic
 * times they are.
 */
#ifndef KT_TOOLS_PERFETTO_SCHED_H
#define KT_TOOLS_PERFETTO_SCHED_H

#include <stdint.h>

#include <katra/reader.h>
#include "tools/pipeline/export_state.h"
#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/pipeline/tables.h"

/* Perfetto's builtin clock id of CLOCK_BOOTTIME, ftrace's default. */
#define PSCHED_CLOCK_BOOTTIME 6

/*
 * psched_put - scheduler record @ev at @ns (monotonic) as its packet into
 * @o, its thread named through @t; a follow or a loss writes nothing.
 * Return: 0, -ENOMEM, or -EIO once @o failed.
 */
int psched_put(struct xout *o, const struct tables *t, const kt_event *ev, uint64_t ns);

/*
 * psched_clocks - the clocks of the export's snapshot at the trace's
 * start, into @ids and @vals (3 each): MONOTONIC; BOOTTIME equal to it
 * when @h says the file has scheduler records; REALTIME when it is known.
 * Returns how many.
 */
size_t psched_clocks(const kt_header *h, uint32_t ids[3], uint64_t vals[3]);

/* pf_put_packet - @pk into @o as one Trace.packet (field 1, length
 * delimited), through protobuf-c: the packets written once per trace,
 * thread, name or counter, and these. */
void pf_put_packet(struct xout *o, const Perfetto__Protos__TracePacket *pk);

#endif

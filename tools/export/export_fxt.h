/*
 * export_fxt.h - a trace in the Fuchsia trace format (`katra export
 * --fxt`), which Perfetto's UI and Tracy's tracy-import-fuchsia open.
 *
 * Records of 64-bit little-endian words, each starting with a header word
 * whose bits 0-3 are its type and 4-15 its size in words.  Written for
 * the importers that read it (Perfetto's, Tracy's tracy-import-fuchsia)
 * as well as for the format:
 *  - the magic number record, a provider info record ("katra", id 0) and
 *    its provider section, the initialization record with a rate of 1e9:
 *    every time is CLOCK_MONOTONIC ns (Tracy's importer ignores the rate
 *    and reads times as ns; Perfetto's honours it);
 *  - one string record, the category "katra"; every other string (names,
 *    argument names, texts) goes inline in its record, as Tracy's
 *    importer reads a table's string with the previous string's byte
 *    past its end;
 *  - a kernel object record naming the process (koid: its pid), and per
 *    thread on first sight a thread record (indices up to 255; past that
 *    the thread goes inline in each event) and a kernel object record
 *    naming it, with a "process" koid argument (koid: its OS tid, or
 *    katra's id when the file has none);
 *  - scheduler records (SPEC §4.2.1) as context switch records (type 8,
 *    the original layout: Perfetto's importer reads it as thread states
 *    and CPU slices; Tracy's skips it): a switch between the followed
 *    thread (inline, its OS tid) and the idle thread (process 0, koid 0,
 *    priority 0), its state blocked (3) or, preempted, running (1); the
 *    streams themselves are no threads here (export_fxt.c, on_sched());
 *  - zones as duration begin / end events, balanced as export_state.h
 *    says (a forced end has the argument closed = 1); a begin carries its
 *    zone's arguments (export_state.h: those given before a zone inside
 *    it; the rest go on its end), typed (int64, uint64, double, string;
 *    a name 0 is "value" or "text"), numbers before texts (Tracy's importer
 *    ends a zone's text at the first text's NUL), at most 15 a record
 *    (the rest on the end; past that each an instant named after it at
 *    the end), a text cut to the record's room; then its
 *    source location as a string argument "loc" = "FILE:LINE", which
 *    Tracy's importer takes as the zone's source;
 *  - an argument with no zone open as an instant named after it, with it
 *    (a zone's second argument of a name is "NAME#2", and so on);
 *  - counters as counter events (counter id: the name id) with one
 *    argument named as the counter (int64 or double): Tracy plots it
 *    under that name; allocations and frees as counter events named after
 *    their pool (counter id: 1 << 63 | the pool's id), its live bytes
 *    after each (int64), a plot per pool in Tracy (never an instant, which
 *    Tracy takes for a frame mark when its name holds "frame");
 *  - instants as instant events; frame marks as instants with a
 *    uint64 argument "frame"; flows as flow begin / step / end events
 *    (flow id: the payload) inside the zone around them; messages as
 *    instants named by their text (cut at FXT_TEXT bytes, a record's
 *    limit: Tracy shows an instant's name as the message), the event's
 *    name in a string argument "event"; user records as instants with uint32 arguments
 *    "subtype" and "bytes"; each drop record as an instant
 *    "katra: N events dropped" on its thread where the loss began; a file
 *    cut short ends with an instant saying so;
 *  - each track entry (SPEC §4.9) as a thread of its own in the process,
 *    named after the track by a kernel object record before the events
 *    (koid: TRACK_TID, moved down by 256 past any thread entry's koid;
 *    referred to inline), carrying the track's zones as duration begin /
 *    end events, matched and balanced per track as tracks.h says, and its
 *    counters as counter events (counter id: the track << 32 | the name
 *    id), at their times converted to katra's clock (ns).  Track records
 *    tracks.h skips are counted in export_result.tracks.
 *
 * Strings go out as well-formed UTF-8 (text_utf8()).  Memory: the state of
 * export_state.h, a 1 MiB output buffer, and the pools' live bytes
 * (memstats.h).
 *
 * The command's one thread (and pipe.h's merging thread, inside).
 */
#ifndef KT_TOOLS_EXPORT_FXT_H
#define KT_TOOLS_EXPORT_FXT_H

#include <stdio.h>

#include <katra/reader.h>
#include "tools/pipeline/export_state.h"
#include "tools/pipeline/tables.h"

#define FXT_THREADS 255u    /* the thread table's indices */
#define FXT_TEXT 32000u     /* bytes of one string in a record */

/*
 * fxt_run - every event of @r as above, to @out.  @t names names and
 * threads (and says whether the file has its summary).
 *
 * Return: 0; a reader's negative code (what came before it is written);
 * -ENOMEM; -EIO when a write to @out failed.  *@res is filled in every case.
 */
int fxt_run(kt_reader *r, const struct tables *t, FILE *out, struct export_result *res);

#endif

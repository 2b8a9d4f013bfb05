/*
 * stats.h - `katra stats`: per thread (events, drops, span, rate), per
 * name (count, zone durations) and frame times, as text or JSON.
 *
 * One pass for names, threads and drop records, then one merged pass over
 * the events (no payload copied).  Every table is keyed by
 * the ids the events use (tools/idmap.h), zones are matched in O(1) each
 * whatever their nesting, and histograms start sparse (tools/hist.h): time
 * and memory follow the file's events, never the values of its ids.
 * Strings from the file are escaped as tools/text.h says.
 *
 * One thread per call (it runs tools/pipe.h's second thread itself).
 */
#ifndef KT_TOOLS_STATS_H
#define KT_TOOLS_STATS_H

#include <stdio.h>

#include <katra/reader.h>

/*
 * stats_run - read @r (just opened) and print its stats to @out, headed
 * with @label (the file's name).  *@truncated is set when the file has no
 * summary.
 *
 * Return: 0 when printed; a negative code from the reader (its last error
 * says where and why) or -ENOMEM, with nothing printed; -EIO when @out
 * could not be written.
 */
int stats_run(kt_reader *r, const char *label, int json, FILE *out, int *truncated);

#endif

/*
 * record_join.h - a harness's capture joined by its run's other processes
 * (`katra record --run-id R --epoch N --capture-root ROOT`, issue #30).
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_RECORD_JOIN_H
#define KT_TOOLS_RECORD_JOIN_H

#include <stdint.h>

/*
 * record_join - the capture of run @run epoch @epoch published in @root
 * (its sidecar's state "published") rewritten to hold, besides its own
 * process, every process's file of capture directory @dir whose header
 * names that run, each trimmed to the capture's window; its sidecar's
 * sha256 and bytes set anew and a "processes" list added.  Says what it
 * did, or why not (no such capture, the cap passed, a write failed: the
 * capture is then left as it was).  Call once every process has ended.
 */
void record_join(const char *root, const char *dir, const char *run, uint64_t epoch);

#endif

/*
 * perfetto_procs.h - the processes of a Perfetto export (issue #30): one
 * process descriptor per process of a merged trace (SPEC §4.10), each
 * thread's track under its process, and the track uuids of the export.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_PERFETTO_PROCS_H
#define KT_TOOLS_PERFETTO_PROCS_H

#include <stdint.h>

#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/pipeline/tables.h"

/* Track uuids: "kat" in the high bytes, then the kind, then the id. */
#define UUID_KIND(k) ((UINT64_C(0x6b6174) << 8 | (k)) << 32)
#define PROCESS_UUID (UUID_KIND(0) | 1)
#define FRAMES_UUID (UUID_KIND(0) | 2)
#define THREAD_UUID(id) (UUID_KIND(1) | (id))
#define COUNTER_UUID(id) (UUID_KIND(2) | (id))
#define MEMORY_UUID(id) (UUID_KIND(3) | (id))
#define TRACK_UUID(id) (UUID_KIND(4) | (id))
/* A process other than the first (process entry @id). */
#define PROC_UUID(id) (UUID_KIND(5) | (id))
/* A track's counter: "ka" in the high bytes, the track, the name. */
#define TRACK_COUNTER_UUID(track, id) (UINT64_C(0x6b61) << 48 | (uint64_t)(track) << 32 | (id))

/*
 * perfetto_proc_desc - the descriptor of process @i of @t (0: the first,
 * whose track is PROCESS_UUID, the parent of the Frames and counter
 * tracks) into @td and @pd: its pid and name, or, in a trace of one
 * process, its own entry's (SPEC §4.10) when it names it, else @pid and
 * @name.  @i > 0 only for a merged trace, up to
 * t->nprocs.  pd->process_name is malloc'd (free() it); returns 0 or
 * -ENOMEM.
 */
int perfetto_proc_desc(const struct tables *t, size_t i, uint64_t pid, const char *name,
		       Perfetto__Protos__TrackDescriptor *td,
		       Perfetto__Protos__ProcessDescriptor *pd);

/* perfetto_thread_parent - thread @tid's process: its track's uuid, and
 * *@pid (@own_pid in a trace of one process). */
uint64_t perfetto_thread_parent(const struct tables *t, uint32_t tid, uint64_t own_pid,
				int32_t *pid);

#endif

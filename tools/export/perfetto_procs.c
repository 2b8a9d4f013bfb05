/*
 * perfetto_procs.c - the processes of a Perfetto export; perfetto_procs.h
 * says what is written.
 */
#include <errno.h>
#include <string.h>

#include "tools/export/perfetto_procs.h"
#include "tools/pipeline/text.h"

/* A merged trace's process @id as a track: the first is PROCESS_UUID. */
static uint64_t proc_uuid(const struct tables *t, uint32_t id)
{
	return tables_multiprocess(t) && id != t->procs[0].id ? PROC_UUID(id) : PROCESS_UUID;
}

int perfetto_proc_desc(const struct tables *t, size_t i, uint64_t pid, const char *name,
		       Perfetto__Protos__TrackDescriptor *td,
		       Perfetto__Protos__ProcessDescriptor *pd)
{
	size_t n = strlen(name);
	perfetto__protos__track_descriptor__init(td);
	perfetto__protos__process_descriptor__init(pd);
	td->has_uuid = 1;
	td->uuid = PROCESS_UUID;
	const struct tproc *p = tables_named_process(t, i);
	if (tables_multiprocess(t))
		td->uuid = proc_uuid(t, p->id);
	if (p) {
		/* A file of one process: its threads are under the header's pid. */
		pid = tables_multiprocess(t) ? p->pid : pid;
		name = tables_process_name(t, p);
		n = p->name_len;
	}
	pd->has_pid = 1;
	pd->pid = (int32_t)pid;
	pd->process_name = text_utf8(name, n, NULL);
	td->process = pd;
	return pd->process_name ? 0 : -ENOMEM;
}

uint64_t perfetto_thread_parent(const struct tables *t, uint32_t tid, uint64_t own_pid,
				int32_t *pid)
{
	if (!tables_multiprocess(t)) {
		*pid = (int32_t)own_pid;
		return PROCESS_UUID;
	}
	uint32_t id = tables_thread_process(t, tid);
	*pid = (int32_t)tables_process_pid(t, id);
	return proc_uuid(t, id);
}

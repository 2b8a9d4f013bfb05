/*
 * tables.h - a trace's names and thread names, found by id.
 *
 * Only the ids a file defines take room: entries are kept in arrays sorted
 * by id (binary search), their bytes in one arena, so memory follows the
 * bytes of the name and thread frames, never the value of an id.  As the
 * reader does, the first definition of an id wins.
 *
 * Single-threaded to build; once tables_finish() has run, any number of
 * threads may look up at the same time.
 */
#ifndef KT_TOOLS_TABLES_H
#define KT_TOOLS_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

struct tentry {
	uint32_t id;
	uint32_t os_tid;  /* threads only */
	uint32_t len;
	uint32_t process; /* threads only: its process entry's id (SPEC §4.4) */
	size_t off;       /* in the arena, NUL-terminated; file order */
};

/* A process entry (SPEC §4.10): its name then its command line in the
 * arena, each NUL-terminated (the command line's arguments separated by
 * zero bytes). */
struct tproc {
	uint32_t id, flags;
	uint64_t pid, parent_pid, start_ns, end_ns;
	uint32_t name_len, cmdline_len;
	size_t off;
};

/* A source location (SPEC §4.7): its strings in the arena, the file's
 * then the function's, each NUL-terminated. */
struct tloc {
	uint32_t id, line, category, file_len, function_len;
	size_t off;
};

struct tables {
	struct tentry *names, *threads;
	size_t nnames, names_cap, nthreads, threads_cap;
	struct tloc *locs;
	size_t nlocs, locs_cap;
	/* At most KT_MAX_PROCESSES entries (each under 132 KiB of arena);
	 * procs_left_out counts the others. */
	struct tproc *procs;
	size_t nprocs, procs_cap;
	uint64_t procs_left_out;
	uint64_t header_pid;     /* the file's own process (tables_load()) */
	char *arena;
	size_t arena_len, arena_cap;
	kt_file_summary summary; /* .threads is NULL: rows die with the frame */
	int have_summary;
	/* Track entries (SPEC §4.9) by id, .id 0 where none; pairs copied.
	 * At most KT_MAX_TRACKS * KT_MAX_TRACK_PAIRS pairs (4 MiB). */
	kt_track_def tracks[KT_MAX_TRACKS + 1];
	uint64_t tick_hz;        /* the header's clock rate (tables_load()) */
	uint64_t stacks;         /* stack entries seen (SPEC §4.11): samples */
};

/* tables_add - note @f if it is a name, thread or summary frame.
 * Returns 0 or -ENOMEM. */
int tables_add(struct tables *t, const kt_trace_frame *f);

/* tables_finish - sort by id and keep each id's first entry: O(n log n). */
void tables_finish(struct tables *t);

/*
 * tables_load - zero @t, read every frame of @r but the events (a pass
 * with kt_reader_skip_events()), and finish.  Returns 0, a negative code
 * from the reader (@t holds what came before it), or -ENOMEM.  The reader
 * is left at the end of its pass.
 */
int tables_load(kt_reader *r, struct tables *t);

/* tables_name, tables_thread - the bytes of id's entry (NUL-terminated,
 * *@len long), or NULL when the file defines none.  O(log n). */
const char *tables_name(const struct tables *t, uint32_t id, size_t *len);
const char *tables_thread(const struct tables *t, uint32_t id, size_t *len);

/* tables_loc - id's source location, or NULL when the file gives none.
 * O(log n). */
const struct tloc *tables_loc(const struct tables *t, uint32_t id);

/* A location's file and function (NUL-terminated). */
static inline const char *tloc_file(const struct tables *t, const struct tloc *l)
{
	return t->arena + l->off;
}
static inline const char *tloc_function(const struct tables *t, const struct tloc *l)
{
	return t->arena + l->off + l->file_len + 1;
}

/* tables_entry_str - the bytes of an entry of @t. */
static inline const char *tables_str(const struct tables *t, const struct tentry *e)
{
	return t->arena + e->off;
}

/* tables_track - track @id's entry, or NULL when the file gives none. */
static inline const kt_track_def *tables_track(const struct tables *t, uint32_t id)
{
	return id <= KT_MAX_TRACKS && t->tracks[id].id ? &t->tracks[id] : NULL;
}

/*
 * tables_track_ticks - the track record @ev's fields into *@te and its
 * time on katra's clock into *@ticks (kt_track_to_ticks()).  Returns 0;
 * 1 when @ev is no track record; -ENOENT when its track has no entry;
 * kt_track_to_ticks()'s code when it cannot be converted.
 */
int tables_track_ticks(const struct tables *t, const kt_event *ev, kt_track_event *te,
		       uint64_t *ticks);

/* tables_process - process @id's entry, or NULL when the file gives none.
 * O(log n). */
const struct tproc *tables_process(const struct tables *t, uint32_t id);

/* tables_thread_process - thread @tid's process id (0: the file's own,
 * also for a thread with no entry). */
uint32_t tables_thread_process(const struct tables *t, uint32_t tid);

/* tables_process_pid - the pid of process @id: its entry's, for 0 without
 * one the header's, else 0. */
uint64_t tables_process_pid(const struct tables *t, uint32_t id);

/* tables_process_name - process @id's name ("" when none). */
static inline const char *tables_process_name(const struct tables *t, const struct tproc *p)
{
	return t->arena + p->off;
}

/* The command line of @p: cmdline_len bytes, arguments separated by
 * zero bytes. */
static inline const char *tables_process_cmdline(const struct tables *t, const struct tproc *p)
{
	return t->arena + p->off + p->name_len + 1;
}

/* tables_multiprocess - does the file name processes other than its own
 * (a merged trace)?  The readers then show processes. */
static inline int tables_multiprocess(const struct tables *t)
{
	return t->nprocs > 1 || (t->nprocs == 1 && t->procs[0].id != 0);
}

/* tables_named_process - the entry an export names process @i by (0 to
 * nprocs - 1 in a merged trace, else 0): a merged trace's @i-th; in a
 * file of one process its own entry when it has a name (every file a
 * session writes: its first, a capture's segments, a flight snapshot);
 * else NULL (the export names it by the header: its pid, the workload). */
static inline const struct tproc *tables_named_process(const struct tables *t, size_t i)
{
	if (tables_multiprocess(t))
		return i < t->nprocs ? &t->procs[i] : NULL;
	return !i && t->nprocs && t->procs[0].name_len ? &t->procs[0] : NULL;
}

/* tables_free - release what @t holds; @t may be zeroed or partly built. */
void tables_free(struct tables *t);

#endif

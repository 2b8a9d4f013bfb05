/*
 * recover/recover.h - internal: crash files and recovery, the door to
 * recover/ for the rooms above it.
 *
 * A session with crash files keeps its rings in files of a crash
 * directory (recover/crash.h says what each holds) so that, after the
 * process died, `katra recover` can rebuild a valid trace from the trace
 * file's complete frames and the records still in the rings.  flush/ uses
 * the first half (a crash directory as a ring backing); tools/ the second
 * (the rebuild engine, which prints nothing: its messages go through a
 * callback, and the command names and creates the output file).
 */
#ifndef KATRA_RECOVER_RECOVER_H
#define KATRA_RECOVER_RECOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <katra/trace.h>
#include "ring/ring.h"

/* ---- writing: crash files of a live session (recover/crash.c) ----------- */

struct kt__crash;

/*
 * kt__crash_start - make PARENT/katra-<pid>/ ("" or NULL: /dev/shm) with
 * its control and names files and take the control file's lock, held
 * until the process ends.  @trace_fd is the session's file, starting at
 * @trace_off (-1 and 0 for a flight session, which has none).  Rings are
 * backed by files there once kt__crash_backing() is the registry's
 * (kt__registry_set_backing()).  Return: 0 and *@out,
 * or -errno (nothing is left behind).  Session start and stop only.
 */
int kt__crash_start(struct kt__crash **out, const char *parent, int trace_fd,
		    uint64_t trace_off);

/* The crash files as a ring backing (ring/backing.h): a slot of the
 * control file and a ring file per ring, names into the names log. */
const kt__backing *kt__crash_backing(struct kt__crash *c);

/* kt__crash_publish()'s @flags: the session is a flight session, whose
 * rings overwrite their oldest bytes (its @trace_fd was -1). */
#define KT__CRASH_FLIGHT 1u

/* kt__crash_publish - write the control header: the session's header
 * values, ring generation and @flags (KT__CRASH_*).  Return: 0 or
 * -errno. */
int kt__crash_publish(struct kt__crash *c, const kt_header *h, uint64_t gen, uint32_t flags);

/* The directory, for messages. */
const char *kt__crash_dir(const struct kt__crash *c);

/* kt__crash_finish - remove the directory and free @c (NULL: nothing).
 * Call once the registry has another backing, with no flusher running. */
void kt__crash_finish(struct kt__crash *c);

/* ---- reading: rebuilding a dead process's trace (recover/rebuild.c) ----- */

/* The work one recovery may do, whatever the directory holds. */
struct kt__recover_caps {
	uint32_t slots;          /* ring slots of the control file read */
	uint64_t ring_bytes;     /* ring bytes read, all rings together */
	uint32_t names_bytes;    /* bytes of the names log read, and of the
				  * sites log */
};

/* The caps of `katra recover`, stated in its --help. */
extern const struct kt__recover_caps kt__recover_caps;

/* What a recovery found, for the command's result line. */
typedef struct kt__recover_result {
	uint64_t from_file;      /* events copied from the trace file */
	uint64_t from_rings;     /* events taken from the rings */
	uint64_t dropped;        /* events the output counts as dropped */
	size_t threads;
	unsigned problems;       /* damage reported: parts not recovered */
	uint64_t overwritten;    /* a flight session's events its rings
				  * overwrote before what they hold: drop
				  * frames, apart from @dropped */
	int flight;              /* the directory is a flight session's */
} kt__recover_result;

/* A message for the user, one line without its end: a problem found (the
 * file, the offset, what is lost) or what was read.  It may hold bytes
 * from the directory's files: escape it. */
typedef void (*kt__recover_say_fn)(void *ctx, const char *msg);

typedef struct kt__recovery kt__recovery;

/*
 * kt__recover_open - open the crash directory @dir (as typed, for
 * messages too), its control file, and the trace file it names (or
 * @trace, the user's choice, when not NULL), reading nothing past @caps.
 * Nothing in the directory is trusted (recover/crashdir.h).  Return: 0
 * and *@out; or -1 when nothing can be recovered (not a crash directory
 * this user may read, or its process is alive), said through @say.  Free
 * *@out with kt__recover_close() either way.  Single-threaded.
 */
int kt__recover_open(kt__recovery **out, const char *dir, const char *trace,
		     const struct kt__recover_caps *caps, kt__recover_say_fn say, void *ctx);

/* The trace file's stat, so the output is never that file; NULL when no
 * trace file is read. */
const struct stat *kt__recover_input(const kt__recovery *rv);

/*
 * kt__recover_write - write the rebuilt trace to @fd: the trace file's
 * complete frames, the rings' records it lacks, names, threads and a
 * summary marked recovered.  Damage met is said and counted, and recovery
 * goes on with what is left.  Return: 0, or the first error writing @fd
 * (-errno or KT_E*: the output is then not valid).
 */
int kt__recover_write(kt__recovery *rv, int fd);

/* What kt__recover_write() recovered. */
void kt__recover_result_get(const kt__recovery *rv, kt__recover_result *res);

void kt__recover_close(kt__recovery *rv);

/*
 * kt__recover_list - for each katra-* directory in @parent that this user
 * could recover (its own, checked as kt__recover_open() checks it, left
 * by a dead process), in directory order: @fn with its name, the pid its
 * header names (0 when unusable) and its trace path ("" when none).
 * *@skipped counts the katra-* entries passed over.  Return: how many
 * were listed, or -errno when @parent cannot be read.
 */
long kt__recover_list(const char *parent,
		      void (*fn)(void *ctx, const char *name, uint64_t pid, const char *trace),
		      void *ctx, unsigned long *skipped);

#endif /* KATRA_RECOVER_RECOVER_H */

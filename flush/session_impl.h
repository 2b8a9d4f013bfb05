/*
 * flush/session_impl.h - private to flush/: a session's state, shared by
 * its lifecycle (session.c), its flusher thread (flusher.c) and its side
 * of the output door (output.c).
 */
#ifndef KATRA_FLUSH_SESSION_IMPL_H
#define KATRA_FLUSH_SESSION_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <katra/katra.h>
#include <katra/writer.h>
#include "flush/flush.h"
#include "format/compact.h"
#include "format/format.h"
#include "recover/recover.h"
#include "ring/ring.h"


struct sthread {
	uint32_t thread_id;
	uint32_t os_tid;
	char *name;
	uint64_t written;
	uint64_t dropped;
	/* Lost to a full output and not yet in a drop record. */
	uint64_t cap_lost, cap_first, cap_last;
	uint64_t overwritten;   /* a flight session's, counted at its stop */
	/* Its LZ4 skip counters in the flusher's compact encoder, kept as
	 * the writer keeps each thread's, so that kt_rewrite()'s copy
	 * decides each chunk as the session did. */
	uint8_t skip[KT__COMPACT_SKIPS];
};

/* The flusher's compact encoder and its output (flusher.c, flush_enc()). */
struct kt__flush_enc {
	struct kt__compact_enc *enc;
	uint8_t *out;
	size_t max;  /* the encoder's max_raw, and out's size */
	int level;
	int failed;  /* no memory: the generic drain, for good */
};

struct kt_session {
	kt_writer *w;
	int fd;
	/* The session's run is the environment's (KT_RUN_ID, KT_EPOCH): a
	 * fork()ed child joins it with a file of its own (autostart.c). */
	int run_of_env;
	int own_fd;
	int kfd;                /* the io_uring instance's fd while its sink
				 * lives, else -1; under fd_lock */
	pthread_t thread;
	int stop;
	int stopping;           /* kt_session_stop() has it; under session_lock */
	int codec;
	int level;
	uint64_t period_ns;
	uint64_t fsync_ns;
	int stop_sync;          /* fdatasync() the file at stop */
	uint64_t io_timeout;    /* kt_session_options.io_timeout_ns; 0: none */
	uint64_t stop_at;       /* io_timeout past the stop call, once it is
				 * made; the fd sink reads it (atomic) */
	int error;              /* first I/O error; then events count as dropped */
	int io_backend;         /* kt_io_backend that writes the file */

	kt__ring_list rings;
	struct sthread *threads; /* sorted by thread_id */
	size_t nthreads, cap_threads;

	kt_clock_calibration c0, c1;
	struct kt__flush_enc fe; /* the flusher's, made on its first drain */
	uint64_t chunks, bytes_raw, refused, on_disk;
	uint64_t seg_bytes;     /* written to segments before the current one */
	uint32_t names_written; /* names [1, n] are in the current file */
	uint32_t names_sized;   /* names [1, n] are counted in names_bytes */
	uint64_t names_bytes;   /* what their entries take, for the reserve */
	uint64_t cpu_ns;        /* the flusher thread's CPU time */
	uint64_t gen;           /* this session's ring generation */
	uint64_t start_off;     /* where the trace starts in the file */

	/* What the file may take, and the files after it (kt__output,
	 * capture/'s): asked before every frame by output.c. */
	kt__output out;         /* zero: one file without bound */
	uint64_t reserve;       /* what the file's end takes (the output's tail) */
	size_t chunk_max;       /* raw bytes per chunk */
	int capped;             /* the output is full (kt_summary.capped) */
	uint32_t seg;           /* files before the current one */
	kt_header hdr;          /* for each new segment; strings owned below */
	char host[256];
	char *hdr_strings[3];
	char **hdr_notes;

	struct kt__crash *crash; /* crash files, or NULL */
	struct kt__live *live;   /* live.h's figures, or NULL */
	struct kt__sched *sched; /* sched.c's followed threads, or NULL */
	struct kt__sample *sample; /* sample.c's sampled threads, or NULL */
	struct kt__live_flight *live_flight; /* a flight session's, or NULL */

	/* Flight mode (KT_SESSION_FLIGHT): no file, no flusher; snapshots
	 * (snapshot.c) run one at a time under snap_lock, and stop waits
	 * until snap_users, under session.c's session_lock, is back to 0. */
	int flight;
	int snap_users;
	pthread_mutex_t snap_lock;
	pthread_cond_t snap_done;
	uint8_t *snap_arena;     /* the copies' memory, kept between snapshots */
	size_t snap_arena_len;
	struct kt__snap_keep *snap_keep; /* snapshot.c's encoder and stage */
	/* Requests from outside (control.c): the listening socket, or -1;
	 * the fields after it are valid while it is not -1. */
	int ctl_fd;
	int ctl_stop;            /* atomic: the thread ends */
	int ctl_running;
	pthread_t ctl_thread;
	int ctl_dir;             /* the socket's directory (kt__control_dir) */
	int ctl_wake;            /* an eventfd: the stop wakes the thread */
	char ctl_name[64];       /* the socket's name in it */
	dev_t ctl_dev;           /* and its inode, as bound */
	ino_t ctl_ino;
};

static inline void note_error(kt_session *s, int rc)
{
	if (rc && !s->error)
		s->error = rc;
}

static inline int is_regular(int fd)
{
	struct stat sb;
	return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- session.c ----------------------------------------------------------- */

/* The sink is about to close its io_uring instance: a child forked from
 * now on must not close that fd number, which may soon name another file. */
void kt__session_forget_kfd(kt_session *s);

/* A snapshot of @s begins: KT_ENOSESSION unless it is the running flight
 * session; then the caller has the session's snapshot lock until
 * kt__session_snap_leave(), and the session cannot stop meanwhile. */
int kt__session_snap_enter(kt_session *s);
void kt__session_snap_leave(kt_session *s);

/* ---- snapshot.c ---------------------------------------------------------- */

/* A flight session starts: make the snapshots' encoder and map (not
 * fault in) their stage and the memory for copies of lapped pieces for
 * the rings registered now (as large as they are together), so that no
 * snapshot fails for it.  Rings registered later grow them at the next
 * snapshot.  0 or -ENOMEM. */
int kt__snapshot_reserve(kt_session *s);
/* The session ends: free what its snapshots kept. */
void kt__snapshot_free(kt_session *s);

/* snapshot_tables.c: write the names, categories and tracks known now to
 * @w, each table copied under its lock and written after it (no lock held
 * across a write).  0 or the first error (-ENOMEM, a write's). */
int kt__snapshot_tables(kt_writer *w);

/* ---- control.c: snapshot requests from outside --------------------------- */

/* Listen for `katra snapshot PID` (kt_session_options.listen).  0 or
 * -errno. */
int kt__control_start(kt_session *s);
/* Stop listening and remove the socket (if it is still the one made);
 * without session_lock held (a request being served takes it).  Bounded:
 * a wait on a client ends at once.  Does nothing when not listening. */
void kt__control_stop(kt_session *s);
/* In a fork()ed child: close the parent's socket and descriptors, remove
 * nothing. */
void kt__control_fork_child(kt_session *s);

/* ---- flusher.c ----------------------------------------------------------- */

/* The flusher thread's body: drain every ring each period until the
 * session stops, then write the end of the file.  @arg is the session. */
void *kt__flusher_main(void *arg);

/* A chunk of @len bytes of records (@count, ticks @first to @last) of the
 * stream @thread_id, which is no ring's: written as the rings' chunks are
 * (the output's room asked, the counts kept), its thread entry named
 * @name with OS tid @os_tid.  The flusher thread only. */
void kt__flush_records(kt_session *s, uint32_t thread_id, uint32_t os_tid, const char *name,
		       const uint8_t *p, size_t len, uint32_t count, uint64_t first, uint64_t last);

/* ---- sched.c: scheduler records (kt_session_options.sched) ---------------- */

/* kt__header_add_note - @note added to @h's notes, in *@notes: a copy the
 * caller frees (made here the first time, grown after).  Nothing when the
 * notes are full or there is no memory.  (session.c) */
void kt__header_add_note(kt_header *h, const char ***notes, const char *note);

struct kt__sched;
/*
 * kt__sched_start - scheduler records asked for (@o->sched): the header @h
 * says whether the kernel gives them (KT_HDR_SCHED, s->sched made) or not
 * (KT_HDR_SCHED_ABSENT, with a note saying why, which stderr says once
 * too).  *@notes, a copy of the notes with that one added, is the caller's
 * to free; NULL when none was made.  Without memory for the table the
 * file says absent too.  Under the session's start.
 */
void kt__sched_start(kt_session *s, const kt_session_options *o, kt_header *h,
		     const char ***notes);
/* Whether this thread may open its own context switches: 0, or -errno
 * with @why (@n bytes) saying what refused them. */
int kt__sched_probe(char *why, size_t n);
/* The followed threads' table, empty; NULL without memory.  @c0 is the
 * session's start calibration (the kernel's times are CLOCK_MONOTONIC). */
struct kt__sched *kt__sched_new(const kt_clock_calibration *c0);
/* Once a period, after the rings (s->rings holds their snapshot): follow
 * the threads new since, read every buffer into the file, let go of the
 * threads that exited.  The flusher thread only. */
void kt__sched_poll(kt_session *s);
/* At the stop, before the file's end: read every buffer a last time and
 * close them all.  The flusher thread only. */
void kt__sched_end(kt_session *s);
/* Free the table (its buffers closed if still open). */
void kt__sched_free(struct kt__sched *k);
/* In a fork()ed child: close the parent's events, touch nothing else. */
void kt__sched_fork_child(struct kt__sched *k);
/* A flight session's (no flusher): a thread of sched.c's that follows the
 * threads and keeps each one's newest switches in memory, every 100 ms
 * (without it, stderr says so: no records come, as the header said). */
void kt__sched_flight_start(kt_session *s);
/* Stop that thread (kt__sched_free() does too); its records and lock
 * stay for a snapshot in progress. */
void kt__sched_flight_stop(struct kt__sched *k);
/* A snapshot's scheduler records: each followed thread's kept records at
 * or after @from (ticks: the snapshot's first event; the buffers read up
 * to now first), after a FOLLOW where
 * the state before is not known, as its stream's chunk and thread entry
 * into @w.  Any thread (under the table's lock).  0 or the writer's error. */
int kt__sched_snapshot(kt_session *s, struct kt_writer *w, uint64_t from);

/* ---- sample.c: sampled call chains (kt_session_options.sample_hz) ------- */

struct kt__sample;
/* The sampled threads' table, empty, sampling at @hz; NULL without
 * memory.  @why (@n bytes) says why when the kernel refuses (probed on
 * this thread): NULL returned and *@refused set. */
struct kt__sample *kt__sample_new(const kt_clock_calibration *c0, uint32_t hz, char *why,
				  size_t n, int *refused);
/* The environment's KT_SAMPLE_HZ into *@hz when set; 0, or -EINVAL for
 * a value that is no number up to KT_SAMPLE_HZ_MAX (so is *@hz's). */
int kt__sample_env(uint32_t *hz);
/* s->sample for a session asked to sample at @hz (0: not asked): NULL
 * when started or not asked; else the kernel refused or memory ran out,
 * stderr said so, and @note (@n bytes) holds the header's note. */
const char *kt__sample_setup(kt_session *s, uint32_t hz, char *note, size_t n);
/* Once a period, after the rings: as kt__sched_poll(), for samples, and
 * the process's executable mappings (the first time, /proc/self/maps).
 * The flusher thread only. */
void kt__sample_poll(kt_session *s);
/* At the stop: read every buffer a last time, close them all. */
void kt__sample_end(kt_session *s);
void kt__sample_free(struct kt__sample *k);
/* In a fork()ed child: close the parent's events, touch nothing else. */
void kt__sample_fork_child(struct kt__sample *k);

/* ---- output.c: the session's side of kt__output --------------------------- */

/* Events lost to a full output, for the drop record at the file's end. */
void kt__out_note(struct sthread *t, uint64_t count, uint64_t first, uint64_t last);
/* Size what the file's end takes (s->reserve), once per pass. */
void kt__out_size_tail(kt_session *s);
/* Whether a frame of about @need bytes may go into the file, going on in
 * the next one when the output says so.  1 or 0. */
int kt__out_room(kt_session *s, uint64_t need);
/* A frame with events up to tick @last went into the current file. */
void kt__out_wrote(kt_session *s, uint64_t last);
/* Keep a copy of the header, strings and all, for the files to come and
 * a flight session's snapshots.  0 or -ENOMEM. */
int kt__session_keep_header(kt_session *s, const kt_header *h);

/* ---- autostart.c: the session the environment asks for (KT_RECORD_DIR) ---- */

/* kt_session_start() without giving way to a recorded session: the one
 * autostart.c itself starts. */
int kt__session_start_plain(const char *path, const kt_session_options *opts, kt_session **out);
/* A program starts its own session: stop the recorded one first, if it
 * runs.  1 when it stopped one, else 0.  Any thread but a flusher. */
int kt__autostart_yield(void);
/* In a fork()ed child, after session.c's handler: @parent_current was the
 * parent's session; when it was the recorded one, start the child's. */
void kt__autostart_child(kt_session *parent_current);

/*
 * The process entry (SPEC §4.10) of the calling process, id 0, into @w:
 * pid, parent pid, /proc/self/comm and /proc/self/cmdline (at most 65535
 * bytes of it), started at @start_ns; its end is the file's summary's.
 * flush/autostart.c.  Returns 0 or the writer's error.
 */
int kt__write_self_process(kt_writer *w, uint64_t start_ns);

/* kt__autostart_run_is_env - is run @run_id, @epoch the one KT_RUN_ID and
 * KT_EPOCH name, under KT_RECORD_DIR?  1 or 0.  Session start. */
int kt__autostart_run_is_env(const char *run_id, uint64_t epoch);

#endif /* KATRA_FLUSH_SESSION_IMPL_H */

/*
 * katra/writer.h - writing .katra files directly.
 *
 * Sessions (katra.h) write trace files from live rings.  This writer is for
 * everything else that produces a trace from events it already holds: the
 * `katra` tool when it slices or recompresses, converters, tests.  It keeps
 * the per-thread chunk sequence numbers and the accounting itself, so the
 * summary it writes always agrees with the file (SPEC §4.6).
 * kt_rewrite() copies traces through it, filtering and re-encoding.
 *
 * Threads: a kt_writer is not shared; one thread at a time per writer.
 */
#ifndef KATRA_WRITER_H
#define KATRA_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <katra/error.h>
#include <katra/reader.h>
#include <katra/trace.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_writer kt_writer;

/**
 * kt_header_init - fill @h with the defaults a writer needs: format version,
 * schema hash, a CLOCK_MONOTONIC calibration of 1 GHz at 0, empty strings.
 * The caller then sets what it knows.  Times and pid are left 0 so that the
 * same inputs give the same bytes.
 */
KT_API void kt_header_init(kt_header *h);

/**
 * kt_writer_open - create (or truncate) @path and write the header.
 *
 * Return: 0 and *@out on success; -EINVAL for a header the format cannot
 * hold (a string over 65535 bytes, more than 1024 notes, a tick rate of 0);
 * -errno from open() or write().  Any thread.
 */
KT_API int kt_writer_open(const char *path, const kt_header *h, kt_writer **out);

/**
 * kt_writer_open_fd - as kt_writer_open(), writing at the current end of an
 * open fd it does not own (kt_writer_close() leaves it open).
 */
KT_API int kt_writer_open_fd(int fd, const kt_header *h, kt_writer **out);

/**
 * kt_writer_chunk - append one event chunk.
 * @thread_id: non-zero.
 * @codec: KT_CODEC_NONE, KT_CODEC_LZ4, KT_CODEC_LZ4_DELTA (timestamps
 *         delta-coded before LZ4, SPEC §4.1), KT_CODEC_COMPACT or
 *         KT_CODEC_COMPACT_ZSTD (§4.1.1).  @level is, for the LZ4 codecs,
 *         the LZ4 acceleration (values below 1 mean 1); for
 *         KT_CODEC_COMPACT, 1 (or below) tries LZ4 on the payload bytes
 *         only, 2 or more on every stream (about half the bytes for ~30%
 *         more CPU); for KT_CODEC_COMPACT_ZSTD the zstd level, 1 to 19
 *         (below 1: 3).  A compact chunk that would not shrink is stored
 *         raw (codec 0), an archival one that would shrink past the
 *         format's bound as KT_CODEC_COMPACT, and a compact chunk over
 *         4 MiB as KT_CODEC_LZ4_DELTA (the encoder's scratch is ~5 times
 *         the largest chunk; the first compact chunk allocates it).
 * @events: @raw_len bytes of event records, as kt_event_encode() makes them.
 *
 * The writer counts the records, takes the first and last timestamps from
 * them and numbers the chunk.  Return: 0; -EINVAL if @events is not a
 * sequence of valid records or is empty; KT_ETOOBIG over KT_MAX_RAW;
 * KT_ESTATE after kt_writer_finish(); -errno from write().
 */
KT_API int kt_writer_chunk(kt_writer *w, uint32_t thread_id, unsigned codec,
			   int level, const void *events, size_t raw_len);

/** kt_writer_name - append a name entry.  Return: 0, -EINVAL, -errno. */
KT_API int kt_writer_name(kt_writer *w, uint32_t id, const char *name, size_t len);

/**
 * kt_writer_srcloc - append a source location entry (SPEC §4.7) for
 * @loc->id, which needs a name entry of its own as well.
 * Return: 0; -EINVAL for id 0, a string over 65535 bytes or holding a zero
 * byte (a NULL string with length 0 is empty); -errno.
 */
KT_API int kt_writer_srcloc(kt_writer *w, const kt_srcloc *loc);

/**
 * kt_writer_category - append a category entry (SPEC §4.8): the category
 * named by name id @id, with @flags KT_CATEGORY_ON_*.
 * Return: 0; -EINVAL for id 0 or other flags; -errno.
 */
KT_API int kt_writer_category(kt_writer *w, uint32_t id, uint32_t flags);

/**
 * kt_writer_track - append a track entry (SPEC §4.9): track @t->id's name
 * (a name id, which needs a name entry of its own), its clock's rate and
 * its calibration pairs, copied.
 * Return: 0; -EINVAL for an id outside 1..KT_MAX_TRACKS, name id 0, a
 * rate of 0, more than KT_MAX_TRACK_PAIRS pairs or pairs not strictly
 * increasing in both clocks; -errno.
 */
KT_API int kt_writer_track(kt_writer *w, const kt_track_def *t);

/** kt_writer_thread - append a thread entry.  Return: 0, -EINVAL, -errno. */
KT_API int kt_writer_thread(kt_writer *w, uint32_t thread_id, uint32_t os_tid,
			    const char *name);

/**
 * kt_writer_thread_in - append a thread entry of process @process (SPEC
 * §4.4: a process entry's id; 0, as kt_writer_thread() writes, the file's
 * own process).  Return: 0, -EINVAL (thread id 0, a name over 65535
 * bytes), -errno.
 */
KT_API int kt_writer_thread_in(kt_writer *w, uint32_t thread_id, uint32_t os_tid,
			       const char *name, uint32_t process);

/**
 * kt_writer_stack - append a stack entry (SPEC §4.11, version 5) copied
 * from @s: id non-zero, depth 1..KT_MAX_STACK_DEPTH.  Writers define each
 * id once.  Return: 0; -EINVAL for a bad id, depth or NULL frames;
 * KT_ESTATE after kt_writer_finish(); -errno.  The writer's thread.
 */
KT_API int kt_writer_stack(kt_writer *w, const kt_stack_def *s);

/**
 * kt_writer_map - append a map entry (SPEC §4.12, version 5) copied from
 * @m.  Return: 0; -EINVAL for an empty or zero-holding path or one over
 * KT_MAX_MAP_PATH, an empty or wrapping range; KT_ESTATE after
 * kt_writer_finish(); -errno.  The writer's thread.
 */
KT_API int kt_writer_map(kt_writer *w, const kt_map_def *m);

/**
 * kt_writer_process - append a process entry (SPEC §4.10) copied from @p.
 * Return: 0; -EINVAL for a string over 65535 bytes, a name holding a zero
 * byte, a NULL string of non-zero length or flags other than
 * KT_PROCESS_*; -errno.
 */
KT_API int kt_writer_process(kt_writer *w, const kt_process_def *p);

/** kt_writer_drop - append a drop record.  Return: 0, -EINVAL, -errno. */
KT_API int kt_writer_drop(kt_writer *w, uint32_t thread_id, uint64_t count,
			  uint64_t first_ts, uint64_t last_ts);

/**
 * kt_writer_finish - append the session summary and flush.
 * @extra: optional; its flags, end times, stop calibration, io_backend and
 *         io_error are copied.  Counts and rows always come from the writer.
 *
 * Return: 0; -errno from write(); KT_ESTATE if already finished.
 */
KT_API int kt_writer_finish(kt_writer *w, const kt_file_summary *extra);

/**
 * kt_writer_close - flush and release.  A writer closed without
 * kt_writer_finish() leaves a truncated file (no summary), which readers
 * accept as a valid prefix.  Return: 0 or the first -errno of a flush.
 */
KT_API int kt_writer_close(kt_writer *w);

/** kt_writer_get_bytes - bytes written to the file so far (header included). */
KT_API uint64_t kt_writer_get_bytes(const kt_writer *w);

/**
 * kt_event_encode - encode one record into @buf (SPEC §4.2).
 *
 * Return: the bytes written, kt_event_size(ev->payload_len); 0 if @cap is too
 * small.  Padding is zeroed.  The record is not validated here.
 */
KT_API size_t kt_event_encode(void *buf, size_t cap, const kt_event *ev);

/** What kt_rewrite() copies, from where to where.  Zero-fill, then set. */
typedef struct kt_rewrite_options {
	const int *in_fds;         /* the inputs, read with pread(): one trace,
				    * or the segments of one in order, each
				    * starting with the same header */
	size_t n_in;               /* at least 1 */
	int out_fd;                /* empty, open for writing; the trace is
				    * written from its current offset */
	int codec;                 /* kt_codec for every chunk; -1 keeps each
				    * chunk's own.  The header names it; its
				    * codec level is the input's when the input
				    * is raw or in this codec already (a
				    * decompressed file compressed back with
				    * its codec is the file it was), else 0 (the
				    * codec's default) for the compact ones */
	int filter;                /* non-zero: keep only what the next four
				    * fields select */
	uint64_t from_ns, to_ns;   /* events with CLOCK_MONOTONIC ns in
				    * [from_ns, to_ns]; 0 and UINT64_MAX for
				    * no bound */
	const uint32_t *threads;   /* of these thread ids; all when nthreads
				    * is 0 */
	size_t nthreads;
	const char *const *extra_notes; /* appended to the header's notes */
	uint32_t n_extra_notes;
	/* Optional: called after each frame with the input bytes done and
	 * their total, on the calling thread. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} kt_rewrite_options;

/** What kt_rewrite() did. */
typedef struct kt_rewrite_result {
	int have_summary;          /* the last input was complete, so the
				    * output has a summary */
	int in_index;              /* the input at fault, or -1 */
	kt_reader_error in_err;    /* why, when in_index >= 0 */
	uint64_t events_in, events_out;
	uint64_t bytes;            /* written to out_fd */
} kt_rewrite_result;

/**
 * kt_rewrite - copy a trace, or the segments of one, into one new trace,
 * re-encoding and filtering on the way.  The copy behind `katra slice`,
 * `compress` and `decompress` and the capture manager's trim.
 * @o:   the inputs, the output and what to keep (see kt_rewrite_options).
 * @res: receives the counts, and which input failed and why.
 *
 * Every frame of every input goes through a kt_writer: the output's
 * header is the first input's plus @o->extra_notes; names and threads are
 * written once however many inputs repeat them; with @o->filter only the
 * events in the window of the chosen threads are kept, with the thread
 * entries of kept threads and the drop records that overlap the window.
 * Stack and map entries (SPEC §4.11, §4.12) are all kept, a stack id
 * once however many inputs repeat it.  Chunk numbers and the summary are recomputed from what is kept, and the
 * summary is written only when the last input has one: a cut input gives
 * a cut output.  The inputs are checked as kt_reader_next_frame() checks
 * them.
 *
 * Return: 0; the reader's code (KT_ECHECKSUM, ..., -errno) with
 * @res->in_index and @res->in_err set when an input is at fault; -EINVAL
 * with no input, or when the extra notes take the header past
 * KT_MAX_NOTES; -ENOMEM; -errno or a KT_E* code from writing.  Any
 * thread; the fds must not be used by another thread meanwhile (each
 * input's file offset is moved to its end to learn its size).
 */
KT_API int kt_rewrite(const kt_rewrite_options *o, kt_rewrite_result *res);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_WRITER_H */

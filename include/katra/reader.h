/*
 * katra/reader.h - reading .katra files.
 *
 * A reader walks a file frame by frame, checking every head, checksum and
 * field that format/SPEC.md defines.  It never trusts a length before the
 * bytes behind it exist, and treats a file cut short as a valid prefix:
 * every complete frame before the cut is returned and the status says
 * "truncated at offset N".
 *
 * What a reader holds, whatever the file (SPEC §5), in time linear in the
 * file and whatever the order of its ids:
 *  - the header (at most KT_MAX_HEADER, 1 MiB), a 256 KiB read-ahead
 *    window (fd readers), one frame body (at most KT_MAX_FRAME_BODY,
 *    64 MiB) and one decoded chunk (at most KT_MAX_RAW, 64 MiB, and never
 *    more than 255 times its stored bytes plus 64);
 *  - per thread that has a chunk or drop record, one accounting entry of
 *    under 100 bytes, for at most KT_MAX_SUMMARY_THREADS (1048576)
 *    threads (KT_ETOOBIG beyond); no table is sized by an id's value;
 *  - for kt_reader_next(): 48 bytes or less per chunk and 256 or less per
 *    thread, plus the decoded chunk of every thread whose events
 *    interleave with others' at that point of the merge (each as above).
 * Each is allocated only once the file has shown the bytes it describes;
 * kt_reader_status.buffer_bytes counts them.  When an allocation fails the
 * call returns -ENOMEM and kt_reader_get_last_error() says "out of memory",
 * never a corruption code.
 *
 * Threads: a kt_reader is not shared.  One thread at a time may call into a
 * given reader; different readers are independent.
 */
#ifndef KATRA_READER_H
#define KATRA_READER_H

#include <stddef.h>
#include <stdint.h>
#include <katra/error.h>
#include <katra/record.h>
#include <katra/trace.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_reader kt_reader;

/** Where and why opening or reading failed. */
typedef struct kt_reader_error {
	int code;            /* the negative value the call returned */
	uint64_t offset;     /* byte offset of the problem in the file */
	char message[256];   /* "offset N: what is wrong", NUL-terminated */
} kt_reader_error;

/** One frame, decoded.  Pointers stay valid until the next call on the reader. */
typedef struct kt_trace_frame {
	uint64_t offset;     /* file offset of the frame's head */
	uint32_t body_len;
	uint8_t kind;        /* kt_frame_kind */
	union {
		struct {
			uint32_t thread_id;
			uint8_t codec;
			uint64_t seq;
			uint32_t event_count;
			uint32_t raw_len;
			uint32_t stored_len;   /* payload bytes in the file */
			uint64_t first_ts;
			uint64_t last_ts;
			const uint8_t *events; /* raw_len bytes, decoded, 8-aligned */
		} chunk;
		struct {
			uint32_t id;
			uint32_t len;
			const char *str;       /* NUL-terminated */
		} name;
		struct {
			uint32_t thread_id;
			uint32_t os_tid;
			uint32_t process;      /* a process entry's id; 0 = the
						* file's own (always 0 before
						* version 4) */
			uint32_t name_len;
			const char *name;      /* NUL-terminated, maybe empty */
		} thread;
		struct {
			uint32_t thread_id;
			uint64_t count;
			uint64_t first_ts;
			uint64_t last_ts;
		} drop;
		kt_file_summary summary;
		kt_srcloc srcloc;          /* strings valid as name.str */
		struct {
			uint32_t id;           /* the category's name id */
			uint32_t flags;        /* KT_CATEGORY_ON_* */
		} category;
		kt_track_def track;        /* pairs valid as name.str */
		kt_process_def process;    /* strings valid as name.str */
		kt_stack_def stack;        /* frames valid as name.str */
		kt_map_def map;            /* path valid as name.str */
	} u;
} kt_trace_frame;

/** What a reader has seen so far. */
typedef struct kt_reader_status {
	int complete;            /* the summary frame was read */
	int truncated;           /* the file ended before a summary */
	uint64_t valid_end;      /* offset just past the last good frame */
	uint64_t file_size;
	uint64_t frames;         /* frames returned, summary included */
	uint64_t unknown_frames; /* frames of unknown kind, skipped */
	uint64_t chunks;
	uint64_t events;         /* events in the chunks returned */
	uint64_t dropped;        /* sum of drop record counts */
	int error;               /* 0, or the sticky error of the reader */
	uint64_t error_offset;
	uint64_t buffer_bytes;      /* bytes the reader holds in buffers and
				     * tables now, kt_reader_next()'s too */
	uint64_t peak_buffer_bytes; /* the most it has held (bounded above) */
} kt_reader_status;

/**
 * kt_reader_open - open a trace file by path and read its header.
 * @path: file to read.
 * @err:  optional; on failure receives the code, offset and a message.
 * @out:  receives the reader on success; set to NULL on failure.
 *
 * The file is opened with O_NONBLOCK, so naming a FIFO never waits, and
 * anything but a regular file is refused at once.
 *
 * Return: 0 on success; -errno if the file cannot be opened or read (for
 * example -ENOENT, -EISDIR); KT_ENOTFILE for a FIFO, pipe, socket or
 * device; KT_EMAGIC, KT_EVERSION, KT_EHEADER or KT_EHDRSUM for a bad
 * header; KT_ETRUNCATED if the file ends inside the header (a truncated
 * file, as a cut after it is: err->offset is the file's size); -ENOMEM.
 * Any thread.
 */
KT_API int kt_reader_open(const char *path, kt_reader_error *err, kt_reader **out);

/**
 * kt_reader_open_fd - as kt_reader_open(), over an fd open on a regular
 * file (KT_ENOTFILE for anything else).
 *
 * The reader reads with pread() and never closes or moves @fd; the caller
 * keeps it open until kt_reader_close().  Return: as kt_reader_open().
 */
KT_API int kt_reader_open_fd(int fd, kt_reader_error *err, kt_reader **out);

/**
 * kt_reader_open_mem - as kt_reader_open(), over bytes in memory.
 *
 * @buf must stay valid and unchanged until kt_reader_close().
 * Return: as kt_reader_open(), without the -errno cases of file I/O.
 */
KT_API int kt_reader_open_mem(const void *buf, size_t len,
			      kt_reader_error *err, kt_reader **out);

/**
 * kt_reader_get_header - the decoded file header.
 *
 * Return: a pointer valid until kt_reader_close(); never NULL for an open
 * reader.
 */
KT_API const kt_header *kt_reader_get_header(const kt_reader *r);

/**
 * kt_reader_next_frame - read, check and decode the next frame.
 * @frame: receives the frame; its pointers stay valid until the next call.
 *
 * Frames of unknown kind are checked and skipped, never returned.  Chunks
 * come back decompressed, with every event record already validated, so
 * kt_chunk_next() cannot fail on them.
 *
 * Return: 1 when @frame holds a frame; 0 at the end (the summary was read,
 * or the file was cut short: see kt_reader_get_status()); a negative code
 * for corruption, after which every further call returns the same code.
 * kt_reader_get_last_error() says where and why.
 */
KT_API int kt_reader_next_frame(kt_reader *r, kt_trace_frame *frame);

/**
 * kt_reader_skip_events - with @on non-zero, kt_reader_next_frame() checks
 * each chunk frame's head, fixed fields and checksum but neither
 * decompresses it nor walks its events, and returns it with u.chunk.events
 * NULL: for a pass that wants the other frames (names, threads, drops, the
 * summary) without paying for the events.  A fault inside a chunk's payload
 * then shows only on a pass that decodes it (kt_reader_next() does).
 *
 * Return: 0.
 */
KT_API int kt_reader_skip_events(kt_reader *r, int on);

/**
 * kt_reader_rewind - go back to the first frame.
 *
 * Counts in the status restart from zero; a sticky error is cleared.
 * Return: 0.
 */
KT_API int kt_reader_rewind(kt_reader *r);

/**
 * kt_trace_frame_get_srcloc - the source location (SPEC §4.7) a frame
 * holds: where the events named @return->id were emitted (file, line,
 * function) and the name id of their category.  Its strings stay valid
 * as the frame's do (until the next call on the reader).  A trace gives
 * each id's location once, usually near the id's name entry; keep what
 * you need of it, as `katra stats` does (tools/pipeline/tables.h).
 *
 * Return: the location, or NULL when @f is not a KT_FRAME_SRCLOC frame.
 * Any thread that may use @f.
 */
KT_API const kt_srcloc *kt_trace_frame_get_srcloc(const kt_trace_frame *f);

/**
 * kt_trace_frame_get_track - the track entry (SPEC §4.9) a frame holds:
 * a track's id, name id, clock rate and calibration pairs (already checked:
 * at most KT_MAX_TRACK_PAIRS, strictly increasing in both clocks).  The
 * pairs stay valid as the frame's strings do; copy them to keep them.
 * Return: the entry, or NULL when @f is not a KT_FRAME_TRACK frame.
 * Any thread that may use @f.
 */
KT_API const kt_track_def *kt_trace_frame_get_track(const kt_trace_frame *f);

/**
 * kt_trace_frame_get_process - the process entry (SPEC §4.10, version 4) a
 * frame holds: pid, parent pid, start and end, name and command line.  Its
 * strings stay valid as the frame's do; copy them to keep them.
 * Return: the entry, or NULL when @f is not a KT_FRAME_PROCESS frame.
 * Any thread that may use @f.
 */
KT_API const kt_process_def *kt_trace_frame_get_process(const kt_trace_frame *f);

/**
 * kt_trace_frame_get_stack - the stack entry (SPEC §4.11, version 5) a frame
 * holds: an id and its addresses, innermost first (already checked: depth
 * 1..KT_MAX_STACK_DEPTH).  The addresses stay valid as the frame's strings
 * do; copy them to keep them.
 * Return: the entry, or NULL when @f is not a KT_FRAME_STACK frame.
 * Any thread that may use @f.
 */
KT_API const kt_stack_def *kt_trace_frame_get_stack(const kt_trace_frame *f);

/**
 * kt_trace_frame_get_map - the map entry (SPEC §4.12, version 5) a frame
 * holds: an executable mapping of a file (start, length, file offset,
 * path).  The path stays valid as the frame's strings do.
 * Return: the entry, or NULL when @f is not a KT_FRAME_MAP frame.
 * Any thread that may use @f.
 */
KT_API const kt_map_def *kt_trace_frame_get_map(const kt_trace_frame *f);

/** The fields of a track record (types 16-19, SPEC §4.2). */
typedef struct kt_track_event {
	uint32_t track;      /* the track's id (the record's flags); may name
			      * no track entry in a damaged file */
	uint64_t track_ts;   /* the time on the track's own clock */
	int64_t value_i64;   /* type 18's value */
	double value_f64;    /* type 19's value */
} kt_track_event;

/**
 * kt_event_get_track - the track fields of @ev into @out.
 * Return: 1 for a track record (types 16-19), 0 for any other event (and
 * @out untouched).  Pure; any thread.
 */
KT_API int kt_event_get_track(const kt_event *ev, kt_track_event *out);

/**
 * The value an event carries, decoded from its payload as its type's row of
 * KT_EVENT_TYPES (katra/record.h) says: the one place that reads a
 * payload's bytes.  Only the fields @kind names are set, with bytes and
 * len (always); the others are 0.
 */
typedef struct kt_value {
	kt_value_kind kind;
	uint32_t track;       /* TRACK*: the track's id (the record's flags) */
	int64_t i64;          /* I64, TRACK_I64 */
	uint64_t u64;         /* U64; FRAME: the number; FLOW: the id */
	double f64;           /* F64, TRACK_F64 */
	uint64_t bits;        /* every kind with one number (I64, U64, F64,
			       * FRAME, FLOW, TRACK_I64, TRACK_F64): its 8
			       * bytes as stored (an f64's IEEE-754 bits) */
	uint64_t ptr;         /* ALLOC, FREE: the address */
	uint64_t size;        /* ALLOC: the bytes allocated */
	uint64_t track_ts;    /* TRACK*: the time on the track's own clock */
	const uint8_t *bytes; /* TEXT, BYTES: the value (no NUL); every kind:
			       * the raw payload, valid as the event's */
	size_t len;           /* its length in bytes */
	uint32_t thread;      /* SCHED, SAMPLE: the followed thread's katra id
			       * (SAMPLE's .u64: its stack entry's id) */
	uint32_t cpu;         /* SCHED: the CPU (FOLLOW, LOST: 0) */
} kt_value;

/**
 * kt_event_get_value - the value @ev carries, into @out.
 *
 * Every event a reader returns has the payload its type's row states; a
 * copy that dropped it (a tool's pass without payloads) or a type no row
 * names does not.
 *
 * Return: 1 with @out's kind and fields set; 0 when @ev's payload is not
 * what its type's row states, or no row names its type: @out's kind is
 * KT_VALUE_NONE and only bytes and len are set.  Pure;
 * any thread.
 */
KT_API int kt_event_get_value(const kt_event *ev, kt_value *out);

/**
 * kt_event_set_value - the inverse of kt_event_get_value(): @v's fields as
 * @ev's type's payload, written into @buf, and @ev's payload pointed at it.
 *
 * For a tool that changes a value as it copies events (`katra merge`
 * renumbers a scheduler record's thread) without writing a payload's bytes
 * itself.  Only types with a fixed-size payload (8 or 16 bytes) are set;
 * @v->kind must be @ev's type's kind.  @buf must outlive the use of @ev.
 *
 * Return: 1 with @ev->payload = @buf and @ev->payload_len its size; 0 for
 * a type with no payload, a payload of bytes, a type no row names, or a
 * kind that is not the type's (@ev untouched).  Pure; any thread.
 */
KT_API int kt_event_set_value(kt_event *ev, const kt_value *v, uint8_t buf[16]);

/**
 * kt_track_to_ticks - @track_ts, a time on track @t's clock, as katra's
 * ticks (an event's ts) of a clock of @tick_hz ticks per second (the
 * header's clock.tick_hz).  Between two calibration pairs the time is on
 * the line through them (it follows the drift of one clock against the
 * other); before the first or after the last it is the nearest pair's
 * offset at the nominal rates (@t->clock_hz against @tick_hz).
 * Return: 0 with *@ticks set; -ENODATA when @t has no pair; -ERANGE when
 * the result falls outside 0..2^64-1; -EINVAL for a zero rate, more than
 * KT_MAX_TRACK_PAIRS pairs, or (checked where they are used, so a call
 * costs O(log pairs)) two pairs not increasing in both clocks.  Pure; any
 * thread.
 */
KT_API int kt_track_to_ticks(const kt_track_def *t, uint64_t tick_hz, uint64_t track_ts,
			     uint64_t *ticks);

/** What kt_reader_set_salvage() skipped in this pass. */
typedef struct kt_reader_skipped {
	uint64_t frames;         /* frames (and chunks whose events failed) */
	uint64_t bytes;          /* file bytes they and any resync covered (a
				  * chunk skipped when the merge loads it
				  * counts in frames only) */
	uint64_t first_offset;   /* where the first one was */
	int first_error;         /* and why (a KT_E* code); 0 when none */
} kt_reader_skipped;

/**
 * kt_reader_set_salvage - with @on non-zero, a frame that fails its checks
 * (a head, a checksum, a body, a chunk's events, a summary that disagrees
 * with the frames skipped before it) is skipped instead of ending the pass:
 * reading goes on at the next frame, found by its length or, when the
 * head itself is bad, by the next 8-byte boundary whose head checks.
 * kt_reader_next() skips a chunk whose events fail the same way.  What was
 * skipped is counted (kt_reader_get_skipped()); an I/O error, no memory, a
 * stated limit and a cut file still end the pass as without salvage.  Once
 * a frame was skipped, the summary's totals and rows are taken as written
 * (they count what the skipped frames held) instead of being checked.
 * For tools that should show what they can (katra stats, export); a reader
 * that judges a file (katra verify) leaves it off.
 *
 * Threads: the reader's owner, before or between passes.
 * Return: 0.
 */
KT_API int kt_reader_set_salvage(kt_reader *r, int on);

/** kt_reader_get_skipped - what salvage skipped since the pass began. */
KT_API void kt_reader_get_skipped(const kt_reader *r, kt_reader_skipped *out);

/** kt_reader_get_status - copy what the reader has seen so far into @st. */
KT_API void kt_reader_get_status(const kt_reader *r, kt_reader_status *st);

/**
 * kt_reader_get_last_error - the last error, with its offset and message.
 *
 * Return: a pointer valid until kt_reader_close(); its code is 0 when there
 * has been no error.
 */
KT_API const kt_reader_error *kt_reader_get_last_error(const kt_reader *r);

/** kt_reader_close - release the reader; NULL is a no-op. */
KT_API void kt_reader_close(kt_reader *r);

/** Cursor over the events of one chunk frame. */
typedef struct kt_chunk_iter {
	const uint8_t *pos;
	const uint8_t *end;
	uint32_t thread_id;
} kt_chunk_iter;

/**
 * kt_chunk_iter_init - start iterating the events of @frame.
 *
 * @frame must be a KT_FRAME_CHUNK frame from kt_reader_next_frame(), still
 * valid.  A frame of any other kind gives an iterator that yields nothing.
 */
KT_API void kt_chunk_iter_init(kt_chunk_iter *it, const kt_trace_frame *frame);

/**
 * kt_chunk_next - the next event of the chunk.
 *
 * Return: 1 when @ev holds an event (its payload points into the chunk),
 * 0 when the chunk has no more.
 */
KT_API int kt_chunk_next(kt_chunk_iter *it, kt_event *ev);

/** Which events kt_reader_next() returns (kt_reader_set_filter()). */
typedef struct kt_reader_filter {
	uint64_t from_ns, to_ns;  /* CLOCK_MONOTONIC ns, both included */
	const uint32_t *threads;  /* thread ids; NULL or 0 of them: all */
	size_t nthreads;
} kt_reader_filter;

/**
 * kt_reader_set_filter - from now on, kt_reader_next() returns only the
 * events whose time (kt_reader_get_time_ns()) lies in [from_ns, to_ns] and
 * whose thread is one of @f's threads (all when it names none).  @f is
 * copied; its thread array must stay valid while the filter is set.  NULL
 * removes the filter.  kt_reader_rewind() keeps it.
 *
 * Threads: the reader's owner.
 * Return: 0.
 */
KT_API int kt_reader_set_filter(kt_reader *r, const kt_reader_filter *f);

/**
 * kt_reader_next - the next event of any thread, in timestamp order.
 * @ev: receives the event; its payload stays valid until the next call.
 *
 * The first call indexes the file's chunks (one pass, no events held);
 * then a thread's decoded chunk is kept while it has events to merge, at
 * most one per thread (the memory this takes is stated at the top).  Ties
 * in timestamp go to the lower thread id, then to the order within the
 * thread, so two passes give the same order.  Uses the reader's own pass:
 * do not mix with kt_reader_next_frame() before kt_reader_rewind(), which
 * starts over.
 *
 * With a filter (kt_reader_set_filter()), only the events it keeps.
 *
 * Return: 1 with an event; 0 after the last (a truncated file ends after
 * its last complete chunk); a negative code after the last event before a
 * corruption, with kt_reader_get_last_error() saying where.
 */
KT_API int kt_reader_next(kt_reader *r, kt_event *ev);

/**
 * kt_reader_get_time_ns - kt_ticks_to_ns() with the reader's best
 * calibration: both points once kt_reader_next() has indexed a file with a
 * summary, the header's alone otherwise.  This is the conversion
 * kt_replay() uses.  Safe to call from another thread than the one driving
 * the reader once that thread has returned its first event (the
 * calibration does not change after the index pass).
 */
KT_API uint64_t kt_reader_get_time_ns(kt_reader *r, uint64_t ticks);

/** Called for each replayed event with its CLOCK_MONOTONIC time; a
 * non-zero return stops the replay and becomes kt_replay()'s result. */
typedef int (*kt_replay_fn)(void *ctx, const kt_event *ev, uint64_t ns);

typedef struct kt_replay_options {
	double speed;  /* time scale: 2.0 replays twice as fast; 0 means 1.0 */
	int max;       /* non-zero: no pacing at all */
} kt_replay_options;

/**
 * kt_replay - deliver every event in kt_reader_next() order to @fn, paced
 * to the original timing scaled by @opts->speed (or as fast as possible).
 *
 * Return: 0 after the last event, @fn's non-zero result, or a negative code
 * as for kt_reader_next().  Same thread rules as the reader.
 */
KT_API int kt_replay(kt_reader *r, kt_replay_fn fn, void *ctx, const kt_replay_options *opts);

/**
 * kt_ticks_to_ns - convert a timestamp to CLOCK_MONOTONIC nanoseconds.
 * @start: the header's calibration.
 * @stop:  the summary, or NULL; when it holds a later calibration point the
 *         conversion uses the line through both points (SPEC §2.1).
 *
 * Return: nanoseconds; ticks before the calibration point give values below
 * clock.mono_ns, saturating at 0.
 */
KT_API uint64_t kt_ticks_to_ns(const kt_clock_calibration *start,
			       const kt_file_summary *stop, uint64_t ticks);

/** kt_event_type_name - "zone_begin", "counter_i64", ...; "unknown" else. */
KT_API const char *kt_event_type_name(unsigned type);

/** kt_frame_kind_name - "chunk", "name", ...; "unknown" else. */
KT_API const char *kt_frame_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_READER_H */

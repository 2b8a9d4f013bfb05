/*
 * katra/trace.h - the values stored in a .katra file, shared by the reader
 * and the writer.  format/SPEC.md defines the bytes; these structs are their
 * decoded form.  The event record and its types are katra/record.h's.
 */
#ifndef KATRA_TRACE_H
#define KATRA_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <katra/error.h>
#include <katra/record.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The one list of frame kinds (SPEC §4): X(code, enum name, display name).
 * It makes kt_frame_kind and kt_frame_kind_name()'s names.  Append only:
 * the codes are in every trace file, and a reader skips kinds it does not
 * know.
 */
#define KT_FRAME_KINDS(X)                         \
	X(1, KT_FRAME_CHUNK,   "chunk")   /* §4.1 */  \
	X(2, KT_FRAME_NAME,    "name")    /* §4.3 */  \
	X(3, KT_FRAME_THREAD,  "thread")  /* §4.4 */  \
	X(4, KT_FRAME_DROP,    "drop")    /* §4.5 */  \
	X(5, KT_FRAME_SUMMARY, "summary") /* §4.6 */  \
	X(6, KT_FRAME_SRCLOC,  "srcloc")  /* §4.7 */  \
	X(7, KT_FRAME_CATEGORY, "category") /* §4.8 */ \
	X(8, KT_FRAME_TRACK,   "track")   /* §4.9 */  \
	X(9, KT_FRAME_PROCESS, "process") /* §4.10, version 4 */ \
	X(10, KT_FRAME_STACK,  "stack")   /* §4.11, version 5 */  \
	X(11, KT_FRAME_MAP,    "map")     /* §4.12, version 5 */

/** Frame kinds (SPEC §4). */
typedef enum kt_frame_kind {
#define KT__FRAME_ENUM(code, name, text) name = code,
	KT_FRAME_KINDS(KT__FRAME_ENUM)
#undef KT__FRAME_ENUM
} kt_frame_kind;

/** Chunk codecs. */
typedef enum kt_codec {
	KT_CODEC_NONE = 0,
	KT_CODEC_LZ4 = 1,
	KT_CODEC_LZ4_DELTA = 2, /* format version 2: timestamps as deltas, then LZ4 */
	KT_CODEC_COMPACT = 3,   /* format version 3: fields predicted, misses stored */
	KT_CODEC_COMPACT_ZSTD = 4, /* format version 3: a compact payload, then zstd */
} kt_codec;

/** Clock sources. */
typedef enum kt_clock_source {
	KT_CLOCK_AUTO = 0, /* only in configuration: TSC where invariant */
	KT_CLOCK_TSC = 1,
	KT_CLOCK_MONOTONIC = 2,
} kt_clock_source;

/**
 * Overflow policies: what a thread whose ring is full does with a record.
 * WAIT, the default, waits for the flusher to make room, so a burst
 * faster than the flusher is slowed rather than lost, within two bounds
 * that keep a stalled or overrun flusher from holding the program: a
 * wait ends in a drop once the flusher has freed nothing for
 * KT_WAIT_STALL_NS, and each thread waits at most half of its time (a
 * credit of up to KT_WAIT_CREDIT_NS, earned at half the time that
 * passes), so an overloaded program runs at least half as fast as it
 * would untraced; a thread that dropped waits no more until its records
 * fit again.  BLOCK waits as long as the session runs; DROP never waits.
 * Every drop is counted.  A record whose thread is still waiting when
 * the session stops is neither written nor counted: the stop came first,
 * as for a record emitted after it (at most one per thread).  (The trace
 * header's byte for the policy has its own numbering: format/SPEC.md
 * §2.1.)
 */
typedef enum kt_overflow {
	KT_OVERFLOW_WAIT = 0,
	KT_OVERFLOW_BLOCK = 1,
	KT_OVERFLOW_DROP = 2,
} kt_overflow;

/** kt_overflow_name - "wait", "block" or "drop" for @policy (a
 * kt_overflow), "unknown" for any other value.  Any thread. */
KT_API const char *kt_overflow_name(unsigned policy);

/** WAIT's bounds (see kt_overflow).  The stall bound is past the 9-16 ms
 * a flusher on a loaded 2-core machine was seen to go without freeing
 * room while it still made progress (bench/RESULTS.md). */
#define KT_WAIT_STALL_NS 50000000u   /* 50 ms */
#define KT_WAIT_CREDIT_NS 250000000u /* 250 ms */

/** I/O backends. */
typedef enum kt_io_backend {
	KT_IO_AUTO = 0,  /* as a request; as a result it means "none" */
	KT_IO_URING = 1,
	KT_IO_PWRITE = 2,
} kt_io_backend;

#define KT_HDR_CAPTURE 0x1u /* header flag: run id, epoch, capture id set */
/* Header flags of scheduler records (version 4, SPEC §2.1, §4.2 type 20):
 * the session asked for its threads' context switches and the kernel gave
 * them (SCHED), or refused them (SCHED_ABSENT: a note says why).  With
 * neither, nobody asked.  Only SCHED makes off-CPU times a reader may show. */
#define KT_HDR_SCHED 0x2u
#define KT_HDR_SCHED_ABSENT 0x4u
#define KT_HDR_FLAGS_KNOWN (KT_HDR_CAPTURE | KT_HDR_SCHED | KT_HDR_SCHED_ABSENT)
#define KT_SUMMARY_RECOVERED 0x1u
#define KT_SUMMARY_IO_ERROR 0x2u

/* Limits from SPEC §2, §3, §4 and §5. */
#define KT_MAX_HEADER (1u << 20)
#define KT_MAX_FRAME_BODY (64u << 20)
#define KT_MAX_RAW (64u << 20)
#define KT_MAX_STRING 65535u
#define KT_MAX_NOTES 1024u
#define KT_MAX_SUMMARY_THREADS (1u << 20)
#define KT_MAX_TRACKS 255u        /* track ids are 1..255 (SPEC §4.9) */
#define KT_MAX_TRACK_PAIRS 1024u  /* calibration pairs in one track entry */

/** A tick/ns pair and the tick rate: how the file's timestamps map to ns. */
typedef struct kt_clock_calibration {
	uint8_t source;      /* kt_clock_source */
	uint64_t tick_hz;    /* ticks per second, non-zero */
	uint64_t ticks;      /* tick count at the calibration instant */
	uint64_t mono_ns;    /* CLOCK_MONOTONIC ns at the same instant */
} kt_clock_calibration;

/** The capture options recorded in the header. */
typedef struct kt_capture_options {
	uint64_t ring_size;
	uint8_t overflow;        /* kt_overflow */
	uint8_t codec;           /* kt_codec */
	uint8_t io;              /* kt_io_backend as requested */
	int32_t codec_level;     /* LZ4 acceleration, 1 = default */
	uint64_t flush_period_ns;
	uint64_t fsync_interval_ns;
	uint64_t max_duration_ns;
	uint64_t max_bytes;
} kt_capture_options;

/**
 * The file header.  Strings are NUL-terminated; a NULL string is written as
 * the empty string.  In a header returned by the reader every pointer stays
 * valid until kt_reader_close().
 */
typedef struct kt_header {
	uint32_t format_version;
	uint32_t flags;               /* KT_HDR_* */
	uint64_t schema_hash;
	uint64_t start_wall_ns;
	uint64_t start_mono_ns;
	uint64_t process_id;
	kt_clock_calibration clock;
	kt_capture_options capture;
	uint64_t epoch;
	const char *tool_version;
	const char *workload;
	const char *host;
	const char *run_id;
	const char *capture_id;
	uint32_t note_count;
	const char *const *notes;
} kt_header;

/** One thread's row in the session summary. */
typedef struct kt_summary_thread {
	uint32_t thread_id;
	uint64_t written;
	uint64_t dropped;
	uint64_t overwritten;   /* a flight session's kt_session_stop(): the
				 * thread's events its ring overwrote, apart
				 * from dropped; never in a file (0 read) */
} kt_summary_thread;

/** The session summary frame (SPEC §4.6). */
typedef struct kt_file_summary {
	uint32_t flags;               /* KT_SUMMARY_* */
	uint64_t events_written;
	uint64_t events_dropped;
	uint64_t chunks;
	uint64_t bytes_raw;
	uint64_t bytes_stored;
	uint64_t end_wall_ns;
	uint64_t end_mono_ns;
	uint64_t clock_ticks1;
	uint64_t clock_ns1;
	uint8_t io_backend;           /* kt_io_backend; 0 = none */
	int32_t io_error;             /* first I/O error as -errno, or 0 */
	uint32_t thread_count;
	const kt_summary_thread *threads; /* thread_count rows, thread_id order */
} kt_file_summary;

/**
 * A source location entry (SPEC §4.7): where the call site whose name id is
 * @id sits in the traced program.  The id also has a name entry (§4.3),
 * the zone's name.  Strings are NUL-terminated and never hold a zero byte.
 */
typedef struct kt_srcloc {
	uint32_t id;          /* the call site's name id, non-zero */
	uint32_t line;        /* 0 when unknown */
	uint32_t category;    /* the name id of its category; 0 for none */
	uint32_t file_len;
	uint32_t function_len;
	const char *file;     /* "" when unknown */
	const char *function; /* "" when unknown */
} kt_srcloc;

/* Category entry flags (SPEC §4.8). */
#define KT_CATEGORY_ON_START 0x1u /* enabled when the session started */
#define KT_CATEGORY_ON_STOP 0x2u  /* enabled when it stopped */

/** A calibration pair: the same instant on a track's clock and katra's. */
typedef struct kt_track_pair {
	uint64_t track_ts;    /* the track's clock */
	uint64_t ticks;       /* katra's clock (an event's ts) */
} kt_track_pair;

/**
 * A track entry (SPEC §4.9): a timeline with a clock of its own, whose
 * records (types 16-19) carry @id in their flags.  Pairs are strictly
 * increasing in both clocks.
 */
typedef struct kt_track_def {
	uint32_t id;                /* 1..KT_MAX_TRACKS */
	uint32_t name_id;           /* the track's name, non-zero */
	uint64_t clock_hz;          /* the track clock's ticks per second, non-zero */
	uint32_t pair_count;        /* 0..KT_MAX_TRACK_PAIRS */
	const kt_track_pair *pairs; /* pair_count pairs, in order */
} kt_track_def;

/* Process entry flags (SPEC §4.10). */
#define KT_PROCESS_COMPLETE 0x1u  /* its events' accounting is whole: its own
				   * file ended with a summary */
#define KT_PROCESS_RECOVERED 0x2u /* its events were rebuilt from crash files */
#define KT_MAX_PROCESSES 4096u    /* process entries a tool keeps (SPEC §5) */

/**
 * A process entry (SPEC §4.10, format version 4): one process whose threads
 * are in the file.  Id 0 describes the file's own process (the header's
 * process_id); a merged trace numbers its processes from 1.  Times are
 * CLOCK_MONOTONIC ns.  @cmdline holds the arguments separated by single
 * zero bytes (@cmdline_len bytes, plus a terminating NUL in a reader's
 * frame); @name never holds a zero byte.
 */
typedef struct kt_process_def {
	uint32_t id;          /* 0: the file's own process; else 1.. */
	uint32_t flags;       /* KT_PROCESS_* */
	uint64_t pid;         /* the OS's pid */
	uint64_t parent_pid;  /* 0 when unknown */
	uint64_t start_ns;    /* CLOCK_MONOTONIC ns; 0 when unknown */
	uint64_t end_ns;      /* CLOCK_MONOTONIC ns; 0 when unknown or running */
	uint32_t name_len;    /* 0..65535 */
	uint32_t cmdline_len; /* 0..65535 */
	const char *name;     /* NUL-terminated; "" when unknown */
	const char *cmdline;  /* cmdline_len bytes, then a NUL */
} kt_process_def;

#define KT_MAX_STACK_DEPTH 128u /* frames of one stack entry (SPEC §4.11) */
#define KT_MAX_MAP_PATH 4096u   /* bytes of a map entry's path (SPEC §4.12) */

/**
 * A stack entry (SPEC §4.11, format version 5): a user-space call chain the
 * kernel sampled, interned once; sample records (type 21) name it by @id.
 * @frames[0] is the sampled instruction, each next one a return address
 * (the caller's), as the frame pointers gave them.
 */
typedef struct kt_stack_def {
	uint32_t id;              /* non-zero */
	uint32_t depth;           /* 1..KT_MAX_STACK_DEPTH */
	const uint64_t *frames;   /* depth addresses, innermost first */
} kt_stack_def;

/**
 * A map entry (SPEC §4.12, format version 5): a file mapped executable into
 * a traced process, as /proc/PID/maps or the kernel's mmap records said.
 */
typedef struct kt_map_def {
	uint64_t ts;              /* ticks when seen; 0: mapped at the start */
	uint64_t start;           /* first address */
	uint64_t len;             /* bytes mapped */
	uint64_t pgoff;           /* the file offset mapped at @start */
	uint32_t process;         /* process entry id; 0: the file's own */
	uint32_t path_len;        /* 1..KT_MAX_MAP_PATH */
	const char *path;         /* NUL-terminated, no zero byte inside */
} kt_map_def;

/** One decoded event.  payload points into the chunk it came from. */
typedef struct kt_event {
	uint64_t ts;          /* ticks; see kt_reader_get_time_ns() */
	uint32_t thread_id;   /* the chunk's thread */
	uint32_t name_id;
	uint8_t type;         /* kt_event_type */
	uint8_t flags;        /* flow phase, user subtype, else 0 */
	uint16_t payload_len;
	const uint8_t *payload;
} kt_event;

#ifdef __cplusplus
}
#endif
#endif /* KATRA_TRACE_H */

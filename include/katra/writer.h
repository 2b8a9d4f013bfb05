/*
 * katra/writer.h - writing .katra files directly.
 *
 * Sessions (katra.h) write trace files from live rings.  This writer is for
 * everything else that produces a trace from events it already holds: the
 * `katra` tool when it slices or recompresses, converters, tests.  It keeps
 * the per-thread chunk sequence numbers and the accounting itself, so the
 * summary it writes always agrees with the file (SPEC §4.6).
 *
 * Threads: a kt_writer is not shared; one thread at a time per writer.
 */
#ifndef KATRA_WRITER_H
#define KATRA_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <katra/error.h>
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
KT_API int kt_writer_open(kt_writer **out, const char *path, const kt_header *h);

/**
 * kt_writer_open_fd - as kt_writer_open(), writing at the current end of an
 * open fd it does not own (kt_writer_close() leaves it open).
 */
KT_API int kt_writer_open_fd(kt_writer **out, int fd, const kt_header *h);

/**
 * kt_writer_chunk - append one event chunk.
 * @thread_id: non-zero.
 * @codec: KT_CODEC_NONE, KT_CODEC_LZ4 or KT_CODEC_LZ4_DELTA (timestamps
 *         delta-coded before LZ4, SPEC §4.1); @level is the LZ4 acceleration
 *         (values below 1 mean 1).
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

/** kt_writer_thread - append a thread entry.  Return: 0, -EINVAL, -errno. */
KT_API int kt_writer_thread(kt_writer *w, uint32_t thread_id, uint32_t os_tid,
			    const char *name);

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

/** kt_writer_bytes - bytes written to the file so far (header included). */
KT_API uint64_t kt_writer_bytes(const kt_writer *w);

/**
 * kt_event_encode - encode one record into @buf (SPEC §4.2).
 *
 * Return: the bytes written, kt_event_size(ev->payload_len); 0 if @cap is too
 * small.  Padding is zeroed.  The record is not validated here.
 */
KT_API size_t kt_event_encode(void *buf, size_t cap, const kt_event *ev);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_WRITER_H */

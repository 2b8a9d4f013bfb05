/* Shared helpers for katra's Criterion tests: t_ prefix. */
#ifndef KATRA_TESTS_HELPERS_H
#define KATRA_TESTS_HELPERS_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <katra/reader.h>
#include "format/format.h"

/* Sanitizers map shadow memory as a program runs, so /proc/self/maps
 * counts mean nothing under them. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define T_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define T_SANITIZED 1
#endif
#endif
#ifndef T_SANITIZED
#define T_SANITIZED 0
#endif
/* ThreadSanitizer alone: it slows every thread several times over. */
#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif
#ifndef T_TSAN
#define T_TSAN 0
#endif
#include <katra/writer.h>

/* Read a whole fd from offset 0 into a malloc'd buffer. */
static inline uint8_t *t_slurp_fd(int fd, size_t *len)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return NULL;
	uint8_t *p = malloc((size_t)sb.st_size ? (size_t)sb.st_size : 1);
	if (!p)
		return NULL;
	if (pread(fd, p, (size_t)sb.st_size, 0) != sb.st_size) {
		free(p);
		return NULL;
	}
	*len = (size_t)sb.st_size;
	return p;
}

static inline uint8_t *t_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* A fixed header: every field set, nothing taken from the machine. */
static const char *const t_notes[] = { "first note", "second note: \xce\xbb" };

static inline void t_header(kt_header *h)
{
	kt_header_init(h);
	h->flags = KT_HDR_CAPTURE;
	h->start_wall_ns = UINT64_C(1764460800000000000);
	h->start_mono_ns = UINT64_C(123456789);
	h->process_id = 4242;
	h->clock.source = KT_CLOCK_TSC;
	h->clock.tick_hz = UINT64_C(3000000000);
	h->clock.ticks = UINT64_C(1000000);
	h->clock.mono_ns = UINT64_C(123456000);
	h->capture.ring_size = 4u << 20;
	h->capture.overflow = KT_OVERFLOW_BLOCK;
	h->capture.codec = KT_CODEC_LZ4;
	h->capture.io = KT_IO_URING;
	h->capture.codec_level = 3;
	h->capture.flush_period_ns = 1000000;
	h->capture.fsync_interval_ns = 250000000;
	h->capture.max_duration_ns = UINT64_C(5000000000);
	h->capture.max_bytes = 64u << 20;
	h->epoch = 7;
	h->tool_version = "katra-test 1";
	h->workload = "unit test";
	h->host = "test-host";
	h->run_id = "run-1";
	h->capture_id = "cap-0001";
	h->note_count = 2;
	h->notes = t_notes;
}

/* Append one event of each type to @buf; returns bytes used. */
static inline size_t t_events_all_types(uint8_t *buf, size_t cap, uint64_t ts0, int salt)
{
	static const char msg[] = "hello, trace";
	static const uint8_t user[5] = { 1, 2, 3, 4, 5 };
	int64_t ci = -42 - salt;
	double cf = 2.5 + salt;
	uint64_t frame = 100 + (uint64_t)salt, flow = 0xabcdef + (uint64_t)salt;
	kt_event evs[] = {
		{ .ts = ts0 + 0, .name_id = 1, .type = KT_EV_ZONE_BEGIN },
		{ .ts = ts0 + 1, .name_id = 2, .type = KT_EV_INSTANT },
		{ .ts = ts0 + 2, .name_id = 3, .type = KT_EV_COUNTER_I64, .payload_len = 8, .payload = (const uint8_t *)&ci },
		{ .ts = ts0 + 3, .name_id = 4, .type = KT_EV_COUNTER_F64, .payload_len = 8, .payload = (const uint8_t *)&cf },
		{ .ts = ts0 + 4, .name_id = 5, .type = KT_EV_FRAME, .payload_len = 8, .payload = (const uint8_t *)&frame },
		{ .ts = ts0 + 5, .name_id = 6, .type = KT_EV_FLOW, .flags = KT_FLOW_BEGIN, .payload_len = 8, .payload = (const uint8_t *)&flow },
		{ .ts = ts0 + 6, .name_id = 6, .type = KT_EV_FLOW, .flags = KT_FLOW_STEP, .payload_len = 8, .payload = (const uint8_t *)&flow },
		{ .ts = ts0 + 7, .name_id = 6, .type = KT_EV_FLOW, .flags = KT_FLOW_END, .payload_len = 8, .payload = (const uint8_t *)&flow },
		{ .ts = ts0 + 8, .name_id = 7, .type = KT_EV_MESSAGE, .payload_len = sizeof(msg) - 1, .payload = (const uint8_t *)msg },
		{ .ts = ts0 + 9, .name_id = 8, .type = KT_EV_USER, .flags = 9, .payload_len = sizeof(user), .payload = user },
		{ .ts = ts0 + 10, .name_id = 1, .type = KT_EV_ZONE_END },
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		n += kt_event_encode(buf + n, cap - n, &evs[i]);
	return n;
}
#define T_EVENTS_PER_SET 11

static const char *const t_names[] = { NULL, "frame_zone", "tick", "draw_calls",
				       "frame_ms", "frame", "handoff", "log", "blob" };
#define T_NAMES 8

/*
 * t_writer_done - finish @w (when @finish) with the sample's summary
 * fields, close it and its memfd @fd: the file's bytes (malloc'd, *@len
 * long), or NULL when the writer refused.
 */
static inline uint8_t *t_writer_done(kt_writer *w, int fd, size_t *len, int finish)
{
	int rc = 0;
	if (finish) {
		kt_file_summary extra = { 0 };
		extra.end_wall_ns = UINT64_C(1764460801000000000);
		extra.end_mono_ns = 1123456789;
		extra.clock_ticks1 = UINT64_C(3001000000);
		extra.clock_ns1 = 1123456000;
		extra.io_backend = KT_IO_URING;
		rc = kt_writer_finish(w, &extra);
	}
	rc = kt_writer_close(w) ? -1 : rc;
	uint8_t *p = rc ? NULL : t_slurp_fd(fd, len);
	close(fd);
	return p;
}

/*
 * The sample trace: header, names, two threads, a raw and an LZ4 chunk for
 * each, a drop record, an unknown-kind frame is NOT included (tests add
 * their own), and the summary.  Returns the bytes (malloc'd).
 */
static inline uint8_t *t_sample(size_t *len, int finish)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("katra-sample", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	kt_writer *w;
	if (kt_writer_open_fd(fd, &h, &w))
		return NULL;
	for (uint32_t i = 1; i <= T_NAMES; i++)
		kt_writer_name(w, i, t_names[i], strlen(t_names[i]));
	kt_writer_thread(w, 1, 1001, "main");
	kt_writer_thread(w, 2, 1002, "render");
	uint8_t ev[4096];
	for (uint32_t tid = 1; tid <= 2; tid++) {
		size_t n = t_events_all_types(ev, sizeof(ev), 2000000 + tid * 100, (int)tid);
		kt_writer_chunk(w, tid, KT_CODEC_NONE, 1, ev, n);
		n = t_events_all_types(ev, sizeof(ev), 3000000 + tid * 100, (int)tid + 10);
		kt_writer_chunk(w, tid, KT_CODEC_LZ4, 1, ev, n);
	}
	kt_writer_drop(w, 2, 17, 2500000, 2600000);
	return t_writer_done(w, fd, len, finish);
}

/* A file of one chunk of thread 7 written with @codec at @level, and the
 * summary: its bytes (malloc'd) and *@len; NULL if the writer refused. */
static inline uint8_t *t_one_chunk_file(unsigned codec, int level, const uint8_t *ev, size_t n,
					size_t *len)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("katra-one-chunk", MFD_CLOEXEC);
	kt_writer *w;
	if (fd < 0 || kt_writer_open_fd(fd, &h, &w))
		return NULL;
	int rc = kt_writer_chunk(w, 7, codec, level, ev, n);
	if (!rc)
		rc = kt_writer_finish(w, NULL);
	if (kt_writer_close(w) || rc) {
		close(fd);
		return NULL;
	}
	uint8_t *p = t_slurp_fd(fd, len);
	close(fd);
	return p;
}

/* Make the file at @file one of format @version: the number in the
 * preamble and the header, that version's schema @hash, and the header
 * checksum again (format/format.h's layout). */
static inline void t_set_version(uint8_t *file, uint32_t version, uint64_t hash)
{
	uint32_t hlen = kt__get32(file + 12);
	size_t sum_at = 16 + kt__align8(hlen);
	kt__put32(file + 8, version);
	kt__put32(file + 16, version);
	kt__put64(file + 24, hash);
	kt__put64(file + sum_at, kt__xxh3(file + 8, sum_at - 8));
}

/* The committed golden file @path, malloc'd, and *@glen; NULL if missing.
 * With KT_REGEN_GOLDEN set, the @len bytes at @p are written there first. */
static inline uint8_t *t_golden(const char *path, const void *p, size_t len, size_t *glen)
{
	if (getenv("KT_REGEN_GOLDEN")) {
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(p, 1, len, f) != len || fclose(f))
			return NULL;
	}
	return t_slurp(path, glen);
}

/* How many of @want's @n names a (possibly cut) trace at @path holds. */
static inline int t_names_in(const char *path, const char *const *want, int n)
{
	kt_reader *r;
	if (kt_reader_open(path, NULL, &r))
		return 0;
	kt_trace_frame f;
	int found = 0;
	while (kt_reader_next_frame(r, &f) > 0)
		if (f.kind == KT_FRAME_NAME)
			for (int i = 0; i < n; i++)
				if (f.u.name.len == strlen(want[i]) &&
				    !memcmp(f.u.name.str, want[i], f.u.name.len))
					found++;
	kt_reader_close(r);
	return found;
}

/* Read every frame; returns the last kt_reader_next_frame() result. */
static inline int t_drain(kt_reader *r, uint64_t *frames)
{
	kt_trace_frame f;
	int rc;
	uint64_t n = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		n++;
	if (frames)
		*frames = n;
	return rc;
}

/* Run @fn(@arg) in a child of fork() and return its wait status, or -1
 * when no child could be had (not a status WIFEXITED() accepts). */
static inline int t_in_child(int (*fn)(const char *), const char *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	int st;
	return pid < 0 || waitpid(pid, &st, 0) != pid ? -1 : st;
}

#endif

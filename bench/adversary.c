/*
 * adversary - write valid traces shaped to hurt their readers: the orders,
 * ids and sizes a hostile (or just unusual) writer may choose.  Every file
 * verifies; what it tests is whether a reader's time and memory follow its
 * size.  scripts/linear-check.sh times every command on each kind at n and
 * 4n; tests/memory_bound.sh runs them under a memory limit.
 *
 * usage: adversary KIND N OUT
 *
 * Kinds (N scales each):
 *   names-desc      N names in descending id order, an event for each
 *   threads-desc    N threads in descending id order: entry, one-event chunk, drop
 *   unmatched-ends  N/2 zone begins of one name, then N/2 ends of another
 *   huge-ids        N names and events with ids near 2^32, 64 threads likewise
 *   far-ids         N events over three names: 50,000,000, 0xFFFFFFC0 and
 *                   0xFFFFFFFF (ids once used as sizes and offsets)
 *   many-threads    N threads in ascending order, one event each
 *   large-messages  N/64 messages of 65535 bytes
 *   large-payloads  N/64 user records of 65535 bytes (printed as hex)
 *   deep-nesting    N/2 nested zones, then their N/2 ends
 *   wide-chunks     16 threads, each one chunk of min(N, 4194303) events,
 *                   interleaved in time (a merge holds every chunk decoded)
 *   escapes         N events over 4096 names of 1 KiB full of control
 *                   characters and invalid UTF-8, messages likewise
 *   zone-names      N zones over 1024 names (katra diff's cap), round robin:
 *                   at N = 2097152 each name has the 2048 zones a diff
 *                   sample keeps
 *   track-unmatched one track: 1024 zone begins of one name (a track's
 *                   most open), then N ends of another
 *   args-closed     one zone, N/2 zones inside it, min(N/2, 65536) arguments
 *                   on the innermost, then the outer end closing them all
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"

#define CHUNK_CAP (256u << 10) /* raw bytes per chunk before it is written */

struct gen {
	kt_writer *w;
	uint32_t tid;      /* the thread whose chunk is open */
	uint64_t ts;
	size_t len;
	uint8_t buf[CHUNK_CAP + 65536 + 64];
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "adversary: %s: %s\n", what, kt_strerror(rc));
	exit(1);
}

static void flush_chunk(struct gen *g)
{
	int rc;
	if (g->len && (rc = kt_writer_chunk(g->w, g->tid, KT_CODEC_LZ4_DELTA, 1, g->buf, g->len)))
		die("chunk", rc);
	g->len = 0;
}

/* One event on thread @tid; a chunk is written when the thread changes
 * or the chunk is full. */
static void emit(struct gen *g, uint32_t tid, uint8_t type, uint32_t name, const void *payload,
		 uint16_t len)
{
	if (tid != g->tid || g->len >= CHUNK_CAP)
		flush_chunk(g);
	g->tid = tid;
	kt_event ev = { .ts = g->ts += 10, .name_id = name, .type = type, .payload = payload,
			.payload_len = len };
	g->len += kt_event_encode(g->buf + g->len, sizeof(g->buf) - g->len, &ev);
}

static void name(struct gen *g, uint32_t id, const char *s, size_t len)
{
	int rc = kt_writer_name(g->w, id, s, len);
	if (rc)
		die("name", rc);
}

static void thread(struct gen *g, uint32_t id, const char *s)
{
	int rc = kt_writer_thread(g->w, id, id, s);
	if (rc)
		die("thread", rc);
}

static void gen_names(struct gen *g, uint32_t n)
{
	char s[32];
	thread(g, 1, "main");
	for (uint32_t id = 1; id <= n; id++)
		name(g, id, s, (size_t)snprintf(s, sizeof(s), "name-%u", id));
	for (uint32_t id = 1; id <= n; id++)
		emit(g, 1, KT_EV_INSTANT, id, NULL, 0);
}

static void gen_threads(struct gen *g, uint32_t n, int drops)
{
	char s[32];
	name(g, 1, "tick", 4);
	for (uint32_t id = 1; id <= n; id++) {
		snprintf(s, sizeof(s), "thread-%u", id);
		thread(g, id, s);
		emit(g, id, KT_EV_INSTANT, 1, NULL, 0);
		flush_chunk(g);
		if (drops && kt_writer_drop(g->w, id, 3, g->ts, g->ts + 5))
			die("drop", -EIO);
	}
}

static void gen_unmatched(struct gen *g, uint32_t n)
{
	name(g, 1, "opened", 6);
	name(g, 2, "closed", 6);
	thread(g, 1, "main");
	for (uint32_t i = 0; i < n / 2; i++)
		emit(g, 1, KT_EV_ZONE_BEGIN, 1, NULL, 0);
	for (uint32_t i = 0; i < n / 2; i++)
		emit(g, 1, KT_EV_ZONE_END, 2, NULL, 0);
}

static void gen_huge_ids(struct gen *g, uint32_t n)
{
	char s[32];
	/* Ascending, ending at the largest id: 0xFFFFFFFF - (n - 1 - i) * 7. */
	uint32_t base = UINT32_MAX - (n - 1) * 7u;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = base + i * 7u;
		name(g, id, s, (size_t)snprintf(s, sizeof(s), "huge-%u", id));
	}
	for (uint32_t t = 0; t < 64; t++)
		thread(g, UINT32_MAX - 63 + t, "far");
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = base + i * 7u;
		emit(g, UINT32_MAX - 63 + i % 64, i % 3 ? KT_EV_INSTANT : KT_EV_ZONE_BEGIN, id, NULL, 0);
		if (i % 3 == 0)
			emit(g, UINT32_MAX - 63 + i % 64, KT_EV_ZONE_END, id, NULL, 0);
	}
}

static void gen_far_ids(struct gen *g, uint32_t n)
{
	static const uint32_t ids[] = { 50000000u, 0xFFFFFFC0u, 0xFFFFFFFFu };
	for (int i = 0; i < 3; i++)
		name(g, ids[i], "far", 3);
	thread(g, 0xFFFFFFFFu, "top");
	for (uint32_t i = 0; i < n / 2; i++) {
		emit(g, 0xFFFFFFFFu, KT_EV_ZONE_BEGIN, ids[i % 3], NULL, 0);
		emit(g, 0xFFFFFFFFu, KT_EV_ZONE_END, ids[i % 3], NULL, 0);
	}
}

static void gen_payloads(struct gen *g, uint32_t n, uint8_t type)
{
	static char text[65535];
	memset(text, 'x', sizeof(text));
	for (size_t i = 0; i < sizeof(text); i += 4096)
		text[i] = '"';
	name(g, 1, "log", 3);
	thread(g, 1, "main");
	for (uint32_t i = 0; i < n / 64; i++)
		emit(g, 1, type, 1, text, sizeof(text));
}

static void gen_nesting(struct gen *g, uint32_t n)
{
	name(g, 1, "outer", 5);
	name(g, 2, "inner", 5);
	thread(g, 1, "main");
	for (uint32_t i = 0; i < n / 2; i++)
		emit(g, 1, KT_EV_ZONE_BEGIN, 1 + i % 2, NULL, 0);
	for (uint32_t i = n / 2; i-- > 0;)
		emit(g, 1, KT_EV_ZONE_END, 1 + i % 2, NULL, 0);
}

static void gen_zone_names(struct gen *g, uint32_t n)
{
	char s[32];
	for (uint32_t id = 1; id <= 1024; id++)
		name(g, id, s, (size_t)snprintf(s, sizeof(s), "zone-%u", id));
	thread(g, 1, "main");
	for (uint32_t i = 0; i < n; i++) {
		emit(g, 1, KT_EV_ZONE_BEGIN, 1 + i % 1024, NULL, 0);
		if (i % 3 == 0) /* durations of 10 and 20 ns, so no sample is constant */
			emit(g, 1, KT_EV_INSTANT, 1 + i % 1024, NULL, 0);
		emit(g, 1, KT_EV_ZONE_END, 1 + i % 1024, NULL, 0);
	}
}

static void gen_escapes(struct gen *g, uint32_t n)
{
	static char s[1024];
	for (size_t i = 0; i < sizeof(s); i++)
		s[i] = (char)(i % 3 == 0 ? 0x1b : i % 3 == 1 ? 0xff : 'a' + i % 26);
	for (uint32_t id = 1; id <= 4096; id++) {
		memcpy(s, &id, sizeof(id));
		s[0] |= 1; /* no zero byte */
		s[1] |= 1;
		s[2] |= 1;
		s[3] |= 1;
		name(g, id, s, sizeof(s));
	}
	thread(g, 1, "\x1b]0;title\x07");
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = 1 + (i * 2654435761u) % 4096;
		if (i % 16 == 0)
			emit(g, 1, KT_EV_MESSAGE, id, s, 256);
		else
			emit(g, 1, KT_EV_INSTANT, id, NULL, 0);
	}
}

static void gen_wide(struct gen *g, uint32_t n)
{
	uint32_t per = n < (KT_MAX_RAW / 16) - 1 ? n : (KT_MAX_RAW / 16) - 1;
	uint8_t *buf = malloc((size_t)per * 16);
	if (!buf)
		die("wide-chunks", -ENOMEM);
	name(g, 1, "tick", 4);
	for (uint32_t t = 1; t <= 16; t++) {
		size_t len = 0;
		for (uint32_t i = 0; i < per; i++) {
			kt_event ev = { .ts = (uint64_t)i * 16 + t, .name_id = 1, .type = KT_EV_INSTANT };
			len += kt_event_encode(buf + len, (size_t)per * 16 - len, &ev);
		}
		int rc = kt_writer_chunk(g->w, t, KT_CODEC_LZ4_DELTA, 1, buf, len);
		if (rc)
			die("chunk", rc);
	}
	free(buf);
}

/* A track record on thread 1: its track time is the event's. */
static void emit_track(struct gen *g, uint8_t type, uint32_t name)
{
	uint8_t p[8];
	kt__put64(p, g->ts + 10);
	if (1 != g->tid || g->len >= CHUNK_CAP)
		flush_chunk(g);
	g->tid = 1;
	kt_event ev = { .ts = g->ts += 10, .name_id = name, .type = type, .flags = 1,
			.payload = p, .payload_len = 8 };
	g->len += kt_event_encode(g->buf + g->len, sizeof(g->buf) - g->len, &ev);
}

static void gen_track_unmatched(struct gen *g, uint32_t n)
{
	static const kt_track_pair zero[] = { { 0, 0 } };
	kt_track_def t = { 1, 3, 1000000000u, 1, zero };
	name(g, 1, "opened", 6);
	name(g, 2, "closed", 6);
	name(g, 3, "gpu", 3);
	thread(g, 1, "main");
	if (kt_writer_track(g->w, &t))
		die("track", -EIO);
	for (uint32_t i = 0; i < 1024; i++)
		emit_track(g, KT_EV_TRACK_BEGIN, 1);
	for (uint32_t i = 0; i < n; i++)
		emit_track(g, KT_EV_TRACK_END, 2);
}

/* One outer zone, N/2 zones inside it, N/2 arguments (at most 65,536, the
 * exports' EXPORT_ARGS) on the innermost, then the outer zone's end, which closes
 * them all at once: each closed zone's arguments are looked up while every
 * argument kept inside it is still held. */
static void gen_args_closed(struct gen *g, uint32_t n)
{
	name(g, 1, "outer", 5);
	name(g, 2, "inner", 5);
	name(g, 3, "arg", 3);
	thread(g, 1, "main");
	emit(g, 1, KT_EV_ZONE_BEGIN, 1, NULL, 0);
	for (uint32_t i = 0; i < n / 2; i++)
		emit(g, 1, KT_EV_ZONE_BEGIN, 2, NULL, 0);
	for (uint64_t i = 0; i < n / 2 && i < 65536; i++)
		emit(g, 1, KT_EV_ARG_I64, 3, &i, 8);
	emit(g, 1, KT_EV_ZONE_END, 1, NULL, 0);
}

/*
 * Reverse, in place, the order of the frames of the kinds in @mask among
 * themselves: every other frame keeps its place.  A writer numbers a
 * thread's chunks in order, so this is for files with one chunk per thread.
 */
static void reverse_kinds(const char *path, unsigned mask)
{
	int fd = open(path, O_RDWR);
	off_t size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	uint8_t *p = size > 0 ? malloc((size_t)size) : NULL, *q = p ? malloc((size_t)size) : NULL;
	size_t *at = q ? malloc(((size_t)size / 16 + 1) * sizeof(*at)) : NULL, n = 0;
	if (!at || pread(fd, p, (size_t)size, 0) != size)
		die(path, -EIO);
	size_t off = KT__PREAMBLE_LEN + kt__align8(kt__get32(p + 12)) + 8;
	for (size_t o = off; o + 8 <= (size_t)size; o += kt__frame_size(kt__get32(p + o)))
		if (mask >> p[o + 4] & 1)
			at[n++] = o;
	memcpy(q, p, (size_t)size);
	size_t w = off;
	for (size_t o = off, k = n; o + 8 <= (size_t)size;) {
		size_t len = kt__frame_size(kt__get32(p + o));
		const uint8_t *src = mask >> p[o + 4] & 1 ? p + at[--k] : p + o;
		size_t slen = kt__frame_size(kt__get32(src));
		memcpy(q + w, src, slen);
		w += slen;
		o += len;
	}
	if (pwrite(fd, q, (size_t)size, 0) != size)
		die(path, -EIO);
	close(fd);
	free(p);
	free(q);
	free(at);
}

int main(int argc, char **argv)
{
	if (argc != 4 || atol(argv[2]) < 2 || atol(argv[2]) > 100000000) {
		fprintf(stderr, "usage: adversary KIND N OUT  (2 <= N <= 1e8; kinds in the source)\n");
		return 2;
	}
	const char *kind = argv[1], *out = argv[3];
	uint32_t n = (uint32_t)atol(argv[2]);
	static struct gen g;
	kt_header h;
	kt_header_init(&h);
	h.tool_version = "adversary";
	h.workload = kind;
	int rc = kt_writer_open(out, &h, &g.w);
	if (rc)
		die(out, rc);
	unsigned reverse = 0;
	if (!strcmp(kind, "names-desc")) {
		gen_names(&g, n);
		reverse = 1u << KT_FRAME_NAME;
	} else if (!strcmp(kind, "threads-desc")) {
		gen_threads(&g, n, 1);
		reverse = 1u << KT_FRAME_THREAD | 1u << KT_FRAME_CHUNK | 1u << KT_FRAME_DROP;
	} else if (!strcmp(kind, "many-threads")) {
		gen_threads(&g, n, 0);
	} else if (!strcmp(kind, "unmatched-ends")) {
		gen_unmatched(&g, n);
	} else if (!strcmp(kind, "huge-ids")) {
		gen_huge_ids(&g, n);
	} else if (!strcmp(kind, "far-ids")) {
		gen_far_ids(&g, n);
	} else if (!strcmp(kind, "large-messages")) {
		gen_payloads(&g, n, KT_EV_MESSAGE);
	} else if (!strcmp(kind, "large-payloads")) {
		gen_payloads(&g, n, KT_EV_USER);
	} else if (!strcmp(kind, "deep-nesting")) {
		gen_nesting(&g, n);
	} else if (!strcmp(kind, "wide-chunks")) {
		gen_wide(&g, n);
	} else if (!strcmp(kind, "escapes")) {
		gen_escapes(&g, n);
	} else if (!strcmp(kind, "zone-names")) {
		gen_zone_names(&g, n);
	} else if (!strcmp(kind, "track-unmatched")) {
		gen_track_unmatched(&g, n);
	} else if (!strcmp(kind, "args-closed")) {
		gen_args_closed(&g, n);
	} else {
		fprintf(stderr, "adversary: unknown kind '%s'\n", kind);
		return 2;
	}
	flush_chunk(&g);
	if ((rc = kt_writer_finish(g.w, NULL)) || (rc = kt_writer_close(g.w)))
		die(out, rc);
	if (reverse)
		reverse_kinds(out, reverse);
	return 0;
}

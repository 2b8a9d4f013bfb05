/*
 * libFuzzer target over a whole crash directory, read by the real recovery
 * path (recover_dir() of tools/cmd/cmd_recover.c, with small caps so each input
 * costs little).  The input is decoded into a directory in a private
 * temporary folder: well-formed templates (a version 2 control file with
 * up to four slots, ring files, a names log, a trace file its header
 * names) patched with the input's bytes, and files swapped for symbolic
 * links, FIFOs or hard links as its flags say.  Whatever recover makes of
 * it must not crash, block or leak, and an output it writes must read
 * back whole.
 *
 * With F_FLIGHT the directory is a flight session's, its rings lapped (the
 * window recovery has to find from the slots' flight state).  With
 * F_TABLES it has a sites log (a location for "seq"), a tracks file (two
 * tracks with pairs, the second's in buffer 1) and a categories file (one
 * category, "seq", on throughout), and its header says so; without, it is
 * a directory of a katra from before them.
 *
 * Input: byte 0: flags (F_* below); byte 1: slots (low 2 bits, plus 1),
 * the ring size (KT_RING_MIN << bits 2-3) and one twist (bits 4-7, T_*
 * below; most values are none, so most inputs reach the rings); then
 * patches, each u8 target, u8 index, u16 offset, u16 length (little-
 * endian) and the bytes, applied in order: target % 5 (% 8 with F_TABLES)
 * is the control header, a slot page, a ring (offset in units of 16
 * bytes), the names log, the trace file, the sites log, the tracks file or
 * the categories file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "recover/crash.h"
#include "tools/cmd/recover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	F_SEAL = 1,          /* checksum the header after the patches */
	F_TRACE = 2,         /* the header names the trace file */
	F_FLIGHT = 4,        /* a flight session's: rings lapped twice */
	F_TABLES = 8,        /* with sites and tracks files */
};

enum {                       /* one file swapped for something else */
	T_CTL_FIFO = 1,      /* control is a FIFO */
	T_OPEN_DIR,          /* the directory is writable by all */
	T_NAMES_LINK,        /* names is a symbolic link to the trace */
	T_RING_FIFO,         /* ring-0 is a FIFO */
	T_RING_HARDLINK,     /* the last ring is ring-0 again */
	T_TRACE_FIFO,        /* the trace is a FIFO */
	T_RING_LINK,         /* the last ring is a symbolic link to ring-0 */
	T_TRACKS_FIFO,       /* tracks is a FIFO */
};

#define SLOTS_MAX 4
#define PAGE 4096u
#define RECS 8               /* counter records in each ring template */

struct dir {
	char root[64], path[4200];
	uint8_t ctl[PAGE * (SLOTS_MAX + 1)];
	uint8_t *ring[SLOTS_MAX];
	uint8_t names[PAGE], trace[PAGE], sites[PAGE];
	uint8_t tracks[2 * KT__TRK_SLOT], cats[KT__CATS_SIZE];
	size_t ring_len[SLOTS_MAX];  /* bytes written; the rest is a hole */
	size_t names_len, trace_len, sites_len, tracks_len, cats_len, ring_size;
	int slots;
};

static const struct kt__recover_caps small = { .slots = 8, .ring_bytes = 4u << 20,
					   .names_bytes = 64u << 10 };

static void put_path(struct dir *d, const char *name)
{
	snprintf(d->path, sizeof(d->path), "%s/%s", d->root, name);
}

static void write_file(struct dir *d, const char *name, const void *p, size_t n, size_t len)
{
	put_path(d, name);
	int fd = open(d->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (write(fd, p, n) != (ssize_t)n || ftruncate(fd, (off_t)len))
		abort();
	close(fd);
}

static size_t counters(uint8_t *buf, int n, uint32_t thread)
{
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		int64_t v = i;
		kt_event ev = { .ts = 100 + (uint64_t)i, .thread_id = thread, .name_id = 1,
				.type = KT_EV_COUNTER_I64, .payload_len = 8,
				.payload = (const uint8_t *)&v };
		at += kt_event_encode(buf + at, 24, &ev);
	}
	return at;
}

/* Slot @s as a flight ring's that lapped twice: its records, at ring
 * offset 0, are the window past the bound's lap, as the mark and the
 * overwritten count (1000 events, stamped before them) say. */
static void flight_slot(struct dir *d, uint8_t *s)
{
	uint64_t lap2 = 2 * (uint64_t)d->ring_size;
	kt__put64(s + KT__SLOT_O_HEAD, lap2 + RECS * 24);
	kt__put64(s + KT__SLOT_O_FL_BOUND, lap2 + d->ring_size / 16);
	kt__put64(s + KT__SLOT_O_FL_MARK, lap2);
	static const uint64_t count[5] = { 0, 0, 1000, 1, 99 };
	for (int k = 0; k < 5; k++)
		kt__put64(s + KT__SLOT_O_FL_COUNT + 8 * k, k == 1 ? lap2 : count[k]);
}

/* The well-formed directory the patches start from. */
static void templates(struct dir *d, unsigned flags)
{
	uint8_t *h = d->ctl;
	memcpy(h, KT__CTL_MAGIC, 8);
	kt__put32(h + KT__CTL_O_VERSION, KT__CTL_VERSION);
	kt__put32(h + KT__CTL_O_SLOT_SIZE, PAGE);
	kt__put64(h + KT__CTL_O_PID, 2147480000u); /* no such process */
	kt__put64(h + KT__CTL_O_GEN, 1);
	h[KT__CTL_O_CLOCK_SRC] = KT_CLOCK_MONOTONIC;
	kt__put64(h + KT__CTL_O_TICK_HZ, 1000000000);
	kt__put64(h + KT__CTL_O_START, 1);
	for (int i = 0; i < d->slots; i++) {
		uint8_t *s = d->ctl + PAGE * (size_t)(i + 1);
		kt__put64(s + KT__SLOT_O_HEAD, RECS * 24);
		kt__put64(s + KT__SLOT_O_SIZE, d->ring_size);
		kt__put32(s + KT__SLOT_O_THREAD, (uint32_t)i + 1);
		kt__crash_stamp(s, (uint32_t)i);
		d->ring_len[i] = counters(d->ring[i], RECS, (uint32_t)i + 1);
		if (flags & F_FLIGHT)
			flight_slot(d, s);
	}
	kt__put32(h + KT__CTL_O_FLAGS, (flags & F_FLIGHT ? KT__CTL_F_FLIGHT : 0) |
					       (flags & F_TABLES ? KT__CTL_F_TABLES : 0));
	static const uint8_t names[] = { 1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 's', 'e', 'q',
					 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 't' };
	memcpy(d->names, names, sizeof(names));
	d->names_len = sizeof(names);
}

/* The sites log and tracks file of F_TABLES: a location for name 1, and
 * track 1 (three pairs, buffer 0) and track 2 (two, buffer 1), named 1. */
static void table_templates(struct dir *d)
{
	static const uint8_t site[] = { 1, 0, 0, 0, 1, 0, 0, 0, 19, 0, 0, 0, 7, 0, 0, 0,
					0, 0, 0, 0, 3, 0, 0, 0, 'f', '.', 'c', 'm', 'a',
					'i', 'n' };
	memset(d->sites, 0, sizeof(d->sites));
	memcpy(d->sites, site, sizeof(site));
	d->sites_len = sizeof(site);
	memset(d->tracks, 0, sizeof(d->tracks));
	for (uint32_t i = 0; i < 2; i++) {
		uint8_t *t = d->tracks + i * KT__TRK_SLOT;
		kt__put32(t + KT__TRK_O_ID, i + 1);
		kt__put32(t + KT__TRK_O_NAME, 1);
		kt__put64(t + KT__TRK_O_HZ, 1000000);
		kt__put64(t + KT__TRK_O_STATE, (uint64_t)i << 32 | (3 - i));
		for (uint32_t k = 0; k < 3 - i; k++) {
			uint8_t *q = t + KT__TRK_O_PAIRS + i * KT__TRK_BUF + 16 * k;
			kt__put64(q, 1000 * (k + 1));
			kt__put64(q + 8, 100 + 50 * k);
		}
	}
	d->tracks_len = sizeof(d->tracks);
	memset(d->cats, 0, sizeof(d->cats));
	kt__put32(d->cats, 1);
	kt__put32(d->cats + 4, KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP);
	d->cats_len = sizeof(d->cats);
}

/* A valid trace of thread 1's first four records, in d->trace. */
static void trace_template(struct dir *d)
{
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	kt_header h;
	kt_writer *w;
	uint8_t ev[4 * 24];
	kt_header_init(&h);
	if (fd < 0 || kt_writer_open_fd(fd, &h, &w))
		abort();
	kt_writer_name(w, 1, "seq", 3);
	kt_srcloc loc = { .id = 1, .line = 3, .file_len = 1, .file = "t", .function = "" };
	kt_writer_srcloc(w, &loc);
	kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, counters(ev, 4, 1));
	kt_writer_close(w);
	ssize_t n = pread(fd, d->trace, sizeof(d->trace), 0);
	close(fd);
	d->trace_len = n > 0 ? (size_t)n : 0;
}

/* Apply one patch; returns the bytes of input it took, 0 at the end. */
static size_t patch(struct dir *d, unsigned flags, const uint8_t *p, size_t n)
{
	if (n < 6)
		return 0;
	unsigned target = p[0] % (flags & F_TABLES ? 8 : 5), index = p[1];
	size_t off = kt__get16(p + 2), len = kt__get16(p + 4);
	if (len > n - 6)
		len = n - 6;
	uint8_t *to;
	size_t cap, *grow = NULL;
	switch (target) {
	case 0: to = d->ctl + 8, cap = KT__CTL_HEADER - 8; break;
	case 1: to = d->ctl + PAGE * (1 + index % SLOTS_MAX), cap = PAGE; break;
	case 2:
		to = d->ring[index % SLOTS_MAX], cap = d->ring_size, off *= 16;
		grow = &d->ring_len[index % SLOTS_MAX];
		break;
	case 3: to = d->names, cap = sizeof(d->names), grow = &d->names_len; break;
	case 5: to = d->sites, cap = sizeof(d->sites), grow = &d->sites_len; break;
	case 6: to = d->tracks, cap = sizeof(d->tracks), grow = &d->tracks_len; break;
	case 7: to = d->cats, cap = sizeof(d->cats), grow = &d->cats_len; break;
	default: to = d->trace, cap = sizeof(d->trace), grow = &d->trace_len; break;
	}
	if (off < cap) {
		size_t k = len < cap - off ? len : cap - off;
		memcpy(to + off, p + 6, k);
		if (grow && off + k > *grow)
			*grow = off + k;
	}
	return 6 + len;
}

static void make_node(struct dir *d, const char *name, int fifo, const void *p, size_t n,
		      size_t len)
{
	put_path(d, name);
	if (fifo ? mkfifo(d->path, 0600) : (write_file(d, name, p, n, len), 0))
		abort();
}

static void make_ring(struct dir *d, int i, unsigned twist, const char *ring0)
{
	char name[32];
	snprintf(name, sizeof(name), "katra-1/ring-%d", i);
	put_path(d, name);
	int last = i > 0 && i == d->slots - 1;
	if (last && twist == T_RING_HARDLINK) {
		if (link(ring0, d->path))
			abort();
	} else if (last && twist == T_RING_LINK) {
		if (symlink(ring0, d->path))
			abort();
	} else {
		make_node(d, name, i == 0 && twist == T_RING_FIFO, d->ring[i], d->ring_len[i],
			  d->ring_size);
	}
}

static void materialize(struct dir *d, unsigned flags, unsigned twist)
{
	char trace[4200], ring0[4200];
	snprintf(trace, sizeof(trace), "%s/trace", d->root);
	snprintf(ring0, sizeof(ring0), "%s/katra-1/ring-0", d->root);
	if (flags & F_TRACE) {
		kt__put32(d->ctl + KT__CTL_O_PATH_LEN, (uint32_t)strlen(trace));
		memcpy(d->ctl + KT__CTL_O_PATH, trace, strlen(trace));
	}
	if (flags & F_SEAL) {
		memset(d->ctl + KT__CTL_O_CHECKSUM, 0, 8);
		kt__put64(d->ctl + KT__CTL_O_CHECKSUM, kt__xxh3(d->ctl, KT__CTL_HEADER));
	}
	make_node(d, "trace", twist == T_TRACE_FIFO, d->trace, d->trace_len, d->trace_len);
	put_path(d, "katra-1");
	if (mkdir(d->path, 0700) || (twist == T_OPEN_DIR && chmod(d->path, 0777)))
		abort();
	make_node(d, "katra-1/control", twist == T_CTL_FIFO, d->ctl,
		  PAGE * (size_t)(d->slots + 1), PAGE * (size_t)(d->slots + 1));
	put_path(d, "katra-1/names");
	if (twist == T_NAMES_LINK ? symlink(trace, d->path)
				  : (make_node(d, "katra-1/names", 0, d->names, d->names_len,
					       d->names_len), 0))
		abort();
	for (int i = 0; i < d->slots; i++)
		make_ring(d, i, twist, ring0);
	if (flags & F_TABLES) {
		make_node(d, "katra-1/sites", 0, d->sites, d->sites_len, d->sites_len);
		make_node(d, "katra-1/tracks", twist == T_TRACKS_FIFO, d->tracks, d->tracks_len,
			  d->tracks_len);
		make_node(d, "katra-1/categories", 0, d->cats, d->cats_len, d->cats_len);
	}
}

/* An output recover wrote must read back whole, summary included. */
static void check_out(struct dir *d)
{
	kt_reader *r;
	put_path(d, "out.katra");
	kt_reader_error err;
	if (kt_reader_open(d->path, &err, &r)) {
		fprintf(stderr, "fuzz_crashdir: the output does not open: %s\n", err.message);
		abort();
	}
	kt_trace_frame f;
	int rc, summary = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		summary |= f.kind == KT_FRAME_SUMMARY;
	if (rc != 0 || !summary) {
		fprintf(stderr, "fuzz_crashdir: the output does not read back: %s\n",
			rc ? kt_reader_get_last_error(r)->message : "no summary");
		abort();
	}
	kt_reader_close(r);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/* recover_dir() with its messages sent nowhere (unless
 * FUZZ_CRASHDIR_VERBOSE is set, to see what an input does). */
static int quiet_recover(struct dir *d)
{
	static FILE *null;
	if (!null && !(null = fopen(getenv("FUZZ_CRASHDIR_VERBOSE") ? "/dev/stderr" : "/dev/null",
				    "w")))
		abort();
	setvbuf(null, NULL, _IONBF, 0);
	char dir[4200], out[4200];
	snprintf(dir, sizeof(dir), "%s/katra-1", d->root);
	snprintf(out, sizeof(out), "%s/out.katra", d->root);
	FILE *err = stderr, *std = stdout;
	stderr = stdout = null;
	int rc = recover_dir(dir, out, NULL, &small);
	stderr = err;
	stdout = std;
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	static struct dir d;
	memset(d.ctl, 0, sizeof(d.ctl));
	d.slots = 1 + (data[1] & 3);
	d.ring_size = (size_t)KT_RING_MIN << ((data[1] >> 2) & 3);
	for (int i = 0; i < SLOTS_MAX; i++)
		if (!(d.ring[i] = realloc(d.ring[i], d.ring_size)) ||
		    !memset(d.ring[i], 0, d.ring_size))
			abort();
	memset(d.names, 0, sizeof(d.names));
	templates(&d, data[0]);
	table_templates(&d);
	trace_template(&d);
	for (size_t at = 2, n; (n = patch(&d, data[0], data + at, size - at)); at += n)
		;
	snprintf(d.root, sizeof(d.root), "/dev/shm/fuzz-crashdir-XXXXXX");
	if (!mkdtemp(d.root)) {
		snprintf(d.root, sizeof(d.root), "/tmp/fuzz-crashdir-XXXXXX");
		if (!mkdtemp(d.root))
			abort();
	}
	materialize(&d, data[0], data[1] >> 4);
	int rc = quiet_recover(&d);
	if (rc != 0 && rc != 1 && rc != 3)
		abort();
	if (rc != 1)
		check_out(&d);
	nftw(d.root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return 0;
}

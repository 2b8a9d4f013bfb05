/*
 * Crash files, the live side: the directory, the control file's header,
 * and the backing (ring/backing.h) that puts each ring's page in a slot of
 * the control file and its bytes in a ring file, logs names and call
 * sites, and keeps tracks and categories' states.  Layout and the
 * reasoning are in recover/crash.h.  Everything here runs at session
 * start and stop or under the registry, names, track table's or
 * categories' lock; nothing runs on the emit path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "format/format.h"
#include "recover/crash.h"
#include "ring/ring.h"

/* A slot is a ring's page: the stamp goes after the struct. */
_Static_assert(KT__SLOT_O_MAGIC >= KT__PAGE_END, "the slot stamp follows the struct");

/* What the tracks file holds of a track. */
struct ctrack {
	uint8_t placed;        /* its slot is reserved and its entry written */
	uint8_t buf;           /* the buffer its state word names */
	uint32_t logged;       /* the pairs that buffer holds */
};

/* The files beside the control file and the rings, one table for making,
 * removing and closing them: the logs are appended to, the tracks' and
 * categories' files written in place. */
enum { F_NAMES, F_SITES, F_TRACKS, F_CATS, F_TABLES };
static const struct {
	const char *name;
	int flags;
} tables[F_TABLES] = {
	[F_NAMES] = { "names", O_APPEND },
	[F_SITES] = { "sites", O_APPEND },
	[F_TRACKS] = { "tracks", 0 },
	[F_CATS] = { "categories", 0 },
};

struct kt__crash {
	kt__backing backing;   /* first: the callbacks get it as the crash */
	char *dir;
	int ctl_fd;
	int fd[F_TABLES];      /* tables[]' files */
	int trace_fd;
	uint64_t trace_off;
	uint32_t slots;        /* ring-0 .. ring-(slots-1) were made */
	uint32_t *free_slots;  /* of those, retired ones, to reuse */
	uint32_t nfree, free_cap;
	uint64_t thread_names;  /* bytes of thread-name entries logged */
	struct ctrack trk[KT_MAX_TRACKS]; /* under the track table's lock */
	uint8_t pairs[KT__TRK_BUF]; /* a track's pairs, encoded */
	size_t page;
};

const char *kt__crash_dir(const struct kt__crash *c)
{
	return c->dir;
}

static int make_dir(const char *parent, char **out)
{
	for (int n = 0; n < 100; n++) {
		char *dir;
		int len = n ? asprintf(&dir, "%s/katra-%ld.%d", parent, (long)getpid(), n)
			    : asprintf(&dir, "%s/katra-%ld", parent, (long)getpid());
		if (len < 0)
			return -ENOMEM;
		if (mkdir(dir, 0700) == 0) {
			*out = dir;
			return 0;
		}
		int rc = -errno;
		free(dir);
		/* A leftover of a dead process with our pid: keep it for
		 * `katra recover` and take the next name. */
		if (rc != -EEXIST)
			return rc;
	}
	return -EEXIST;
}

static int open_in(const struct kt__crash *c, const char *name, int flags)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", c->dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return kt__fd_high(open(path, flags | O_CLOEXEC, 0600));
}

static void unlink_in(const struct kt__crash *c, const char *name)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", c->dir, name) < (int)sizeof(path))
		unlink(path);
}

/* An entry of a log: its head, then the @n pieces of its body, at v[1..n]
 * (v[0] is the head's). */
static void log_entry(int fd, uint32_t kind, uint32_t id, struct iovec *v, int n)
{
	uint8_t head[12];
	size_t len = 0;
	for (int i = 1; i <= n; i++)
		len += v[i].iov_len;
	kt__put32(head, kind);
	kt__put32(head + 4, id);
	kt__put32(head + 8, (uint32_t)len);
	v[0] = (struct iovec){ head, sizeof(head) };
	/* One append per entry: a process killed inside it leaves a torn last
	 * entry, which the reader stops at.  A failed log write loses a name,
	 * never an event, so it is not an error.  The host's thread writes
	 * it: past RLIMIT_FSIZE that must not end the host. */
	kt__xfsz x;
	kt__xfsz_hold(&x);
	int efbig = writev(fd, v, n + 1) < 0 && errno == EFBIG;
	kt__xfsz_release(&x, efbig);
}

/* A call site's location, into the sites log after its name. */
static void log_site(int fd, const kt_srcloc *loc)
{
	uint8_t fixed[KT__SITE_FIXED];
	kt__put32(fixed, loc->line);
	kt__put32(fixed + 4, loc->category);
	kt__put32(fixed + 8, loc->file_len);
	struct iovec v[4] = { { 0 }, { fixed, sizeof(fixed) },
			      { (void *)loc->file, loc->file_len },
			      { (void *)loc->function, loc->function_len } };
	log_entry(fd, KT__SITES_SITE, loc->id, v, 3);
}

static void crash_name(const kt__backing *b, uint32_t kind, uint32_t id, const char *s,
		       size_t len, const kt_srcloc *loc)
{
	struct kt__crash *c = (struct kt__crash *)(uintptr_t)b;
	if (kind == KT__NAME_THREAD) {
		if (c->thread_names + 12 + len > KT__NAMES_THREAD_CAP)
			return;
		c->thread_names += 12 + len;
	}
	struct iovec v[2] = { { 0 }, { (void *)s, len } };
	log_entry(c->fd[F_NAMES], kind == KT__NAME_THREAD ? KT__NAMES_THREAD : KT__NAMES_NAME, id, v,
		  1);
	if (loc)
		log_site(c->fd[F_SITES], loc);
}

/* Track @i's slot: its blocks reserved, so later writes to it neither fail
 * for space nor raise SIGXFSZ, and its entry with no pair.  Return: 0. */
static int track_place(struct kt__crash *c, const kt_track_def *t, off_t at)
{
	uint8_t head[KT__TRK_O_PAIRS] = { 0 };
	kt__put32(head + KT__TRK_O_ID, t->id);
	kt__put32(head + KT__TRK_O_NAME, t->name_id);
	kt__put64(head + KT__TRK_O_HZ, t->clock_hz);
	if (kt__file_reserve(c->fd[F_TRACKS], at, KT__TRK_SLOT) ||
	    pwrite(c->fd[F_TRACKS], head, sizeof(head), at) != (ssize_t)sizeof(head))
		return -1;
	c->trk[t->id - 1].placed = 1;
	return 0;
}

/*
 * A track created or calibrated: a new last pair goes into the buffer in
 * use, past the pairs its state word counts (the table's others are those
 * already there: it only halves when full, and then its count drops);
 * anything else (the table halved, a write that failed) rewrites them all
 * into the other buffer.
 * The state word, one aligned 8-byte write, comes last: a kill before it
 * leaves the pairs it named whole.
 */
static void crash_track(const kt__backing *b, const kt_track_def *t)
{
	struct kt__crash *c = (struct kt__crash *)(uintptr_t)b;
	if (!t->id || t->id > KT_MAX_TRACKS || t->pair_count > KT_MAX_TRACK_PAIRS)
		return;
	off_t at = (off_t)(t->id - 1) * KT__TRK_SLOT;
	struct ctrack *k = &c->trk[t->id - 1];
	if ((!k->placed && track_place(c, t, at)) || t->pair_count == k->logged)
		return;
	uint32_t n = t->pair_count, first = n == k->logged + 1 ? n - 1 : 0;
	unsigned buf = first ? k->buf : !k->buf;
	for (uint32_t i = first; i < n; i++) {
		kt__put64(c->pairs + 16 * (i - first), t->pairs[i].track_ts);
		kt__put64(c->pairs + 16 * (i - first) + 8, t->pairs[i].ticks);
	}
	size_t bytes = 16 * (size_t)(n - first);
	off_t to = at + KT__TRK_O_PAIRS + (off_t)buf * KT__TRK_BUF + 16 * (off_t)first;
	uint8_t state[8];
	kt__put64(state, (uint64_t)buf << 32 | n);
	if (pwrite(c->fd[F_TRACKS], c->pairs, bytes, to) != (ssize_t)bytes ||
	    pwrite(c->fd[F_TRACKS], state, 8, at + KT__TRK_O_STATE) != 8) {
		/* No count matches it: the next call rewrites them all, never
		 * appending to a buffer that may lag the table. */
		k->logged = UINT32_MAX;
		return;
	}
	k->buf = (uint8_t)buf;
	k->logged = n;
}

/* A category's state, in its fixed entry: one aligned 8-byte write, so a
 * kill leaves the old state or the new one. */
static void crash_category(const kt__backing *b, uint32_t index, uint32_t id, uint32_t flags)
{
	struct kt__crash *c = (struct kt__crash *)(uintptr_t)b;
	uint8_t e[KT__CAT_ENTRY];
	kt__put32(e, id);
	kt__put32(e + 4, flags);
	if (index < KT_MAX_CATEGORIES &&
	    pwrite(c->fd[F_CATS], e, sizeof(e), (off_t)index * KT__CAT_ENTRY) != (ssize_t)sizeof(e))
		return; /* a state lost, never an event */
}

static int crash_place(const kt__backing *b, uint64_t size, kt__ring_place *out);
static void crash_stamp(const kt__backing *b, void *page, const kt__ring_place *p);
static void crash_retire(const kt__backing *b, void *page);

int kt__crash_start(struct kt__crash **out, const char *parent, int trace_fd,
		    uint64_t trace_off)
{
	*out = NULL;
	struct kt__crash *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->backing = (kt__backing){ crash_place, crash_stamp, crash_name, crash_retire,
				    crash_track, crash_category };
	c->ctl_fd = -1;
	for (int i = 0; i < F_TABLES; i++)
		c->fd[i] = -1;
	c->trace_fd = trace_fd;
	c->trace_off = trace_off;
	c->page = kt__ring_page();
	/* Absolute once and for all: rings are made (and the directory
	 * removed) by path, and the host may chdir() meanwhile. */
	char *abs = realpath(parent && *parent ? parent : "/dev/shm", NULL);
	int rc = abs ? make_dir(abs, &c->dir) : -errno;
	free(abs);
	if (rc) {
		free(c);
		return rc;
	}
	if ((rc = c->ctl_fd = open_in(c, "control", O_RDWR | O_CREAT | O_EXCL)) < 0)
		goto err;
	for (int i = 0; i < F_TABLES; i++)
		if ((rc = c->fd[i] = open_in(c, tables[i].name,
					     O_WRONLY | O_CREAT | O_EXCL | tables[i].flags)) < 0)
			goto err;
	/* The categories' whole file at once: its writes then never fail
	 * for space nor raise SIGXFSZ. */
	if ((rc = kt__file_reserve(c->ctl_fd, 0, (off_t)c->page)) ||
	    (rc = kt__file_reserve(c->fd[F_CATS], 0, KT__CATS_SIZE)))
		goto err;
	/* Held until the process ends: `katra recover` refuses a directory
	 * whose lock is still held.  Not inherited by fork(), so a child that
	 * outlives us does not keep it. */
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	if (fcntl(c->ctl_fd, F_SETLK, &lk) < 0) {
		rc = -errno;
		goto err;
	}
	*out = c;
	return 0;
err:
	kt__crash_finish(c);
	return rc;
}

/* Read at most @cap - 1 bytes of a small /proc file, NUL-terminated. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = 0;
	return n;
}

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": 32 hex digits and dashes. */
static int parse_boot_id(const char *s, uint8_t id[16])
{
	int nib = 0;
	for (; *s && *s != '\n' && nib < 32; s++) {
		int v = *s >= '0' && *s <= '9' ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (v < 0 && *s != '-')
			return -EPROTO;
		if (v < 0)
			continue;
		id[nib / 2] = (uint8_t)(nib % 2 ? id[nib / 2] | v : v << 4);
		nib++;
	}
	return nib == 32 ? 0 : -EPROTO;
}

int kt__proc_identity(long pid, uint64_t *start, uint8_t boot_id[16])
{
	char path[64], buf[1024];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	ssize_t n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	if (kt__stat_start_time(buf, (size_t)n, start))
		return -EPROTO;
	n = read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	return n < 0 ? (int)n : parse_boot_id(buf, boot_id);
}

/* Who wrote the header: see crash.h.  Left zero (unknown) when /proc is not
 * there; `katra recover` then goes by the lock alone, as for version 1. */
static void put_identity(uint8_t *p)
{
	uint64_t start = 0;
	uint8_t id[16];
	if (kt__proc_identity(0, &start, id) == 0) {
		kt__put64(p + KT__CTL_O_START, start);
		memcpy(p + KT__CTL_O_BOOT_ID, id, sizeof(id));
	}
}

/* Where the control header keeps what a trace's header starts with. */
static const kt__start_at ctl_start_at = {
	.wall = KT__CTL_O_WALL, .mono = KT__CTL_O_MONO, .clock = KT__CTL_O_CLOCK_SRC,
	.tick_hz = KT__CTL_O_TICK_HZ, .ticks0 = KT__CTL_O_TICKS0, .ns0 = KT__CTL_O_NS0,
	.ring = KT__CTL_O_RING_SIZE, .overflow = KT__CTL_O_OVERFLOW, .codec = KT__CTL_O_CODEC,
	.io = KT__CTL_O_IO, .level = KT__CTL_O_LEVEL,
};

int kt__crash_publish(struct kt__crash *c, const kt_header *h, uint64_t gen, uint32_t flags)
{
	uint8_t p[KT__CTL_HEADER];
	char link[64], path[KT__CTL_PATH_MAX];
	memset(p, 0, sizeof(p));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", c->trace_fd);
	ssize_t n = readlink(link, path, sizeof(path));
	/* A pipe or a socket has no path to recover from, nor a flight
	 * session (no file, @trace_fd -1): the rings alone. */
	if (n < 0 || n >= (ssize_t)sizeof(path) || path[0] != '/' || memchr(path, 0, (size_t)n))
		n = 0;
	memcpy(p, KT__CTL_MAGIC, 8);
	kt__put32(p + KT__CTL_O_VERSION, KT__CTL_VERSION);
	kt__put32(p + KT__CTL_O_SLOT_SIZE, (uint32_t)c->page);
	kt__put64(p + KT__CTL_O_PID, h->process_id);
	kt__put64(p + KT__CTL_O_GEN, gen);
	kt__enc_start_fields(p, h, &ctl_start_at);
	kt__put64(p + KT__CTL_O_TRACE_OFF, c->trace_off);
	kt__put32(p + KT__CTL_O_FLAGS, flags | KT__CTL_F_TABLES);
	put_identity(p);
	kt__put32(p + KT__CTL_O_PATH_LEN, (uint32_t)n);
	memcpy(p + KT__CTL_O_PATH, path, (size_t)n);
	kt__put64(p + KT__CTL_O_CHECKSUM, kt__xxh3(p, sizeof(p)));
	ssize_t w = pwrite(c->ctl_fd, p, sizeof(p), 0);
	return w == (ssize_t)sizeof(p) ? 0 : w < 0 ? -errno : -EIO;
}

/* A reused slot's page holds its last ring: zero it, as place promises.
 * No allocation: a signal handler's first emit may land here. */
static int zero_page(const struct kt__crash *c, off_t off)
{
	static const uint8_t zero[4096];
	for (size_t done = 0; done < c->page; done += sizeof(zero))
		if (pwrite(c->ctl_fd, zero, sizeof(zero), off + (off_t)done) != sizeof(zero))
			return -EIO;
	return 0;
}

/* A ring slot: page 1 + i of the control file, and the file ring-<i>. */
static int crash_place(const kt__backing *b, uint64_t size, kt__ring_place *out)
{
	struct kt__crash *c = (struct kt__crash *)(uintptr_t)b;
	int reuse = c->nfree > 0;
	uint32_t slot = reuse ? c->free_slots[c->nfree - 1] : c->slots;
	char name[32];
	snprintf(name, sizeof(name), "ring-%u", slot);
	int fd = open_in(c, name, O_RDWR | O_CREAT | O_EXCL);
	if (fd < 0)
		return fd;
	off_t off = (off_t)(slot + 1) * (off_t)c->page;
	int rc = kt__file_reserve(fd, 0, (off_t)size);
	if (!rc)
		rc = reuse ? zero_page(c, off) : kt__file_reserve(c->ctl_fd, off, (off_t)c->page);
	if (rc) {
		close(fd);
		unlink_in(c, name);
		return rc;
	}
	if (reuse)
		c->nfree--;
	else
		c->slots++;
	*out = (kt__ring_place){ .fd = fd, .page_fd = c->ctl_fd, .page_off = off, .shared = 1,
				 .slot = slot };
	return 0;
}

/*
 * A ring gone for good (its bytes all in the trace file): its file goes,
 * so thread churn does not fill /dev/shm, and its slot is reused, so the
 * control file does not grow either.  The slot mark goes first: a
 * recovery never pairs the slot with a missing or newer file.
 */
static void crash_retire(const kt__backing *b, void *page)
{
	struct kt__crash *c = (struct kt__crash *)(uintptr_t)b;
	uint8_t *p = page;
	uint32_t slot = kt__get32(p + KT__SLOT_O_INDEX);
	if (slot >= c->slots)
		return;
	if (c->nfree == c->free_cap) {
		uint32_t cap = c->free_cap ? c->free_cap * 2 : 64;
		uint32_t *n = realloc(c->free_slots, cap * sizeof(*n));
		if (!n)
			return; /* the file stays until the session ends */
		c->free_slots = n;
		c->free_cap = cap;
	}
	memset(p + KT__SLOT_O_MAGIC, 0, 8);
	char name[32];
	snprintf(name, sizeof(name), "ring-%u", slot);
	unlink_in(c, name);
	c->free_slots[c->nfree++] = slot;
}

void kt__crash_stamp(void *page, uint32_t index)
{
	uint8_t *p = page;
	kt__put32(p + KT__SLOT_O_INDEX, index);
	memcpy(p + KT__SLOT_O_MAGIC, KT__SLOT_MAGIC, 8);
}

static void crash_stamp(const kt__backing *b, void *page, const kt__ring_place *p)
{
	(void)b;
	kt__crash_stamp(page, p->slot);
}

const kt__backing *kt__crash_backing(struct kt__crash *c)
{
	return &c->backing;
}

void kt__crash_finish(struct kt__crash *c)
{
	if (!c)
		return;
	/* Rings keep their mappings of the unlinked files: memory like any
	 * other until they are unmapped. */
	for (uint32_t i = 0; i < c->slots; i++) {
		char name[32];
		snprintf(name, sizeof(name), "ring-%u", i);
		unlink_in(c, name);
	}
	for (int i = 0; i < F_TABLES; i++)
		unlink_in(c, tables[i].name);
	unlink_in(c, "control");
	rmdir(c->dir);
	for (int i = 0; i < F_TABLES; i++)
		if (c->fd[i] >= 0)
			close(c->fd[i]);
	/* Closing drops the lock, after the files are gone. */
	if (c->ctl_fd >= 0)
		close(c->ctl_fd);
	free(c->free_slots);
	free(c->dir);
	free(c);
}

/*
 * `katra recover` against crash directories an attacker wrote: each test
 * forges a directory by hand in a private scratch folder (symbolic links,
 * FIFOs, sparse files, files that shrink while read, files of another
 * user), runs recover on it, and checks what was refused, that nothing
 * blocked or died, and that nothing outside the chosen output changed: a
 * victim file keeps its bytes and mtime, the working folder holds only
 * the output.
 */
#include "crash_helpers.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "recover/crash.h"
#include "ring/ring.h"
#include "tools/cmd/recover.h"

#define NOBODY 65534             /* the attacker's uid in root-only tests */
#define NO_PID 2147480000u       /* above any pid_max: a dead process */
#define EVENTS 10                /* counter events per forged ring */
#define REC 24                   /* bytes of one counter record */
#define VICTIM_BYTES "the victim's own bytes\n"

struct forge {
	char *root;                  /* private: everything below is in it */
	char *dir;                   /* root/crash/katra-1, the crash directory */
	char *parent;                /* root/crash */
	char *work;                  /* root/work: katra's cwd and outputs */
	char *victim;                /* root/victim.recovered.katra */
	struct stat victim_sb;
	char msg[32768];
};

/* ---- forging --------------------------------------------------------- */

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void seal(uint8_t *head)
{
	memset(head + KT__CTL_O_CHECKSUM, 0, 8);
	kt__put64(head + KT__CTL_O_CHECKSUM, kt__xxh3(head, KT__CTL_HEADER));
}

/* A version 2 header naming process NO_PID and @trace (may be ""). */
static void forge_header(uint8_t *p, const char *trace, uint64_t trace_off)
{
	memset(p, 0, KT__CTL_HEADER);
	memcpy(p, KT__CTL_MAGIC, 8);
	kt__put32(p + KT__CTL_O_VERSION, KT__CTL_VERSION);
	kt__put32(p + KT__CTL_O_SLOT_SIZE, (uint32_t)kt__ring_page());
	kt__put64(p + KT__CTL_O_PID, NO_PID);
	kt__put64(p + KT__CTL_O_GEN, 1);
	p[KT__CTL_O_CLOCK_SRC] = KT_CLOCK_MONOTONIC;
	kt__put64(p + KT__CTL_O_TICK_HZ, 1000000000);
	kt__put64(p + KT__CTL_O_RING_SIZE, KT_RING_MIN);
	kt__put64(p + KT__CTL_O_TRACE_OFF, trace_off);
	kt__put64(p + KT__CTL_O_START, 12345);
	kt__put32(p + KT__CTL_O_PATH_LEN, (uint32_t)strlen(trace));
	memcpy(p + KT__CTL_O_PATH, trace, strlen(trace));
	seal(p);
}

/* Slot @i: thread i + 1, a ring of @size bytes, @head bytes published and
 * none given back. */
static void forge_slot(uint8_t *page, uint32_t i, uint64_t size, uint64_t head)
{
	memset(page, 0, kt__ring_page());
	kt__put64(page + KT__SLOT_O_HEAD, head);
	kt__put64(page + KT__SLOT_O_SIZE, size);
	kt__put32(page + KT__SLOT_O_THREAD, i + 1);
	kt__put32(page + KT__SLOT_O_OS_TID, 5000 + i);
	kt__crash_stamp(page, i);
}

/* @n counter records (values @v0...) into @buf; returns the bytes. */
static size_t records(uint8_t *buf, uint64_t n, int64_t v0)
{
	size_t at = 0;
	for (uint64_t k = 0; k < n; k++) {
		int64_t v = v0 + (int64_t)k;
		kt_event ev = { .ts = 1000 + (uint64_t)v, .name_id = 1, .type = KT_EV_COUNTER_I64,
				.payload_len = 8, .payload = (const uint8_t *)&v };
		at += kt_event_encode(buf + at, REC, &ev);
	}
	return at;
}

/* Ring file @path: @size bytes (a sparse file), @n records at 0. */
static void forge_ring(const char *path, uint64_t size, uint64_t n)
{
	uint8_t *buf = malloc(n * REC + 1);
	cr_assert_not_null(buf);
	write_file(path, buf, records(buf, n, 0));
	cr_assert_eq(truncate(path, (off_t)size), 0);
	free(buf);
}

static void names_entry(int fd, uint32_t kind, uint32_t id, const char *s)
{
	uint8_t head[12];
	kt__put32(head, kind);
	kt__put32(head + 4, id);
	kt__put32(head + 8, (uint32_t)strlen(s));
	cr_assert_eq(write(fd, head, 12), 12);
	cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void forge_names(const char *path, int rings)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	names_entry(fd, KT__NAMES_NAME, 1, "seq");
	for (int i = 0; i < rings; i++) {
		char name[32];
		snprintf(name, sizeof(name), "seq-%d", i);
		names_entry(fd, KT__NAMES_THREAD, (uint32_t)i + 1, name);
	}
	close(fd);
}

/* The control file of @rings slots of @size-byte rings, @head published. */
static void forge_control(struct forge *f, int rings, uint64_t size, uint64_t head,
			  const char *trace)
{
	size_t page = kt__ring_page();
	uint8_t *ctl = calloc((size_t)rings + 1, page);
	cr_assert_not_null(ctl);
	forge_header(ctl, trace ? trace : "", 0);
	for (int i = 0; i < rings; i++)
		forge_slot(ctl + (size_t)(i + 1) * page, (uint32_t)i, size, head);
	char *p = path_in(f->dir, "control");
	write_file(p, ctl, ((size_t)rings + 1) * page);
	free(p);
	free(ctl);
}

/* A victim file beside everything, with an mtime of its own. */
static void make_victim(struct forge *f)
{
	write_file(f->victim, VICTIM_BYTES, strlen(VICTIM_BYTES));
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	cr_assert_eq(utimensat(AT_FDCWD, f->victim, old, AT_SYMLINK_NOFOLLOW), 0);
	cr_assert_eq(lstat(f->victim, &f->victim_sb), 0);
}

/* A crash directory of @rings rings of EVENTS events each; @trace is the
 * path its control file names (NULL: none). */
static void forge(struct forge *f, int rings, const char *trace)
{
	memset(f, 0, sizeof(*f));
	f->root = scratch();
	f->parent = path_in(f->root, "crash");
	f->dir = path_in(f->parent, "katra-1");
	f->work = path_in(f->root, "work");
	f->victim = path_in(f->root, "victim.recovered.katra");
	cr_assert_eq(mkdir(f->parent, 0700), 0);
	cr_assert_eq(mkdir(f->dir, 0700), 0);
	cr_assert_eq(mkdir(f->work, 0700), 0);
	make_victim(f);
	forge_control(f, rings, KT_RING_MIN, EVENTS * REC, trace);
	for (int i = 0; i < rings; i++) {
		char *ring = path_in(f->dir, "ring-%d", i);
		forge_ring(ring, KT_RING_MIN, EVENTS);
		free(ring);
	}
	char *names = path_in(f->dir, "names");
	forge_names(names, rings);
	free(names);
}

/* ---- checking -------------------------------------------------------- */

/* The victim is as it was: same bytes, same mtime, still a plain file. */
static void victim_unchanged(struct forge *f)
{
	struct stat sb;
	cr_assert_eq(lstat(f->victim, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode));
	cr_assert_eq(sb.st_ino, f->victim_sb.st_ino);
	cr_assert_eq(sb.st_mtim.tv_sec, f->victim_sb.st_mtim.tv_sec);
	cr_assert_eq(sb.st_mtim.tv_nsec, f->victim_sb.st_mtim.tv_nsec);
	size_t n;
	uint8_t *p = t_slurp(f->victim, &n);
	cr_assert_eq(n, strlen(VICTIM_BYTES));
	cr_assert_eq(memcmp(p, VICTIM_BYTES, n), 0);
	free(p);
}

/* The working folder holds exactly @want (NULL: nothing), besides the
 * names listed in @planted. */
static void work_holds(struct forge *f, const char *want, const char *planted)
{
	DIR *d = opendir(f->work);
	cr_assert_not_null(d);
	struct dirent *e;
	int seen = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (planted && !strcmp(e->d_name, planted)))
			continue;
		cr_assert(want && !strcmp(e->d_name, want), "unexpected %s in the work folder",
			  e->d_name);
		seen = 1;
	}
	closedir(d);
	cr_assert_eq(seen, want != NULL, "%s is missing", want ? want : "");
}

struct outcome {
	uint64_t events, from_thread[8];
	int name_seen;               /* the name searched for was in a name frame */
};

/* Read @path whole (it must be valid and complete) and count. */
static void read_out(const char *path, const char *name, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open(path, &err, &r), 0, "%s: %s", path, err.message);
	kt_trace_frame f;
	int rc, summary = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			o->events += f.u.chunk.event_count;
			if (f.u.chunk.thread_id < 8)
				o->from_thread[f.u.chunk.thread_id] += f.u.chunk.event_count;
		} else if (f.kind == KT_FRAME_NAME && name) {
			o->name_seen |= f.u.name.len == strlen(name) &&
					!memcmp(f.u.name.str, name, f.u.name.len);
		} else if (f.kind == KT_FRAME_SUMMARY) {
			summary = 1;
		}
	}
	cr_assert_eq(rc, 0, "%s: %s", path, kt_reader_get_last_error(r)->message);
	cr_assert(summary);
	kt_reader_close(r);
}

/* read_out() of the file @file of the work folder. */
static void read_work(struct forge *f, const char *file, const char *name, struct outcome *o)
{
	char *out = path_in(f->work, "%s", file);
	read_out(out, name, o);
	free(out);
}

static void forge_free(struct forge *f)
{
	free(f->dir);
	free(f->parent);
	free(f->work);
	free(f->victim);
	rm_rf(f->root);
}

/* katra recover @dir --out work/out.katra, run from the work folder. */
static int recover_out(struct forge *f, const char *dir, const struct t_run *o)
{
	char *out = path_in(f->work, "out.katra");
	const char *args[] = { "recover", dir, "--out", out, NULL };
	struct t_run here = { .cwd = f->work };
	int st = katra_run(o ? o : &here, f->msg, sizeof(f->msg), args);
	free(out);
	return st;
}

#define has(f, s) cr_assert_not_null(strstr((f)->msg, (s)), "no \"%s\" in: %s", (s), (f)->msg)

/* ---- the output goes only where the user said ------------------------- */

Test(hostile, a_forged_directory_recovers_whole)
{
	struct forge f;
	forge(&f, 2, NULL);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/control: no trace file path (the session wrote to a pipe or socket)");
	struct outcome o;
	read_work(&f, "out.katra", "seq", &o);
	cr_assert_eq(o.events, 2 * EVENTS);
	cr_assert_eq(o.from_thread[1], EVENTS);
	cr_assert(o.name_seen);
	work_holds(&f, "out.katra", NULL);
	victim_unchanged(&f);
	forge_free(&f);
}

/* The old default OUT was the control file's trace path with
 * .recovered.katra: anyone could name the file root replaced. */
Test(hostile, default_out_comes_from_the_name_typed_never_from_the_files)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *trace = path_in(f.root, "victim.katra");
	forge_control(&f, 1, KT_RING_MIN, EVENTS * REC, trace);
	const char *args[] = { "recover", f.dir, NULL };
	struct t_run here = { .cwd = f.work };
	cr_assert_eq(katra_run(&here, f.msg, sizeof(f.msg), args), 3, "%s", f.msg);
	has(&f, "victim.katra: No such file or directory: recovering from the rings alone");
	has(&f, ": katra-1.recovered.katra");
	victim_unchanged(&f);
	work_holds(&f, "katra-1.recovered.katra", NULL);
	struct outcome o;
	read_work(&f, "katra-1.recovered.katra", NULL, &o);
	cr_assert_eq(o.events, EVENTS);

	/* A DIR with no name of its own needs --out. */
	const char *dot[] = { "recover", ".", NULL };
	struct t_run in_dir = { .cwd = f.dir };
	cr_assert_eq(katra_run(&in_dir, f.msg, sizeof(f.msg), dot), 1, "%s", f.msg);
	has(&f, "recover: .: no name to make OUT from: give --out");
	free(trace);
	forge_free(&f);
}

/* The temporary output used to be OUT.tmp-<pid>, opened with O_TRUNC
 * through symbolic links: plant one there before katra starts. */
Test(hostile, a_symlink_planted_at_the_temporary_name_is_not_followed)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *out = path_in(f.work, "out.katra");
	const char *args[] = { "recover", f.dir, "--out", out, NULL };
	struct t_run gated = { .cwd = f.work, .gated = 1 };
	t_katra k;
	t_katra_start(&k, &gated, args);
	char planted[64];
	snprintf(planted, sizeof(planted), "out.katra.tmp-%ld", (long)k.pid);
	char *link = path_in(f.work, "%s", planted);
	cr_assert_eq(symlink(f.victim, link), 0);
	t_katra_go(&k);
	cr_assert_eq(t_katra_wait(&k, f.msg, sizeof(f.msg)), 3, "%s", f.msg);
	victim_unchanged(&f);
	struct stat sb;
	cr_assert_eq(lstat(out, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode), "OUT is a file of its own");
	work_holds(&f, "out.katra", planted);
	free(link);
	free(out);
	forge_free(&f);
}

/*
 * Outputs under /dev were written in place, as /dev/stdout must be; but
 * /dev/shm is a folder anyone may plant names in (and where the scratch
 * folders live): a link there was followed, and a longer file kept its
 * tail after the new trace's end.  (Without /dev/shm the scratch folder is
 * elsewhere and this checks the ordinary path.)
 */
Test(hostile, an_output_under_dev_shm_is_replaced_never_written_through)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *out = path_in(f.work, "out.katra");
	cr_assert_eq(symlink(f.victim, out), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	victim_unchanged(&f);
	struct stat sb;
	cr_assert_eq(lstat(out, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode), "OUT is a file of its own");
	/* Longer than what recover writes: none of it may stay behind. */
	FILE *junk = fopen(out, "w");
	cr_assert_not_null(junk);
	for (int i = 0; i < 1 << 16; i++)
		fputs("junk", junk);
	cr_assert_eq(fclose(junk), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	struct outcome o;
	read_out(out, NULL, &o);
	cr_assert_eq(o.events, EVENTS);
	work_holds(&f, "out.katra", NULL);
	free(out);
	forge_free(&f);
}

/* ---- what is opened, what refused ------------------------------------- */

Test(hostile, symbolic_links_are_refused_and_their_targets_never_measured)
{
	struct forge f;
	forge(&f, 2, NULL);
	/* names -> a file of the caller's holding a name; ring-0 -> a file of
	 * 12345 bytes; DIR reached through a link. */
	char *secret = path_in(f.root, "secret"), *big = path_in(f.root, "big");
	char *names = path_in(f.dir, "names"), *ring = path_in(f.dir, "ring-0");
	cr_assert_eq(rename(names, secret), 0);
	int fd = open(secret, O_WRONLY | O_APPEND);
	names_entry(fd, KT__NAMES_NAME, 2, "SECRET-NAME");
	close(fd);
	cr_assert_eq(symlink(secret, names), 0);
	cr_assert_eq(unlink(ring), 0);
	uint8_t zero[12345] = { 0 };
	write_file(big, zero, sizeof(zero));
	cr_assert_eq(symlink(big, ring), 0);
	char *link = path_in(f.root, "link");
	cr_assert_eq(symlink(f.dir, link), 0);

	cr_assert_eq(recover_out(&f, link, NULL), 1, "%s", f.msg);
	has(&f, "/link: a symbolic link: not followed");
	work_holds(&f, NULL, NULL);

	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/names: a symbolic link: not followed: names interned late are missing");
	has(&f, "katra-1/ring-0: a symbolic link: not followed: thread 1's unflushed records "
		"are lost");
	cr_assert_null(strstr(f.msg, "12345"), "the size of a refused file leaks: %s", f.msg);
	struct outcome o;
	read_work(&f, "out.katra", "SECRET-NAME", &o);
	cr_assert_eq(o.events, EVENTS, "ring-1's, not ring-0's");
	cr_assert_eq(o.name_seen, 0, "nothing read through the link");
	victim_unchanged(&f);
	free(link);
	free(secret);
	free(big);
	free(names);
	free(ring);
	forge_free(&f);
}

Test(hostile, a_directory_others_may_write_is_refused)
{
	struct forge f;
	forge(&f, 1, NULL);
	cr_assert_eq(chmod(f.dir, 0777), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 1, "%s", f.msg);
	has(&f, "katra-1: writable by other users: not trusted");
	work_holds(&f, NULL, NULL);
	cr_assert_eq(chmod(f.dir, 0700), 0);
	char *ring = path_in(f.dir, "ring-0");
	cr_assert_eq(chmod(ring, 0666), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/ring-0: writable by other users: not trusted");
	victim_unchanged(&f);
	free(ring);
	forge_free(&f);
}

/* Root recovering a directory another user planted: the old recover read
 * it all and wrote where its control file said. */
Test(hostile, files_of_another_user_are_refused_when_root_recovers)
{
	if (geteuid() != 0) {
		cr_log_info("skipped: it needs root to plant files of another user");
		return;
	}
	struct forge f;
	forge(&f, 2, NULL);
	char *ring = path_in(f.dir, "ring-1");
	cr_assert_eq(chown(ring, NOBODY, NOBODY), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/ring-1: owned by another user: not read");
	struct outcome o;
	read_work(&f, "out.katra", NULL, &o);
	cr_assert_eq(o.from_thread[2], 0);
	char *out = path_in(f.work, "out.katra");
	cr_assert_eq(unlink(out), 0);
	free(out);

	cr_assert_eq(chown(f.dir, NOBODY, NOBODY), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 1, "%s", f.msg);
	has(&f, "katra-1: owned by another user: not read");
	work_holds(&f, NULL, NULL);
	victim_unchanged(&f);
	free(ring);
	forge_free(&f);
}

/* ---- nothing blocks ---------------------------------------------------- */

Test(hostile, fifos_block_neither_list_nor_recover)
{
	struct forge f;
	char *fifo_trace = NULL;
	forge(&f, 2, NULL);
	fifo_trace = path_in(f.root, "trace-fifo");
	cr_assert_eq(mkfifo(fifo_trace, 0600), 0);
	forge_control(&f, 2, KT_RING_MIN, EVENTS * REC, fifo_trace);
	char *names = path_in(f.dir, "names"), *ring = path_in(f.dir, "ring-0");
	cr_assert_eq(unlink(names), 0);
	cr_assert_eq(unlink(ring), 0);
	cr_assert_eq(mkfifo(names, 0600), 0);
	cr_assert_eq(mkfifo(ring, 0600), 0);
	/* A second directory whose control file is a FIFO. */
	char *other = path_in(f.parent, "katra-2"), *ctl = path_in(other, "control");
	cr_assert_eq(mkdir(other, 0700), 0);
	cr_assert_eq(mkfifo(ctl, 0600), 0);
	struct t_run quick = { .cwd = f.work, .timeout = 20 };

	const char *list[] = { "recover", "--list", f.parent, NULL };
	cr_assert_eq(katra_run(&quick, f.msg, sizeof(f.msg), list), 0, "%s", f.msg);
	has(&f, "katra-1\tpid 2147480000\t");
	cr_assert_null(strstr(f.msg, "katra-2\t"), "%s", f.msg);
	has(&f, "1 katra-* entries skipped");

	const char *two[] = { "recover", other, NULL };
	cr_assert_eq(katra_run(&quick, f.msg, sizeof(f.msg), two), 1, "%s", f.msg);
	has(&f, "katra-2/control: a FIFO: not read: not a katra crash directory");

	cr_assert_eq(recover_out(&f, f.dir, &quick), 3, "%s", f.msg);
	has(&f, "katra-1/names: a FIFO: not read");
	has(&f, "katra-1/ring-0: a FIFO: not read");
	has(&f, "trace-fifo: a FIFO: not read: recovering from the rings alone");

	const char *given[] = { "recover", f.dir, "--trace", fifo_trace, "--out", "o.katra", NULL };
	cr_assert_eq(katra_run(&quick, f.msg, sizeof(f.msg), given), 3, "%s", f.msg);
	has(&f, "trace-fifo: not a regular file: not read");
	victim_unchanged(&f);
	free(fifo_trace);
	free(names);
	free(ring);
	free(other);
	free(ctl);
	forge_free(&f);
}

/* ---- bounded work ------------------------------------------------------ */

/* Slots claiming 1 GiB rings, each a sparse file of holes: the old
 * recover mapped and copied each whole (2 GB per slot); under a 256 MiB
 * address-space limit it failed.  A hole is not data: the first records
 * read are not valid, and that ring ends there. */
Test(hostile, sparse_rings_cost_a_small_read_each)
{
	struct forge f;
	forge(&f, 1, NULL);
	const int rings = 8;
	forge_control(&f, rings, KT_RING_MAX, KT_RING_MAX, NULL);
	for (int i = 0; i < rings; i++) {
		char *ring = path_in(f.dir, "ring-%d", i);
		/* ring-0 holds 100 records, then holes. */
		forge_ring(ring, KT_RING_MAX, i == 0 ? 100 : 0);
		free(ring);
	}
	/* ASan reserves terabytes of shadow: no address-space limit there. */
	struct t_run small = { .cwd = f.work, .as_limit = T_SANITIZED ? 0 : 256u << 20 };
	cr_assert_eq(recover_out(&f, f.dir, &small), 3, "%s", f.msg);
	has(&f, "katra-1/ring-0: position 2400: malformed event record: thread 1's records");
	has(&f, "katra-1/ring-7: position 0: malformed event record: thread 8's records");
	cr_assert_null(strstr(f.msg, "Cannot allocate memory"), "%s", f.msg);
	struct outcome o;
	read_work(&f, "out.katra", NULL, &o);
	cr_assert_eq(o.events, 100);
	victim_unchanged(&f);
	forge_free(&f);
}

/* 16k slots fit a control file; only SLOTS_MAX are read. */
Test(hostile, slots_past_the_cap_are_not_read)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *ctl = path_in(f.dir, "control");
	/* Slots past the first are holes: "not in use yet". */
	cr_assert_eq(truncate(ctl, (off_t)kt__ring_page() * 5001), 0);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/control: 5000 slots: only the first 4096 are read");
	struct outcome o;
	read_work(&f, "out.katra", NULL, &o);
	cr_assert_eq(o.events, EVENTS);
	free(ctl);
	forge_free(&f);
}

/* The truncating side of the race below: flip @path between empty and
 * @size until killed. */
static pid_t shrinker(const char *path, off_t size)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	alarm(120);
	for (;;) {
		if (truncate(path, 0) || truncate(path, size))
			_exit(1);
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
}

/* The old recover mapped each ring: a ring file cut while it copied the
 * map killed it with SIGBUS.  Now a read that comes short is reported. */
Test(hostile, a_ring_that_shrinks_while_read_never_kills_recover)
{
	struct forge f;
	forge(&f, 1, NULL);
	const uint64_t size = 32u << 20, n = size / REC;
	forge_control(&f, 1, size, n * REC, NULL);
	char *ring = path_in(f.dir, "ring-0");
	forge_ring(ring, size, n);
	pid_t pid = shrinker(ring, (off_t)size);
	char *out = path_in(f.work, "out.katra");
	for (int run = 0; run < 10; run++) {
		int st = recover_out(&f, f.dir, NULL); /* asserts it exited */
		cr_assert(st == 0 || st == 3, "run %d: exit %d: %s", run, st, f.msg);
		struct outcome o;
		read_out(out, NULL, &o);
		cr_assert_leq(o.events, n);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	victim_unchanged(&f);
	free(out);
	free(ring);
	forge_free(&f);
}

/* recover_dir() in this process, with @caps; its messages in f->msg. */
static int recover_in(struct forge *f, const struct kt__recover_caps *caps)
{
	char *out = path_in(f->work, "out.katra");
	int fd = memfd_create("recover-out", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	int st = recover_dir(f->dir, out, NULL, caps);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	ssize_t n = pread(fd, f->msg, sizeof(f->msg) - 1, 0);
	f->msg[n > 0 ? n : 0] = 0;
	close(fd);
	free(out);
	return st;
}

Test(hostile, ring_bytes_past_the_cap_are_not_read)
{
	struct forge f;
	forge(&f, 4, NULL);
	/* Two rings and half of the third. */
	struct kt__recover_caps caps = kt__recover_caps;
	caps.ring_bytes = 2 * EVENTS * REC + EVENTS / 2 * REC;
	cr_assert_eq(recover_in(&f, &caps), 3, "%s", f.msg);
	has(&f, "katra-1/ring-2: position 120: the rings hold more than the 600 bytes read per "
		"directory");
	has(&f, "katra-1/control: the 600 ring bytes read per directory are spent: slot 3 and "
		"those after it are not read");
	struct outcome o;
	read_work(&f, "out.katra", NULL, &o);
	cr_assert_eq(o.events, 2 * EVENTS + EVENTS / 2);
	cr_assert_eq(o.from_thread[4], 0);
	forge_free(&f);
}

Test(hostile, names_log_past_the_cap_is_not_read)
{
	struct forge f;
	forge(&f, 1, NULL);
	struct kt__recover_caps caps = kt__recover_caps;
	caps.names_bytes = 12 + 3 + 6; /* the name and half the thread entry */
	cr_assert_eq(recover_in(&f, &caps), 3, "%s", f.msg);
	has(&f, "katra-1/names: larger than 21 bytes: the entries past that are not read");
	struct outcome o;
	read_work(&f, "out.katra", "seq", &o);
	cr_assert(o.name_seen);
	forge_free(&f);
}

/* Capture options and a clock out of range (a forged header, sealed):
 * main copied them into OUT's header, which no reader then opened. */
Test(hostile, fields_out_of_range_never_reach_the_output_header)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *ctl = path_in(f.dir, "control");
	int fd = open(ctl, O_RDWR);
	cr_assert_geq(fd, 0);
	uint8_t head[KT__CTL_HEADER];
	cr_assert_eq(pread(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	head[KT__CTL_O_OVERFLOW] = 7;
	head[KT__CTL_O_CODEC] = 9;
	head[KT__CTL_O_IO] = 5;
	head[KT__CTL_O_CLOCK_SRC] = 9;
	seal(head);
	cr_assert_eq(pwrite(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	close(fd);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/control: offset 48: no usable clock calibration");
	struct outcome o;
	read_work(&f, "out.katra", NULL, &o);
	cr_assert_eq(o.events, EVENTS);
	free(ctl);
	forge_free(&f);
}

/* ---- strings from the files are escaped -------------------------------- */

Test(hostile, list_and_messages_escape_names_and_paths)
{
	struct forge f;
	forge(&f, 1, "/nonexistent/\x1b[2J\nforged line");
	char *odd = path_in(f.parent, "katra-\x1b]0;owned\x07");
	cr_assert_eq(rename(f.dir, odd), 0);
	const char *list[] = { "recover", "--list", f.parent, NULL };
	cr_assert_eq(katra(f.msg, sizeof(f.msg), list), 0, "%s", f.msg);
	has(&f, "/katra-\\x1B]0;owned\\x07\tpid 2147480000\t/nonexistent/\\x1B[2J\\nforged line\n");
	cr_assert_null(strchr(f.msg, '\x1b'), "%s", f.msg);

	cr_assert_eq(recover_out(&f, odd, NULL), 3, "%s", f.msg);
	has(&f, "katra-\\x1B]0;owned\\x07/control: trace file /nonexistent/\\x1B[2J\\nforged line:");
	cr_assert_null(strchr(f.msg, '\x1b'), "%s", f.msg);
	cr_assert_null(strchr(f.msg, '\x07'), "%s", f.msg);
	free(odd);
	forge_free(&f);
}

/* ---- the trace file the control file names ----------------------------- */

/* A trace of thread 1's first @n counter events, complete or not. */
static void write_trace(const char *path, uint64_t n)
{
	kt_header h;
	kt_header_init(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	uint8_t buf[EVENTS * REC];
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, buf, records(buf, n, 0)), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

Test(hostile, the_trace_path_is_read_only_without_links_or_dots)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *real = path_in(f.root, "real"), *link = path_in(f.root, "link");
	char *trace = path_in(real, "trace.katra"), *via_link = path_in(link, "trace.katra");
	char *dots = path_in(real, "../real/trace.katra");
	cr_assert_eq(mkdir(real, 0700), 0);
	cr_assert_eq(symlink(real, link), 0);
	write_trace(trace, 4);

	forge_control(&f, 1, KT_RING_MIN, EVENTS * REC, trace);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 0, "%s", f.msg);
	has(&f, "recovered 10 events (4 from the trace file, 6 from the rings)");

	forge_control(&f, 1, KT_RING_MIN, EVENTS * REC, via_link);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "link/trace.katra: a symbolic link or a file where a directory should be: not "
		"followed: recovering from the rings alone");
	has(&f, "recovered 10 events (0 from the trace file, 10 from the rings)");

	forge_control(&f, 1, KT_RING_MIN, EVENTS * REC, dots);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "'.' or '..' in it: not followed");

	/* The user's own --trace is followed. */
	const char *given[] = { "recover", f.dir, "--trace", via_link, "--out", "o.katra", NULL };
	struct t_run here = { .cwd = f.work };
	cr_assert_eq(katra_run(&here, f.msg, sizeof(f.msg), given), 0, "%s", f.msg);
	has(&f, "link/trace.katra: cut at offset");
	has(&f, "(4 from the trace file, 6 from the rings)");

	/* OUT naming the trace itself is refused. */
	forge_control(&f, 1, KT_RING_MIN, EVENTS * REC, trace);
	const char *self[] = { "recover", f.dir, "--out", trace, NULL };
	cr_assert_eq(katra_run(&here, f.msg, sizeof(f.msg), self), 1, "%s", f.msg);
	has(&f, "it is the trace file being recovered: choose another OUT");

	if (geteuid() == 0) {
		cr_assert_eq(chown(trace, NOBODY, NOBODY), 0);
		cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
		has(&f, "real/trace.katra: owned by another user: not read");
	}
	victim_unchanged(&f);
	free(real);
	free(link);
	free(trace);
	free(via_link);
	free(dots);
	forge_free(&f);
}

Test(hostile, odd_arguments_fail_cleanly)
{
	struct forge f;
	forge(&f, 1, NULL);
	char *deep = malloc(6000);
	memset(deep, 'a', 5999);
	deep[5999] = 0;
	deep[0] = '/';
	cr_assert_eq(recover_out(&f, deep, NULL), 1, "%s", f.msg);
	has(&f, "File name too long");
	cr_assert_eq(recover_out(&f, f.victim, NULL), 1, "%s", f.msg);
	has(&f, "victim.recovered.katra: not a directory");
	work_holds(&f, NULL, NULL);
	victim_unchanged(&f);
	free(deep);
	forge_free(&f);
}

/* Thread frames of @path: how many, and whether thread 1 is named
 * "seq-0" and thread 2 "seq-1". */
static void count_threads(void *ctx, const kt_trace_frame *f)
{
	int *n = ctx;
	if (f->kind != KT_FRAME_THREAD)
		return;
	n[0]++;
	if (f->u.thread.thread_id >= 1 && f->u.thread.thread_id <= 2) {
		char want[16];
		snprintf(want, sizeof(want), "seq-%u", f->u.thread.thread_id - 1);
		n[f->u.thread.thread_id] = !strcmp(f->u.thread.name, want);
	}
}

/*
 * A names log planted with 3000 thread names for threads that have no
 * ring, no events and no drop: recover writes none of them (issue 26's
 * D6: it wrote a thread for each, the trace verified, and nothing was
 * said), says so as a problem, and the two real threads keep their names.
 */
Test(hostile, a_names_log_cannot_make_threads)
{
	struct forge f;
	forge(&f, 2, NULL);
	char *names = path_in(f.dir, "names");
	int fd = open(names, O_WRONLY | O_APPEND | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	for (uint32_t id = 3; id < 3003; id++)
		names_entry(fd, KT__NAMES_THREAD, id, "invented");
	close(fd);
	free(names);
	cr_assert_eq(recover_out(&f, f.dir, NULL), 3, "%s", f.msg);
	has(&f, "katra-1/names: 3000 thread names for threads with no ring, events or drop "
		"(the first: thread 3): not written");
	int n[3] = { 0 };
	char *out = path_in(f.work, "out.katra");
	t_each_frame(out, count_threads, n);
	free(out);
	cr_assert_eq(n[0], 2, "%d thread frames", n[0]);
	cr_assert(n[1] && n[2], "the real threads' names");
	forge_free(&f);
}

/*
 * recover/crash.h - private to recover/ (and its tests): the crash files'
 * format, so that what a process emitted before it died can be recovered
 * (`katra recover`).  recover/recover.h is the door to the rest.
 *
 * A session with crash files (kt_session_options.crash_dir, KT_CRASH_DIR)
 * makes a directory PARENT/katra-<pid>/ holding:
 *
 *   control   page 0: the header below; page 1 + i: ring slot i, the live
 *             struct kt__ring of that ring (head, tail, checkpoint, loss
 *             counters), mapped shared so that the page cache holds them
 *             when the process dies.
 *   ring-<i>  ring i's bytes (its size), mapped twice back to back as a
 *             memfd ring is.
 *   names     a log: every interned name and thread name, appended as
 *             they appear (u32 kind 1 name / 2 thread, u32 id, u32 len,
 *             len bytes), so records naming a name interned after the last
 *             flush still find it.
 *   sites     a log as names is: each call site's source location (kind 1,
 *             the site's name id, len, then u32 line, u32 category, u32
 *             file_len, file, function), appended after its name.  Bounded
 *             as names are: a site is interned once.
 *   tracks    a fixed place per track (KT__TRK_*): its entry, and its
 *             calibration pairs in two buffers, the one in use named by a
 *             word written last, so a kill mid-update leaves the pairs as
 *             they were before it or after it; at most KT_MAX_TRACKS slots
 *             of KT__TRK_SLOT bytes, however often tracks are calibrated.
 *   categories  KT_MAX_CATEGORIES fixed entries {u32 name id, u32
 *             KT_CATEGORY_ON_* flags}, each rewritten in one 8-byte write
 *             as its category is named or switched.
 *
 * The process holds a write lock (fcntl F_SETLK) on the whole control file
 * while the session runs; the kernel drops it when the process dies.  It
 * also drops it at exec(), which closes the file, so the header records the
 * process's identity too: its start time and the boot it ran in.  A process
 * with that pid, start time and boot is the one that wrote the directory,
 * alive (a pid reused by another process has another start time).  A clean
 * stop removes the directory.
 *
 * What recovery relies on: the producer writes a record, then release-
 * stores head (ring.h, B), so a record below head is whole in the file
 * mapping too.  With crash files the flusher gives ring space back only
 * after the frames made from it are written (done_pos), and then records a
 * checkpoint: the ring position up to which the trace file holds the
 * ring's records and how many events of the thread the file holds.  Events
 * of the thread in the file beyond that count are the first ones after the
 * checkpoint's tail; the rest, up to head, are recovered from the ring.
 *
 * A flight session (KT__CTL_F_FLIGHT) has no trace file and no flusher:
 * its rings overwrite their oldest bytes, and tail stays where the session
 * began.  What is whole is what lies past a lap below the producer's bound
 * (it writes nothing at or past the bound before it raises it); the window
 * starts at the first record start there that the slot names (a mark the
 * producer left at a raise, the session's start, or the end of the events
 * it counted overwritten, all stored before the bound that allows writing
 * over them), and runs to head.  The count, kept in two slots so a kill
 * mid-update leaves one whole, becomes a drop frame before the window.
 *
 * Every integer is little-endian.  The offsets below are fixed; the build
 * checks those taken from struct kt__ring (ring/private.h), and changing
 * one means a new KT__CTL_VERSION.  Version 1 had no identity: its trace path
 * was at offset 120 (KT__CTL_V1_O_PATH); the reader still reads it.  The
 * flags at KT__CTL_O_FLAGS were a reserved zero before flight sessions had
 * crash files: a katra from then reads a flight directory as a normal one
 * and refuses each lapped ring's slot (its tail more than a ring behind).
 *
 * Nothing in a crash directory is trusted by the reading side: anyone may
 * have written it (recover/crashdir.h says what `katra recover` opens).
 */
#ifndef KATRA_RECOVER_CRASH_H
#define KATRA_RECOVER_CRASH_H

#include <stddef.h>
#include <stdint.h>

#include <katra/trace.h>
#include "recover/recover.h"
#include "ring/ring.h"

#define KT__CTL_MAGIC "\x89KTC\r\n\x1a\n"
#define KT__CTL_VERSION 2u
#define KT__CTL_VERSION_1 1u       /* still read: no identity fields */
#define KT__CTL_HEADER 4096u       /* header bytes that matter in page 0 */

/* Control header (page 0). */
#define KT__CTL_O_VERSION 8        /* u32 */
#define KT__CTL_O_SLOT_SIZE 12     /* u32: page size; pages hold slots */
#define KT__CTL_O_PID 16           /* u64 */
#define KT__CTL_O_GEN 24           /* u64: session generation; drop markers
				    * carry its low 32 bits */
#define KT__CTL_O_WALL 32          /* u64: start_wall_ns */
#define KT__CTL_O_MONO 40          /* u64: start_mono_ns */
#define KT__CTL_O_CLOCK_SRC 48     /* u8, then 7 reserved */
#define KT__CTL_O_TICK_HZ 56       /* u64 */
#define KT__CTL_O_TICKS0 64        /* u64 */
#define KT__CTL_O_NS0 72           /* u64 */
#define KT__CTL_O_RING_SIZE 80     /* u64 */
#define KT__CTL_O_OVERFLOW 88      /* u8 */
#define KT__CTL_O_CODEC 89         /* u8 */
#define KT__CTL_O_IO 90            /* u8, then 1 reserved */
#define KT__CTL_O_LEVEL 92         /* i32 */
#define KT__CTL_O_TRACE_OFF 96     /* u64: where the trace starts in its file */
#define KT__CTL_O_PATH_LEN 104     /* u32: 0 when the session wrote to an fd */
#define KT__CTL_O_FLAGS 108        /* u32: KT__CTL_F_*; zero before flight
				    * sessions had crash files */
#define KT__CTL_O_CHECKSUM 112     /* u64: XXH3 of bytes [0, 4096) with this
				    * field read as zero */
#define KT__CTL_O_START 120        /* u64: the process's start time, field 22
				    * of /proc/PID/stat (clock ticks after
				    * boot); 0 when unknown */
#define KT__CTL_O_BOOT_ID 128      /* 16 bytes: /proc/sys/kernel/random/
				    * boot_id, as bytes; zero when unknown */
#define KT__CTL_O_PATH 144         /* the trace file's absolute path */
#define KT__CTL_PATH_MAX (KT__CTL_HEADER - KT__CTL_O_PATH)
#define KT__CTL_V1_O_PATH 120      /* version 1: the path was here */

/* KT__CTL_O_FLAGS: a flight session's (KT_SESSION_FLIGHT): no trace file;
 * each ring overwrites its oldest bytes, so its readable window starts at
 * the oldest record start its flight state (KT__SLOT_O_FL_*) vouches for,
 * not at its checkpoint. */
#define KT__CTL_F_FLIGHT KT__CRASH_FLIGHT
#define KT__CTL_V1_PATH_MAX (KT__CTL_HEADER - KT__CTL_V1_O_PATH)
/* KT__CTL_O_FLAGS: the directory has the sites, tracks and categories
 * files, so a recovery says when one is missing.  An older katra never opens them and
 * ignores the bit: it reads the directory as it did, without locations or
 * tracks, which is why the version stays 2. */
#define KT__CTL_F_TABLES 2u

/* A ring slot (page 1 + i of the control file): the ring's page, laid out
 * as ring/ring.h's KT__PAGE_* say (and checked against the struct there),
 * then a stamp past the struct. */
#define KT__SLOT_O_HEAD KT__PAGE_HEAD                   /* u64: bytes published */
#define KT__SLOT_O_SIZE KT__PAGE_SIZE                   /* u64: ring bytes, a power of two */
#define KT__SLOT_O_PENDING_FIRST KT__PAGE_PENDING_FIRST /* u64: time range of losses */
#define KT__SLOT_O_PENDING_LAST KT__PAGE_PENDING_LAST   /*      not yet in a drop marker */
#define KT__SLOT_O_LOST KT__PAGE_LOST                   /* u64: events lost, ever */
#define KT__SLOT_O_REFUSED KT__PAGE_REFUSED             /* u64: records refused, ever */
#define KT__SLOT_O_REFUSED_FIRST KT__PAGE_REFUSED_FIRST
#define KT__SLOT_O_REFUSED_LAST KT__PAGE_REFUSED_LAST
#define KT__SLOT_O_TAIL KT__PAGE_TAIL                   /* u64: bytes the flusher gave back */
#define KT__SLOT_O_LOST_BASE KT__PAGE_LOST_BASE         /* u64: LOST when the session began */
#define KT__SLOT_O_CK KT__PAGE_CK                       /* 2 x {u64 tail, events, marked,
							 * refused} */
#define KT__SLOT_O_CK_SEQ KT__PAGE_CK_SEQ               /* u64: CK[seq & 1] is the good one */
#define KT__SLOT_O_THREAD KT__PAGE_THREAD               /* u32: katra's thread id */
#define KT__SLOT_O_OS_TID KT__PAGE_OS_TID               /* u32 */
#define KT__SLOT_O_FL_BOUND KT__PAGE_FL_BOUND           /* u64 */
#define KT__SLOT_O_FL_MARK KT__PAGE_FL_MARK             /* KT__PAGE_FL_MARKS x u64 */
#define KT__SLOT_O_FL_SEQ KT__PAGE_FL_SEQ               /* u64 */
#define KT__SLOT_O_FL_COUNT KT__PAGE_FL_COUNT           /* 2 x {u64 origin, counted, n,
							 * first, last} */
#define KT__SLOT_O_MAGIC 2048      /* 8 bytes: KT__SLOT_MAGIC */
#define KT__SLOT_O_INDEX 2056      /* u32: i, as in ring-<i> */
#define KT__SLOT_MAGIC "KTSLOT01"

#define KT__NAMES_NAME 1u          /* kinds of a names log entry */
#define KT__NAMES_THREAD 2u
/* Bytes of thread-name entries a session logs, at most: a thread renamed
 * per job (a new name each time) would grow the log without bound.  Past
 * it a recovery may show a thread's older name. */
#define KT__NAMES_THREAD_CAP (1u << 20)

#define KT__SITES_SITE 1u          /* the kind of a sites log entry */
#define KT__SITE_FIXED 12u         /* its body: u32 line, category, file_len */

/* The tracks file: slot i (track id i + 1) at i * KT__TRK_SLOT. */
#define KT__TRK_O_ID 0             /* u32: i + 1; 0: no track there */
#define KT__TRK_O_NAME 4           /* u32: the name id */
#define KT__TRK_O_HZ 8             /* u64: clock_hz */
#define KT__TRK_O_STATE 16         /* u64: bits 0-31 the pair count, bit 32
				    * the buffer holding them; the rest 0 */
#define KT__TRK_O_RESERVED 24      /* u64: 0 */
#define KT__TRK_O_PAIRS 32         /* 2 buffers: u64 track_ts, u64 ticks */
#define KT__TRK_BUF (KT_MAX_TRACK_PAIRS * 16u)
#define KT__TRK_SLOT (KT__TRK_O_PAIRS + 2u * KT__TRK_BUF)
_Static_assert(KT__TRK_SLOT % 8 == 0, "a state word never straddles a page");

/* The categories file: entry i (the process's i-th category) at 8 * i. */
#define KT__CAT_ENTRY 8u           /* u32 name id (0: none), u32 flags */
#define KT__CATS_SIZE (KT_MAX_CATEGORIES * KT__CAT_ENTRY)

/* ---- the live side (recover/crash.c) ---------------------------------- */

/*
 * Who process @pid is (0: this process): its start time, field 22 of
 * /proc/PID/stat, and the boot id.  Both together tell the process that
 * wrote a control header from a later one given the same pid.  Any thread.
 * Return: 0; -ESRCH when no such process is visible; -errno, or -EPROTO
 * for a stat line or boot id that does not parse.
 */
int kt__proc_identity(long pid, uint64_t *start, uint8_t boot_id[16]);

/* Mark a slot page as holding ring @index. */
void kt__crash_stamp(void *page, uint32_t index);

/* ---- the reading side (recover/crash_read.c): bytes in, no I/O ------- */

/* The control header, decoded. */
typedef struct kt__ctl {
	uint32_t version;
	uint32_t slot_size;
	uint64_t pid;
	uint64_t gen;
	uint64_t start_wall_ns, start_mono_ns;
	kt_clock_calibration clock;
	uint64_t ring_size;
	uint8_t overflow, codec, io;
	int32_t level;
	uint32_t flags;             /* KT__CTL_F_* */
	uint64_t trace_off;
	uint64_t start_time;        /* 0: unknown (version 1) */
	uint8_t boot_id[16];
	char trace_path[KT__CTL_V1_PATH_MAX + 1];
} kt__ctl;

/* One slot, decoded. */
typedef struct kt__slot {
	uint32_t index;
	uint32_t thread_id, os_tid;
	uint64_t size, head, tail;
	uint64_t lost, lost_base, pending_first, pending_last;
	uint64_t refused, refused_first, refused_last;
	uint64_t ck_tail, ck_events, ck_marked, ck_refused;
	/* Where the ring's records to recover start: the checkpoint's tail,
	 * or in a flight session the oldest record start of the window the
	 * ring still holds whole; and (flight only) the events the thread
	 * counted overwritten before it, stamped @over_first..@over_last. */
	uint64_t from;
	uint64_t over, over_first, over_last;
	uint64_t over_end;          /* the count's end: @from when exact */
} kt__slot;

/*
 * Decode a control header (version 1 or 2) from @len bytes.  @why receives
 * "offset N: what is wrong" for the first problem.  Return: 0 when whole;
 * 1 when the checksum fails but magic, version and slot size are sane (the
 * fields are filled and may be wrong); a negative KT_E* code when unusable.
 */
int kt__ctl_parse(const uint8_t *p, size_t len, kt__ctl *c, char *why, size_t cap);

/* Field 22 (starttime) of a /proc/PID/stat line of @len bytes.
 * Return: 0 and *@start, or -1 when the line does not parse. */
int kt__stat_start_time(const char *line, size_t len, uint64_t *start);

/*
 * Decode slot @index from its @len-byte page and check it: magic, index,
 * a power-of-two size in the ring range, head and tails 8-aligned and
 * within one ring of each other.  With @flags KT__CTL_F_FLIGHT the tails
 * may lag (the ring overwrote them): @s->from is then the flight window's
 * start (kt__flight_window()), which must be.  Return: 0; 1 for a slot not
 * in use yet (all zero, or stamped but never given a thread: the process
 * died while creating the ring, which held nothing); KT_EFRAME with @why
 * set.
 */
int kt__slot_parse(const uint8_t *p, size_t len, uint32_t index, uint32_t flags, kt__slot *s,
		   char *why, size_t cap);

/*
 * kt__flight_window - where the records of a dead flight-mode ring that
 * are still whole begin, from its slot page @p (decoded in @s: size,
 * head, tail as the session's origin): the first record start the page
 * vouches for (a mark, the origin, the overwritten count's end) at or past
 * both the lap below head and the lap below the bound, past which the
 * producer may have been writing when it died.  Fills @s->from and the
 * overwritten count (kept only when it is of this session and ends where
 * the window starts; else zero).  Return: 0, or KT_EFRAME with @why when
 * the page's values cannot be a live ring's.
 */
int kt__flight_window(const uint8_t *p, kt__slot *s, char *why, size_t cap);

/* Why kt__ring_records() stopped. */
enum kt__walk_end {
	KT__WALK_MORE,              /* the bytes ran out, maybe inside a record */
	KT__WALK_BAD,               /* a record that is not valid */
	KT__WALK_STOP,              /* @fn returned non-zero */
};

/*
 * Walk the records in @len bytes that hold ring positions @pos onwards in
 * order (the caller unwraps the ring, and may feed it in pieces), calling
 * @fn for each whole, valid record.  Stops at the first record that is not
 * whole in @p, not valid, or that @fn refuses; *@end says which, and @why
 * says what was wrong with a bad one.  No record is longer than
 * KT__RECORD_MAX bytes, so a caller holding that many unwalked bytes never
 * sees KT__WALK_MORE without progress.  Return: the bytes walked (the
 * whole records before the stop).
 */
size_t kt__ring_records(const uint8_t *p, size_t len, uint64_t pos,
			int (*fn)(void *ctx, const kt__ring_rec *rec), void *ctx,
			enum kt__walk_end *end, char *why, size_t cap);

/*
 * kt__site_parse - the location of call site @id from a sites log entry's
 * @len-byte body @p: both strings within it, at most KT_MAX_STRING bytes
 * and without a zero byte.  The strings point into @p.  Return: 0, or -1
 * when the body is malformed.
 */
int kt__site_parse(const uint8_t *p, uint32_t len, uint32_t id, kt_srcloc *loc);

/*
 * kt__track_parse - slot @index of the tracks file, @len bytes at @p: the
 * track's entry into @t, its pairs decoded into @pairs (KT_MAX_TRACK_PAIRS
 * of them), which @t->pairs then names.  Everything §4.9 asks is checked
 * (kt__track_bad()).  Return: 0; 1 for a slot never used (its id 0);
 * KT_EFRAME with @why set.
 */
int kt__track_parse(const uint8_t *p, size_t len, uint32_t index, kt_track_def *t,
		    kt_track_pair *pairs, char *why, size_t cap);

/* The longest ring record: an event with a 65535-byte payload, padded. */
#define KT__RECORD_MAX (16u + 65536u)

#endif /* KATRA_RECOVER_CRASH_H */

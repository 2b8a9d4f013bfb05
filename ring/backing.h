/*
 * ring/backing.h - internal: where a ring's memory lives.  The ring's
 * protocol (ring.h) is apart from its storage, as LTTng-UST's ring buffer
 * splits its frontend from its backend.
 *
 * A ring is a page (its struct: head, tail, loss counters, checkpoint)
 * and its bytes, mapped twice back to back.  A backing says which files
 * hold the two; ring/ maps them.  The default backing keeps both in one
 * memfd per ring (ring/memory.c); a backing that keeps them in files other
 * processes can open (recover/'s crash files) lets them be read after
 * this process died.  Reached through ring.h, which includes this.
 */
#ifndef KATRA_RING_BACKING_H
#define KATRA_RING_BACKING_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <katra/trace.h>

/* Where a new ring's page and bytes are. */
typedef struct kt__ring_place {
	int fd;             /* the bytes' file: closed once mapped */
	off_t off;          /* where the bytes start in @fd */
	int page_fd;        /* the page's file (may be @fd); not the ring's */
	off_t page_off;     /* where the page starts in @page_fd */
	int shared;         /* map the page shared, so the file holds it; else
			     * private, and a fork()ed child gets a copy */
	uint32_t slot;      /* the backing's own name for the ring */
} kt__ring_place;

typedef struct kt__backing kt__backing;

/* Every callback runs under the registry lock (@name: the names lock),
 * never on the emit path. */
struct kt__backing {
	/* Files for a ring of @size bytes, the page's zero-filled.
	 * Return: 0, or -errno (then no ring is made). */
	int (*place)(const kt__backing *b, uint64_t size, kt__ring_place *out);
	/* @page, placed at @p, is mapped: the backing may write what it
	 * keeps beside the struct, at KT__PAGE_END and on.  May be NULL. */
	void (*stamp)(const kt__backing *b, void *page, const kt__ring_place *p);
	/* A name was interned (@kind 1) or a thread named (@kind 2), with
	 * its id, and @loc the call site's location when the name is a
	 * site's (else NULL); also called for those that exist when the
	 * backing is put in place.  May be NULL. */
	void (*name)(const kt__backing *b, uint32_t kind, uint32_t id, const char *s,
		     size_t len, const kt_srcloc *loc);
	/* @page, a ring @b placed, is about to be unmapped for good, its
	 * bytes read: the backing may remove its files and reuse its place.
	 * Never from a signal handler.  May be NULL. */
	void (*retire)(const kt__backing *b, void *page);
	/* Track @t was created (no pair yet) or calibrated: its pairs as
	 * they are now, valid during the call.  Under the track table's
	 * lock (never from a signal handler: kt_track_calibrate() is not
	 * one's); also called for the tracks that exist when the backing is
	 * put in place.  May be NULL. */
	void (*track)(const kt__backing *b, const kt_track_def *t);
	/* Category @index of the process's table (below KT_MAX_CATEGORIES),
	 * named @id, is in state @flags: KT_CATEGORY_ON_START when it was on
	 * as the session started (or when it was named, if later), and
	 * KT_CATEGORY_ON_STOP when it is on now.  Under the categories' lock,
	 * each time either changes; also called for those that exist when
	 * the backing is put in place.  May be NULL. */
	void (*category)(const kt__backing *b, uint32_t index, uint32_t id, uint32_t flags);
};

/* Kinds of kt__backing.name. */
#define KT__NAME_INTERNED 1u
#define KT__NAME_THREAD 2u

/*
 * kt__fd_high - @fd, just returned by open() or the like, moved to a
 * number >= 3 (close-on-exec) if it was 0, 1 or 2.  Return: the fd, or
 * -errno (also when @fd < 0: errno then is the opener's).  Any thread.
 */
int kt__fd_high(int fd);

/*
 * kt__file_reserve - give @fd blocks for [@off, @off + @len), growing it
 * if need be, for a backing on a host thread: a mapping of them never
 * raises SIGBUS, and this never raises SIGXFSZ.  Return: 0 or -errno
 * (-ENOSPC, -EFBIG past RLIMIT_FSIZE).  Any thread.
 */
int kt__file_reserve(int fd, off_t off, off_t len);

/*
 * kt__xfsz_hold, kt__xfsz_release - around a write by a host thread that
 * may pass RLIMIT_FSIZE: the kernel then answers EFBIG and sends the
 * thread SIGXFSZ, whose default action ends the host.  Held, it stays
 * blocked; released with @efbig set (the write failed with EFBIG), one
 * the write raised is taken back, and one the host had pending stays.
 * The same thread, in pairs.  Async-signal-safe.
 */
typedef struct kt__xfsz {
	sigset_t old;
	int had;
} kt__xfsz;
void kt__xfsz_hold(kt__xfsz *x);
void kt__xfsz_release(kt__xfsz *x, int efbig);

/*
 * kt__registry_set_backing - back every ring with @b from now on; NULL
 * goes back to the default.  Existing rings move onto @b in place (so
 * producers' pointers stay valid; their contents are not kept: a session
 * start discards them anyway); with NULL they keep what they have.  Called
 * with no consumer running.  Return: 0 or the first -errno; after an
 * error, call it again with NULL.
 */
int kt__registry_set_backing(const kt__backing *b);

#endif /* KATRA_RING_BACKING_H */

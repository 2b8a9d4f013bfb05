/*
 * A ring's memory: its page and its bytes mapped onto the files a backing
 * places them in (ring/backing.h), and the default backing, one memfd per
 * ring.  Runs under the registry lock, never on the emit path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring/private.h"

size_t kt__ring_page(void)
{
	static size_t page;
	if (!page) {
		long n = sysconf(_SC_PAGESIZE);
		page = n >= 4096 ? (size_t)n : 4096;
	}
	return page;
}

/*
 * A ring's page holds a heap pointer (its thread name), and a leak checker
 * scans only the heap, globals and stacks unless told of other roots.
 * Weak: LeakSanitizer's runtime is there only in a program built with it,
 * whether or not libkatra was.
 */
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
extern void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

void kt__ring_unmap(struct kt__ring *r)
{
	if (__lsan_unregister_root_region)
		__lsan_unregister_root_region(r, kt__ring_page());
	if (r->size)
		munmap(r->prod.base, 2 * r->size);
	free(r->name);
	munmap(r, kt__ring_page());
}

/* Map @size bytes of @fd from @off at both halves of the span at @span. */
static int map_halves(uint8_t *span, uint64_t size, int fd, off_t off)
{
	/* MAP_POPULATE pre-faults the pages so a thread's first events do not
	 * take page faults; the second mapping shares the same pages. */
	for (int half = 0; half < 2; half++)
		if (mmap(span + half * size, size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, off) == MAP_FAILED)
			return -errno;
	/* A fork()ed child gets no mapping of the bytes at all: shared, they
	 * would let it write into this process's trace, and copying their
	 * page tables would slow every fork.  The child handler drops the
	 * rings that then point nowhere. */
	if (madvise(span, 2 * size, MADV_DONTFORK) < 0)
		return -errno;
	return 0;
}

/*
 * MAP_POPULATE fills the process's page tables, but under a hypervisor
 * that shadows them (this project's PVM guests, kernel 6.18) the host
 * builds its own entry for a page only at the first access to it: about
 * 6 us a page, so the producer's first pass over new bytes cost 2.5x the
 * emit (29 ns against 10.4 per 16-byte record; bench/RESULTS.md, session
 * 4d).  Reading a word of each page here pays that once, off the emit
 * path; elsewhere it is a load per page.  A read does it as well as a
 * store (measured) and cannot clash with a producer's.  The first half
 * only: the producer stores through it, and through the second only the
 * end of a record that crosses the ring's end.
 */
void kt__ring_touch(const struct kt__ring *r)
{
	uint64_t sum = 0;
	for (uint64_t off = 0; off < r->size; off += kt__ring_page())
		/* Relaxed: only the access matters, not the value or its
		 * order; a producer may be storing to the word (a rebind
		 * races it), so it is read as a racy word. */
		sum += kt__load_racy((const uint64_t *)(const void *)(r->prod.base + off));
	/* The loads must happen though their sum is never used. */
	__asm__ __volatile__("" ::"r"(sum));
}

static int page_flags(const kt__ring_place *pl)
{
	return pl->shared ? MAP_SHARED : MAP_PRIVATE;
}

/*
 * Create a ring: its struct in a page of its own, and @size bytes mapped
 * twice, back to back, inside one reserved span so nothing else can land
 * between the two halves.
 */
struct kt__ring *kt__ring_map(const kt__backing *b, uint64_t size)
{
	kt__ring_place pl;
	if (b->place(b, size, &pl))
		return NULL;
	struct kt__ring *r = mmap(NULL, kt__ring_page(), PROT_READ | PROT_WRITE, page_flags(&pl),
				  pl.page_fd, pl.page_off);
	if (r == MAP_FAILED)
		goto err_fd;
	uint8_t *span = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (span == MAP_FAILED)
		goto err_page;
	if (map_halves(span, size, pl.fd, pl.off)) {
		munmap(span, 2 * size);
		goto err_page;
	}
	/* The mappings keep the memory: a descriptor per thread would cost
	 * the host its own (EMFILE). */
	close(pl.fd);
	if (__lsan_register_root_region)
		__lsan_register_root_region(r, kt__ring_page());
	r->size = size;
	r->prod.base = span;
	r->prod.mask = size - 1;
	if (b->stamp)
		b->stamp(b, r, &pl);
	return r;
err_page:
	munmap(r, kt__ring_page());
err_fd:
	close(pl.fd);
	return NULL;
}

/*
 * A ring with no bytes, for a thread whose ring could not be made (ENOMEM,
 * EMFILE, ENOSPC, EFBIG): every record is too large for it, so refused
 * and counted under the thread's id like any other refusal, and the
 * summary stays exact.  Its page is anonymous: no backing knows of it.
 */
struct kt__ring *kt__ring_map_stub(void)
{
	struct kt__ring *r = mmap(NULL, kt__ring_page(), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	if (__lsan_register_root_region)
		__lsan_register_root_region(r, kt__ring_page());
	return r;
}

/*
 * With no consumer running: move @r onto new files of @b in place.  Its
 * page is copied into its new file and mapped over the old one; the bytes'
 * file is mapped over both halves.  The producer's pointers stay valid; a
 * record racing this may be lost, as any racing a session start.
 */
int kt__ring_rebind(struct kt__ring *r, const kt__backing *b)
{
	kt__ring_place pl;
	size_t page = kt__ring_page();
	if (!r->size)
		return 0; /* a stub has nothing to move */
	int rc = b->place(b, r->size, &pl);
	if (rc)
		return rc;
	ssize_t n = pwrite(pl.page_fd, r, page, pl.page_off);
	if (n != (ssize_t)page)
		rc = n < 0 ? -errno : -EIO;
	else if (mmap(r, page, PROT_READ | PROT_WRITE, page_flags(&pl) | MAP_FIXED, pl.page_fd,
		      pl.page_off) == MAP_FAILED)
		rc = -errno;
	else
		rc = map_halves(r->prod.base, r->size, pl.fd, pl.off);
	close(pl.fd);
	if (rc)
		return rc;
	/* New pages at the old addresses: the host's entries went with the
	 * old ones (a crash session's start, before any emit into it). */
	kt__ring_touch(r);
	if (b->stamp)
		b->stamp(b, r, &pl);
	return 0;
}

/*
 * fork() called from a signal handler that interrupted an emit: after the
 * handler the emit resumes, in the child too, and writes into its ring.
 * Give it private memory to finish in: a copy of the ring's page (it may
 * be a shared page of a backing's file) and fresh bytes.  The ring is then
 * left alone; it is the child's to leak.
 */
void kt__ring_make_private(struct kt__ring *r)
{
	size_t page = kt__ring_page();
	void *copy = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy != MAP_FAILED) {
		memcpy(copy, r, page);
		mremap(copy, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	}
	if (r->size)
		mmap(r->prod.base, 2 * r->size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

int kt__fd_high(int fd)
{
	if (fd < 0)
		return -errno;
	if (fd > 2)
		return fd;
	/* A daemon with 0-2 closed: its stderr (or a library's) would write
	 * into this file. */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int rc = high < 0 ? -errno : high;
	close(fd);
	return rc;
}

/* SIGXFSZ held off a host thread's write: ring/backing.h. */
void kt__xfsz_hold(kt__xfsz *x)
{
	sigset_t xfsz, pending;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &x->old);
	sigpending(&pending);
	x->had = sigismember(&pending, SIGXFSZ);
}

void kt__xfsz_release(kt__xfsz *x, int efbig)
{
	if (efbig && !x->had) {
		sigset_t xfsz;
		sigemptyset(&xfsz);
		sigaddset(&xfsz, SIGXFSZ);
		struct timespec now = { 0, 0 };
		sigtimedwait(&xfsz, NULL, &now);
	}
	pthread_sigmask(SIG_SETMASK, &x->old, NULL);
}

/*
 * Blocks for every byte, before anything maps them: a file left sparse
 * on a full tmpfs (/dev/shm) answers the first store to a page it cannot
 * back with SIGBUS in the emitting thread.  Reserved now, that is ENOSPC
 * here.  Past RLIMIT_FSIZE the kernel answers EFBIG and sends this
 * thread SIGXFSZ, whose default action ends the host: it stays blocked
 * here, and one it raised is taken back; one the host had pending stays.
 */
int kt__file_reserve(int fd, off_t off, off_t len)
{
	kt__xfsz x;
	kt__xfsz_hold(&x);
	int rc = -posix_fallocate(fd, off, len);
	kt__xfsz_release(&x, rc == -EFBIG);
	return rc;
}

/*
 * The default backing: one memfd holds the page at 0, mapped private so a
 * fork()ed child gets its own head and tail as it did of the heap struct
 * this replaced, then the bytes.
 */
static int memfd_place(const kt__backing *b, uint64_t size, kt__ring_place *out)
{
	(void)b;
	int fd = kt__fd_high(memfd_create("katra-ring", MFD_CLOEXEC));
	if (fd < 0)
		return fd;
	*out = (kt__ring_place){ .fd = fd, .off = (off_t)kt__ring_page(), .page_fd = fd };
	int rc = kt__file_reserve(fd, 0, out->off + (off_t)size);
	if (rc)
		close(fd);
	return rc;
}

const kt__backing kt__memfd_backing = { .place = memfd_place };

/*
 * Snapshot requests from outside the process (`katra snapshot PID`): a
 * flight session started with kt_session_options.listen accepts them on
 * a Unix socket in a directory only its user can enter, from processes of
 * that same user only (SO_PEERCRED).  One thread, katra's own, serves one
 * request at a time, and never touches a file someone else chose: it
 * writes the snapshot into a memfd of its own (memory: no write of it can
 * stall for good, as one to a FUSE file can) and hands that to the
 * client, who writes the file.  Every wait on a client is bounded
 * (KT__CTL_IO_S, KT__CTL_COPY_S) and ends at once when the session stops
 * (ctl_wake), so a client that stalls, or whose disk does, never holds up
 * the stop, a kt_name() or the process's exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "flush/session_impl.h"

#ifdef SO_PASSRIGHTS
#define KT_SO_PASSRIGHTS SO_PASSRIGHTS
#else
#define KT_SO_PASSRIGHTS 83 /* Linux 6.16's, where the headers lack it */
#endif

/* @name under @at, made 0700 if missing, opened without following a link
 * there, and refused unless it is a directory of ours closed to others. */
static int own_dir(int at, const char *name)
{
	if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	struct stat sb;
	if (fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* $XDG_RUNTIME_DIR, opened, when it is ours and closed to others: a root
 * process that kept a user's (su without -) must not use a directory
 * that user can swap.  Else -1. */
static int runtime_dir(void)
{
	const char *rt = secure_getenv("XDG_RUNTIME_DIR");
	if (!rt || rt[0] != '/')
		return -1;
	int fd = open(rt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd >= 0 && (fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 077))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int kt__control_dir(void)
{
	int rt = runtime_dir(), fd;
	if (rt >= 0) {
		fd = own_dir(rt, "katra");
		close(rt);
		return fd;
	}
	char name[32];
	snprintf(name, sizeof(name), "katra-%u", (unsigned)geteuid());
	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmp < 0)
		return -errno;
	fd = own_dir(tmp, name);
	close(tmp);
	return fd;
}

/* Process @pid's pid in its own PID namespace (the last of /proc's NSpid),
 * or @pid when /proc does not say. */
static long ns_pid(long pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	long v = pid;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		const char *last = strrchr(line, '\t');
		char *end;
		long n = last ? strtol(last + 1, &end, 10) : 0;
		if (n > 0)
			v = n;
		break;
	}
	if (f)
		fclose(f);
	return v;
}

int kt__control_name(long pid, char *buf, size_t cap)
{
	char path[64];
	struct stat sb;
	unsigned long long ns = 0;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/pid");
	if (stat(path, &sb) == 0)
		ns = (unsigned long long)sb.st_ino;
	long own = pid ? ns_pid(pid) : (long)getpid();
	int n = snprintf(buf, cap, "%llu-%ld.sock", ns, own);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int kt__control_at(int dirfd, const char *name, void *sockaddr_un)
{
	struct sockaddr_un *a = sockaddr_un;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if (n < 0 || (size_t)n >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	return (int)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
}

/* Wait until @c has @events or the session stops, up to @deadline (the
 * monotonic clock's ns).  1 ready, 0 not (time is up, or the stop). */
static int wait_for(const kt_session *s, int c, short events, uint64_t deadline)
{
	struct pollfd p[2] = { { c, events, 0 }, { s->ctl_wake, POLLIN, 0 } };
	for (;;) {
		uint64_t now = kt__mono_ns();
		if (now >= deadline)
			return 0;
		int was = kt__work_pause();
		int n = poll(p, 2, (int)((deadline - now + 999999) / 1000000));
		kt__work_resume(was);
		if (n < 0 && errno != EINTR)
			return 0;
		if (n > 0)
			return !p[1].revents && p[0].revents;
	}
}

/* Read one request into @req.  Its ancillary data is never taken: a
 * descriptor a client sends (the listener refuses them where the kernel
 * has SO_PASSRIGHTS) is dropped by the kernel, never installed here, so
 * no close() of ours runs its file's flush (a FUSE file's may never
 * return).  Versions 1 and 2, which bring the output file, are refused. */
static int read_request(kt_session *s, int c, kt__ctl_req *req)
{
	uint64_t words[KT__CTL_REQ_WORDS];
	struct iovec iov = { words, sizeof(words) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	memset(req, 0, sizeof(*req));
	req->fd = -1;
	if (!wait_for(s, c, POLLIN, kt__mono_ns() + KT__CTL_IO_S * 1000000000ull))
		return -ETIMEDOUT;
	ssize_t n = recvmsg(c, &m, MSG_DONTWAIT);
	if (n == (ssize_t)sizeof(words) &&
	    (words[0] == KT__CTL_MAGIC_V1 || words[0] == KT__CTL_MAGIC)) {
		req->version = words[0] == KT__CTL_MAGIC ? 2 : 1;
		return -EPROTONOSUPPORT;
	}
	return kt__ctl_request_parse((const uint8_t *)words, n > 0 ? (size_t)n : 0, NULL, 0,
				     m.msg_flags, req);
}

/* Send the reply (a version's words) with @mfd when it is not -1. */
static void reply(int c, unsigned version, const uint64_t *rep, int mfd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { (void *)rep,
			     (version == 1 ? KT__CTL_REP_WORDS_V1 : KT__CTL_REP_WORDS) * 8 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (mfd >= 0) {
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
	}
	/* Non-blocking: a reply fits an empty socket's buffer; a client that
	 * filled it is not waited for. */
	sendmsg(c, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The snapshot @req asks for, into a memfd of ours: 0 with *@mfd, or
 * -errno. */
static int take(kt_session *s, const kt__ctl_req *req, kt_snapshot_result *r, int *mfd)
{
	*mfd = memfd_create("katra-snapshot", MFD_CLOEXEC);
	if (*mfd < 0)
		return -errno;
	int rc = kt_session_snapshot(s, NULL, *mfd, req->max_age_ns, req->max_bytes, r);
	if (rc) {
		close(*mfd);
		*mfd = -1;
	}
	return rc;
}

static void serve(kt_session *s, int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid())
		return; /* another user: not a word */
	kt__ctl_req req;
	kt_snapshot_result r = { 0 };
	int mfd = -1, rc = read_request(s, c, &req);
	if (rc == -ETIMEDOUT)
		return;
	if (!rc)
		rc = take(s, &req, &r, &mfd);
	uint64_t vals[] = { (uint64_t)(int64_t)rc, r.window_start, r.window_end,
			    r.head_loss_ns, r.events, r.events_trimmed, r.bytes_lapped,
			    r.bytes_overwritten, r.bytes_on_disk, r.thread_count,
			    r.events_overwritten };
	_Static_assert(sizeof(vals) == KT__CTL_REP_WORDS * 8, "reply layout");
	_Static_assert(KT__CTL_REP_EVENTS_OVERWRITTEN == KT__CTL_REP_WORDS_V1, "appended");
	reply(c, req.version, vals, mfd);
	if (mfd < 0)
		return;
	/* The client copies, then says so (a byte, or its close).  Its copy
	 * of the descriptor keeps the memfd, so the memory is let go here,
	 * whatever the client does. */
	wait_for(s, c, POLLIN, kt__mono_ns() + KT__CTL_COPY_S * 1000000000ull);
	if (ftruncate(mfd, 0) < 0)
		rc = -errno; /* a memfd we made: not expected */
	close(mfd);
}

static void *control_main(void *arg)
{
	kt_session *s = arg;
	kt__work_adopt();
	/* Acquire pairs with kt__control_stop()'s release. */
	while (!kt__load_acquire(&s->ctl_stop)) {
		int was = kt__work_pause();
		int c = accept4(s->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
		kt__work_resume(was);
		if (c >= 0) {
			serve(s, c);
			close(c);
		} else if (errno != EINTR && errno != ECONNABORTED) {
			/* Out of descriptors or memory: try again shortly.
			 * The stop's shutdown() makes accept fail too, and
			 * the loop's test then ends it. */
			struct timespec nap = { 0, 10000000 };
			was = kt__work_pause();
			nanosleep(&nap, NULL);
			kt__work_resume(was);
		}
	}
	kt__work_end();
	return NULL;
}

/* Whether a process listens on @name in @dirfd: a connect() it takes (or
 * whose backlog is full).  Refused: a socket left by a process that
 * ended. */
static int listened(int dirfd, const char *name)
{
	struct sockaddr_un a;
	int len = kt__control_at(dirfd, name, &a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || len < 0) {
		if (fd >= 0)
			close(fd);
		return 1; /* cannot tell: never removed */
	}
	int rc = connect(fd, (struct sockaddr *)&a, (socklen_t)len), err = errno;
	close(fd);
	return rc == 0 || err == EAGAIN || err == EINPROGRESS;
}

/* Make, bind and listen on the socket: the listening descriptor, its
 * name's inode noted (the stop removes that file only), or -errno. */
static int bind_socket(kt_session *s)
{
	struct sockaddr_un a;
	struct stat sb;
	int len = kt__control_at(s->ctl_dir, s->ctl_name, &a);
	if (len < 0)
		return len;
	/* A socket of ours nobody listens on was left by an earlier process
	 * of our PID namespace with our pid: removed.  Anything else there
	 * (a live listener, another user's file) is left alone. */
	if (fstatat(s->ctl_dir, s->ctl_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(sb.st_mode) || sb.st_uid != geteuid() ||
		    listened(s->ctl_dir, s->ctl_name))
			return -EADDRINUSE;
		unlinkat(s->ctl_dir, s->ctl_name, 0);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if ((fd = kt__fd_high(fd)) < 0)
		return fd;
	/* No descriptor may be sent to us (inherited by the connections):
	 * the last close of one a client passed and let go of runs on our
	 * thread, and may wait for good (a TCP socket lingering on bytes
	 * nobody takes).  Kernels before 6.16 do not know the option. */
	int no = 0;
	setsockopt(fd, SOL_SOCKET, KT_SO_PASSRIGHTS, &no, sizeof(no));
	int rc = 0;
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)len) < 0)
		rc = -errno;
	else if (fstatat(s->ctl_dir, s->ctl_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		 listen(fd, 4) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	s->ctl_dev = sb.st_dev;
	s->ctl_ino = sb.st_ino;
	return fd;
}

/* Remove the socket if it is still the one we made. */
static void unlink_own(const kt_session *s)
{
	struct stat sb;
	if (fstatat(s->ctl_dir, s->ctl_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    sb.st_dev == s->ctl_dev && sb.st_ino == s->ctl_ino)
		unlinkat(s->ctl_dir, s->ctl_name, 0);
}

int kt__control_start(kt_session *s)
{
	int rc = kt__control_name(0, s->ctl_name, sizeof(s->ctl_name));
	if (rc)
		return rc;
	if ((s->ctl_dir = kt__control_dir()) < 0)
		return s->ctl_dir;
	s->ctl_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->ctl_wake < 0) {
		rc = -errno;
		close(s->ctl_dir);
		return rc;
	}
	int fd = bind_socket(s);
	if (fd < 0) {
		close(s->ctl_wake);
		close(s->ctl_dir);
		return fd;
	}
	s->ctl_fd = fd;
	if ((rc = kt__work_thread_start(&s->ctl_thread, control_main, s))) {
		kt__control_stop(s);
		return rc;
	}
	s->ctl_running = 1;
	return 0;
}

void kt__control_stop(kt_session *s)
{
	if (s->ctl_fd < 0)
		return;
	/* Release: the thread that sees the flag sees it for good. */
	kt__store_release(&s->ctl_stop, 1);
	/* Wakes an accept() in progress (it fails from now on), and any wait
	 * on a client. */
	shutdown(s->ctl_fd, SHUT_RDWR);
	uint64_t one = 1;
	if (write(s->ctl_wake, &one, sizeof(one)) < 0) {
		/* Only a full counter fails: the thread is woken already. */
	}
	if (s->ctl_running)
		pthread_join(s->ctl_thread, NULL);
	s->ctl_running = 0;
	close(s->ctl_fd);
	s->ctl_fd = -1;
	unlink_own(s);
	close(s->ctl_wake);
	close(s->ctl_dir);
}

void kt__control_fork_child(kt_session *s)
{
	/* The child has no thread to serve the socket, and must not remove
	 * it. */
	if (s->ctl_fd < 0)
		return;
	close(s->ctl_fd);
	close(s->ctl_wake);
	close(s->ctl_dir);
	s->ctl_fd = -1;
}

/*
 * Snapshot requests from outside the process (`katra snapshot PID`): a
 * flight session started with kt_session_options.listen accepts them on
 * a Unix socket in a directory only its user can enter, from processes of
 * that same user only (SO_PEERCRED), each request bringing the file to
 * write as a descriptor, so the traced process never opens a path someone
 * else chose.  One thread, katra's own, serves one request at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "flush/session_impl.h"

int kt__control_path(long pid, char *buf, size_t cap)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char dir[64];
	int n = rt && rt[0] == '/' && strlen(rt) < 40
			? snprintf(dir, sizeof(dir), "%s/katra", rt)
			: snprintf(dir, sizeof(dir), "/tmp/katra-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* Someone else's directory, or one others may enter, could hold
	 * their socket under our name: neither is used. */
	struct stat sb;
	if (lstat(dir, &sb) < 0)
		return -errno;
	if (!S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077))
		return -EPERM;
	n = snprintf(buf, cap, "%s/%ld.sock", dir, pid);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Read one request into @req: its numbers, and its file, kept open in
 * @req->fd (every other descriptor it brought is closed). */
static int read_request(int c, kt__ctl_req *req)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint64_t words[KT__CTL_REQ_WORDS];
	struct iovec iov = { words, sizeof(words) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
	int rc = kt__ctl_request_parse((const uint8_t *)words, n > 0 ? (size_t)n : 0,
				       n >= 0 ? (const uint8_t *)ctl.buf : NULL,
				       n >= 0 ? m.msg_controllen : 0, m.msg_flags, req);
	for (size_t i = 0; i < req->nfds && i < KT__CTL_FDS; i++)
		if (req->fds[i] != req->fd)
			close(req->fds[i]);
	if (rc)
		return rc;
	/* A FIFO or socket could stall the snapshot, and with it the
	 * session's stop: regular files only. */
	struct stat sb;
	if (fstat(req->fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return -EINVAL;
	return 0;
}

static void serve(kt_session *s, int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid())
		return; /* another user: not a word */
	/* A client that sends nothing, or reads nothing, is given up on. */
	struct timeval tv = { 2, 0 };
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	uint64_t rep[KT__CTL_REP_WORDS] = { 0 };
	kt__ctl_req req;
	int rc = read_request(c, &req);
	kt_snapshot_result r = { 0 };
	if (!rc)
		rc = kt_session_snapshot(s, NULL, req.fd, req.max_age_ns, req.max_bytes, &r);
	if (req.fd >= 0)
		close(req.fd);
	uint64_t vals[] = { (uint64_t)(int64_t)rc, r.window_start, r.window_end,
			    r.head_loss_ns, r.events, r.events_trimmed, r.bytes_lapped,
			    r.bytes_overwritten, r.bytes_on_disk, r.thread_count,
			    r.events_overwritten };
	_Static_assert(sizeof(vals) == sizeof(rep), "reply layout");
	_Static_assert(KT__CTL_REP_EVENTS_OVERWRITTEN == KT__CTL_REP_WORDS_V1, "appended");
	memcpy(rep, vals, sizeof(rep));
	/* A version 1 client reads exactly its own reply's words. */
	send(c, rep, (req.version == 1 ? KT__CTL_REP_WORDS_V1 : KT__CTL_REP_WORDS) * 8,
	     MSG_NOSIGNAL);
}

static void *control_main(void *arg)
{
	kt_session *s = arg;
	/* Acquire pairs with kt__control_stop()'s release. */
	while (!kt__load_acquire(&s->ctl_stop)) {
		int c = accept4(s->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0) {
			serve(s, c);
			close(c);
		} else if (errno != EINTR && errno != ECONNABORTED) {
			/* Out of descriptors or memory: try again shortly.
			 * The stop's shutdown() makes accept fail too, and
			 * the loop's test then ends it. */
			struct timespec nap = { 0, 10000000 };
			nanosleep(&nap, NULL);
		}
	}
	return NULL;
}

int kt__control_start(kt_session *s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int rc = kt__control_path((long)getpid(), a.sun_path, sizeof(a.sun_path));
	if (rc)
		return rc;
	/* A socket left by an earlier process with our pid, ours. */
	struct stat sb;
	if (lstat(a.sun_path, &sb) == 0 && S_ISSOCK(sb.st_mode) && sb.st_uid == geteuid())
		unlink(a.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if ((fd = kt__fd_high(fd)) < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	s->ctl_fd = fd;
	snprintf(s->ctl_path, sizeof(s->ctl_path), "%s", a.sun_path);
	if ((rc = kt__thread_start(&s->ctl_thread, control_main, s))) {
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
	/* Wakes an accept() in progress (it fails from now on). */
	shutdown(s->ctl_fd, SHUT_RDWR);
	if (s->ctl_running)
		pthread_join(s->ctl_thread, NULL);
	s->ctl_running = 0;
	close(s->ctl_fd);
	s->ctl_fd = -1;
	unlink(s->ctl_path);
}

/*
 * cmd_snapshot.c - `katra snapshot PID [--out FILE] [--max-age NS]
 * [--max-bytes B]`: ask a running process's flight session for a snapshot.
 *
 * The process must be the caller's own user's (checked here on /proc, and
 * again by the process on the socket's peer credentials), and must have
 * started its flight session with kt_session_options.listen.  The one
 * who answers on the socket must be that process (SO_PEERCRED): a socket
 * of another PID namespace's process is refused.  The process writes the
 * snapshot into memory of its own and hands it over (flush/flush.h); the
 * output is created here, beside its name with O_EXCL (tools/pipeline/outfile.h),
 * and written here: the traced process never opens, nor writes, a file
 * someone else chose, so a file that stalls stalls this command only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <katra/error.h>
#include "flush/flush.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/cmd/snapshot.h"
#include "tools/pipeline/outfile.h"


static int opt_path(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	(void)cmd;
	(void)o;
	*(const char **)dst = value;
	return 0;
}

static const struct opt snapshot_opts[] = {
	{ "--out", opt_path, offsetof(struct snap_args, out), .wants = "a file" },
	{ "--max-age", opt_ns, offsetof(struct snap_args, max_age_ns), .wants = "nanoseconds" },
	{ "--max-bytes", opt_ns, offsetof(struct snap_args, max_bytes), .wants = "bytes" },
	{ "--timeout", opt_ns, offsetof(struct snap_args, timeout_ns), .wants = "nanoseconds" },
	{ "--all", NULL, offsetof(struct snap_args, all), .flag = 1 },
	{ .name = NULL }
};

#define SNAPSHOT_HELP                                                                         \
	"usage: katra snapshot PID|--all [--out FILE] [--max-age NS] [--max-bytes B]\n"       \
	"                              [--timeout NS]\n"                                        \
	"Asks process PID, of your own user, running a flight session started\n"              \
	"with listen set, to write the newest window of its threads' rings to\n"              \
	"FILE (default snapshot-PID.katra), no older than NS and no more than B\n"            \
	"bytes of events.  Another user's process is refused.  Prints the events\n"           \
	"written, their threads, the file's bytes, the head loss and the events\n"            \
	"the rings had overwritten (older than the window).\n"                                \
	"When PID has no flight session but processes under it do (the pid of\n"             \
	"`katra record --flight`), each of them is asked and FILE is one trace of\n"          \
	"them all (as katra merge writes it).  --all asks every process of yours\n"           \
	"with a flight session listening (default FILE snapshot-all.katra).\n"                \
	"Several processes are asked at once, so their windows end together.\n"              \
	"A process that takes NS (default 30 s) to take the connection or to\n"               \
	"answer is given up (said; the others are kept).\n"

static const struct opts_spec snapshot_spec = {
	.cmd = "snapshot", .npos = 1, .unknown = "unknown option or missing value",
	.opts = snapshot_opts, .help = SNAPSHOT_HELP,
};

/* With --all: no PID. */
static const struct opts_spec snapshot_all_spec = {
	.cmd = "snapshot", .npos = 0, .unknown = "unknown option or missing value",
	.opts = snapshot_opts, .help = SNAPSHOT_HELP,
};

/* PID as a number, and the process ours: 0, or the exit status said. */
static int check_pid(const char *word, long *pid)
{
	char *end, proc[64];
	errno = 0;
	*pid = strtol(word, &end, 10);
	if (errno || end == word || *end || *pid <= 0)
		return usage_error("snapshot: PID wants a process id, not '%s'", word);
	struct stat sb;
	snprintf(proc, sizeof(proc), "/proc/%ld", *pid);
	if (stat(proc, &sb) < 0) {
		fprintf(stderr, "katra snapshot: no process %ld\n", *pid);
		return EXIT_BAD;
	}
	if (sb.st_uid != geteuid()) {
		fprintf(stderr, "katra snapshot: process %ld belongs to another user: refused\n",
			*pid);
		return EXIT_BAD;
	}
	return 0;
}

/* One line said as @a asks: into a->said (the first one only, its
 * newline dropped), else to @to. */
__attribute__((format(printf, 3, 4))) static void snap_say(const struct snap_args *a,
							   FILE *to, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!a->said)
		vfprintf(to, fmt, ap);
	else if (a->said_cap && !a->said[0]) {
		vsnprintf(a->said, a->said_cap, fmt, ap);
		a->said[strcspn(a->said, "\n")] = 0;
	}
	va_end(ap);
}

/* The wait of @a's timeout, in seconds, for what is said. */
static double wait_s(const struct snap_args *a)
{
	return (double)(a->timeout_ns ? a->timeout_ns : SNAPSHOT_TIMEOUT_NS) / 1e9;
}

/* A connect() to a full backlog (SO_SNDTIMEO) and each receive
 * (SO_RCVTIMEO) on @fd wait @a's timeout at most, then fail with EAGAIN.
 * 0 or -1 (errno). */
static int bound(int fd, const struct snap_args *a)
{
	uint64_t ns = a->timeout_ns ? a->timeout_ns : SNAPSHOT_TIMEOUT_NS;
	struct timeval tv = { .tv_sec = (time_t)(ns / 1000000000u),
			      .tv_usec = (suseconds_t)(ns % 1000000000u / 1000u) };
	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1; /* {0, 0} would mean no bound */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* Connect to @pid's socket, and check that @pid is who answers: a
 * descriptor, or -1 with the reason said. */
static int dial(long pid, int quiet, const struct snap_args *args)
{
	struct sockaddr_un a;
	struct stat sb;
	char name[64];
	int fd = -1, len = 0, dir = kt__control_dir(), rc = dir < 0 ? dir : 0;
	if (!rc)
		rc = kt__control_name(pid, name, sizeof(name));
	if (!rc && (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(sb.st_mode) ||
		    sb.st_uid != geteuid()))
		rc = -ENOENT;
	if (!rc && (len = kt__control_at(dir, name, &a)) < 0)
		rc = len;
	if (!rc && ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		    bound(fd, args) < 0 || connect(fd, (struct sockaddr *)&a, (socklen_t)len) < 0))
		rc = -errno;
	/* A katra before issue 26 named its socket PID.sock. */
	char old[32];
	snprintf(old, sizeof(old), "%ld.sock", pid);
	int older = rc == -ENOENT && fstatat(dir, old, &sb, AT_SYMLINK_NOFOLLOW) == 0;
	if (dir >= 0)
		close(dir);
	if (quiet && (rc || older)) {
		/* said by the caller */
	} else if (older) {
		snap_say(args, stderr,
			 "katra snapshot: process %ld speaks an older snapshot protocol: ask "
			 "with its own katra\n", pid);
	} else if (rc == -EAGAIN) {
		snap_say(args, stderr,
			 "katra snapshot: process %ld took no connection in %g s: given up\n", pid,
			 wait_s(args));
	} else if (rc) {
		snap_say(args, stderr,
			 "katra snapshot: process %ld has no flight session listening: %s\n", pid,
			 kt_strerror(rc));
	}
	if (rc || older) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* The socket's name says which process it is; the kernel says who
	 * listens on it (its pid as this process sees it). */
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || cr.pid != (pid_t)pid ||
	    cr.uid != geteuid()) {
		snap_say(args, stderr,
			 "katra snapshot: the socket named for process %ld is not process "
			 "%ld's: refused\n", pid, pid);
		close(fd);
		return -1;
	}
	return fd;
}

/* The reply to the request sent on @c into @rep, and the snapshot's memfd
 * into *@mfd.  0 or -errno. */
static int answer(int c, uint64_t rep[KT__CTL_REP_WORDS], int *mfd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	size_t got = 0;
	*mfd = -1;
	while (got < KT__CTL_REP_WORDS * 8) {
		struct iovec iov = { (char *)rep + got, KT__CTL_REP_WORDS * 8 - got };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		ssize_t n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -ETIME; /* SO_RCVTIMEO passed (bound()) */
		if (n < 0)
			return -errno;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
			for (size_t i = 0; h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
			     i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (*mfd < 0)
					*mfd = fd;
				else
					close(fd);
			}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	/* A process whose katra knows versions 1 and 2 only refuses the
	 * request as not parsed. */
	if (got == KT__CTL_REP_WORDS * 8 && (int)(int64_t)rep[0] == -EINVAL && *mfd < 0)
		return -EPROTO;
	if (got < KT__CTL_REP_WORDS * 8)
		return -ECONNRESET;
	if (rep[0])
		return (int)(int64_t)rep[0];
	return *mfd < 0 ? -EPROTO : 0;
}

/* Copy the snapshot's @len bytes from @in (the process's memfd) to @out. */
static int copy(int in, int out, uint64_t len)
{
	/* Memory (a memfd answers F_GET_SEALS; a file on a mount that
	 * stalls does not): the copy's reads cannot stall. */
	struct stat sb;
	if (fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode) || fcntl(in, F_GET_SEALS) < 0)
		return -EPROTO;
	enum { BUF = 1 << 20 };
	char *buf = malloc(BUF);
	int rc = buf ? 0 : -ENOMEM;
	for (uint64_t off = 0; !rc && off < len;) {
		size_t want = len - off < BUF ? (size_t)(len - off) : BUF;
		ssize_t n = pread(in, buf, want, (off_t)off);
		if (n <= 0) {
			/* The process let it go (KT__CTL_COPY_S passed). */
			rc = n < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		for (ssize_t done = 0, w; !rc && done < n; done += w)
			if ((w = write(out, buf + done, (size_t)(n - done))) < 0)
				rc = -errno;
		off += (uint64_t)n;
	}
	free(buf);
	return rc;
}

int snapshot_ask(long pid, const struct snap_args *a, int quiet)
{
	int c = dial(pid, quiet, a);
	if (c < 0)
		return -1;
	uint64_t req[KT__CTL_REQ_WORDS] = { KT__CTL_MAGIC_V3, a->max_age_ns, a->max_bytes };
	if (send(c, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		snap_say(a, stderr, "katra snapshot: process %ld: %s\n", pid, strerror(errno));
		close(c);
		return -1;
	}
	return c;
}

void snapshot_say_failed(long pid, int rc, const struct snap_args *a)
{
	if (rc == -ETIME)
		snap_say(a, stderr, "katra snapshot: process %ld did not answer in %g s: given up\n",
			 pid, wait_s(a));
	else
		snap_say(a, stderr, "katra snapshot: %s\n",
			 rc == -EPROTO ? "process speaks an older snapshot protocol: ask "
					 "with its own katra"
				       : kt_strerror(rc));
}

int snapshot_get(long pid, int c, const char *out, const struct snap_args *a, int quiet)
{
	outfile o = { .fd = -1 };
	uint64_t rep[KT__CTL_REP_WORDS] = { 0 };
	int mfd = -1, rc;
	if (!(rc = outfile_open(&o, out, NULL)) && !(rc = answer(c, rep, &mfd)))
		rc = copy(mfd, o.fd, rep[KT__CTL_REP_BYTES]);
	/* Done with the memfd: the process may let it go. */
	send(c, "", 1, MSG_NOSIGNAL);
	if (mfd >= 0)
		close(mfd);
	close(c);
	if (!rc)
		rc = outfile_commit(&o);
	if (rc) {
		outfile_abort(&o);
		snapshot_say_failed(pid, rc, a);
		return EXIT_BAD;
	}
	char pre[32] = "";
	if (a->all || quiet)
		snprintf(pre, sizeof(pre), "pid %ld: ", pid);
	snap_say(a, stdout,
		 "%s%" PRIu64 " events of %" PRIu64 " threads, %" PRIu64 " bytes; head loss %" PRIu64
		 " ns; %" PRIu64 " events overwritten\n",
		 pre, rep[4], rep[9], rep[8], rep[3], rep[KT__CTL_REP_EVENTS_OVERWRITTEN]);
	return EXIT_OK;
}

int snapshot_take(long pid, const char *out, const struct snap_args *a, int quiet)
{
	int c = snapshot_ask(pid, a, quiet);
	return c < 0 ? EXIT_BAD : snapshot_get(pid, c, out, a, quiet);
}

int cmd_snapshot(int argc, char **argv)
{
	struct snap_args a = { 0 };
	const char *word = NULL;
	long pid;
	char def[64];
	int all = 0;
	for (int i = 1; i < argc; i++)
		all |= !strcmp(argv[i], "--all");
	int rc = opts_parse(all ? &snapshot_all_spec : &snapshot_spec, argc, argv, &a, &word);
	if (rc != OPTS_GO)
		return rc;
	if (all)
		return snapshot_many(0, a.out ? a.out : "snapshot-all.katra", &a);
	if ((rc = check_pid(word, &pid)))
		return rc;
	snprintf(def, sizeof(def), "snapshot-%ld.katra", pid);
	/* A pid with no flight session of its own, whose descendants have:
	 * katra record --flight's. */
	if (!snapshot_listens(pid) && snapshot_has_listeners(pid))
		return snapshot_many(pid, a.out ? a.out : def, &a);
	return snapshot_take(pid, a.out ? a.out : def, &a, 0);
}

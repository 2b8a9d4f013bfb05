/*
 * cmd_snapshot.c - `katra snapshot PID [--out FILE] [--max-age NS]
 * [--max-bytes B]`: ask a running process's flight session for a snapshot.
 *
 * The process must be the caller's own user's (checked here on /proc, and
 * again by the process on the socket's peer credentials), and must have
 * started its flight session with kt_session_options.listen.  The output
 * is created here, beside its name with O_EXCL (tools/outfile.h), and only
 * its descriptor is handed over: the traced process never opens a path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <katra/error.h>
#include "flush/flush.h"
#include "tools/cli.h"
#include "tools/cmd.h"
#include "tools/opts.h"
#include "tools/outfile.h"

struct snap_args {
	const char *out;
	uint64_t max_age_ns, max_bytes;
};

static int opt_path(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	(void)cmd;
	(void)o;
	*(const char **)dst = value;
	return 0;
}

static const struct opts_spec snapshot_spec = {
	.cmd = "snapshot", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "--out", opt_path, offsetof(struct snap_args, out), .wants = "a file" },
		{ "--max-age", opt_ns, offsetof(struct snap_args, max_age_ns),
		  .wants = "nanoseconds" },
		{ "--max-bytes", opt_ns, offsetof(struct snap_args, max_bytes), .wants = "bytes" },
		{ .name = NULL } },
	.help = "usage: katra snapshot PID [--out FILE] [--max-age NS] [--max-bytes B]\n"
		"Asks process PID, of your own user, running a flight session started\n"
		"with listen set, to write the newest window of its threads' rings to\n"
		"FILE (default snapshot-PID.katra), no older than NS and no more than B\n"
		"bytes of events.  Another user's process is refused.  Prints the events\n"
		"written, their threads, the file's bytes, the head loss and the events\n"
		"the rings had overwritten (older than the window).\n",
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

/* Connect to @pid's socket: a descriptor, or -1 with the reason said. */
static int dial(long pid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat sb;
	int rc = kt__control_path(pid, a.sun_path, sizeof(a.sun_path));
	if (!rc && (lstat(a.sun_path, &sb) < 0 || !S_ISSOCK(sb.st_mode) || sb.st_uid != geteuid()))
		rc = -ENOENT;
	int fd = rc ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!rc && (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0))
		rc = -errno;
	if (rc) {
		fprintf(stderr, "katra snapshot: process %ld has no flight session listening: %s\n",
			pid, kt_strerror(rc));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Send the request with @out_fd; the reply into @rep.  0 or -errno. */
static int ask(int c, const struct snap_args *a, int out_fd, uint64_t rep[KT__CTL_REP_WORDS])
{
	uint64_t req[KT__CTL_REQ_WORDS] = { KT__CTL_MAGIC, a->max_age_ns, a->max_bytes };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { req, sizeof(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &out_fd, sizeof(int));
	if (sendmsg(c, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		return -errno;
	size_t got = 0;
	while (got < KT__CTL_REP_WORDS * 8) {
		ssize_t n = recv(c, (char *)rep + got, KT__CTL_REP_WORDS * 8 - got, 0);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	/* A process whose katra knows version 1 only refuses the request
	 * with a version 1 reply. */
	if (got == KT__CTL_REP_WORDS_V1 * 8 && (int)(int64_t)rep[0] == -EINVAL)
		return -EPROTO;
	return got < KT__CTL_REP_WORDS * 8 ? -ECONNRESET : (int)(int64_t)rep[0];
}

int cmd_snapshot(int argc, char **argv)
{
	struct snap_args a = { 0 };
	const char *word;
	long pid;
	char def[64];
	int rc = opts_parse(&snapshot_spec, argc, argv, &a, &word);
	if (rc != OPTS_GO)
		return rc;
	if ((rc = check_pid(word, &pid)))
		return rc;
	snprintf(def, sizeof(def), "snapshot-%ld.katra", pid);
	int c = dial(pid);
	if (c < 0)
		return EXIT_BAD;
	outfile o = { .fd = -1 };
	uint64_t rep[KT__CTL_REP_WORDS] = { 0 };
	const char *out = a.out ? a.out : def;
	if (!(rc = outfile_open(&o, out, NULL)) && !(rc = ask(c, &a, o.fd, rep)))
		rc = outfile_commit(&o);
	close(c);
	if (rc) {
		outfile_abort(&o);
		fprintf(stderr, "katra snapshot: %s\n",
			rc == -EPROTO ? "process speaks an older snapshot protocol: ask with its "
					"own katra"
				      : kt_strerror(rc));
		return EXIT_BAD;
	}
	printf("%" PRIu64 " events of %" PRIu64 " threads, %" PRIu64 " bytes; head loss %" PRIu64
	       " ns; %" PRIu64 " events overwritten\n",
	       rep[4], rep[9], rep[8], rep[3], rep[KT__CTL_REP_EVENTS_OVERWRITTEN]);
	return EXIT_OK;
}

/*
 * outfile.c - create outputs with O_EXCL beside their final name, rename
 * when complete.  outfile.h says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tools/outfile.h"

enum { TMP_TRIES = 16 };

/*
 * Paths under /dev and /proc (/dev/stdout, /dev/fd/N, /proc/self/fd/N) name
 * an open file of this process or a device: they are written in place, as
 * the shell would.  Nobody else can plant a name there - but in /dev/shm,
 * a tmpfs anyone may create names in: its files are outputs like others.
 */
static int system_path(const char *path)
{
	if (!strncmp(path, "/dev/shm/", 9))
		return 0;
	return !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6);
}

static int open_direct(outfile *o, const char *path)
{
	o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0)
		return -errno;
	o->direct = 1;
	if (!(o->path = strdup(path))) {
		outfile_abort(o);
		return -ENOMEM;
	}
	return 0;
}

static int open_tmp(outfile *o, const char *path)
{
	for (int i = 0; i < TMP_TRIES; i++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			rnd = (uint64_t)getpid() << 20 ^ (uint64_t)i;
		free(o->tmp);
		if (asprintf(&o->tmp, "%s.tmp-%016" PRIx64, path, rnd) < 0) {
			o->tmp = NULL;
			return -ENOMEM;
		}
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (o->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	int err = -errno;
	free(o->tmp);
	o->tmp = NULL;
	return err;
}

int outfile_open(outfile *o, const char *path, const struct stat *in)
{
	*o = (outfile){ .fd = -1 };
	struct stat sb;
	int exists = stat(path, &sb) == 0;
	if (exists && in && sb.st_dev == in->st_dev && sb.st_ino == in->st_ino)
		return -EEXIST;
	if (exists && S_ISDIR(sb.st_mode))
		return -EISDIR;
	/* A FIFO someone else made where the output goes (in /tmp, say)
	 * would hand them the output, or hang us until they read. */
	if (exists && S_ISFIFO(sb.st_mode) && sb.st_uid != geteuid() && !system_path(path))
		return -EPERM;
	if (exists && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) ||
		       (S_ISREG(sb.st_mode) && system_path(path))))
		return open_direct(o, path);
	if (exists && !S_ISREG(sb.st_mode))
		return -EINVAL;
	int rc = open_tmp(o, path);
	if (rc == 0 && !(o->path = strdup(path)))
		rc = -ENOMEM;
	if (rc < 0)
		outfile_abort(o);
	return rc;
}

int outfile_commit(outfile *o)
{
	int rc = 0;
	if (o->fd >= 0 && close(o->fd) < 0)
		rc = -errno;
	o->fd = -1;
	if (rc == 0 && o->tmp && rename(o->tmp, o->path) < 0)
		rc = -errno;
	if (rc == 0) {
		free(o->tmp);
		o->tmp = NULL;
	}
	outfile_abort(o);
	return rc;
}

void outfile_abort(outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}

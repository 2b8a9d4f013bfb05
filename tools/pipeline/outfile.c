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

#include "tools/pipeline/outfile.h"

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

/*
 * The name checked must be the file opened: a name swapped between the
 * check and open() (for a hard link to someone's file, say) is refused
 * before a byte is written.  open() without O_TRUNC changed nothing.
 */
static int same_file(int fd, const struct stat *want)
{
	struct stat got;
	if (fstat(fd, &got) < 0)
		return -errno;
	if (got.st_dev != want->st_dev || got.st_ino != want->st_ino ||
	    (got.st_mode & S_IFMT) != (want->st_mode & S_IFMT))
		return -ESTALE;
	return 0;
}

static int open_direct(outfile *o, const char *path, const struct stat *sb, int follow)
{
	o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (o->fd < 0)
		return -errno;
	int rc = same_file(o->fd, sb);
	o->direct = 1;
	if (rc == 0 && !(o->path = strdup(path)))
		rc = -ENOMEM;
	if (rc < 0)
		outfile_abort(o);
	return rc;
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

/* Does @path (followed: a link to the input counts) name the input @in? */
static int names_input(const char *path, const struct stat *in)
{
	struct stat sb;
	return in && stat(path, &sb) == 0 && sb.st_dev == in->st_dev && sb.st_ino == in->st_ino;
}

int outfile_open(outfile *o, const char *path, const struct stat *in)
{
	*o = (outfile){ .fd = -1 };
	int sys = system_path(path);
	/* Only /dev and /proc names are followed (/dev/stdout is a link and
	 * nobody plants names there); anywhere else a link at @path is
	 * replaced by the rename, never written through. */
	struct stat sb;
	int exists = (sys ? stat(path, &sb) : lstat(path, &sb)) == 0;
	if (names_input(path, in))
		return -EEXIST;
	if (exists && S_ISDIR(sb.st_mode))
		return -EISDIR;
	/* A FIFO someone else made where the output goes (in /tmp, say)
	 * would hand them the output, or hang us until they read. */
	if (exists && S_ISFIFO(sb.st_mode) && sb.st_uid != geteuid() && !sys)
		return -EPERM;
	if (exists && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) ||
		       (S_ISREG(sb.st_mode) && sys)))
		return open_direct(o, path, &sb, sys);
	if (exists && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
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

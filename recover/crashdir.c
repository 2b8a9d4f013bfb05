/*
 * Opening a crash directory that someone else may have planted, and
 * listing the leftovers of dead processes; recover/crashdir.h says what is
 * trusted and why.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recover/crashdir.h"

/* Set @why (when there is room) to @text; return @rc. */
static int refuse(char *why, size_t cap, int rc, const char *text)
{
	if (cap)
		snprintf(why, cap, "%s", text);
	return rc;
}

/* The same for a failed call: its errno, said. */
static int failed(char *why, size_t cap)
{
	int err = errno;
	return refuse(why, cap, -err, strerror(err));
}

/* Why @sb is not what recover reads as a @kind (S_IFREG or S_IFDIR); NULL
 * when it is.  Others could change a file they may write while it is
 * read, so a file or directory writable by them is refused too. */
static const char *refusal(const struct stat *sb, mode_t kind)
{
	mode_t type = sb->st_mode & S_IFMT;
	if (type != kind)
		return type == S_IFLNK    ? "a symbolic link: not followed"
		       : type == S_IFIFO  ? "a FIFO: not read"
		       : type == S_IFDIR  ? "a directory, not a file: not read"
		       : kind == S_IFDIR  ? "not a directory"
					  : "not a regular file: not read";
	if (sb->st_uid != geteuid())
		return "owned by another user: not read";
	if (sb->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by other users: not trusted";
	return NULL;
}

/*
 * Open @name in directory @dfd as a @kind, checked by refusal() before it
 * is opened (so a FIFO or device is never opened) and again after (so a
 * file swapped in between is caught).  Return: the fd, or -errno with
 * @why set.
 */
static int open_checked(int dfd, const char *name, mode_t kind, struct stat *sb, char *why,
			size_t cap)
{
	struct stat pre;
	if (fstatat(dfd, name, &pre, AT_SYMLINK_NOFOLLOW) < 0)
		return failed(why, cap);
	const char *bad = refusal(&pre, kind);
	if (bad)
		return refuse(why, cap, S_ISLNK(pre.st_mode) ? -ELOOP : -EPERM, bad);
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int fd = openat(dfd, name, flags | (kind == S_IFDIR ? O_DIRECTORY : 0));
	if (fd < 0)
		return failed(why, cap);
	if (fstat(fd, sb) < 0 || sb->st_dev != pre.st_dev || sb->st_ino != pre.st_ino ||
	    refusal(sb, kind)) {
		close(fd);
		return refuse(why, cap, -EAGAIN, "replaced while it was opened: not read");
	}
	return fd;
}

int kt__crashdir_open(kt__crashdir *d, int at, const char *name, const char *path, char *why,
		  size_t cap)
{
	d->fd = -1;
	d->path = path;
	/* "dir/" would follow a symbolic link at dir: drop trailing slashes. */
	size_t n = strlen(name);
	while (n > 1 && name[n - 1] == '/')
		n--;
	char *copy = strndup(name, n);
	if (!copy)
		return refuse(why, cap, -ENOMEM, strerror(ENOMEM));
	struct stat sb;
	int fd = open_checked(at, copy, S_IFDIR, &sb, why, cap);
	free(copy);
	if (fd < 0)
		return fd;
	d->fd = fd;
	return 0;
}

void kt__crashdir_close(kt__crashdir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int kt__crashdir_file(const kt__crashdir *d, const char *name, struct stat *sb, char *why,
		      size_t cap)
{
	return open_checked(d->fd, name, S_IFREG, sb, why, cap);
}

/* One component of a path, at most NAME_MAX bytes: into @name; returns
 * its length, 0 for none, -1 when too long. */
static long component(const char **p, char name[NAME_MAX + 1])
{
	while (**p == '/')
		(*p)++;
	size_t n = strcspn(*p, "/");
	if (n > NAME_MAX)
		return -1;
	memcpy(name, *p, n);
	name[n] = 0;
	*p += n;
	return (long)n;
}

int kt__crashdir_trace(const char *path, struct stat *sb, char *why, size_t cap)
{
	if (path[0] != '/')
		return refuse(why, cap, -EINVAL, "not an absolute path: not followed");
	int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return failed(why, cap);
	for (const char *p = path;;) {
		char name[NAME_MAX + 1];
		long n = component(&p, name);
		int rc = n < 0 ? refuse(why, cap, -ENAMETOOLONG, "a name in it is too long")
			 : n == 0 ? refuse(why, cap, -EISDIR, "names a directory, not a file")
			 : !strcmp(name, ".") || !strcmp(name, "..")
				 ? refuse(why, cap, -EINVAL, "'.' or '..' in it: not followed")
				 : 0;
		if (rc == 0 && !*p) /* the file itself */
			rc = open_checked(dfd, name, S_IFREG, sb, why, cap);
		else if (rc == 0 && (rc = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC)) < 0)
			rc = errno != ENOTDIR ? failed(why, cap)
			     : refuse(why, cap, -ENOTDIR, "a symbolic link or a file where a "
				      "directory should be: not followed");
		close(dfd);
		if (rc < 0 || !*p)
			return rc;
		dfd = rc;
	}
}

int kt__crashdir_header(int fd, kt__ctl *c, char *why, size_t cap)
{
	uint8_t head[KT__CTL_HEADER];
	ssize_t n = pread(fd, head, sizeof(head), 0);
	if (n < 0) {
		memset(c, 0, sizeof(*c));
		return failed(why, cap);
	}
	return kt__ctl_parse(head, (size_t)n, c, why, cap);
}

/* The pid holding the control file's lock, 0 if none holds it. */
static long lock_holder(int fd)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	if (fcntl(fd, F_GETLK, &lk) < 0 || lk.l_type == F_UNLCK)
		return 0;
	return lk.l_pid > 0 ? lk.l_pid : -1;
}

long kt__crashdir_alive(int fd, const kt__ctl *c, int usable)
{
	long holder = lock_holder(fd);
	if (holder)
		return holder;
	if (!usable || c->pid == 0 || c->pid > INT_MAX)
		return 0;
	long pid = (long)c->pid;
	/* Our own lock is not reported to us; without a start time, a header
	 * naming us is ours. */
	if (!c->start_time)
		return pid == (long)getpid() ? pid : 0;
	uint64_t start;
	uint8_t boot[16];
	int rc = kt__proc_identity(pid, &start, boot);
	if (rc == -ESRCH)
		return 0;
	/* A process /proc will not describe may be the writer: leave it. */
	if (rc)
		return pid;
	return start == c->start_time && !memcmp(boot, c->boot_id, sizeof(boot)) ? pid : 0;
}

/* One katra-* entry of a listing: 1 listed, 0 alive, -1 not ours to
 * list. */
static int list_one(int pfd, const char *name,
		    void (*fn)(void *ctx, const char *name, uint64_t pid, const char *trace),
		    void *ctx)
{
	kt__crashdir cd;
	struct stat sb;
	if (kt__crashdir_open(&cd, pfd, name, name, NULL, 0) < 0)
		return -1;
	int fd = kt__crashdir_file(&cd, "control", &sb, NULL, 0);
	kt__crashdir_close(&cd);
	if (fd < 0)
		return -1;
	kt__ctl c;
	int rc = kt__crashdir_header(fd, &c, NULL, 0);
	long alive = kt__crashdir_alive(fd, &c, rc >= 0);
	close(fd);
	if (alive)
		return 0;
	fn(ctx, name, rc >= 0 ? c.pid : 0, rc >= 0 ? c.trace_path : "");
	return 1;
}

long kt__recover_list(const char *parent,
		      void (*fn)(void *ctx, const char *name, uint64_t pid, const char *trace),
		      void *ctx, unsigned long *skipped)
{
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	DIR *d = pfd < 0 ? NULL : fdopendir(pfd);
	*skipped = 0;
	if (!d) {
		int err = errno;
		if (pfd >= 0)
			close(pfd);
		return -err;
	}
	long found = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "katra-", 6))
			continue;
		int rc = list_one(pfd, e->d_name, fn, ctx);
		found += rc > 0;
		*skipped += rc < 0;
	}
	closedir(d);
	return found;
}

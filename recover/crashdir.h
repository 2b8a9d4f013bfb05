/*
 * recover/crashdir.h - private to recover/: what `katra recover` trusts in
 * a crash directory: nothing it has not checked.  Anyone may plant a
 * katra-<pid> directory where crash files go (/dev/shm is writable by
 * all), and recover often runs as root, so every file is opened relative
 * to the directory's fd, without following a symbolic link, without
 * blocking on a FIFO, and only when it is a regular file (or directory)
 * owned by the caller.  A refused file is named with the reason, never
 * with its size or contents.
 *
 * Single-threaded, like the command.
 */
#ifndef KATRA_RECOVER_CRASHDIR_H
#define KATRA_RECOVER_CRASHDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "recover/crash.h"

typedef struct kt__crashdir {
	int fd;                  /* the directory; -1 when closed */
	const char *path;        /* as the user typed it, for messages */
} kt__crashdir;

/*
 * kt__crashdir_open - open @name, relative to @at (AT_FDCWD, or a directory
 * fd), as a crash directory: not a symbolic link, a directory owned by the
 * caller and writable by nobody else.  @d->path is set to @path.
 * Return: 0; or -errno with @why (a phrase: "a symbolic link: not
 * followed") saying why not.
 */
int kt__crashdir_open(kt__crashdir *d, int at, const char *name, const char *path, char *why,
		      size_t cap);

/* kt__crashdir_close - close @d's fd; safe on a closed one. */
void kt__crashdir_close(kt__crashdir *d);

/*
 * kt__crashdir_file - open the file @name of @d for reading: a regular
 * file owned by the caller, not reached through a symbolic link; never
 * blocks.
 * Return: the fd (close-on-exec), with its stat in *@sb; or -errno with
 * @why set.
 */
int kt__crashdir_file(const kt__crashdir *d, const char *name, struct stat *sb, char *why,
		      size_t cap);

/*
 * kt__crashdir_trace - open the trace file a control header names (@path,
 * written by whoever wrote the directory): an absolute path with no '.',
 * '..' or symbolic link in it (the live side records the kernel's own
 * name of the file, which has none), to a regular file owned by the
 * caller.  Return: the fd with its stat in *@sb, or -errno with @why.
 */
int kt__crashdir_trace(const char *path, struct stat *sb, char *why, size_t cap);

/*
 * kt__crashdir_header - read and decode the control header of @d, whose
 * control file is open at @fd.  Return: kt__ctl_parse()'s result, with
 * @why set when it is not 0; -errno for a failed read.
 */
int kt__crashdir_header(int fd, kt__ctl *c, char *why, size_t cap);

/*
 * kt__crashdir_alive - whether the process that wrote a control file (open
 * at @fd, its header decoded in @c, @usable when its fields can be
 * trusted) still runs: it holds the file's lock, or a process with its pid
 * has its start time in the boot it recorded (a version 1 header has no
 * start time: then the lock alone, or the pid being this process's).
 * Return: 0 when dead, else the live pid (-1 when the lock holder's pid is
 * not visible here).
 */
long kt__crashdir_alive(int fd, const kt__ctl *c, int usable);

#endif /* KATRA_RECOVER_CRASHDIR_H */

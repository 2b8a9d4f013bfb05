/*
 * crashdir.h - what `katra recover` trusts in a crash directory: nothing it
 * has not checked.  Anyone may plant a katra-<pid> directory where crash
 * files go (/dev/shm is writable by all), and recover often runs as root,
 * so every file is opened relative to the directory's fd, without
 * following a symbolic link, without blocking on a FIFO, and only when it
 * is a regular file (or directory) owned by the caller.  A refused file is
 * named with the reason, never with its size or contents.
 *
 * Single-threaded, like the command.
 */
#ifndef KT_TOOLS_CRASHDIR_H
#define KT_TOOLS_CRASHDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ring/crash.h"

typedef struct crashdir {
	int fd;                  /* the directory; -1 when closed */
	const char *path;        /* as the user typed it, for messages */
} crashdir;

/*
 * crashdir_open - open @name, relative to @at (AT_FDCWD, or a directory
 * fd), as a crash directory: not a symbolic link, a directory owned by the
 * caller and writable by nobody else.  @d->path is set to @path.
 * Return: 0; or -errno with @why (a phrase: "a symbolic link: not
 * followed") saying why not.
 */
int crashdir_open(crashdir *d, int at, const char *name, const char *path, char *why,
		  size_t cap);

/* crashdir_close - close @d's fd; safe on a closed one. */
void crashdir_close(crashdir *d);

/*
 * crashdir_file - open the file @name of @d for reading: a regular file
 * owned by the caller, not reached through a symbolic link; never blocks.
 * Return: the fd (close-on-exec), with its stat in *@sb; or -errno with
 * @why set.
 */
int crashdir_file(const crashdir *d, const char *name, struct stat *sb, char *why, size_t cap);

/*
 * crashdir_trace - open the trace file a control header names (@path,
 * written by whoever wrote the directory): an absolute path with no '.',
 * '..' or symbolic link in it (the live side records the kernel's own
 * name of the file, which has none), to a regular file owned by the
 * caller.  Return: the fd with its stat in *@sb, or -errno with @why.
 */
int crashdir_trace(const char *path, struct stat *sb, char *why, size_t cap);

/*
 * crashdir_header - read and decode the control header of @d, whose
 * control file is open at @fd.  Return: kt__ctl_parse()'s result, with
 * @why set when it is not 0; -errno for a failed read.
 */
int crashdir_header(int fd, kt__ctl *c, char *why, size_t cap);

/*
 * crashdir_alive - whether the process that wrote @d's control file (open
 * at @fd, its header decoded in @c, @usable when its fields can be
 * trusted) still runs: it holds the file's lock, or a process with its pid
 * has its start time in the boot it recorded (a version 1 header has no
 * start time: then the lock alone, or the pid being this process's).
 * Return: 0 when dead, else the live pid (-1 when the lock holder's pid is
 * not visible here).
 */
long crashdir_alive(int fd, const kt__ctl *c, int usable);

/*
 * crashdir_list - `katra recover --list PARENT`: print one line per
 * katra-* directory in @parent that the caller could recover (its own,
 * checked as above, left by a dead process): the directory, the pid and
 * the trace path, each escaped.  Return: the exit status (0; 1 when
 * @parent cannot be read).
 */
int crashdir_list(const char *parent);

#endif

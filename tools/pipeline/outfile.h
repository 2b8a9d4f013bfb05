/*
 * outfile.h - how every katra subcommand creates the file it writes.
 *
 * A tool may run as root on paths chosen by someone else, so an output is
 * never opened by name with O_TRUNC: a fresh temporary file is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW beside the final name and renamed over it only
 * once it is complete.  rename() replaces a symlink at the final name, never
 * its target, and an output that is the command's own input is refused.
 * A character device or FIFO named as the output (/dev/null, a pipe the user
 * made) is written directly, since it cannot be replaced: it is opened with
 * O_NOFOLLOW and must be the very file checked.  Symbolic links are followed
 * only under /dev and /proc (/dev/stdout), where nobody else makes names;
 * anywhere else a link at the output's name is replaced, never followed.
 *
 * Single-threaded: each function is called by the thread that owns @o.
 */
#ifndef KT_TOOLS_OUTFILE_H
#define KT_TOOLS_OUTFILE_H

#include <stddef.h>
#include <sys/stat.h>

typedef struct outfile {
	int fd;          /* write here; -1 when closed */
	int direct;      /* @path is a device or FIFO written in place */
	char *path;      /* the final name */
	char *tmp;       /* the temporary name, NULL when direct */
} outfile;

/*
 * outfile_open - create the temporary file for @path.  @in, when not NULL,
 * is the stat of the command's input: an output naming the same file is
 * refused with -EEXIST (nothing is created).  A directory at @path gives
 * -EISDIR; a socket or block device -EINVAL; a FIFO owned by another user
 * (outside /dev and /proc) -EPERM; a device or FIFO replaced between the
 * check and the open -ESTALE (nothing was written).
 *
 * Returns 0, with o->fd open for writing (mode 0666 less the umask), or a
 * negative errno with @o closed.
 */
int outfile_open(outfile *o, const char *path, const struct stat *in);

/*
 * outfile_commit - close o->fd and rename the temporary file to its final
 * name.  On failure the temporary file is removed.  Returns 0 or a negative
 * errno (the first failure of close or rename).
 */
int outfile_commit(outfile *o);

/*
 * outfile_abort - close o->fd and remove the temporary file, if any.  Safe
 * on an @o that is already committed, aborted, or was never opened, as long
 * as it was zeroed or set up by outfile_open().
 */
void outfile_abort(outfile *o);

#endif

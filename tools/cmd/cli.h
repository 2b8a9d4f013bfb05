/*
 * cli.h - what every katra subcommand shares: its exit statuses, its
 * messages on stderr, the trace it reads and the file it writes, and the
 * words for why reading failed.
 *
 * Every file and string the command reads may be hostile: an input is
 * opened once, as a regular file only (a FIFO never hangs it); an output
 * is created beside its name and renamed (tools/pipeline/outfile.h); every message
 * is escaped (tools/pipeline/text.h), since it may hold a path or a string from a
 * file.
 *
 * The command's one thread (stdout_errno and the messages are process-wide).
 */
#ifndef KT_TOOLS_CLI_H
#define KT_TOOLS_CLI_H

#include <stdio.h>
#include <sys/stat.h>

#include <katra/reader.h>

#include "tools/pipeline/outfile.h"
#include "tools/pipeline/text.h"

/* 0 success / valid, 1 error (out of memory, I/O) or corrupt file, 2 usage
 * error, 3 partial: a truncated file (a valid prefix), or damaged frames
 * that a command which salvages (stats, export) skipped, doing the rest;
 * as `katra recover` says of a rebuild that met damage. */
enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_TRUNC = 3, EXIT_PARTIAL = 3 };

/* say - "katra: ", the formatted text escaped, and a newline, on stderr. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* usage_error - say() it, then "Try 'katra --help'.".  Returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* put - a string from a file or the command line on stdout, escaped. */
static inline void put(const char *s)
{
	text_puts(stdout, s);
}

/* flush_stdout - fflush(stdout), keeping the errno of the first failure
 * for stdout_errno(). */
void flush_stdout(void);

/* stdout_errno - the errno of the first flush_stdout() that failed, or 0. */
int stdout_errno(void);

/*
 * is_corruption - is @rc a verdict on the bytes (a malformed or
 * inconsistent file)?  -errno (no memory, no such file) is not, nor are
 * katra's codes about something else than bytes (a state, or one a newer
 * library adds).
 */
int is_corruption(int rc);

/* reason - why reading failed when the bytes are not at fault, in words;
 * @err, when not NULL, is the reader's account. */
const char *reason(int rc, const kt_reader_error *err);

/*
 * read_failed - say why reading @path failed with @rc (@err: the reader's
 * account).  Returns the exit status: EXIT_TRUNC for a file cut short,
 * EXIT_BAD for anything else, worded as corruption only when the bytes
 * are at fault.
 */
int read_failed(const char *path, int rc, const kt_reader_error *err);

/* pass_failed - read_failed() for a pass over @r that stopped on @rc. */
int pass_failed(const char *path, kt_reader *r, int rc);

/*
 * salvage_said - after a pass with kt_reader_set_salvage() on: when frames
 * were skipped, say where, how many and why, and return EXIT_PARTIAL in
 * place of a @result of EXIT_OK or EXIT_TRUNC; else @result.
 */
int salvage_said(const char *path, kt_reader *r, int result);

/* A trace opened once: every pass and check of a command reads this fd. */
struct input {
	kt_reader *r;
	int fd;
	struct stat sb;
};

/*
 * input_open_quiet - open @path as a trace.  It is opened non-blocking and
 * must be a regular file, so that a FIFO or a device named as input is
 * refused at once rather than waited on.  Returns 0, or the negative code
 * with @err; input_close() @in either way.
 */
int input_open_quiet(struct input *in, const char *path, kt_reader_error *err);

/* input_open - input_open_quiet(), saying why not: 0, or the exit status
 * (@in is then closed). */
int input_open(struct input *in, const char *path);

void input_close(struct input *in);

/* output_open - create @out for a command reading @in (tools/pipeline/outfile.h),
 * saying why not.  Returns 0 or outfile_open()'s code. */
int output_open(outfile *of, const char *out, const struct input *in);

#endif

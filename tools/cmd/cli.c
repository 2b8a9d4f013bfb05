/*
 * cli.c - the subcommands' messages, inputs and outputs; cli.h says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cmd/cli.h"

static const char *prog = "katra";

static void vsay(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void vsay(const char *fmt, va_list ap)
{
	char *s = NULL;
	fprintf(stderr, "%s: ", prog);
	if (vasprintf(&s, fmt, ap) >= 0)
		text_puts(stderr, s);
	else
		fputs("out of memory", stderr);
	free(s);
	fputc('\n', stderr);
}

void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help'.\n", prog);
	return EXIT_USAGE;
}

static int stdout_err;

void flush_stdout(void)
{
	if (fflush(stdout) && !stdout_err)
		stdout_err = errno;
}

int stdout_errno(void)
{
	return stdout_err;
}

/* ---- inputs and why they fail --------------------------------------------- */

static int is_os_error(int rc)
{
	return rc < 0 && rc > -4096;
}

int is_corruption(int rc)
{
	return rc <= KT_EMAGIC && rc >= KT_ESUMMARY && rc != KT_ETRUNCATED &&
	       rc != KT_ENOSESSION && rc != KT_EBUSY && rc != KT_ESTATE;
}

const char *reason(int rc, const kt_reader_error *err)
{
	if (rc == -ENOMEM)
		return "out of memory";
	if (rc == -ESPIPE)
		return "not a regular file (a FIFO, pipe, socket or device); "
		       "katra reads trace files";
	if (is_os_error(rc))
		return strerror(-rc);
	return err && err->message[0] ? err->message : kt_strerror(rc);
}

int read_failed(const char *path, int rc, const kt_reader_error *err)
{
	if (rc == KT_ETRUNCATED) {
		say("%s: %s", path, err->message); /* "offset N: file is truncated: ..." */
		return EXIT_TRUNC;
	}
	if (is_corruption(rc))
		say("%s: corrupt: %s", path, err->message);
	else
		say("%s: %s", path, reason(rc, err));
	return EXIT_BAD;
}

int pass_failed(const char *path, kt_reader *r, int rc)
{
	return read_failed(path, rc, kt_reader_get_last_error(r));
}

int salvage_said(const char *path, kt_reader *r, int result)
{
	kt_reader_skipped s;
	kt_reader_get_skipped(r, &s);
	if (!s.frames)
		return result;
	say("%s: skipped %" PRIu64 " damaged frame%s (%" PRIu64 " bytes), the first at offset %"
	    PRIu64 " (%s); the output leaves out what they held",
	    path, s.frames, s.frames == 1 ? "" : "s", s.bytes, s.first_offset,
	    kt_strerror(s.first_error));
	return result == EXIT_OK || result == EXIT_TRUNC ? EXIT_PARTIAL : result;
}

int input_open_quiet(struct input *in, const char *path, kt_reader_error *err)
{
	memset(in, 0, sizeof(*in));
	memset(err, 0, sizeof(*err));
	in->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in->fd < 0)
		return -errno;
	if (fstat(in->fd, &in->sb) < 0)
		return -errno;
	if (S_ISDIR(in->sb.st_mode))
		return -EISDIR;
	if (!S_ISREG(in->sb.st_mode))
		return -ESPIPE;
	return kt_reader_open_fd(in->fd, err, &in->r);
}

void input_close(struct input *in)
{
	kt_reader_close(in->r);
	if (in->fd >= 0)
		close(in->fd);
	in->r = NULL;
	in->fd = -1;
}

int input_open(struct input *in, const char *path)
{
	kt_reader_error err;
	int rc = input_open_quiet(in, path, &err);
	if (rc == 0)
		return 0;
	input_close(in);
	return read_failed(path, rc, &err);
}

/* ---- outputs ----------------------------------------------------------- */

int output_open(outfile *of, const char *out, const struct input *in)
{
	int rc = outfile_open(of, out, &in->sb);
	if (rc == -EEXIST)
		say("%s: is the input file; refusing to replace it", out);
	else if (rc == -EPERM)
		say("%s: a FIFO of another user; refusing to write into it", out);
	else if (rc == -ESTALE)
		say("%s: replaced while it was opened; refusing to write into it", out);
	else if (rc < 0)
		say("%s: %s", out, reason(rc, NULL));
	return rc;
}

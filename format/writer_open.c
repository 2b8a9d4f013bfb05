/*
 * The public writer's doors to files: kt_writer_open() and
 * kt_writer_open_fd() put the format's writer (format/writer.c, which
 * writes through any sink) over the synchronous fd sink (fd_sink.c).  Here
 * in format/, below flush/, so that kt_rewrite() and recover/'s rebuild
 * open their output without calling up into the flusher's room.  Threads:
 * the writer's, as writer.h says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <katra/writer.h>
#include "format/fd_sink.h"

static int writer_new(kt_writer **out, int fd, int own, const kt_header *h)
{
	*out = NULL;
	int rc = kt__header_validate(h);
	if (rc)
		return rc;
	kt__sink *sink = kt__fd_sink_new(fd);
	if (!sink)
		return -ENOMEM;
	off_t off = lseek(fd, 0, SEEK_CUR);
	rc = kt__writer_open_sink(out, sink, fd, own, off > 0 ? (uint64_t)off : 0, h);
	if (rc)
		sink->close(sink);
	return rc;
}

int kt_writer_open_fd(int fd, const kt_header *h, kt_writer **out)
{
	return writer_new(out, fd, 0, h);
}

int kt_writer_open(const char *path, const kt_header *h, kt_writer **out)
{
	*out = NULL;
	int rc = kt__header_validate(h);
	if (rc)
		return rc;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = writer_new(out, fd, 1, h);
	if (rc)
		close(fd);
	return rc;
}

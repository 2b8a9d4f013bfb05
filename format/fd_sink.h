/*
 * format/fd_sink.h - internal: the synchronous sink over a file
 * descriptor (fd_sink.c), the public writer's doors to files over it
 * (writer_open.c: kt_writer_open(), kt_writer_open_fd()) and
 * kt__write_all.  In format/ so that the writer, kt_rewrite() and the
 * rebuild of recover/ link without the flusher's room: the sink is the
 * one piece of format/ that touches a file, and only the fd it is given.
 * One thread at a time calls a sink: a session's flusher, or the public
 * writer's owner.
 */
#ifndef KATRA_FORMAT_FD_SINK_H
#define KATRA_FORMAT_FD_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

/*
 * kt__write_all - all @n bytes of @buf to @fd from its offset, in as many
 * write() calls as it takes (a pipe takes less at a time; a signal may
 * interrupt one).  For the small files around a trace (a sidecar) and the
 * command's outputs; a session's file goes through a sink.  Return: 0, or
 * -errno (-EIO for a write that took nothing).  Any thread.
 */
int kt__write_all(int fd, const void *buf, size_t n);

/* The synchronous sink over @fd (not owned).  NULL without memory. */
kt__sink *kt__fd_sink_new(int fd);

/*
 * Bound how long the fd sink @s waits for a pipe, socket or terminal to
 * take bytes: a write that makes no progress for @timeout_ns, or is still
 * waiting past *@stop_at (CLOCK_MONOTONIC ns, 0 = not set; read as it
 * changes, from any thread), fails with -ETIMEDOUT.  @timeout_ns 0: wait
 * as long as it takes (the default).  Regular files are not affected.
 * Call before the first write; the thread that writes.
 */
void kt__fd_sink_set_timeout(kt__sink *s, uint64_t timeout_ns, const uint64_t *stop_at);

/*
 * Where a sink may wait on the kernel (a write, a poll, fdatasync()), it
 * calls @pause first and @resume after, given what @pause returned: the
 * flusher's work gate (flush/work.c), so a fork() does not wait for a
 * write that waits for the forking thread.  Process-wide; set once, at
 * load, before any thread writes.
 */
void kt__fd_sink_set_idle(int (*pause)(void), void (*resume)(int));

#endif

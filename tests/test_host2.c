/*
 * katra never hurts its host, the red-team cases (issue #12): a pipe
 * reader that stops reading, a thread cancelled inside katra, a library
 * unloaded under live threads.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include <katra/katra.h>

/* ---- a reader that stops reading --------------------------------------------- */

#define STALL_EVENTS 200000

/*
 * A session writing into a pipe that nobody reads (the reader is alive:
 * stopped, paused in a pager).  The pipe fills; the flusher must give up
 * after io_timeout_ns, so the emits (BLOCK waits for ring space the
 * flusher frees) and kt_session_stop() return.  Before, both hung and the
 * test's timeout failed it.
 */
static void stalled_reader(int policy)
{
	kt_config cfg = { .overflow = policy, .ring_size = 64 << 10 };
	cr_assert_eq(kt_init(&cfg), 0);
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	kt_session_options o = { .fd = fds[1], .use_fd = 1, .io_timeout_ns = 200000000 };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_start_error());
	uint32_t id = kt_name("count");
	for (int64_t i = 0; i < STALL_EVENTS; i++)
		kt_counter(id, i);
	kt_summary sum;
	int rc = kt_session_stop(s, &sum);
	cr_assert_eq(rc, -ETIMEDOUT, "stop: %d (%s)", rc, kt_strerror(rc));
	cr_assert_eq(sum.io_error, -ETIMEDOUT);
	cr_assert_eq(sum.events_written + sum.events_dropped, STALL_EVENTS);
	/* A pipe cannot be read back: nothing is proven written. */
	cr_assert_eq(sum.events_written, 0);
	kt_summary_release(&sum);
	/* The reader wakes up: what it finds is the start of a trace. */
	uint8_t magic[8];
	cr_assert_eq(read(fds[0], magic, sizeof(magic)), 8);
	cr_assert_eq(memcmp(magic, "\x89KTR\r\n\x1a\n", 8), 0);
	close(fds[0]);
	close(fds[1]);
}

Test(stall, a_pipe_nobody_reads_bounds_stop_drop, .timeout = 60)
{
	stalled_reader(KT_OVERFLOW_DROP);
}

Test(stall, a_pipe_nobody_reads_bounds_block_emitters_and_stop, .timeout = 60)
{
	stalled_reader(KT_OVERFLOW_BLOCK);
}

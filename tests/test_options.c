/*
 * test_options.c - kt_session_options.given: a zero given is a value, not
 * "unset".  Each option whose zero is a value of its own (codec
 * KT_CODEC_NONE, overflow KT_OVERFLOW_WAIT) is started once given as 0 and
 * once left 0, and the file says which was taken (fd 0, the third, is
 * test_flush.c's start::fd_zero_is_a_valid_trace_fd); the -1 sentinels
 * 0.4 removed and bits no field has are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include "tmp_path.h"

/* A session with @o into @path (or its fd), 100 counters in it. */
static void session_with(const char *path, const kt_session_options *o)
{
	kt_session *s;
	kt_summary sum;
	cr_assert_eq(kt_session_start(path, o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t id = kt_name("c");
	for (int64_t i = 0; i < 100; i++)
		kt_counter(id, i);
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.events_written, 100);
	kt_summary_release(&sum);
}

/* The header's capture settings of @path; *@chunks and *@of_codec: its
 * chunks, and those in @codec. */
static kt_capture_options file_settings(const char *path, unsigned codec, int *chunks,
					int *of_codec)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_capture_options c = kt_reader_get_header(r)->capture;
	kt_trace_frame f;
	int rc;
	*chunks = *of_codec = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			(*chunks)++;
			*of_codec += f.u.chunk.codec == codec;
		}
	}
	cr_assert_eq(rc, 0);
	kt_reader_close(r);
	return c;
}

Test(given, codec_none_given_is_raw_chunks_not_the_default)
{
	char path[128];
	tmp_path(path, sizeof(path), "codec.katra");
	int chunks, raw;
	session_with(path, &(kt_session_options){ .codec = KT_CODEC_NONE,
						  .given = KT_GIVEN_CODEC });
	kt_capture_options c = file_settings(path, KT_CODEC_NONE, &chunks, &raw);
	cr_assert_eq(c.codec, KT_CODEC_NONE);
	cr_assert_gt(chunks, 0);
	cr_assert_eq(raw, chunks, "%d of %d chunks raw", raw, chunks);
	/* The same zero not given: the default, compact. */
	session_with(path, &(kt_session_options){ .codec = KT_CODEC_NONE });
	c = file_settings(path, KT_CODEC_COMPACT, &chunks, &raw);
	cr_assert_eq(c.codec, KT_CODEC_COMPACT);
	cr_assert_eq(raw, chunks, "%d of %d chunks compact", raw, chunks);
	unlink(path);
}

Test(given, overflow_wait_given_replaces_the_process_policy)
{
	char path[128];
	tmp_path(path, sizeof(path), "overflow.katra");
	int chunks, n;
	cr_assert_eq(kt_init(&(kt_config){ .overflow = KT_OVERFLOW_DROP }), 0);
	/* Not given: the process's DROP stays. */
	session_with(path, &(kt_session_options){ .overflow = KT_OVERFLOW_WAIT });
	cr_assert_eq(file_settings(path, 0, &chunks, &n).overflow, KT_OVERFLOW_DROP);
	/* Given: WAIT, which is 0, for this session and after it. */
	session_with(path, &(kt_session_options){ .overflow = KT_OVERFLOW_WAIT,
						  .given = KT_GIVEN_OVERFLOW });
	cr_assert_eq(file_settings(path, 0, &chunks, &n).overflow, KT_OVERFLOW_WAIT);
	session_with(path, NULL);
	cr_assert_eq(file_settings(path, 0, &chunks, &n).overflow, KT_OVERFLOW_WAIT);
	unlink(path);
}

/* 0.3's sentinels (-1 for raw chunks and for WAIT) are no value now, and
 * a bit no field has is refused rather than ignored. */
Test(given, old_sentinels_and_unknown_bits_are_refused)
{
	char path[128];
	tmp_path(path, sizeof(path), "bad.katra");
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &(kt_session_options){ .codec = -1 }, &s), -EINVAL);
	cr_assert_str_eq(kt_session_get_start_error(), "codec -1: Invalid argument");
	cr_assert_eq(kt_session_start(path, &(kt_session_options){ .overflow = -1 }, &s), -EINVAL);
	cr_assert_eq(kt_session_start(path, &(kt_session_options){ .given = KT_GIVEN_ALL + 1 }, &s),
		     -EINVAL);
	cr_assert_str_eq(kt_session_get_start_error(), "given bits 0x8: Invalid argument");
	unlink(path);
}

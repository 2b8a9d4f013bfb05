/*
 * `katra export --collapsed`: collapsed stacks with exact self times, a
 * thread's lines summing to its outermost zones' time, hostile names that
 * cannot split a frame, the caps said on stderr, and the golden trace's
 * output equal to its golden file.
 */
#include "helpers.h"
#include "cli.h"

#include <sys/mman.h>
#include <criterion/criterion.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "tmp_path.h"

/* t_header's clock: 3 GHz from tick 1000000, so 3000 ticks are 1 us. */
#define US(x) (UINT64_C(1000000) + (uint64_t)(x) * 3000)

struct zev {
	double us;
	char kind; /* 'B' or 'E' */
	uint32_t name;
};

static size_t encode(uint8_t *buf, size_t cap, const struct zev *z, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		kt_event ev = { .ts = US(0) + (uint64_t)(z[i].us * 3000), .name_id = z[i].name,
				.type = z[i].kind == 'B' ? KT_EV_ZONE_BEGIN : KT_EV_ZONE_END };
		len += kt_event_encode(buf + len, cap - len, &ev);
	}
	return len;
}

/* Write a trace to @path: names 1-4, thread 1 "main" with @a, thread 2
 * (unnamed) with @b. */
static void write_trace(const char *path, const struct zev *a, size_t na, const struct zev *b,
			size_t nb)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	static const char *const names[] = { "frame", "draw", "semi;colon\x1b", "wait" };
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "main"), 0);
	static uint8_t buf[1 << 16];
	if (na)
		cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, buf, encode(buf, sizeof(buf), a, na)), 0);
	if (nb)
		cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_LZ4, 3, buf, encode(buf, sizeof(buf), b, nb)), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

static char *export_collapsed(const char *in, struct proc *p)
{
	static char out[160];
	snprintf(out, sizeof(out), "%s.folded", in);
	unlink(out);
	const char *args[] = { "export", "--collapsed", in, out, NULL };
	run_katra(p, args);
	size_t len = 0;
	uint8_t *got = t_slurp(out, &len);
	cr_assert_not_null(got, "no output: exit %d: %s", p->status, p->err);
	char *s = malloc(len + 1);
	memcpy(s, got, len);
	s[len] = 0;
	free(got);
	unlink(out);
	return s;
}

Test(collapse, self_times_are_exact_and_sum_to_the_outer_zones)
{
	/* Thread 1: frame [0,12] holds draw [1,6] (holding wait [2,4]), draw
	 * [7,8] and semi [9,10]; an end with no begin at 13; frame [20,25]
	 * ends while wait (opened at 21) is still open, which closes with it;
	 * frame opened at 30 never ends.  Thread 2: draw [40,43]. */
	static const struct zev a[] = {
		{ 0, 'B', 1 }, { 1, 'B', 2 }, { 2, 'B', 4 }, { 4, 'E', 4 }, { 6, 'E', 2 },
		{ 7, 'B', 2 }, { 8, 'E', 2 }, { 9, 'B', 3 }, { 10, 'E', 3 }, { 12, 'E', 1 },
		{ 13, 'E', 2 }, { 20, 'B', 1 }, { 21, 'B', 4 }, { 25, 'E', 1 }, { 30, 'B', 1 },
	};
	static const struct zev b[] = { { 40, 'B', 2 }, { 43, 'E', 2 } };
	char path[128];
	tmp_path(path, sizeof(path), "exact.katra");
	write_trace(path, a, sizeof(a) / sizeof(a[0]), b, 2);
	struct proc p;
	char *got = export_collapsed(path, &p);
	cr_assert_eq(p.status, 0, "%s", p.err);
	/* frame: 12 - (5 + 1 + 1) + 5 - 4 = 6; draw: 5 - 2 + 1 = 4; and thread
	 * 1's lines sum to its outer zones, 12 + 5 = 17 us. */
	cr_assert_str_eq(got, "main (1);frame 6000\n"
			      "main (1);frame;draw 4000\n"
			      "main (1);frame;draw;wait 2000\n"
			      "main (1);frame;semi\\x3Bcolon\\x1B 1000\n"
			      "main (1);frame;wait 4000\n"
			      "thread 2;draw 3000\n");
	char want[256];
	snprintf(want, sizeof(want), "katra: %s: left out 1 zones still open at the end and 1 ends "
		 "with no begin\n", path);
	cr_assert_str_eq(p.err, want);
	free(got);
	unlink(path);
}

Test(collapse, stacks_past_the_depth_cap_fold_and_keep_their_time)
{
	/* 300 nested zones of name 2 inside one frame, each 1 us longer than
	 * the one it holds: the innermost is [150, 151] us. */
	enum { DEEP = 300 };
	static struct zev a[2 * DEEP + 2];
	size_t n = 0;
	a[n++] = (struct zev){ 0, 'B', 1 };
	for (int i = 0; i < DEEP; i++)
		a[n++] = (struct zev){ 1 + i * 0.5, 'B', 2 };
	for (int i = DEEP - 1; i >= 0; i--)
		a[n++] = (struct zev){ 1 + DEEP + (DEEP - 1 - i) * 0.5, 'E', 2 };
	a[n++] = (struct zev){ 2 * DEEP, 'E', 1 };
	char path[128];
	tmp_path(path, sizeof(path), "deep.katra");
	write_trace(path, a, n, NULL, 0);
	struct proc p;
	char *got = export_collapsed(path, &p);
	cr_assert_eq(p.status, 0, "%s", p.err);
	/* 256 frames below the thread (frame and 255 draws): a line each, the
	 * deepest holding the 45 folded draws' time, and no time lost. */
	uint64_t lines = 0, sum = 0;
	size_t max_frames = 0;
	for (char *l = got; *l;) {
		char *end = strchr(l, '\n');
		cr_assert_not_null(end);
		*end = 0;
		size_t frames = 1;
		for (char *c = l; c < end; c++)
			frames += *c == ';';
		if (frames > max_frames)
			max_frames = frames;
		sum += strtoull(strrchr(l, ' ') + 1, NULL, 10);
		lines++;
		l = end + 1;
	}
	cr_assert_eq(max_frames, 1 + 256);
	cr_assert_eq(lines, 256);
	cr_assert_eq(sum, (2 * DEEP) * 1000, "the frame's whole time, %llu", (unsigned long long)sum);
	char want[256];
	snprintf(want, sizeof(want), "katra: %s: 45 zones past 256 deep or 1048576 distinct "
		 "stacks were folded into their parents' frames (their time is kept there)\n", path);
	cr_assert_str_eq(p.err, want);
	free(got);
	unlink(path);
}

Test(collapse, the_golden_trace_matches_its_golden_file)
{
	struct proc p;
	char *got = export_collapsed(KT_TEST_DATA "/golden_v1.katra", &p);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_eq(p.err_len, 0, "%s", p.err);
	const char *golden = KT_TEST_DATA "/golden_v1.collapsed.txt";
	if (getenv("KT_REGEN_GOLDEN")) {
		FILE *f = fopen(golden, "wb");
		cr_assert_not_null(f);
		fputs(got, f);
		fclose(f);
	}
	size_t len = 0;
	uint8_t *want = t_slurp(golden, &len);
	cr_assert_not_null(want, "missing %s", golden);
	cr_assert_eq(strlen(got), len);
	cr_assert_eq(memcmp(got, want, len), 0, "output differs from %s", golden);
	free(want);
	free(got);
}

/* --thread and a window cut what every export reads: the golden trace's
 * thread 2 alone is the full output's thread 2 line; a window around
 * thread 2's zone (123789400..123789403 ns) gives that zone only. */
Test(collapse, thread_and_window_options_keep_only_their_events)
{
	char out[160];
	snprintf(out, sizeof(out), "/tmp/katra-collapse-%d-cut.folded", (int)getpid());
	static const char *const cuts[][5] = {
		{ "--thread", "2", NULL },
		{ "--window", "123789400..123789403", NULL },
		{ "--thread", "1", "--window", "123789400..123789403" },
	};
	static const char *const want[] = { "render (2);frame_zone 6\n",
					    "render (2);frame_zone 3\n", "" };
	for (size_t k = 0; k < 3; k++) {
		const char *args[10] = { "export", "--collapsed", KT_TEST_DATA "/golden_v1.katra", out };
		for (int w = 0; w < 4 && cuts[k][w]; w++)
			args[4 + w] = cuts[k][w];
		struct proc p;
		unlink(out);
		run_katra(&p, args);
		cr_assert_eq(p.status, 0, "%zu: %s", k, p.err);
		size_t len = 0;
		uint8_t *got = t_slurp(out, &len);
		cr_assert_not_null(got);
		cr_assert_eq(len, strlen(want[k]), "%zu: %.*s", k, (int)len, got);
		cr_assert_eq(memcmp(got, want[k], len), 0, "%zu: %.*s", k, (int)len, got);
		free(got);
	}
	unlink(out);
}

Test(collapse, one_format_must_be_said)
{
	struct proc p;
	const char *both[] = { "export", "--chrome", "--collapsed", "a", "b", NULL };
	run_katra(&p, both);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "say one format: --chrome, --collapsed, --perfetto or --fxt"));
	const char *none[] = { "export", "a", "b", NULL };
	run_katra(&p, none);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "say one format: --chrome, --collapsed, --perfetto or --fxt"));
}

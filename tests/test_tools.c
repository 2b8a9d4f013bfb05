/*
 * Merged reading, replay and the katra command's dump, replay, info and
 * verify on fixtures: exact output against golden files, and one clear
 * line with a non-zero exit for every kind of bad input.
 */
#include "helpers.h"
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include <katra/reader.h>
#include <katra/writer.h>

#define GOLDEN KT_TEST_DATA "/golden_v1.katra"

/* ---- kt_reader_next ----------------------------------------------------- */

static size_t put(uint8_t *buf, size_t at, uint64_t ts, uint32_t name)
{
	kt_event ev = { .ts = ts, .name_id = name, .type = KT_EV_INSTANT };
	return at + kt_event_encode(buf + at, 4096 - at, &ev);
}

/* Thread 2's chunk comes first in the file, and timestamps tie across
 * threads: the merge must order by time, then thread id, then sequence. */
Test(merge, ties_break_by_thread_then_sequence)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("merge", MFD_CLOEXEC);
	kt_writer *w;
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	uint8_t buf[4096];
	size_t n = 0;
	n = put(buf, n, 100, 20);
	n = put(buf, n, 100, 21);
	n = put(buf, n, 200, 22);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_NONE, 1, buf, n), 0);
	n = put(buf, 0, 100, 10);
	n = put(buf, n, 200, 11);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 1, buf, n), 0);
	n = put(buf, 0, 50, 12);
	cr_assert_eq(kt_writer_chunk(w, 3, KT_CODEC_NONE, 1, buf, n), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	kt_writer_close(w);

	kt_reader *r;
	cr_assert_eq(kt_reader_open_fd(fd, NULL, &r), 0);
	static const uint32_t want[] = { 12, 10, 20, 21, 11, 22 };
	kt_event ev;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			cr_assert_eq(kt_reader_next(r, &ev), 1);
			cr_assert_eq(ev.name_id, want[i], "pass %d event %zu: name %u", pass, i, ev.name_id);
		}
		cr_assert_eq(kt_reader_next(r, &ev), 0);
		kt_reader_rewind(r);
	}
	kt_reader_close(r);
	close(fd);
}

Test(merge, golden_file_in_time_order)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(GOLDEN, NULL, &r), 0);
	kt_event ev;
	uint64_t n = 0, last = 0;
	uint32_t order[4] = { 0 };
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		cr_assert_geq(ev.ts, last);
		last = ev.ts;
		if (n % T_EVENTS_PER_SET == 0)
			order[n / T_EVENTS_PER_SET] = ev.thread_id;
		n++;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(n, 44);
	/* raw chunks at 2.0M ticks (threads 1, 2), then LZ4 at 3.0M (1, 2) */
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 1);
	cr_assert_eq(order[3], 2);
	kt_reader_close(r);
}

struct collect {
	char buf[8192];
	size_t len;
};

static int collect_cb(void *ctx, const kt_event *ev, uint64_t ns)
{
	struct collect *c = ctx;
	c->len += (size_t)snprintf(c->buf + c->len, sizeof(c->buf) - c->len, "%llu %u %u %u\n",
				   (unsigned long long)ns, ev->thread_id, ev->name_id, ev->type);
	return 0;
}

static int stop_after_three(void *ctx, const kt_event *ev, uint64_t ns)
{
	(void)ev;
	(void)ns;
	return ++*(int *)ctx == 3 ? 42 : 0;
}

Test(merge, replay_is_deterministic_and_stoppable)
{
	struct collect a = { .len = 0 }, b = { .len = 0 };
	kt_replay_options fast = { .max = 1 }, paced = { .speed = 1e6 };
	kt_reader *r;
	cr_assert_eq(kt_reader_open(GOLDEN, NULL, &r), 0);
	cr_assert_eq(kt_replay(r, collect_cb, &a, &fast), 0);
	kt_reader_rewind(r);
	cr_assert_eq(kt_replay(r, collect_cb, &b, &paced), 0);
	cr_assert_eq(a.len, b.len);
	cr_assert_eq(memcmp(a.buf, b.buf, a.len), 0);
	kt_reader_rewind(r);
	int seen = 0;
	cr_assert_eq(kt_replay(r, stop_after_three, &seen, &fast), 42);
	cr_assert_eq(seen, 3);
	kt_reader_close(r);
}

/* ---- the katra command ---------------------------------------------------- */

static void check_golden_output(const char *const *args, const char *golden)
{
	struct proc p;
	size_t len;
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "exit %d: %s", p.status, p.err);
	/* stderr is not a terminal here: no progress bar, nothing at all. */
	cr_assert_eq(p.err_len, 0, "stderr: %s", p.err);
	if (getenv("KT_REGEN_GOLDEN")) {
		FILE *f = fopen(golden, "wb");
		cr_assert_not_null(f);
		fwrite(p.out, 1, p.out_len, f);
		fclose(f);
	}
	uint8_t *want = t_slurp(golden, &len);
	cr_assert_not_null(want, "missing %s", golden);
	cr_assert_eq(p.out_len, len, "output %zu bytes, golden %zu", p.out_len, len);
	cr_assert_eq(memcmp(p.out, want, len), 0, "output differs from %s", golden);
	free(want);
}

Test(cli, dump_text_matches_golden)
{
	const char *args[] = { "dump", GOLDEN, NULL };
	check_golden_output(args, KT_TEST_DATA "/golden_v1.dump.txt");
}

Test(cli, dump_jsonl_matches_golden)
{
	const char *args[] = { "dump", "--format", "jsonl", GOLDEN, NULL };
	check_golden_output(args, KT_TEST_DATA "/golden_v1.dump.jsonl");
}

Test(cli, replay_max_prints_what_dump_prints)
{
	const char *args[] = { "replay", "--max", GOLDEN, NULL };
	check_golden_output(args, KT_TEST_DATA "/golden_v1.dump.txt");
}

Test(cli, dump_filters_by_thread_and_time)
{
	struct proc p;
	const char *args[] = { "dump", "--thread", "2", "--from", "124000000", GOLDEN, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0);
	int lines = 0;
	for (size_t i = 0; i < p.out_len; i++)
		lines += p.out[i] == '\n';
	cr_assert_eq(lines, T_EVENTS_PER_SET);
	cr_assert_eq(strncmp(p.out, "124122733 2 render zone_begin frame_zone\n", 41), 0, "%s", p.out);
}

Test(cli, verify_json_keys_and_exit_codes)
{
	struct proc p;
	const char *ok[] = { "verify", "--json", GOLDEN, NULL };
	run_katra(&p, ok);
	cr_assert_eq(p.status, 0);
	cr_assert_not_null(strstr(p.out, "\"valid\": true"));
	cr_assert_not_null(strstr(p.out, "\"truncated\": false"));
	cr_assert_not_null(strstr(p.out, "\"events\": 44"));
	cr_assert_not_null(strstr(p.out, "\"first_bad_offset\": null"));
}

/* Every bad input: one line on stderr (or the verdict on stdout for
 * verify), a non-zero exit, no crash. */
static char bad_dir[64], bad_out[96];

static void make_bad_inputs(void)
{
	snprintf(bad_dir, sizeof(bad_dir), "/tmp/katra-bad-%d", (int)getpid());
	/* Inside the private directory: other checkouts run this test too. */
	snprintf(bad_out, sizeof(bad_out), "%s/export.json", bad_dir);
	mkdir(bad_dir, 0755);
	size_t len = 0;
	uint8_t *g = t_slurp(GOLDEN, &len);
	cr_assert_not_null(g);
	char path[128];
	snprintf(path, sizeof(path), "%s/empty.katra", bad_dir);
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	snprintf(path, sizeof(path), "%s/cut.katra", bad_dir);
	FILE *f = fopen(path, "wb");
	fwrite(g, 1, len - 100, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/other.katra", bad_dir);
	f = fopen(path, "wb");
	fputs("#!/bin/sh\necho this is no trace, and long enough for a header\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/corrupt.katra", bad_dir);
	g[len / 2] ^= 0x20;
	f = fopen(path, "wb");
	fwrite(g, 1, len, f);
	fclose(f);
	free(g);
}

static void check_bad(const char *cmd, const char *file, int want_status, const char *needle)
{
	char path[128];
	struct proc p;
	if (file[0] == '/')
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/%s", bad_dir, file);
	const char *args[] = { cmd, path, NULL };
	const char *export_args[] = { cmd, "--chrome", path, bad_out, NULL };
	const char *rewrite_args[] = { cmd, path, bad_out, NULL };
	int writes = !strcmp(cmd, "export") || !strcmp(cmd, "compress") ||
		     !strcmp(cmd, "decompress") || !strcmp(cmd, "slice");
	unlink(bad_out);
	run_katra(&p, !strcmp(cmd, "export") ? export_args : writes ? rewrite_args : args);
	/* A failed rewrite leaves nothing behind; a truncated input still
	 * gives the frames before the cut, a damaged one the frames around
	 * what was skipped. */
	if (writes)
		cr_assert_eq(access(bad_out, F_OK),
			     want_status == 3 && strcmp(file, "empty.katra") ? 0 : -1,
			     "katra %s %s: output presence", cmd, file);
	cr_assert_eq(p.status, want_status, "katra %s %s: exit %d", cmd, file, p.status);
	const char *text = p.err_len ? p.err : p.out;
	cr_assert_not_null(strstr(text, needle), "katra %s %s said: %s", cmd, file, text);
	int lines = 0;
	for (const char *c = p.err; *c; c++)
		lines += *c == '\n';
	cr_assert_leq(lines, 1, "katra %s %s: %d lines on stderr", cmd, file, lines);
}

Test(cli, bad_inputs_get_one_clear_line)
{
	make_bad_inputs();
	static const char *const cmds[] = { "info", "dump", "replay", "export", "decompress",
					    "compress", "slice", "stats" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *c = cmds[i];
		check_bad(c, "/nonexistent/x.katra", 1, "No such file or directory");
		check_bad(c, "/tmp", 1, "Is a directory");
		/* Cut inside its header: truncated for every command, as for
		 * verify; nothing to write. */
		check_bad(c, "empty.katra", 3, "the file is empty");
		check_bad(c, "cut.katra", 3, "truncated");
		/* stats and export skip the damaged frame (exit 3, partial);
		 * the others stop at it. */
		int salvages = !strcmp(c, "stats") || !strcmp(c, "export");
		check_bad(c, "corrupt.katra", salvages ? 3 : 1, "checksum mismatch");
		check_bad(c, "other.katra", 1, "not the katra magic 89 4B 54 52 0D 0A 1A 0A");
	}
	check_bad("verify", "/nonexistent/x.katra", 1, "No such file or directory");
	check_bad("verify", "/tmp", 1, "Is a directory");
	check_bad("verify", "empty.katra", 3, "truncated at offset 0");
	check_bad("verify", "cut.katra", 3, "truncated at offset");
	check_bad("verify", "corrupt.katra", 1, "checksum mismatch");
	/* Said once, not escaped twice ("\\x89" on the terminal). */
	check_bad("verify", "other.katra", 1,
		  "corrupt: offset 0: not a katra trace (bad magic): the first bytes are "
		  "not the katra magic 89 4B 54 52 0D 0A 1A 0A\n");
	unlink(bad_out);
	static const char *const made[] = { "empty.katra", "cut.katra", "corrupt.katra",
					    "other.katra" };
	for (size_t i = 0; i < 4; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", bad_dir, made[i]);
		unlink(path);
	}
	rmdir(bad_dir);
}

Test(cli, usage_errors_exit_2)
{
	struct proc p;
	const char *none[] = { NULL };
	run_katra(&p, none);
	cr_assert_eq(p.status, 2);
	const char *bogus[] = { "frobnicate", NULL };
	run_katra(&p, bogus);
	cr_assert_eq(p.status, 2);
	const char *badopt[] = { "dump", "--format", "xml", GOLDEN, NULL };
	run_katra(&p, badopt);
	cr_assert_eq(p.status, 2);
	/* A window that ends before it starts could only select nothing. */
	char out[64];
	snprintf(out, sizeof(out), "/tmp/katra-slice-%d.katra", (int)getpid());
	const char *slice[] = { "slice", "--from", "5", "--to", "4", GOLDEN, out, NULL };
	run_katra(&p, slice);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "slice: --from 5 is after --to 4"), "%s", p.err);
	cr_assert_eq(access(out, F_OK), -1, "nothing is written");
	const char *dump[] = { "dump", "--from", "5", "--to", "4", GOLDEN, NULL };
	run_katra(&p, dump);
	cr_assert_eq(p.status, 2);
	cr_assert_eq(p.out_len, 0);
	const char *point[] = { "dump", "--from", "5", "--to", "5", GOLDEN, NULL };
	run_katra(&p, point);
	cr_assert_eq(p.status, 0, "a window of one instant is fine");
	const char *help[] = { "replay", "--help", NULL };
	run_katra(&p, help);
	cr_assert_eq(p.status, 0);
	cr_assert_not_null(strstr(p.out, "usage: katra replay"));
}

/* ---- export --chrome ------------------------------------------------------ */

#include <jansson.h>

Test(cli, chrome_export_parses_and_pairs_zones)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-chrome-%d.json", (int)getpid());
	struct proc p;
	const char *args[] = { "export", "--chrome", GOLDEN, out, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	json_error_t err;
	json_t *root = json_load_file(out, 0, &err);
	cr_assert_not_null(root, "%s: line %d: %s", out, err.line, err.text);
	json_t *evs = json_object_get(root, "traceEvents");
	cr_assert(json_is_array(evs));
	/* process name, thread names and places, events, the drop's mark */
	cr_assert_eq(json_array_size(evs), 5 + 44 + 1);
	int count[128] = { 0 }, depth[8] = { 0 };
	size_t i;
	json_t *e;
	json_array_foreach(evs, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		cr_assert_not_null(ph);
		count[(unsigned char)ph[0]]++;
		/* Rows are the OS tids (1001, 1002 in the golden file). */
		json_int_t tid = json_integer_value(json_object_get(e, "tid")) - 1000;
		cr_assert((tid > 0 && tid < 8) || (ph[0] == 'M' && !json_object_get(e, "tid")));
		if (ph[0] == 'B')
			depth[tid]++;
		if (ph[0] == 'E') {
			cr_assert_gt(depth[tid], 0, "E without B on thread %d", (int)tid);
			depth[tid]--;
		}
		if (ph[0] == 'C') /* the value keyed by the counter's name */
			cr_assert(json_is_number(json_object_get(json_object_get(e, "args"),
					json_string_value(json_object_get(e, "name")))));
		if (ph[0] == 'M')
			cr_assert(json_is_string(json_object_get(json_object_get(e, "args"), "name")) ||
				  json_is_integer(json_object_get(json_object_get(e, "args"), "sort_index")));
	}
	for (int t = 0; t < 8; t++)
		cr_assert_eq(depth[t], 0, "thread %d: B without E", t);
	/* per set: B, E, instant + frame + message + user as i, two counters,
	 * a flow begin, step and end; four sets; two thread names */
	cr_assert_eq(count['B'], 4);
	cr_assert_eq(count['E'], 4);
	cr_assert_eq(count['i'], 17);
	cr_assert_eq(count['C'], 8);
	cr_assert_eq(count['s'], 4);
	cr_assert_eq(count['t'], 4);
	cr_assert_eq(count['f'], 4);
	cr_assert_eq(count['M'], 5);
	json_decref(root);
	unlink(out);
}

/* ---- decompress, compress, slice ----------------------------------------- */

static void dump_to(const char *file, struct proc *p)
{
	const char *args[] = { "dump", file, NULL };
	run_katra(p, args);
	cr_assert_eq(p->status, 0, "dump %s: %s", file, p->err);
}

/* The file at @file dumps as @ref's output. */
static void dumps_as(const char *file, const struct proc *ref)
{
	static struct proc got;
	dump_to(file, &got);
	cr_assert_eq(got.out_len, ref->out_len, "%s", file);
	cr_assert_eq(memcmp(got.out, ref->out, ref->out_len), 0, "%s", file);
}

static int count_codec(const char *file, int codec)
{
	kt_reader *r;
	kt_trace_frame f;
	int n = 0;
	cr_assert_eq(kt_reader_open(file, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0)
		n += f.kind == KT_FRAME_CHUNK && f.u.chunk.codec == codec;
	kt_reader_close(r);
	return n;
}

Test(cli, decompress_and_compress_round_trip_dump_identically)
{
	char d[128], c[128];
	snprintf(d, sizeof(d), "/tmp/katra-d-%d.katra", (int)getpid());
	snprintf(c, sizeof(c), "/tmp/katra-c-%d.katra", (int)getpid());
	struct proc p, ref;
	const char *dec[] = { "decompress", GOLDEN, d, NULL };
	run_katra(&p, dec);
	cr_assert_eq(p.status, 0, "%s", p.err);
	const char *com[] = { "compress", d, c, NULL };
	run_katra(&p, com);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_eq(count_codec(d, KT_CODEC_NONE), 4);
	cr_assert_eq(count_codec(d, KT_CODEC_LZ4), 0);
	cr_assert_eq(count_codec(c, KT_CODEC_COMPACT), 4);
	/* Plain LZ4 on request; the default is the sessions' codec, compact. */
	char c1[64];
	snprintf(c1, sizeof(c1), "/tmp/katra-c1-%d.katra", (int)getpid());
	const char *com1[] = { "compress", d, c1, "--codec", "lz4", NULL };
	run_katra(&p, com1);
	cr_assert_eq(p.status, 0, "%s", p.err);
	cr_assert_eq(count_codec(c1, KT_CODEC_LZ4), 4);
	const char *bad[] = { "compress", d, "/tmp/katra-never.katra", "--codec", "lz5", NULL };
	run_katra(&p, bad);
	cr_assert_eq(p.status, 2);
	for (int i = 0; i < 2; i++) {
		const char *v[] = { "verify", i ? c : d, NULL };
		run_katra(&p, v);
		cr_assert_eq(p.status, 0, "%s", p.out);
	}
	dump_to(GOLDEN, &ref);
	dumps_as(d, &ref);
	dumps_as(c, &ref);
	dumps_as(c1, &ref);
	unlink(d);
	unlink(c);
	unlink(c1);
}

/* compress --codec compact and zstd: every chunk in that codec, and the
 * same dump; decompressed again, the same records as before. */
Test(cli, compress_compact_and_zstd_round_trip)
{
	static const char *const names[] = { "compact", "zstd" };
	static const int codecs[] = { KT_CODEC_COMPACT, KT_CODEC_COMPACT_ZSTD };
	struct proc p, ref;
	char c[64], d[64];
	dump_to(GOLDEN, &ref);
	for (int i = 0; i < 2; i++) {
		snprintf(c, sizeof(c), "/tmp/katra-%s-%d.katra", names[i], (int)getpid());
		snprintf(d, sizeof(d), "/tmp/katra-%s-d-%d.katra", names[i], (int)getpid());
		const char *com[] = { "compress", GOLDEN, c, "--codec", names[i], NULL };
		run_katra(&p, com);
		cr_assert_eq(p.status, 0, "%s", p.err);
		cr_assert_eq(count_codec(c, codecs[i]), 4, "%s", names[i]);
		const char *dec[] = { "decompress", c, d, NULL };
		run_katra(&p, dec);
		cr_assert_eq(p.status, 0, "%s", p.err);
		cr_assert_eq(count_codec(d, KT_CODEC_NONE), 4);
		const char *v[] = { "verify", c, NULL };
		run_katra(&p, v);
		cr_assert_eq(p.status, 0, "%s", p.out);
		dumps_as(c, &ref);
		dumps_as(d, &ref);
		unlink(c);
		unlink(d);
	}
}

Test(cli, slice_keeps_the_chosen_thread_and_time)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-s-%d.katra", (int)getpid());
	struct proc p, want, got;
	const char *sl[] = { "slice", GOLDEN, out, "--thread", "2", "--from", "124000000", NULL };
	run_katra(&p, sl);
	cr_assert_eq(p.status, 0, "%s", p.err);
	const char *v[] = { "verify", "--json", out, NULL };
	run_katra(&p, v);
	cr_assert_eq(p.status, 0);
	cr_assert_not_null(strstr(p.out, "\"events\": 11"), "%s", p.out);
	const char *filtered[] = { "dump", "--thread", "2", "--from", "124000000", GOLDEN, NULL };
	run_katra(&want, filtered);
	dump_to(out, &got);
	cr_assert_eq(got.out_len, want.out_len);
	cr_assert_eq(memcmp(got.out, want.out, want.out_len), 0);
	/* The summary was recomputed: one thread, its 11 events, no drops
	 * (the drop record lies before the slice). */
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open(out, NULL, &r), 0);
	int seen = 0;
	while (kt_reader_next_frame(r, &f) > 0)
		if (f.kind == KT_FRAME_SUMMARY) {
			seen = 1;
			cr_assert_eq(f.u.summary.thread_count, 1);
			cr_assert_eq(f.u.summary.threads[0].thread_id, 2);
			cr_assert_eq(f.u.summary.events_written, 11);
			cr_assert_eq(f.u.summary.events_dropped, 0);
		}
	cr_assert_eq(seen, 1);
	kt_reader_close(r);
	unlink(out);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A time with a unit or a '+' is from the trace's start (the header's
 * monotonic start, 123456789 ns in the golden file): the same lines as
 * the absolute nanoseconds. */
Test(cli, dump_relative_window_is_the_absolute_one)
{
	struct proc want, got;
	const char *abs[] = { "dump", GOLDEN, "--from", "123789400", "--to", "123789401", NULL };
	const char *rel[] = { "dump", GOLDEN, "--window", "332.611us..+332612", NULL };
	run_katra(&want, abs);
	run_katra(&got, rel);
	cr_assert_eq(got.status, 0, "%s", got.err);
	cr_assert_eq(count_lines(want.out), 6);
	cr_assert_str_eq(got.out, want.out);
}

/* --frames 102..111: from frame 101's mark (123789368 ns) to frame 111's
 * (124122701 ns), ends included: 24 of the 44 events, and the drop record
 * that lies between (kept by slice, a line of dump). */
Test(cli, slice_by_frames_keeps_the_frames_window)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-sf-%d.katra", (int)getpid());
	struct proc p, want, got;
	const char *sl[] = { "slice", GOLDEN, out, "--frames", "102..111", NULL };
	run_katra(&p, sl);
	cr_assert_eq(p.status, 0, "%s", p.err);
	const char *abs[] = { "dump", GOLDEN, "--from", "123789368", "--to", "124122701", NULL };
	run_katra(&want, abs);
	cr_assert_eq(count_lines(want.out), 25); /* and the drop record's line */
	dump_to(out, &got);
	cr_assert_str_eq(got.out, want.out);
	unlink(out);
}

Test(cli, window_words_that_select_nothing_are_usage_errors)
{
	static const char *const bad[][6] = {
		{ "--frames", "200..300", NULL }, /* frames the trace lacks */
		{ "--frames", "5..3", NULL },
		{ "--frames", "1..3", "--from", "5", NULL },
		{ "--from", "1.5", NULL },        /* a fraction of a ns */
		{ "--window", "2s", NULL },
		{ "--from", "+1s", "--to", "+0.5s", NULL },
	};
	static const char *const said[] = {
		"has no frames 200..300", "--frames wants frame numbers A..B, not '5..3'",
		"--frames takes no --from", "--from wants a time", "--window wants A..B",
		"is after --to",
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		const char *args[9] = { "dump", GOLDEN };
		for (int w = 0; bad[k][w]; w++)
			args[2 + w] = bad[k][w];
		struct proc p;
		run_katra(&p, args);
		cr_assert_eq(p.status, 2, "%zu: %s", k, p.err);
		cr_assert_not_null(strstr(p.err, said[k]), "%zu: %s", k, p.err);
	}
}

/* ---- salvage: a damaged chunk in the middle -------------------------------- */

/* The @nth chunk of @path: its offset, its frame's size and its events. */
static void nth_chunk(const char *path, int nth, uint64_t *off, uint64_t *size, uint32_t *n)
{
	kt_reader *r;
	kt_trace_frame f;
	int seen = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0 && !(f.kind == KT_FRAME_CHUNK && seen++ == nth))
		;
	*off = f.offset;
	*n = f.u.chunk.event_count;
	cr_assert_eq(kt_reader_next_frame(r, &f), 1);
	*size = f.offset - *off;
	kt_reader_close(r);
}

/* golden_v3 with one byte of its second chunk flipped at @at (from the
 * frame's start), in a file of its own. */
static void damaged_copy(const char *out, uint64_t off, uint64_t at)
{
	size_t len = 0;
	uint8_t *g = t_slurp(KT_TEST_DATA "/golden_v3.katra", &len);
	cr_assert_not_null(g);
	g[off + at] ^= 0x40;
	FILE *f = fopen(out, "wb");
	cr_assert_eq(fwrite(g, 1, len, f), len);
	fclose(f);
	free(g);
}

/* stats and export skip the damaged chunk, say where, how much and why,
 * show every other event, and exit 3 (partial).  A flipped body byte
 * fails the checksum and the frame's own length skips it; a flipped
 * length byte fails the head check, and the reader finds the next frame
 * by its head.  Both skip exactly that frame. */
Test(cli, stats_and_export_skip_a_damaged_chunk_and_say_so)
{
	uint64_t off, size;
	uint32_t n;
	nth_chunk(KT_TEST_DATA "/golden_v3.katra", 1, &off, &size, &n);
	cr_assert_gt(n, 0);
	char bad[128], out[160], want_err[256], want_events[64];
	snprintf(bad, sizeof(bad), "/tmp/katra-salvage-%d.katra", (int)getpid());
	snprintf(out, sizeof(out), "%s.folded", bad);
	snprintf(want_events, sizeof(want_events), "\"events\": %u,", 44 - n);
	static const struct { uint64_t at; const char *why; } cases[] = {
		{ 40, "frame checksum mismatch" },
		{ 1, "frame head check mismatch (length or kind corrupt)" },
	};
	for (size_t k = 0; k < 2; k++) {
		damaged_copy(bad, off, cases[k].at);
		snprintf(want_err, sizeof(want_err),
			 "skipped 1 damaged frame (%" PRIu64 " bytes), the first at offset %" PRIu64
			 " (%s)", size, off, cases[k].why);
		struct proc p;
		const char *st[] = { "stats", "--json", bad, NULL };
		run_katra(&p, st);
		cr_assert_eq(p.status, 3, "%zu: %s", k, p.err);
		cr_assert_not_null(strstr(p.err, want_err), "%zu: %s", k, p.err);
		cr_assert_not_null(strstr(p.out, want_events), "%zu: %s", k, p.out);
		unlink(out);
		const char *ex[] = { "export", "--collapsed", bad, out, NULL };
		run_katra(&p, ex);
		cr_assert_eq(p.status, 3, "%zu: %s", k, p.err);
		cr_assert_not_null(strstr(p.err, want_err), "%zu: %s", k, p.err);
		cr_assert_eq(access(out, F_OK), 0);
		/* verify still judges the file: corrupt, not partial. */
		const char *v[] = { "verify", bad, NULL };
		run_katra(&p, v);
		cr_assert_eq(p.status, 1);
	}
	unlink(out);
	unlink(bad);
}

/* ---- stats ---------------------------------------------------------------- */

Test(cli, stats_text_matches_golden)
{
	const char *args[] = { "stats", "golden_v1.katra", NULL };
	check_golden_output(args, KT_TEST_DATA "/golden_v1.stats.txt");
}

Test(cli, stats_json_has_the_documented_keys)
{
	struct proc p;
	const char *args[] = { "stats", "--json", GOLDEN, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0);
	json_error_t err;
	json_t *o = json_loadb(p.out, p.out_len, 0, &err);
	cr_assert_not_null(o, "%s", err.text);
	cr_assert_eq(json_integer_value(json_object_get(o, "events")), 44);
	cr_assert_eq(json_integer_value(json_object_get(o, "dropped")), 17);
	cr_assert(json_is_false(json_object_get(o, "truncated")));
	json_t *ths = json_object_get(o, "threads");
	cr_assert_eq(json_array_size(ths), 2);
	json_t *t2 = json_array_get(ths, 1);
	cr_assert_eq(json_integer_value(json_object_get(t2, "tid")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(t2, "name")), "render");
	cr_assert_eq(json_integer_value(json_object_get(t2, "events")), 22);
	cr_assert_eq(json_integer_value(json_object_get(t2, "dropped")), 17);
	json_t *names = json_object_get(o, "names");
	cr_assert_eq(json_array_size(names), 8);
	json_t *zone = json_object_get(json_array_get(names, 0), "zone");
	cr_assert_eq(json_integer_value(json_object_get(zone, "count")), 4);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "frames"), "count")), 2);
	json_decref(o);
}

/* On a terminal, long operations draw a bar on stderr and erase it. */
Test(cli, progress_bar_only_on_a_terminal)
{
	char cmd[512], out[4096];
	snprintf(cmd, sizeof(cmd), "script -qec '%s verify %s' /dev/null", KATRA, GOLDEN);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	cr_assert_eq(pclose(f), 0, "%s", out);
	cr_assert_not_null(strstr(out, "] 100%"), "no bar: %s", out);
	cr_assert_not_null(strstr(out, "\r\033[K"), "bar not erased: %s", out);
	cr_assert_not_null(strstr(out, "valid: 16 frames"), "%s", out);
}

Test(cli, info_matches_golden)
{
	const char *args[] = { "info", "golden_v1.katra", NULL };
	check_golden_output(args, KT_TEST_DATA "/golden_v1.info.txt");
}

Test(cli, chrome_export_matches_golden)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-chrome-golden-%d.json", (int)getpid());
	struct proc p;
	const char *args[] = { "export", "--chrome", GOLDEN, out, NULL };
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s", p.err);
	size_t len = 0, glen = 0;
	uint8_t *got = t_slurp(out, &len);
	cr_assert_not_null(got);
	const char *golden = KT_TEST_DATA "/golden_v1.chrome.json";
	if (getenv("KT_REGEN_GOLDEN")) {
		FILE *f = fopen(golden, "wb");
		cr_assert_not_null(f);
		fwrite(got, 1, len, f);
		fclose(f);
	}
	uint8_t *want = t_slurp(golden, &glen);
	cr_assert_not_null(want, "missing %s", golden);
	cr_assert_eq(len, glen);
	cr_assert_eq(memcmp(got, want, len), 0, "export differs from %s", golden);
	free(got);
	free(want);
	unlink(out);
}

/* ---- verify and a published capture's sidecar ----------------------------- */

#include <nettle/sha2.h>

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(cli, verify_checks_a_capture_sidecar)
{
	char dir[64], trace[128], side[160], json[1024], hex[65];
	snprintf(dir, sizeof(dir), "/tmp/katra-side-%d", (int)getpid());
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(trace, sizeof(trace), "%s/run.1.cap.katra", dir);
	snprintf(side, sizeof(side), "%s.json", trace);
	size_t len = 0;
	uint8_t *g = t_slurp(GOLDEN, &len);
	cr_assert_not_null(g);
	FILE *f = fopen(trace, "wb");
	cr_assert_not_null(f);
	fwrite(g, 1, len, f);
	fclose(f);
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&c);
	sha256_update(&c, len, g);
	sha256_digest(&c, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	free(g);

	const char *args[] = { "verify", trace, NULL };
	struct proc p;
	static const char fmt[] = "{\"schema\":\"katra.capture-status/v1\",\"run_id\":\"run\","
				  "\"epoch\":1,\"capture_id\":\"cap\",\"state\":\"%s\","
				  "\"file\":\"%s\",\"sha256\":\"%s\",\"bytes\":%zu}\n";
	snprintf(json, sizeof(json), fmt, "published", "run.1.cap.katra", hex, len);
	write_text(side, json);
	run_katra(&p, args);
	cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
	char want[512];
	snprintf(want, sizeof(want), "%s: matches: sha256 %s\n", side, hex);
	cr_assert_not_null(strstr(p.out, want), "%s", p.out);

	/* Each way a sidecar can lie, and one that is not JSON. */
	char bad_hex[65];
	memcpy(bad_hex, hex, 65);
	bad_hex[63] = hex[63] == '0' ? '1' : '0';
	struct {
		const char *state, *file, *sha;
		size_t bytes;
		const char *needle;
	} lies[] = {
		{ "published", "run.1.cap.katra", bad_hex, len, "sha256 is " },
		{ "published", "run.1.cap.katra", hex, len + 1, "bytes is " },
		{ "published", "other.katra", hex, len, "it names the file \"other.katra\"" },
		{ "failed", "run.1.cap.katra", hex, len, "state is \"failed\"" },
	};
	for (size_t i = 0; i < sizeof(lies) / sizeof(*lies); i++) {
		snprintf(json, sizeof(json), fmt, lies[i].state, lies[i].file, lies[i].sha,
			 lies[i].bytes);
		write_text(side, json);
		run_katra(&p, args);
		cr_assert_eq(p.status, 1, "case %zu: %s", i, p.out);
		cr_assert_not_null(strstr(p.out, "does not match"), "case %zu: %s", i, p.out);
		cr_assert_not_null(strstr(p.out, lies[i].needle), "case %zu: %s", i, p.out);
	}
	write_text(side, "{\"schema\": ");
	run_katra(&p, args);
	cr_assert_eq(p.status, 1);
	cr_assert_not_null(strstr(p.out, "not JSON: line 1"), "%s", p.out);
	unlink(side);
	unlink(trace);
	rmdir(dir);
}

/* Many pipeline batches (8192 events each) over three threads, with every
 * event type and payloads inline (8 bytes) and not (messages, user records
 * up to 3 KiB): replay --max, which merges on one thread and formats on
 * both, prints exactly what the paced replay prints on one thread. */
Test(cli, replay_max_equals_paced_replay_across_batches)
{
	char path[64], a[80], b[80], cmd[512];
	snprintf(path, sizeof(path), "/tmp/katra-batches-%d.katra", (int)getpid());
	snprintf(a, sizeof(a), "%s.max", path);
	snprintf(b, sizeof(b), "%s.paced", path);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	static const uint8_t kinds[9] = { KT_EV_ZONE_BEGIN, KT_EV_ZONE_END, KT_EV_INSTANT,
					  KT_EV_COUNTER_I64, KT_EV_COUNTER_F64, KT_EV_FRAME,
					  KT_EV_FLOW, KT_EV_MESSAGE, KT_EV_USER };
	static const char *const names[] = { NULL, "zone \"q\"\n", "inst", "count", "ratio",
					     "frame", "flow", "note", "blob" };
	for (uint32_t i = 1; i < 9; i++)
		kt_writer_name(w, i, names[i], strlen(names[i]));
	kt_writer_thread(w, 1, 1001, "main");
	kt_writer_thread(w, 2, 1002, "render \\ 2");
	kt_writer_thread(w, 3, 1003, "worker");
	static uint8_t buf[1 << 20];
	char text[3100];
	memset(text, 'x', sizeof(text));
	for (int c = 0; c < 36; c++) {
		uint32_t tid = 1 + (uint32_t)c % 3;
		size_t n = 0;
		for (int k = 0; k < 1500; k++) {
			uint64_t x = (uint64_t)(c / 3) * 1500 + (uint64_t)k;
			kt_event ev = { .ts = 1000000 + x * 7 + (k % 5 == 0 ? 0 : tid) };
			uint64_t v = x * 2654435761u;
			double f = (double)x / 7.0;
			ev.type = kinds[k % 9];
			ev.name_id = (uint32_t)(k % 9 < 2 ? 1 : k % 9);
			if (ev.type == KT_EV_COUNTER_I64)
				v = -v;
			else if (ev.type == KT_EV_COUNTER_F64)
				memcpy(&v, &f, 8);
			else if (ev.type == KT_EV_FLOW)
				ev.flags = (uint8_t)(x % 3);
			else if (ev.type == KT_EV_USER)
				ev.flags = 3;
			if (ev.type == KT_EV_MESSAGE || ev.type == KT_EV_USER) {
				ev.payload = (const uint8_t *)text;
				ev.payload_len = (uint16_t)(x % 3 == 0 ? x % 3001 : x % 7);
			} else if (ev.type > KT_EV_INSTANT) {
				ev.payload = (const uint8_t *)&v;
				ev.payload_len = 8;
			}
			n += kt_event_encode(buf + n, sizeof(buf) - n, &ev);
		}
		cr_assert_eq(kt_writer_chunk(w, tid, c % 2 ? KT_CODEC_LZ4 : KT_CODEC_NONE, 1, buf, n), 0);
	}
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	kt_writer_close(w);
	close(fd);
	for (int jsonl = 0; jsonl < 2; jsonl++) {
		const char *fmt = jsonl ? "jsonl" : "text";
		snprintf(cmd, sizeof(cmd), "%s replay --max --format %s %s > %s", KATRA, fmt, path, a);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		snprintf(cmd, sizeof(cmd), "%s replay --speed 1e15 --format %s %s > %s", KATRA, fmt,
			 path, b);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		size_t la = 0, lb = 0;
		uint8_t *pa = t_slurp(a, &la), *pb = t_slurp(b, &lb);
		cr_assert(pa && pb);
		cr_assert_gt(la, 54000 * 10, "%s output: %zu bytes", fmt, la);
		cr_assert_eq(la, lb, "%s: --max %zu bytes, paced %zu", fmt, la, lb);
		cr_assert_eq(memcmp(pa, pb, la), 0, "%s: --max and paced outputs differ", fmt);
		free(pa);
		free(pb);
	}
	unlink(path);
	unlink(a);
	unlink(b);
}

/* Output that cannot be written is an error, not a quiet success: every
 * command that prints to stdout, with stdout on /dev/full. */
Test(cli, a_full_stdout_is_an_error)
{
	const char *const cmds[][4] = {
		{ "dump", GOLDEN, NULL }, { "replay", "--max", GOLDEN, NULL },
		{ "stats", GOLDEN, NULL }, { "info", GOLDEN, NULL }, { "verify", GOLDEN, NULL },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		int e[2];
		cr_assert_eq(pipe(e), 0);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			int full = open("/dev/full", O_WRONLY);
			if (full < 0 || chdir(KT_TEST_DATA) < 0)
				_exit(126);
			dup2(full, 1);
			dup2(e[1], 2);
			const char *argv[6] = { KATRA };
			for (int k = 0; cmds[i][k]; k++)
				argv[k + 1] = cmds[i][k];
			execv(KATRA, (char *const *)argv);
			_exit(127);
		}
		close(e[1]);
		char err[512] = "";
		ssize_t n = read(e[0], err, sizeof(err) - 1);
		err[n > 0 ? n : 0] = 0;
		close(e[0]);
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st), "%s crashed", cmds[i][0]);
		cr_assert_eq(WEXITSTATUS(st), 1, "%s exit %d", cmds[i][0], WEXITSTATUS(st));
		cr_assert_str_eq(err, "katra: standard output: No space left on device\n", "%s", cmds[i][0]);
	}
}

/*
 * Processes in a trace (issue #30, format version 4): the process entry
 * (SPEC §4.10) and the thread entry's process (§4.4) both ways, pinned by
 * tests/data/procs_v5.katra; hostile entries; what a version 3 file holds
 * there.
 */
#include "helpers.h"
#include "cli.h"

#include <katra/reader.h>
#include <xxhash.h>

#include "format/format.h"
#include "fxt.h"

#include <jansson.h>

#define PROCS_GOLDEN KT_TEST_DATA "/procs_v5.katra"

static const char parent_cmd[] = "./multiproc\0--events\0" "5";

/* Two processes, parent (id 1) and worker (id 2), a thread and a chunk
 * of one zone each. */
static uint8_t *procs_file(size_t *len)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("procs", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	kt_process_def parent = { 1, KT_PROCESS_COMPLETE, 100, 1, 1000, 9000, 6,
				  sizeof(parent_cmd) - 1, "parent", parent_cmd };
	kt_process_def worker = { 2, KT_PROCESS_RECOVERED, 101, 100, 2000, 0, 6, 0, "worker",
				  NULL };
	cr_assert_eq(kt_writer_process(w, &parent), 0);
	cr_assert_eq(kt_writer_process(w, &worker), 0);
	cr_assert_eq(kt_writer_name(w, 1, "zone", 4), 0);
	cr_assert_eq(kt_writer_thread_in(w, 1, 100, "main", 1), 0);
	cr_assert_eq(kt_writer_thread_in(w, 2, 101, "work", 2), 0);
	for (uint32_t t = 1; t <= 2; t++) {
		uint8_t ev[64];
		kt_event b = { .ts = 2000000 * t, .name_id = 1, .type = KT_EV_ZONE_BEGIN };
		kt_event e = { .ts = 2000000 * t + 300, .name_id = 1, .type = KT_EV_ZONE_END };
		size_t at = kt_event_encode(ev, sizeof(ev), &b);
		at += kt_event_encode(ev + at, sizeof(ev) - at, &e);
		cr_assert_eq(kt_writer_chunk(w, t, KT_CODEC_NONE, 1, ev, at), 0);
	}
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	uint8_t *file = t_slurp_fd(fd, len);
	close(fd);
	return file;
}

/* The bytes are pinned (KT_REGEN_GOLDEN=1 rewrites them), and read back
 * field by field. */
Test(procs, entries_round_trip_with_exact_bytes)
{
	size_t len, glen;
	uint8_t *file = procs_file(&len);
	uint8_t *golden = t_golden_same(PROCS_GOLDEN, file, len, &glen);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	kt_trace_frame f;
	int procs = 0, threads = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (p && p->id == 1) {
			procs++;
			cr_assert(p->flags == KT_PROCESS_COMPLETE && p->pid == 100 &&
				  p->parent_pid == 1 && p->start_ns == 1000 && p->end_ns == 9000);
			cr_assert_str_eq(p->name, "parent");
			cr_assert_eq(p->cmdline_len, sizeof(parent_cmd) - 1);
			cr_assert_eq(memcmp(p->cmdline, parent_cmd, sizeof(parent_cmd)), 0);
		} else if (p) {
			procs++;
			cr_assert(p->id == 2 && p->flags == KT_PROCESS_RECOVERED && p->pid == 101 &&
				  p->parent_pid == 100 && p->start_ns == 2000 && p->end_ns == 0);
			cr_assert_str_eq(p->name, "worker");
			cr_assert(p->cmdline_len == 0 && p->cmdline[0] == 0);
		}
		if (f.kind == KT_FRAME_THREAD) {
			threads++;
			cr_assert_eq(f.u.thread.process, f.u.thread.thread_id);
		}
	}
	cr_assert_eq(procs, 2);
	cr_assert_eq(threads, 2);
	kt_reader_close(r);
	/* The first entry's body, as SPEC §4.10 lays it out. */
	size_t off = 24 + kt__align8(kt__get32(file + 12));
	cr_assert_eq(file[off + 4], KT_FRAME_PROCESS);
	cr_assert_eq(kt__get32(file + off), 48 + 6 + sizeof(parent_cmd) - 1);
	static const uint8_t body[48] = { 1, 0, 0, 0, 1, 0, 0, 0, 100, [16] = 1, [24] = 0xe8, 3,
					  [32] = 0x28, 0x23, [40] = 6, [44] = 22 };
	cr_assert_eq(memcmp(file + off + 8, body, 48), 0);
	cr_assert_eq(memcmp(file + off + 56, "parent./multiproc", 17), 0);
	free(golden);
	free(file);
}

/* The frame at @off of @file (@len) gets body byte @at set to @v and its
 * sums made right again: what the reader then says. */
static int patched(uint8_t *file, size_t len, size_t off, size_t at, uint8_t v,
		   kt_reader_error *err, kt_reader_status *st)
{
	uint32_t blen = kt__get32(file + off);
	file[off + 8 + at] = v;
	kt__enc_frame_seal(file + off, blen);
	kt_reader *r;
	kt_trace_frame f;
	int rc = kt_reader_open_mem(file, len, err, &r);
	cr_assert_eq(rc, 0);
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		;
	if (rc < 0)
		*err = *kt_reader_get_last_error(r);
	kt_reader_get_status(r, st);
	kt_reader_close(r);
	return rc;
}

/* Lengths that disagree with the body, a flag not defined, a zero byte in
 * the name: refused with the offset of the field. */
Test(procs, hostile_entries_are_refused)
{
	size_t len;
	kt_reader_error err;
	kt_reader_status st;
	uint8_t *file = procs_file(&len);
	size_t off = 24 + kt__align8(kt__get32(file + 12));
	uint8_t *c = malloc(len);
	struct {
		size_t at;
		uint8_t v;
		int code;
	} bad[] = {
		{ KT__PROC_NAME_LEN, 7, KT_EFRAME },       /* lengths past the body */
		{ KT__PROC_CMD_LEN + 2, 1, KT_EFRAME },    /* a length over 65535 */
		{ KT__PROC_FLAGS, 4, KT_ERESERVED },       /* bit 2 */
		{ KT__PROC_FIXED + 2, 0, KT_EFRAME },      /* a zero byte in the name */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(c, file, len);
		int rc = patched(c, len, off, bad[i].at, bad[i].v, &err, &st);
		cr_assert_eq(rc, bad[i].code, "case %zu: %d", i, rc);
		cr_assert_eq(err.offset, i == 3 ? off + 8 + KT__PROC_FIXED
					 : i == 2 ? off + 8 + KT__PROC_FLAGS
						  : off + 8 + KT__PROC_NAME_LEN,
			     "case %zu: %s", i, err.message);
	}
	free(c);
	free(file);
}

/* Made a version 3 file, the process entries are a kind that version did
 * not have (skipped), and a thread's process there is a reserved field. */
Test(procs, version_3_skips_process_entries_and_refuses_a_process)
{
	size_t len;
	uint8_t *file = procs_file(&len);
	t_set_version(file, 3, KT__SCHEMA_HASH_V3);
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	int rc, threads = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		threads += f.kind == KT_FRAME_THREAD;
	cr_assert_eq(rc, KT_ERESERVED);
	cr_assert_str_eq(kt_reader_get_last_error(r)->message,
			 "offset 476: reserved field or padding not zero: thread entry reserved bytes");
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.unknown_frames, 2);
	cr_assert_eq(threads, 0);
	kt_reader_close(r);
	free(file);
}

/* ---- katra merge ---------------------------------------------------------- */

/* A one-process trace at @path: pid @pid, thread 1 "main", one zone at
 * @ts ticks (300 ticks long), of @clock (3 GHz TSC, as t_header(), or
 * CLOCK_MONOTONIC ns from 0), of host @host. */
static void one_process(const char *path, uint64_t pid, uint8_t clock, uint64_t ts,
			const char *host)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	h.process_id = pid;
	h.host = host;
	if (clock == KT_CLOCK_MONOTONIC)
		h.clock = (kt_clock_calibration){ KT_CLOCK_MONOTONIC, 1000000000, 0, 0 };
	unlink(path);
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	cr_assert_eq(kt_writer_name(w, 5, "zone", 4), 0);
	cr_assert_eq(kt_writer_thread(w, 1, (uint32_t)pid, "main"), 0);
	uint8_t ev[64];
	kt_event b = { .ts = ts, .name_id = 5, .type = KT_EV_ZONE_BEGIN };
	kt_event e = { .ts = ts + 300, .name_id = 5, .type = KT_EV_ZONE_END };
	size_t at = kt_event_encode(ev, sizeof(ev), &b);
	at += kt_event_encode(ev + at, sizeof(ev) - at, &e);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, at), 0);
	cr_assert_eq(kt_writer_drop(w, 1, 3, ts, ts + 30), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* The merge of processes 700 (thread 1, os tid 700) and 701 (thread 2)
 * at @out, exported: Chrome has each thread's events under its process's
 * pid and a process_name per process; FXT a process koid per process and
 * each thread's records under its own. */
static void exports_show_processes(const char *out)
{
	size_t len = 0;
	char json[80];
	snprintf(json, sizeof(json), "/tmp/kt_procs_%d.json", (int)getpid());
	unlink(json);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--chrome", out, json, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_error_t je;
	json_t *doc = json_load_file(json, 0, &je), *ev;
	cr_assert_not_null(doc, "%s", je.text);
	json_t *evs = json_is_array(doc) ? doc : json_object_get(doc, "traceEvents");
	size_t i;
	int named = 0, zones = 0;
	json_array_foreach(evs, i, ev) {
		json_int_t pid = json_integer_value(json_object_get(ev, "pid"));
		json_t *tid = json_object_get(ev, "tid");
		const char *name = json_string_value(json_object_get(ev, "name"));
		if (name && !strcmp(name, "process_name"))
			named += pid == 700 || pid == 701;
		if (tid && json_integer_value(tid) >= 700) {
			cr_assert_eq(pid, json_integer_value(tid), "event of tid %lld in pid %lld",
				     (long long)json_integer_value(tid), (long long)pid);
			zones += name && !strcmp(name, "zone");
		}
	}
	cr_assert_eq(named, 2);
	cr_assert_eq(zones, 4, "%d zones", zones); /* a begin and an end each */
	json_decref(doc);
	unlink(json);
	run_katra(&p, (const char *const[]){ "export", "--fxt", out, json, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	uint8_t *bytes = t_slurp(json, &len);
	static struct fxt f;
	read_fxt(&f, bytes, len);
	cr_assert(f.npids == 2 && f.pids[0] == 700 && f.pids[1] == 701);
	cr_assert(f.threads[1][0] == 700 && f.threads[1][1] == 700);
	cr_assert(f.threads[2][0] == 701 && f.threads[2][1] == 701);
	cr_assert(f.thread_pid[0] == 700 && f.thread_pid[1] == 701);
	free(bytes);
	unlink(json);
	/* katra info: a line per process, each thread's process. */
	run_katra(&p, (const char *const[]){ "info", out, NULL });
	cr_assert_eq(p.status, 0);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	cr_assert(strstr(p.out, "processes       2\n  process 1     pid 700      parent 0"
				"        main             complete, "), "%s", p.out);
	cr_assert(strstr(p.out, "2 events, 3 dropped, process 2\n"), "%s", p.out);
	/* katra stats: a row per process before the threads'. */
	run_katra(&p, (const char *const[]){ "stats", out, NULL });
	cr_assert_eq(p.status, 0);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	cr_assert(strstr(p.out, "\nprocess  pid      name                  threads       events"
				"    dropped\n1        700      main                        1            2"
				"          3\n2        701      main "), "%s", p.out);
	run_katra(&p, (const char *const[]){ "stats", "--json", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_t *st = json_loadb(p.out, p.out_len, 0, &je), *pr = json_object_get(st, "processes");
	cr_assert_eq(json_array_size(pr), 2);
	for (size_t k = 0; k < 2; k++) {
		json_t *o = json_array_get(pr, k);
		cr_assert(json_integer_value(json_object_get(o, "pid")) == 700 + (json_int_t)k &&
			  json_integer_value(json_object_get(o, "events")) == 2 &&
			  json_integer_value(json_object_get(o, "dropped")) == 3 &&
			  json_integer_value(json_object_get(o, "threads")) == 1);
	}
	json_decref(st);
	/* katra dump: each line's thread with its process's pid. */
	run_katra(&p, (const char *const[]){ "dump", out, NULL });
	cr_assert_eq(p.status, 0);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	cr_assert(strstr(p.out, " 1 main[pid 700] zone_begin zone") &&
		  strstr(p.out, " 2 main[pid 701] zone_end zone"), "%s", p.out);
	run_katra(&p, (const char *const[]){ "dump", "--format", "jsonl", out, NULL });
	cr_assert_eq(p.status, 0);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	cr_assert(strstr(p.out, "\"tid\":2,\"pid\":701,\"thread\":\"main\""), "%s", p.out);
	/* Collapsed stacks: process;thread;stack. */
	run_katra(&p, (const char *const[]){ "export", "--collapsed", out, json, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	bytes = t_slurp(json, &len);
	cr_assert_not_null(bytes);
	static const char want[] = "main (700);main (1);zone 100\nmain (701);main (2);zone 300\n";
	cr_assert(len == sizeof(want) - 1 && !memcmp(bytes, want, len), "%.*s", (int)len,
		  (const char *)bytes);
	free(bytes);
	unlink(json);
}

/* Both processes of @out have a zone "zone": each row of stats says
 * whose, in the text (its pid) and in --json (its process entry). */
static void stats_say_whose_zone(const char *out)
{
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", out, NULL });
	cr_assert_eq(p.status, 0);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	cr_assert(strstr(p.out, "\nzone (pid 700)                    1        100        100") &&
			  strstr(p.out, "\nzone (pid 701)                    1        300        300"),
		  "%s", p.out);
	run_katra(&p, (const char *const[]){ "stats", "--json", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_error_t je;
	json_t *st = json_loadb(p.out, p.out_len, 0, &je), *names = json_object_get(st, "names");
	cr_assert_eq(json_array_size(names), 2);
	for (size_t k = 0; k < 2; k++) {
		json_t *o = json_array_get(names, k);
		cr_assert_str_eq(json_string_value(json_object_get(o, "name")), "zone");
		cr_assert_eq(json_integer_value(json_object_get(o, "process")), 1 + (json_int_t)k);
	}
	json_decref(st);
}

/*
 * A process on the TSC (3 GHz, calibrated at 1000000 ticks = 123456000
 * ns) and one on CLOCK_MONOTONIC: each thread under its process, names
 * and threads apart, every time in ns through its own file's calibration,
 * the drops kept; OUT never replaced; another host refused.
 */
Test(procs, merge_puts_processes_on_one_clock)
{
	char a[64], b[64], c[64], out[64];
	snprintf(a, sizeof(a), "/tmp/kt_procs_a_%d.katra", (int)getpid());
	snprintf(b, sizeof(b), "/tmp/kt_procs_b_%d.katra", (int)getpid());
	snprintf(c, sizeof(c), "/tmp/kt_procs_c_%d.katra", (int)getpid());
	snprintf(out, sizeof(out), "/tmp/kt_procs_m_%d.katra", (int)getpid());
	one_process(a, 700, KT_CLOCK_TSC, 4000000, "test-host");
	one_process(b, 701, KT_CLOCK_MONOTONIC, 124456100, "test-host");
	one_process(c, 702, KT_CLOCK_MONOTONIC, 1, "other-host");
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "merge", a, b, "-o", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(out, NULL, &r), 0);
	const kt_header *h = kt_reader_get_header(r);
	cr_assert(h->clock.source == KT_CLOCK_MONOTONIC && h->clock.tick_hz == 1000000000 &&
		  h->clock.ticks == 0 && h->clock.mono_ns == 0 && h->process_id == 700);
	kt_trace_frame f;
	uint64_t pids[3] = { 0 }, drops[3][2] = { { 0 } };
	uint32_t thread_proc[3] = { 0 }, names = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *pr = kt_trace_frame_get_process(&f);
		if (pr && pr->id >= 1 && pr->id <= 2) {
			pids[pr->id] = pr->pid;
			cr_assert_eq(pr->flags, KT_PROCESS_COMPLETE);
			cr_assert_str_eq(pr->name, "main");
		}
		if (f.kind == KT_FRAME_THREAD && f.u.thread.thread_id <= 2)
			thread_proc[f.u.thread.thread_id] = f.u.thread.process;
		if (f.kind == KT_FRAME_NAME)
			names |= 1u << f.u.name.id;
		if (f.kind == KT_FRAME_DROP && f.u.drop.thread_id <= 2) {
			drops[f.u.drop.thread_id][0] = f.u.drop.first_ts;
			drops[f.u.drop.thread_id][1] = f.u.drop.count;
		}
	}
	cr_assert(pids[1] == 700 && pids[2] == 701);
	cr_assert(thread_proc[1] == 1 && thread_proc[2] == 2);
	cr_assert_eq(names, 0x6); /* "zone" twice: ids 1 and 2 */
	/* 4000000 ticks: 3000000 past the calibration, 1 ms at 3 GHz. */
	cr_assert(drops[1][0] == 124456000 && drops[1][1] == 3);
	cr_assert(drops[2][0] == 124456100 && drops[2][1] == 3);
	kt_reader_rewind(r);
	kt_event ev;
	static const struct {
		uint64_t ts;
		uint32_t thread, name;
	} want[] = { { 124456000, 1, 1 }, { 124456100, 1, 1 }, { 124456100, 2, 2 },
		     { 124456400, 2, 2 } };
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(kt_reader_next(r, &ev), 1);
		cr_assert(ev.ts == want[i].ts && ev.thread_id == want[i].thread &&
			  ev.name_id == want[i].name, "event %d: %llu %u %u", i,
			  (unsigned long long)ev.ts, ev.thread_id, ev.name_id);
	}
	cr_assert_eq(kt_reader_next(r, &ev), 0);
	kt_reader_close(r);
	run_katra(&p, (const char *const[]){ "verify", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.out_len, p.out);
	exports_show_processes(out);
	stats_say_whose_zone(out);
	run_katra(&p, (const char *const[]){ "merge", a, b, "-o", out, NULL });
	cr_assert_eq(p.status, 1);
	cr_assert(strstr(p.err, "exists: not replaced"), "%.*s", (int)p.err_len, p.err);
	unlink(out);
	run_katra(&p, (const char *const[]){ "merge", a, c, "-o", out, NULL });
	cr_assert_eq(p.status, 1);
	cr_assert(strstr(p.err, "their clocks are not one"), "%.*s", (int)p.err_len, p.err);
	cr_assert_neq(access(out, F_OK), 0);
	unlink(a);
	unlink(b);
	unlink(c);
}

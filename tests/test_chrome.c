/*
 * `katra export --chrome`: on a hostile trace (ends with no begin, a zone
 * closed by an outer end, a zone never ended, a drop window with zones
 * open across it) the JSON, parsed with jansson, is balanced per thread
 * in file order with every cut marked; --complete writes the same zones
 * as X events; a window's end closes what it cuts; metadata, flows,
 * frame marks and messages in the shapes the viewers read.
 */
#include "helpers.h"
#include "cli.h"

#include <criterion/criterion.h>
#include <jansson.h>

#include <katra/reader.h>
#include <katra/writer.h>

#define GOLDEN KT_TEST_DATA "/golden_v1.katra"

/* Microseconds that give the nanosecond both as Tracy's import-chrome
 * reads them (truncated) and as Perfetto's does (rounded): the JSON's
 * three decimals and 0.3 ns.  Not Criterion's float assertion, which the
 * TSan build's stand-in lacks. */
#define ROUND_NS(us) ((long long)((us) * 1000.0 + 0.5)) /* times here are positive */
#define assert_us(got, want, ...) \
	cr_assert((long long)((got) * 1000.0) == ROUND_NS(want) && \
		  ROUND_NS(got) == ROUND_NS(want), __VA_ARGS__)

/* Tick k of the hostile trace: 1 us apart (t_header's 3 GHz clock), and
 * its time in the JSON's microseconds. */
#define TICK(k) (UINT64_C(1000000) + 3000 * (uint64_t)(k))
#define US(k) (123456.0 + (double)(k))

/*
 * Thread 1: a [1], b [2], end of a [3] (closes b), end of c [4] (no
 * begin), d [5], e [6], a drop of 5 events from 6.5 to 7.5, end of e [8];
 * d never ends.  Thread 2: x [1], end of y [2] (no begin), end of x [3].
 */
static void write_hostile(const char *path)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	static const char *const names[] = { "a", "b", "c", "d", "e", "x", "y" };
	for (uint32_t i = 0; i < 7; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], 1), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 200, "side"), 0);
	static const struct { uint32_t tid, k; char kind; uint32_t name; } z[] = {
		{ 1, 1, 'B', 1 }, { 1, 2, 'B', 2 }, { 1, 3, 'E', 1 }, { 1, 4, 'E', 3 },
		{ 1, 5, 'B', 4 }, { 1, 6, 'B', 5 }, { 1, 8, 'E', 5 },
		{ 2, 1, 'B', 6 }, { 2, 2, 'E', 7 }, { 2, 3, 'E', 6 } };
	for (uint32_t tid = 1; tid <= 2; tid++) {
		uint8_t buf[512];
		size_t len = 0;
		for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
			if (z[i].tid != tid)
				continue;
			kt_event ev = { .ts = TICK(z[i].k), .name_id = z[i].name,
					.type = z[i].kind == 'B' ? KT_EV_ZONE_BEGIN : KT_EV_ZONE_END };
			len += kt_event_encode(buf + len, sizeof(buf) - len, &ev);
		}
		cr_assert_eq(kt_writer_chunk(w, tid, KT_CODEC_LZ4, 3, buf, len), 0);
	}
	cr_assert_eq(kt_writer_drop(w, 1, 5, TICK(6) + 1500, TICK(7) + 1500), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* Export @in with @opt (NULL for none) and @win (NULL, or a --to value);
 * the parsed document, its stderr in @p. */
static json_t *export_json(const char *in, const char *opt, const char *to, struct proc *p)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-chrome-test-%d.json", (int)getpid());
	unlink(out);
	const char *args[8] = { "export", "--chrome" };
	int n = 2;
	if (opt)
		args[n++] = opt;
	if (to) {
		args[n++] = "--to";
		args[n++] = to;
	}
	args[n++] = in;
	args[n++] = out;
	run_katra(p, args);
	cr_assert_eq(p->status, 0, "exit %d: %s", p->status, p->err);
	json_error_t e;
	json_t *doc = json_load_file(out, 0, &e);
	cr_assert_not_null(doc, "%s: %s", out, e.text);
	unlink(out);
	return doc;
}

/* One zone as the test expects it: thread, name, begin and end tick (a
 * half tick as .5), its args' "cut" or NULL, and whether "closed". */
struct want {
	uint32_t tid;
	const char *name;
	double b, e;
	const char *cut;
	int closed;
};

static const char *cut_of(json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "args"), "cut"));
}

static int closed_of(json_t *o)
{
	return json_is_true(json_object_get(json_object_get(o, "args"), "closed"));
}

/* Match the zone @o ended (a B's pair, or an X) against @w; its begin
 * time @b. */
static void check_zone(json_t *o, const char *name, double b, double e, const char *cut,
		       int closed, const struct want *w)
{
	/* Rows are the OS tids: 100 and 200 for katra's threads 1 and 2. */
	cr_assert_eq((uint32_t)json_integer_value(json_object_get(o, "tid")), 100 * w->tid);
	cr_assert_str_eq(name, w->name);
	assert_us(b, US(w->b), "%s begins at %f", name, b);
	assert_us(e, US(w->e), "%s ends at %f", name, e);
	if (w->cut)
		cr_assert(cut && !strcmp(cut, w->cut), "%s: cut %s, want %s", name, cut, w->cut);
	else
		cr_assert_null(cut, "%s: cut %s", name, cut);
	cr_assert_eq(closed, w->closed, "%s: closed", name);
}

/*
 * Walk the events in file order: per thread, every E closes the B on top
 * of that thread's stack, of the same name, no earlier; no B is left
 * open.  Each zone (at its E, or an X) is checked against @want in the
 * order zones end.  Returns the number of drop marks seen.
 */
static int check_balanced(json_t *doc, const struct want *want, size_t nwant)
{
	json_t *evs = json_object_get(doc, "traceEvents"), *o;
	json_t *stack[2][16];
	size_t depth[2] = { 0, 0 }, next = 0, i;
	int drops = 0;
	json_array_foreach(evs, i, o) {
		const char *ph = json_string_value(json_object_get(o, "ph"));
		const char *name = json_string_value(json_object_get(o, "name"));
		double ts = json_real_value(json_object_get(o, "ts"));
		json_int_t tid = json_integer_value(json_object_get(o, "tid")) / 100; /* OS tids */
		cr_assert_not_null(ph);
		if (!strcmp(ph, "i") && name && strstr(name, "events dropped"))
			drops++;
		if (strcmp(ph, "B") && strcmp(ph, "E") && strcmp(ph, "X"))
			continue;
		cr_assert(tid == 1 || tid == 2, "tid %lld", (long long)tid);
		size_t *d = &depth[tid - 1];
		if (!strcmp(ph, "B")) {
			cr_assert_lt(*d, 16);
			stack[tid - 1][(*d)++] = o;
			continue;
		}
		cr_assert_lt(next, nwant, "more zones than expected: %s", name);
		if (!strcmp(ph, "X")) {
			/* a sum of two times carries their 0.3 ns twice */
			double dur = json_real_value(json_object_get(o, "dur"));
			check_zone(o, name, ts, ts + dur - 0.0003, cut_of(o), closed_of(o), &want[next++]);
			continue;
		}
		cr_assert_gt(*d, 0, "an E with nothing open on tid %lld: %s", (long long)tid, name);
		json_t *b = stack[tid - 1][--*d];
		cr_assert_str_eq(json_string_value(json_object_get(b, "name")), name);
		const char *cb = cut_of(b), *ce = cut_of(o);
		const char *cut = cb && ce ? "both" : cb ? cb : ce;
		check_zone(o, name, json_real_value(json_object_get(b, "ts")), ts, cut, closed_of(o),
			   &want[next++]);
	}
	cr_assert_eq(depth[0] + depth[1], 0, "zones left open");
	cr_assert_eq(next, nwant, "zones seen");
	return drops;
}

/* The zones of the hostile trace, in the order they end. */
static const struct want hostile[] = {
	{ 1, "b", 2, 3, NULL, 1 },       /* closed by a's end */
	{ 1, "a", 1, 3, NULL, 0 },
	{ 2, "x", 1, 3, NULL, 0 },       /* y's end skipped */
	{ 1, "e", 6, 6.5, "end", 0 },    /* cut by the drop */
	{ 1, "d", 5, 6.5, "end", 0 },
	{ 1, "e", 7.5, 8, "start", 0 },  /* opened again after it */
	{ 1, "d", 7.5, 8, "both", 0 },   /* and closed at the thread's end */
};

static const char *hostile_path(void)
{
	static char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-chrome-test-%d.katra", (int)getpid());
	write_hostile(path);
	return path;
}

static void check_said(const struct proc *p, const char *path)
{
	char want[512];
	snprintf(want, sizeof(want), "katra: %s: zones balanced for the viewer: skipped 2 ends "
		 "with no begin, closed 1 zones at an outer zone's end and 1 still open at the "
		 "end, skipped 0 begins past 1048576 open zones\n"
		 "katra: %s: 2 zones open at a drop window were closed at its start and opened "
		 "again at its end\n", path, path);
	cr_assert_str_eq(p->err, want);
}

/* B/E and X list zones in the same order: each where it ends. */
Test(chrome, hostile_zones_balanced_per_thread_with_cuts_marked)
{
	const char *path = hostile_path();
	struct proc p;
	json_t *doc = export_json(path, NULL, NULL, &p);
	check_said(&p, path);
	cr_assert_eq(check_balanced(doc, hostile, sizeof(hostile) / sizeof(hostile[0])), 1);
	json_decref(doc);
	unlink(path);
}

Test(chrome, complete_writes_each_zone_as_one_x_event)
{
	const char *path = hostile_path();
	struct proc p;
	json_t *doc = export_json(path, "--complete", NULL, &p);
	check_said(&p, path);
	cr_assert_eq(check_balanced(doc, hostile, sizeof(hostile) / sizeof(hostile[0])), 1);
	size_t i, x = 0, b = 0, e = 0;
	json_t *o;
	/* Each zone one X, but for d opened again at 7.5 with e inside it at
	 * the same time: d goes out as B before e's X (a viewer that sorts by
	 * begin time alone keeps e inside d), and as E at its end. */
	json_array_foreach(json_object_get(doc, "traceEvents"), i, o) {
		const char *ph = json_string_value(json_object_get(o, "ph"));
		const char *name = json_string_value(json_object_get(o, "name"));
		if (!strcmp(ph, "B") || !strcmp(ph, "E")) {
			cr_assert_str_eq(name, "d");
			b += !strcmp(ph, "B");
			e += !strcmp(ph, "E");
			cr_assert_eq(b, 1, "d's B before e's X");
			cr_assert_eq(x, e ? 6u : 5u, "d's B before e's X, its E after");
		}
		x += !strcmp(ph, "X");
	}
	cr_assert_eq(x, 6);
	cr_assert_eq(e, 1);
	json_decref(doc);
	unlink(path);
}

/* The golden's first frame_zone on thread 1 runs from 123789.366 to .370
 * us; a window ending at .368 cuts it there. */
Test(chrome, window_end_closes_the_zones_it_cuts)
{
	struct proc p;
	json_t *doc = export_json(GOLDEN, NULL, "123789368", &p);
	json_t *evs = json_object_get(doc, "traceEvents"), *o;
	size_t i;
	int ends = 0, drops = 0;
	json_array_foreach(evs, i, o) {
		const char *ph = json_string_value(json_object_get(o, "ph"));
		const char *name = json_string_value(json_object_get(o, "name"));
		drops += name && strstr(name, "dropped") != NULL;
		if (strcmp(ph, "E"))
			continue;
		ends++;
		cr_assert_str_eq(name, "frame_zone");
		cr_assert_str_eq(cut_of(o), "end");
		assert_us(json_real_value(json_object_get(o, "ts")), 123789.368, "the cut's time");
	}
	cr_assert_eq(ends, 1);
	cr_assert_eq(drops, 0, "the golden's drop lies past the window");
	json_decref(doc);
}

/* ---- the shapes the viewers read ---- */

/*
 * Thread 1 "main": a frame mark named "present" [1], a flow begin (id 99)
 * outside every zone [2], zone "work" from render.c:42 [3], the flow's
 * end inside it [4], an info message "hi there" named "log" [5], the
 * zone's end [6].
 */
static void write_shapes(const char *path)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	static const char *const names[] = { "present", "send", "log", "work" };
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	kt_srcloc loc = { .id = 4, .line = 42, .file = "render.c", .file_len = 8 };
	cr_assert_eq(kt_writer_srcloc(w, &loc), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "main"), 0);
	uint8_t p7[8] = { 7 }, p99[8] = { 99 }, buf[512];
	const uint8_t *text = (const uint8_t *)"hi there";
	kt_event evs[] = {
		{ TICK(1), 1, 1, KT_EV_FRAME, 0, 8, p7 },
		{ TICK(2), 1, 2, KT_EV_FLOW, KT_FLOW_BEGIN, 8, p99 },
		{ TICK(3), 1, 4, KT_EV_ZONE_BEGIN, 0, 0, NULL },
		{ TICK(4), 1, 2, KT_EV_FLOW, KT_FLOW_END, 8, p99 },
		{ TICK(5), 1, 3, KT_EV_MESSAGE, KT_SEV_INFO, 8, text },
		{ TICK(6), 1, 4, KT_EV_ZONE_END, 0, 0, NULL },
		{ TICK(7), 1, 2, KT_EV_FLOW, KT_FLOW_END, 8, p99 },
	};
	size_t len = 0;
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		len += kt_event_encode(buf + len, sizeof(buf) - len, &evs[i]);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 7, buf, len), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* The objects of @doc as one compact JSON line each, for exact matching. */
static char *object_line(json_t *doc, size_t i)
{
	return json_dumps(json_array_get(json_object_get(doc, "traceEvents"), i),
			  JSON_COMPACT | JSON_PRESERVE_ORDER);
}

Test(chrome, metadata_flows_frames_messages_and_locations_in_the_viewers_shapes)
{
	char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-chrome-shapes-%d.katra", (int)getpid());
	write_shapes(path);
	struct proc p;
	json_t *doc = export_json(path, NULL, NULL, &p);
	static const char *const want[] = {
		"{\"ph\":\"M\",\"pid\":4242,\"name\":\"process_name\",\"args\":{\"name\":\"unit test\"}}",
		"{\"ph\":\"M\",\"pid\":4242,\"tid\":100,\"name\":\"thread_name\",\"args\":{\"name\":\"main\"}}",
		"{\"ph\":\"M\",\"pid\":4242,\"tid\":100,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":0}}",
		/* a frame mark: an instant whose name holds "frame" */
		"{\"pid\":4242,\"tid\":100,\"ts\":123457.0003,\"ph\":\"i\",\"s\":\"p\",\"name\":\"frame: present\",\"cat\":\"frame\",\"args\":{\"frame\":7}}",
		/* a flow outside every zone: no slice made up for it (unbound) */
		"{\"pid\":4242,\"tid\":100,\"ts\":123458.0003,\"ph\":\"s\",\"bp\":\"e\",\"name\":\"send\",\"cat\":\"flow\",\"id\":99}",
		"{\"pid\":4242,\"tid\":100,\"ts\":123459.0003,\"ph\":\"B\",\"name\":\"work\",\"loc\":\"render.c:42\",\"args\":{\"loc\":\"render.c:42\"}}",
		"{\"pid\":4242,\"tid\":100,\"ts\":123460.0003,\"ph\":\"f\",\"bp\":\"e\",\"name\":\"send\",\"cat\":\"flow\",\"id\":99}",
		/* a message: its text is the name */
		"{\"pid\":4242,\"tid\":100,\"ts\":123461.0003,\"ph\":\"i\",\"s\":\"t\",\"args\":{\"event\":\"log\",\"severity\":\"info\"},\"name\":\"hi there\"}",
		"{\"pid\":4242,\"tid\":100,\"ts\":123462.0003,\"ph\":\"E\",\"name\":\"work\"}",
		/* a flow's end outside every zone: no "bp", so it binds to the
		 * thread's next slice (the format's rule for an "f") */
		"{\"pid\":4242,\"tid\":100,\"ts\":123463.0003,\"ph\":\"f\",\"cat\":\"flow\",\"name\":\"send\",\"id\":99}",
	};
	size_t n = sizeof(want) / sizeof(want[0]);
	cr_assert_eq(json_array_size(json_object_get(doc, "traceEvents")), n);
	cr_assert_not_null(strstr(p.err, "1 flow events could not be bound"), "%s", p.err);
	for (size_t i = 0; i < n; i++) {
		char *got = object_line(doc, i);
		cr_assert_str_eq(got, want[i], "object %zu: %s", i, got);
		free(got);
	}
	json_decref(doc);
	unlink(path);
}

/* ---- losses in dump and stats ---- */

/* Run katra with @args; its stdout. */
static const char *katra_out(const char *const *args, struct proc *p)
{
	run_katra(p, args);
	cr_assert_eq(p->status, 0, "exit %d: %s", p->status, p->err);
	return p->out;
}

Test(losses, dump_prints_each_drop_window_where_it_happened)
{
	const char *path = hostile_path();
	static struct proc p;
	const char *text[] = { "dump", path, NULL };
	const char *out = katra_out(text, &p);
	const char *want = "123462000 1 main zone_begin e\n"
			   "123462500 1 main drop 5 until 123463500\n"
			   "123464000 1 main zone_end e\n";
	cr_assert_not_null(strstr(out, want), "%s", out);
	const char *jsonl[] = { "dump", "--format", "jsonl", path, NULL };
	out = katra_out(jsonl, &p);
	cr_assert_not_null(strstr(out, "\n{\"ns\":123462500,\"tid\":1,\"thread\":\"main\","
				       "\"type\":\"drop\",\"count\":5,\"until_ns\":123463500}\n"),
			   "%s", out);
	const char *other[] = { "dump", "--thread", "2", path, NULL };
	cr_assert_null(strstr(katra_out(other, &p), "drop"), "thread 1's drop under --thread 2");
	unlink(path);
}

static json_t *by_key(json_t *arr, const char *key, const char *value)
{
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) {
		const char *v = json_string_value(json_object_get(o, key));
		if (v && !strcmp(v, value))
			return o;
	}
	cr_assert_fail("no %s %s", key, value);
	return NULL;
}

/* Thread 1 spans 7 us, 1 us of it in the drop window; d and e were open
 * across it (e ended after it, d never), a and b not. */
Test(losses, stats_says_time_in_drop_windows_and_zones_open_across)
{
	const char *path = hostile_path();
	static struct proc p;
	const char *js[] = { "stats", "--json", path, NULL };
	json_error_t e;
	json_t *doc = json_loads(katra_out(js, &p), 0, &e);
	cr_assert_not_null(doc, "%s", e.text);
	json_t *th = by_key(json_object_get(doc, "threads"), "name", "main");
	cr_assert_eq(json_integer_value(json_object_get(th, "drop_windows")), 1);
	cr_assert_eq(json_integer_value(json_object_get(th, "drop_ns")), 1000);
	cr_assert_eq(json_integer_value(json_object_get(th, "dropped")), 5);
	cr_assert_null(json_object_get(by_key(json_object_get(doc, "threads"), "name", "side"),
				       "drop_windows"));
	json_t *names = json_object_get(doc, "names");
	static const struct { const char *name; int across; } z[] = {
		{ "a", 0 }, { "b", 0 }, { "d", 1 }, { "e", 1 }, { "x", 0 } };
	for (size_t i = 0; i < 5; i++) {
		json_t *n = json_object_get(by_key(names, "name", z[i].name), "open_across_drops");
		cr_assert_eq(json_integer_value(n), z[i].across, "%s", z[i].name);
	}
	json_decref(doc);
	const char *text[] = { "stats", path, NULL };
	const char *out = katra_out(text, &p);
	const char *want[] = {
		"\ndrop windows: time whose events were lost\n",
		"\n1        main                            1          5           1000       14.3\n",
		"\nzones open across a drop window (their times include lost events):\n"
		"d                                 1\n"
		"e                                 1\n",
	};
	for (size_t i = 0; i < 3; i++)
		cr_assert_not_null(strstr(out, want[i]), "no\n%s\nin\n%s", want[i], out);
	unlink(path);
}

/* The text's count: e (begin, end) is one zone, c (an end alone) and d (a
 * begin alone) one each; --json counts e's two records. */
Test(losses, stats_text_counts_zones_once_json_counts_records)
{
	const char *path = hostile_path();
	static struct proc p;
	const char *text[] = { "stats", path, NULL };
	const char *out = katra_out(text, &p);
	static const char *const want[] = { "\na                                 1 ",
					    "\nc                                 1\n",
					    "\nd                                 1\n",
					    "\ne                                 1 " };
	for (size_t i = 0; i < 4; i++)
		cr_assert_not_null(strstr(out, want[i]), "no '%s' in\n%s", want[i], out);
	const char *js[] = { "stats", "--json", path, NULL };
	json_error_t e;
	json_t *doc = json_loads(katra_out(js, &p), 0, &e);
	cr_assert_not_null(doc, "%s", e.text);
	json_t *names = json_object_get(doc, "names");
	cr_assert_eq(json_integer_value(json_object_get(by_key(names, "name", "e"), "count")), 2);
	cr_assert_eq(json_integer_value(json_object_get(by_key(names, "name", "c"), "count")), 1);
	json_decref(doc);
	unlink(path);
}

/* ---- the size guard ---- */

/* A trace of @zones zones of 1 us, one after another, on thread 1 (OS tid
 * 100): 2 * @zones events. */
static void write_many(const char *path, uint32_t zones)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	cr_assert_eq(kt_writer_name(w, 1, "z", 1), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "main"), 0);
	enum { PER = 32768 };
	uint8_t *buf = malloc(PER * 2 * 32);
	cr_assert_not_null(buf);
	for (uint32_t z = 0; z < zones; z += PER) {
		size_t len = 0;
		for (uint32_t k = z; k < z + PER && k < zones; k++)
			for (int e = 0; e < 2; e++) {
				kt_event ev = { .ts = TICK(2 * (uint64_t)k + (uint64_t)e), .name_id = 1,
						.type = e ? KT_EV_ZONE_END : KT_EV_ZONE_BEGIN };
				len += kt_event_encode(buf + len, PER * 2 * 32 - len, &ev);
			}
		cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, buf, len), 0);
	}
	free(buf);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/*
 * 2.8M events would make about 267 MiB of JSON, past the 256 MiB Chrome's
 * viewers load: refused before anything is written, with a window to try;
 * a window of a tenth of the trace is written.
 */
Test(chrome, an_export_too_big_for_its_viewers_is_refused_before_it_is_written)
{
	char path[96], out[112];
	snprintf(path, sizeof(path), "/tmp/katra-chrome-big-%d.katra", (int)getpid());
	snprintf(out, sizeof(out), "%s.json", path);
	write_many(path, 1400000);
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--chrome", path, out, NULL });
	cr_assert_eq(p.status, 1, "%.*s", (int)p.err_len, p.err);
	cr_assert_not_null(strstr(p.err, "would be about 267 MiB (2800000 events), past the "
					 "256 MiB its viewers load"), "%s", p.err);
	cr_assert_not_null(strstr(p.err, "--window"), "%s", p.err);
	cr_assert_eq(access(out, F_OK), -1, "nothing written");
	/* A tenth: ticks 0..280000 us from the trace's start (123456 us). */
	run_katra(&p, (const char *const[]){ "export", "--chrome", "--window",
					      "123456000..403456000", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	struct stat st;
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_gt(st.st_size, 280000 * 50, "the window's 280000 events: %lld bytes",
		     (long long)st.st_size);
	cr_assert_lt(st.st_size, 281000 * 100);
	unlink(out);
	unlink(path);
}

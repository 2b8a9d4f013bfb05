/*
 * The katra command on files made to hurt it: ids used as sizes, huge
 * payloads, strings that drive terminals or break JSON, sidecars that are
 * not sidecars, timestamps hours apart, FIFOs, and outputs that are the
 * input or a planted link.  Each fixture is written here, small, with the
 * kt_writer API, in a private temporary directory.
 */
#include "helpers.h"
#include "cli.h"

#include <dirent.h>
#include <jansson.h>

#include <katra/writer.h>

/* ---- fixtures ------------------------------------------------------------ */

static char dir[64];

static void fresh_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/katra-hostile-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* @var: the path of @name inside the test's directory. */
#define AT(var, name)                                                           \
	char var[512];                                                          \
	snprintf(var, sizeof(var), "%s/%s", dir, name)

static kt_writer *w_open(const char *path, int captured)
{
	kt_header h;
	t_header(&h);
	if (!captured) {
		h.flags = 0;
		h.run_id = h.capture_id = "";
		h.epoch = 0;
	}
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0, "%s", path);
	return w;
}

/* One chunk of @n events on @tid. */
static void w_events(kt_writer *w, uint32_t tid, const kt_event *evs, size_t n)
{
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap);
	cr_assert_not_null(buf);
	for (size_t i = 0; i < n; i++) {
		size_t k = kt_event_encode(buf + len, cap - len, &evs[i]);
		cr_assert_neq(k, 0);
		len += k;
	}
	cr_assert_eq(kt_writer_chunk(w, tid, KT_CODEC_LZ4_DELTA, 1, buf, len), 0);
	free(buf);
}

static void w_close(kt_writer *w)
{
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

static void w_name(kt_writer *w, uint32_t id, const char *s)
{
	cr_assert_eq(kt_writer_name(w, id, s, strlen(s)), 0);
}

/* Run katra; stdout to a file in the test's directory when it is large. */
static void katra(struct proc *p, const char *out_file, const char *const *args)
{
	struct t_run_opts ro = { .out_file = out_file, .hold_fd = -1 };
	t_katra(p, &ro, args);
}

/* Resident memory may be bounded only without sanitizers, which map
 * shadow memory of their own. */
#define RSS_BOUND_KB (64 * 1024)

static void assert_small(const struct proc *p, const char *what)
{
	if (!T_SANITIZED)
		cr_assert_lt(p->maxrss_kb, RSS_BOUND_KB, "%s: peak RSS %ld KiB", what, p->maxrss_kb);
}

static void assert_ok(const struct proc *p, const char *what)
{
	cr_assert_eq(p->status, 0, "%s: exit %d: %s", what, p->status, p->err);
}

/* katra with the words of @cmd (NULL-terminated) and then @path: it must
 * succeed within the memory bound. */
static void run_small(struct proc *p, const char *out_file, const char *const *cmd,
		      const char *path)
{
	const char *args[8] = { 0 };
	size_t k = 0;
	for (; cmd[k] && k < 6; k++)
		args[k] = cmd[k];
	args[k] = path;
	katra(p, out_file, args);
	assert_ok(p, cmd[0]);
	assert_small(p, cmd[0]);
}

/* ---- memory sized by ids ------------------------------------------------- */

/* A small valid trace whose one name has id @id, used by zones, an
 * instant and a counter, on thread @tid. */
static void id_trace(const char *path, uint32_t id, uint32_t tid)
{
	kt_writer *w = w_open(path, 0);
	w_name(w, id, "far");
	cr_assert_eq(kt_writer_thread(w, tid, 7, "main"), 0);
	int64_t v = 5;
	kt_event evs[] = {
		{ .ts = 2000000, .name_id = id, .type = KT_EV_ZONE_BEGIN },
		{ .ts = 2000100, .name_id = id, .type = KT_EV_INSTANT },
		{ .ts = 2000200, .name_id = id, .type = KT_EV_COUNTER_I64, .payload_len = 8,
		  .payload = (const uint8_t *)&v },
		{ .ts = 2000300, .name_id = id, .type = KT_EV_ZONE_END },
	};
	w_events(w, tid, evs, 4);
	w_close(w);
}

/* Every command that reads names: success, the name shown, little memory. */
static void check_id_trace(const char *path, const char *id_text)
{
	static const char *const cmds[][4] = {
		{ "stats", NULL }, { "stats", "--json", NULL }, { "dump", NULL },
		{ "dump", "--format", "jsonl", NULL }, { "info", NULL },
	};
	struct proc p;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		run_small(&p, NULL, cmds[i], path);
		if (strcmp(cmds[i][0], "info"))
			cr_assert_not_null(strstr(p.out, "far"), "%s %s: %s", cmds[i][0],
					   cmds[i][1] ? cmds[i][1] : "", p.out);
	}
	AT(json, "far.json");
	const char *ex[] = { "export", "--chrome", path, NULL };
	run_small(&p, NULL, ex, json);
	size_t len = 0;
	char *text = (char *)t_slurp(json, &len);
	cr_assert_not_null(text);
	cr_assert_not_null(memmem(text, len, "\"name\":\"far\"", 12), "%.*s", (int)len, text);
	free(text);
	const char *js[] = { "stats", "--json", path, NULL };
	katra(&p, NULL, js);
	cr_assert_not_null(strstr(p.out, id_text), "%s", p.out);
}

/* A 50,000,000 name id made stats allocate 2 GB (one slot per id value). */
Test(ids, a_name_id_is_not_a_size)
{
	fresh_dir();
	AT(path, "far.katra");
	id_trace(path, 50000000, 1);
	check_id_trace(path, "\"id\": 50000000");
	remove_dir();
}

/* A name frame with an id near 2^32 asked dump and export for 64 GB. */
Test(ids, ids_near_two_to_the_32)
{
	fresh_dir();
	AT(path, "top.katra");
	id_trace(path, UINT32_MAX - 1, UINT32_MAX);
	check_id_trace(path, "\"id\": 4294967294");
	remove_dir();
}

/* name_id + 64 wrapped in 32 bits: a heap overflow in stats (a segfault
 * in the release build) on a valid trace. */
Test(ids, stats_with_the_largest_name_ids)
{
	fresh_dir();
	AT(path, "wrap.katra");
	kt_writer *w = w_open(path, 0);
	w_name(w, 0xFFFFFFC0u, "low");
	w_name(w, 0xFFFFFFFFu, "top");
	kt_event evs[] = {
		{ .ts = 1000, .name_id = 0xFFFFFFC0u, .type = KT_EV_INSTANT },
		{ .ts = 1001, .name_id = 0xFFFFFFFFu, .type = KT_EV_ZONE_BEGIN },
		{ .ts = 1031, .name_id = 0xFFFFFFFFu, .type = KT_EV_ZONE_END },
		{ .ts = 1032, .name_id = 0xFFFFFFC0u, .type = KT_EV_INSTANT },
	};
	w_events(w, 1, evs, 4);
	w_close(w);
	struct proc p;
	const char *args[] = { "stats", "--json", path, NULL };
	katra(&p, NULL, args);
	assert_ok(&p, "stats");
	json_t *o = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(o, "%s", p.out);
	json_t *names = json_object_get(o, "names");
	cr_assert_eq(json_array_size(names), 2);
	json_t *a = json_array_get(names, 0), *b = json_array_get(names, 1);
	cr_assert_eq(json_integer_value(json_object_get(a, "id")), 0xFFFFFFC0u);
	cr_assert_eq(json_integer_value(json_object_get(a, "count")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(b, "name")), "top");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(b, "zone"), "count")), 1);
	json_decref(o);
	const char *text[] = { "stats", path, NULL };
	katra(&p, NULL, text);
	assert_ok(&p, "stats text");
	remove_dir();
}

/* ---- memory held by payloads --------------------------------------------- */

/* 1500 messages of 64 KiB (98 MB of payload in a small file): each pass
 * once kept whole batches of 8192 events with their payloads. */
Test(memory, large_messages_take_fixed_memory, .timeout = 600)
{
	fresh_dir();
	AT(path, "big.katra");
	AT(sink, "out");
	AT(json, "big.json");
	kt_writer *w = w_open(path, 0);
	w_name(w, 1, "log");
	static char text[65535];
	memset(text, 'x', sizeof(text));
	kt_event evs[15];
	for (int c = 0; c < 100; c++) {
		for (int i = 0; i < 15; i++)
			evs[i] = (kt_event){ .ts = 1000 + (uint64_t)(c * 15 + i), .name_id = 1,
					     .type = KT_EV_MESSAGE, .payload_len = sizeof(text),
					     .payload = (const uint8_t *)text };
		w_events(w, 1, evs, 15);
	}
	w_close(w);
	static const char *const cmds[][3] = {
		{ "dump", NULL }, { "replay", "--max", NULL }, { "stats", NULL },
		{ "stats", "--json", NULL },
	};
	struct proc p;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		run_small(&p, sink, cmds[i], path);
		struct stat sb;
		cr_assert_eq(stat(sink, &sb), 0);
		if (i == 0)
			cr_assert_gt(sb.st_size, 1500 * 65535, "dump wrote %lld bytes",
				     (long long)sb.st_size);
	}
	const char *ex[] = { "export", "--chrome", path, NULL };
	run_small(&p, NULL, ex, json);
	remove_dir();
}

/* Under a memory limit a valid file is "out of memory", never "corrupt".
 * (Without sanitizers: they reserve more address space than the limit.) */
Test(memory, out_of_memory_is_not_corruption)
{
	if (T_SANITIZED)
		return;
	fresh_dir();
	AT(path, "wide.katra");
	AT(json, "w.json");
	AT(copy, "w.out");
	AT(out_file, "stdout");
	kt_writer *w = w_open(path, 0);
	w_name(w, 1, "tick");
	/* One chunk of 48 MiB of events decodes into one 48 MiB buffer. */
	size_t n = (48u << 20) / 16;
	kt_event *evs = calloc(n, sizeof(*evs));
	cr_assert_not_null(evs);
	for (size_t i = 0; i < n; i++)
		evs[i] = (kt_event){ .ts = 1000 + i, .name_id = 1, .type = KT_EV_INSTANT };
	size_t cap = n * 16, len = 0;
	uint8_t *buf = malloc(cap);
	for (size_t i = 0; i < n; i++)
		len += kt_event_encode(buf + len, cap - len, &evs[i]);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 1, buf, len), 0);
	free(buf);
	free(evs);
	w_close(w);
	static const char *const cmds[] = { "verify", "info", "dump", "stats", "replay", "export",
					    "compress", "slice" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		const char *c = cmds[i];
		int writes = !strcmp(c, "export") || !strcmp(c, "compress") || !strcmp(c, "slice");
		const char *args[6] = { c, path, NULL };
		if (!strcmp(c, "export")) /* past the size guard: the memory is the test */
			args[1] = "--chrome", args[2] = "--any-size", args[3] = path, args[4] = json;
		else if (!strcmp(c, "replay"))
			args[1] = "--max", args[2] = path;
		else if (writes)
			args[2] = copy;
		struct t_run_opts ro = { .out_file = out_file, .as_limit_mb = 40, .hold_fd = -1 };
		struct proc p;
		t_katra(&p, &ro, args);
		size_t len2 = 0;
		char *out = (char *)t_slurp(out_file, &len2);
		cr_assert_eq(p.status, 1, "%s: exit %d: %s%.*s", c, p.status, p.err, (int)len2, out);
		/* "out of memory" or strerror(ENOMEM): either says what happened. */
		cr_assert(strstr(p.err, "out of memory") || strstr(p.err, "Cannot allocate memory") ||
			  (out && memmem(out, len2, "out of memory", 13)),
			  "%s said: %s%.*s", c, p.err, (int)len2, out);
		cr_assert_null(strstr(p.err, "corrupt"), "%s: %s", c, p.err);
		cr_assert(!out || !memmem(out, len2, "corrupt", 7), "%s: %.*s", c, (int)len2, out);
		free(out);
	}
	remove_dir();
}

/* ---- strings that drive terminals ---------------------------------------- */

#include "format/utf8.h"

static const char *const evil_notes[] = { "note \x1b[31mred", "\xc2\x9b" "31m C1 CSI" };

/* Every string a trace carries, each hostile in its own way. */
static void evil_trace(const char *path, int captured)
{
	kt_header h;
	t_header(&h);
	h.flags = captured ? KT_HDR_CAPTURE : 0;
	h.tool_version = "tool\x1b[2J";
	h.workload = "\x1b]0;pwned\x07";
	h.host = "host\nforged: line";
	h.run_id = captured ? "run\r\x1b[1A" : "";
	h.capture_id = captured ? "cap\xff\xfe" : "";
	h.notes = evil_notes;
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	w_name(w, 1, "zone\n\x1b[2K");
	w_name(w, 2, "bad\xff");
	cr_assert_eq(kt_writer_thread(w, 1, 7, "th\xfe\x1b]2;x\x07"), 0);
	static const char msg[] = "m\xc3\x1b\x7f\xc2\x9b";
	kt_event evs[] = {
		{ .ts = 2000000, .name_id = 1, .type = KT_EV_ZONE_BEGIN },
		{ .ts = 2000001, .name_id = 2, .type = KT_EV_MESSAGE, .payload_len = sizeof(msg) - 1,
		  .payload = (const uint8_t *)msg },
		{ .ts = 2000300, .name_id = 1, .type = KT_EV_ZONE_END },
	};
	w_events(w, 1, evs, 3);
	w_close(w);
}

/* Nothing in @s may drive a terminal: well-formed UTF-8 with no control
 * character but the newline. */
static void assert_inert(const char *s, size_t n, const char *what)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		size_t l = kt__utf8_char((const unsigned char *)s + i, n - i, &cp);
		cr_assert_neq(l, 0, "%s: stray byte 0x%02x at %zu: %.*s", what,
			      (unsigned char)s[i], i, (int)n, s);
		cr_assert(cp == '\n' || (cp >= 0x20 && cp != 0x7f && (cp < 0x80 || cp >= 0xa0)),
			  "%s: control U+%04X at %zu: %.*s", what, (unsigned)cp, i, (int)n, s);
		i += l;
	}
}

/* No line of @s starts with @text: nothing forged a line. */
static void assert_no_line(const char *s, const char *text, const char *what)
{
	size_t n = strlen(text);
	for (const char *l = s; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		cr_assert_neq(strncmp(l, text, n), 0, "%s: a line starts with %s", what, text);
}

Test(escape, terminal_outputs_escape_every_file_string)
{
	fresh_dir();
	AT(path, "e\x1b]0;f\x07.katra");
	evil_trace(path, 1);
	static const char *const cmds[] = { "info", "dump", "stats", "verify", "replay" };
	struct proc p;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		const char *args[] = { cmds[i], path, NULL };
		katra(&p, NULL, args);
		cr_assert_eq(p.status, 0, "%s: exit %d: %s", cmds[i], p.status, p.err);
		assert_inert(p.out, p.out_len, cmds[i]);
		assert_inert(p.err, p.err_len, cmds[i]);
		assert_no_line(p.out, "forged", cmds[i]);
	}
	const char *info[] = { "info", path, NULL };
	katra(&p, NULL, info);
	cr_assert_not_null(strstr(p.out, "workload        \\x1B]0;pwned\\x07\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "host            host\\nforged: line\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "note            \\x9B31m C1 CSI\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "run run\\r\\x1B[1A, epoch 7, id cap\\xFF\\xFE\n"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "th\\xFE\\x1B]2;x\\x07"), "%s", p.out);
	const char *dump[] = { "dump", path, NULL };
	katra(&p, NULL, dump);
	cr_assert_not_null(strstr(p.out, " 1 th\\xFE\\x1B]2;x\\x07 zone_begin zone\\n\\x1B[2K\n"),
			   "%s", p.out);
	cr_assert_not_null(strstr(p.out, " message bad\\xFF \"m\\\\xC3\\u001B\\u007F\\u009B\"\n"),
			   "%s", p.out);
	/* Paths from the command line, in errors too. */
	AT(missing, "gone\x1b[2J\n.katra");
	const char *gone[] = { "stats", missing, NULL };
	katra(&p, NULL, gone);
	cr_assert_eq(p.status, 1);
	assert_inert(p.err, p.err_len, "missing file");
	cr_assert_not_null(strstr(p.err, "gone\\x1B[2J\\n.katra: No such file"), "%s", p.err);
	const char *bad_opt[] = { "dump", "--format", "\x1b[2J", path, NULL };
	katra(&p, NULL, bad_opt);
	cr_assert_eq(p.status, 2);
	assert_inert(p.err, p.err_len, "usage");
	remove_dir();
}

/* ---- strings that break JSON --------------------------------------------- */

static json_t *load_json(const char *text, size_t len)
{
	json_error_t err;
	json_t *o = json_loadb(text, len, 0, &err);
	cr_assert_not_null(o, "%s: %.*s", err.text, (int)len, text);
	return o;
}

/* What the message of evil_trace() decodes to from JSON: the stray byte
 * visible as \xC3, the controls kept as characters. */
#define EVIL_MESSAGE "m\\xC3\x1b\x7f\xc2\x9b"

Test(json, invalid_utf8_stays_visible_and_keys_stay)
{
	fresh_dir();
	AT(path, "j.katra");
	AT(chrome, "j.json");
	evil_trace(path, 0);
	struct proc p;
	const char *stats[] = { "stats", "--json", path, NULL };
	katra(&p, NULL, stats);
	assert_ok(&p, "stats --json");
	assert_inert(p.out, p.out_len, "stats --json");
	json_t *o = load_json(p.out, p.out_len);
	json_t *th = json_array_get(json_object_get(o, "threads"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(th, "name")), "th\\xFE\x1b]2;x\x07");
	json_t *names = json_object_get(o, "names");
	cr_assert_eq(json_array_size(names), 2);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(names, 1), "name")),
			 "bad\\xFF");
	json_decref(o);

	const char *jsonl[] = { "dump", "--format", "jsonl", path, NULL };
	katra(&p, NULL, jsonl);
	assert_ok(&p, "jsonl");
	assert_inert(p.out, p.out_len, "jsonl");
	char *second = strchr(p.out, '\n') + 1;
	o = load_json(second, (size_t)(strchr(second, '\n') - second));
	cr_assert_str_eq(json_string_value(json_object_get(o, "text")), EVIL_MESSAGE);
	cr_assert_str_eq(json_string_value(json_object_get(o, "name")), "bad\\xFF");
	json_decref(o);

	const char *ex[] = { "export", "--chrome", path, chrome, NULL };
	katra(&p, NULL, ex);
	assert_ok(&p, "export");
	size_t len = 0;
	char *text = (char *)t_slurp(chrome, &len);
	assert_inert(text, len, "chrome");
	o = load_json(text, len);
	json_t *evs = json_object_get(o, "traceEvents");
	/* process name (the escaped workload), thread name and place, the
	 * zone's begin, the message (its text as the name), the zone's end */
	cr_assert_eq(json_array_size(evs), 6);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(evs, 0), "name")),
			 "process_name");
	json_t *meta = json_object_get(json_array_get(evs, 1), "args");
	cr_assert_str_eq(json_string_value(json_object_get(meta, "name")), "th\\xFE\x1b]2;x\x07");
	json_t *msg = json_array_get(evs, 4);
	cr_assert_str_eq(json_string_value(json_object_get(msg, "name")), EVIL_MESSAGE);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(msg, "args"), "event")),
			 "bad\\xFF");
	json_decref(o);
	free(text);
	remove_dir();
}

/* ---- verify and what sits beside a trace --------------------------------- */

static void small_trace(const char *path, int captured)
{
	kt_writer *w = w_open(path, captured);
	w_name(w, 1, "tick");
	kt_event ev = { .ts = 5000, .name_id = 1, .type = KT_EV_INSTANT };
	w_events(w, 1, &ev, 1);
	w_close(w);
}

/* x.katra.json is the natural name for `export --chrome x.katra`: a
 * trace that was never captured has no sidecar to check. */
Test(verify, a_chrome_export_beside_is_not_a_sidecar)
{
	fresh_dir();
	AT(path, "x.katra");
	AT(side, "x.katra.json");
	small_trace(path, 0);
	struct proc p;
	const char *ex[] = { "export", "--chrome", path, side, NULL };
	katra(&p, NULL, ex);
	assert_ok(&p, "export");
	const char *v[] = { "verify", path, NULL };
	katra(&p, NULL, v);
	cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
	cr_assert_null(strstr(p.out, "json"), "%s", p.out);
	const char *vj[] = { "verify", "--json", path, NULL };
	katra(&p, NULL, vj);
	cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
	cr_assert_null(strstr(p.out, "sidecar"), "%s", p.out);

	/* A captured trace's FILE.json must be its sidecar: a mismatch, said
	 * as one, with the trace's own verdict left as it is. */
	small_trace(path, 1);
	katra(&p, NULL, v);
	cr_assert_eq(p.status, 1, "%s", p.out);
	cr_assert_not_null(strstr(p.out, "x.katra: valid: "), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "does not match"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "not a capture sidecar"), "%s", p.out);
	cr_assert_null(strstr(p.out, "corrupt"), "%s", p.out);
	katra(&p, NULL, vj);
	cr_assert_eq(p.status, 1, "%s", p.out);
	cr_assert_not_null(strstr(p.out, "\"valid\": true"), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "\"matches\": false"), "%s", p.out);

	/* A capture's sidecar beside a trace whose header does not say so is
	 * still checked: its schema says what it is. */
	small_trace(path, 0);
	FILE *f = fopen(side, "w");
	fprintf(f, "{\"schema\":\"katra.capture-status/v1\",\"state\":\"published\","
		   "\"file\":\"x.katra\",\"sha256\":\"%064d\",\"bytes\":1}\n", 0);
	fclose(f);
	katra(&p, NULL, v);
	cr_assert_eq(p.status, 1, "%s", p.out);
	cr_assert_not_null(strstr(p.out, "x.katra: valid: "), "%s", p.out);
	cr_assert_not_null(strstr(p.out, "does not match"), "%s", p.out);
	cr_assert_null(strstr(p.out, "corrupt"), "%s", p.out);
	remove_dir();
}

/* ---- paced replay --------------------------------------------------------- */

/* Three events, the second an hour after the first, the third an hour
 * after that (the sample header counts 3e9 ticks per second). */
static void hour_trace(const char *path)
{
	kt_writer *w = w_open(path, 0);
	w_name(w, 1, "tick");
	uint64_t hour = UINT64_C(3000000000) * 3600;
	kt_event evs[] = {
		{ .ts = 2000000, .name_id = 1, .type = KT_EV_INSTANT },
		{ .ts = 2000000 + hour, .name_id = 1, .type = KT_EV_INSTANT },
		{ .ts = 2000000 + 2 * hour, .name_id = 1, .type = KT_EV_INSTANT },
	};
	w_events(w, 1, evs, 3);
	w_close(w);
}

/* No crafted timestamp makes replay sleep for hours: each gap is capped
 * (1 s by default), and that is said once. */
Test(replay, a_long_gap_is_capped_and_said_once)
{
	fresh_dir();
	AT(path, "hour.katra");
	hour_trace(path);
	struct proc p;
	struct t_run_opts ro = { .deadline_s = 60, .hold_fd = -1 };
	const char *args[] = { "replay", path, NULL };
	t_katra(&p, &ro, args);
	cr_assert_eq(p.status, 0, "exit %d (-1: still sleeping at the deadline): %s", p.status, p.err);
	int lines = 0;
	for (size_t i = 0; i < p.out_len; i++)
		lines += p.out[i] == '\n';
	cr_assert_eq(lines, 3, "%s", p.out);
	cr_assert_str_eq(p.err, "katra: replay: a gap of 3600.000 s between two events shortened "
				"to 1 s (--max-gap)\n");
	remove_dir();
}

/* On its way to a pipe or a terminal, each event goes out before the
 * wait for the next: here the wait is an hour, and the first line must
 * arrive long before it ends. */
Test(replay, each_event_is_written_before_the_wait)
{
	fresh_dir();
	AT(path, "hour.katra");
	hour_trace(path);
	int o[2];
	cr_assert_eq(pipe(o), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(o[1], 1);
		close(o[0]);
		execl(KATRA, KATRA, "replay", "--max-gap", "3600", path, (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	char line[256] = "";
	size_t n = 0;
	struct pollfd pf = { o[0], POLLIN, 0 };
	uint64_t end = t_now_ms() + 60000;
	while (!memchr(line, '\n', n) && n < sizeof(line) - 1 && t_now_ms() < end &&
	       poll(&pf, 1, 1000) >= 0) {
		ssize_t k = pf.revents ? read(o[0], line + n, sizeof(line) - 1 - n) : 0;
		if (k <= 0 && pf.revents)
			break;
		n += k > 0 ? (size_t)k : 0;
	}
	int st, alive = waitpid(pid, &st, WNOHANG) == 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(o[0]);
	cr_assert(alive, "replay ended before its hour-long wait");
	cr_assert_not_null(memchr(line, '\n', n), "no line before the wait: '%.*s'", (int)n, line);
	cr_assert_not_null(strstr(line, " instant tick\n"), "%s", line);
	remove_dir();
}

/* ---- inputs that are not files -------------------------------------------- */

/* A FIFO as input: one clear line at once, never a wait for a writer. */
Test(inputs, a_fifo_is_refused_at_once)
{
	fresh_dir();
	AT(fifo, "f.katra");
	AT(out, "out");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	static const char *const cmds[] = { "verify", "info", "dump", "replay", "stats", "export",
					    "compress", "decompress", "slice" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		const char *c = cmds[i];
		const char *args[6] = { c, fifo, NULL };
		if (!strcmp(c, "export"))
			args[1] = "--chrome", args[2] = fifo, args[3] = out;
		else if (!strcmp(c, "compress") || !strcmp(c, "decompress") || !strcmp(c, "slice"))
			args[2] = out;
		struct proc p;
		struct t_run_opts ro = { .deadline_s = 20, .hold_fd = -1 };
		t_katra(&p, &ro, args);
		cr_assert_eq(p.status, 1, "%s: exit %d (-1: it waited on the FIFO)", c, p.status);
		cr_assert_not_null(strstr(p.err, "f.katra: not a regular file"), "%s: %s", c, p.err);
		cr_assert_eq(access(out, F_OK), -1, "%s left an output", c);
	}
	remove_dir();
}

/* ---- outputs ---------------------------------------------------------------- */

static const char *const writers[] = { "export", "compress", "decompress", "slice" };

static void writer_args(const char **args, const char *cmd, const char *in, const char *out)
{
	int ex = !strcmp(cmd, "export");
	args[0] = cmd;
	args[1] = ex ? "--chrome" : in;
	args[2] = ex ? in : out;
	args[3] = ex ? out : NULL;
	args[4] = NULL;
}

/* The output named as the input itself, a hard link to it or a symbolic
 * link to it: refused, the input untouched. */
Test(outputs, never_replace_their_input)
{
	fresh_dir();
	AT(path, "in.katra");
	AT(hard, "hard.katra");
	AT(soft, "soft.katra");
	small_trace(path, 0);
	cr_assert_eq(link(path, hard), 0);
	cr_assert_eq(symlink("in.katra", soft), 0);
	size_t len0 = 0, len = 0;
	uint8_t *before = t_slurp(path, &len0);
	const char *outs[] = { path, hard, soft };
	for (size_t i = 0; i < sizeof(writers) / sizeof(*writers); i++)
		for (size_t k = 0; k < 3; k++) {
			const char *args[5];
			struct proc p;
			writer_args(args, writers[i], path, outs[k]);
			katra(&p, NULL, args);
			cr_assert_eq(p.status, 1, "%s onto %s: exit %d", writers[i], outs[k], p.status);
			cr_assert_not_null(strstr(p.err, "is the input file"), "%s", p.err);
			uint8_t *after = t_slurp(path, &len);
			cr_assert(len == len0 && !memcmp(before, after, len), "%s replaced its input",
				  writers[i]);
			free(after);
		}
	free(before);
	remove_dir();
}

struct plant {
	const char *out, *victim;
	int release;
};

/* Before katra runs: a link at the name its temporary file once had
 * (OUT.tmp-PID), pointing at a file the caller must not lose. */
static void plant_links(pid_t pid, void *ctx)
{
	struct plant *pl = ctx;
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", pl->out, (long)pid);
	cr_assert_eq(symlink(pl->victim, tmp), 0);
	cr_assert_eq(write(pl->release, "x", 1), 1);
}

/* Links planted at the output's name or at a temporary name beside it are
 * never followed: the output replaces the link, the victim is untouched. */
Test(outputs, a_planted_link_is_never_followed)
{
	fresh_dir();
	AT(path, "in.katra");
	AT(victim, "victim");
	AT(out, "out");
	small_trace(path, 0);
	FILE *f = fopen(victim, "w");
	fputs("precious\n", f);
	fclose(f);
	for (size_t i = 0; i < sizeof(writers) / sizeof(*writers); i++) {
		unlink(out);
		cr_assert_eq(symlink(victim, out), 0);
		int hold[2];
		cr_assert_eq(pipe(hold), 0);
		struct plant pl = { out, victim, hold[1] };
		struct t_run_opts ro = { .hold_fd = hold[0] };
		const char *args[5];
		struct proc p;
		writer_args(args, writers[i], path, out);
		t_katra_pid(&p, &ro, args, plant_links, &pl);
		close(hold[0]);
		close(hold[1]);
		cr_assert_eq(p.status, 0, "%s: exit %d: %s", writers[i], p.status, p.err);
		size_t len = 0;
		char *text = (char *)t_slurp(victim, &len);
		cr_assert(len == 9 && !memcmp(text, "precious\n", 9), "%s wrote through a link: %.*s",
			  writers[i], (int)len, text);
		free(text);
		struct stat sb;
		cr_assert_eq(lstat(out, &sb), 0);
		cr_assert(S_ISREG(sb.st_mode), "%s: the output is not a file of its own", writers[i]);
	}
	remove_dir();
}

/* ---- options an attacker controls ----------------------------------------- */

Test(options, thread_lists_and_windows_at_their_limits)
{
	fresh_dir();
	AT(path, "in.katra");
	AT(out, "out.katra");
	small_trace(path, 0);
	const char *args[140] = { "dump" };
	int n = 1;
	for (int i = 0; i < 65; i++) {
		args[n++] = "--thread";
		args[n++] = "1";
	}
	args[n++] = path;
	struct proc p;
	katra(&p, NULL, args);
	cr_assert_eq(p.status, 2);
	cr_assert_not_null(strstr(p.err, "at most 64 --thread"), "%s", p.err);
	/* Windows past the end or empty: a valid, empty slice. */
	static const char *const windows[][2] = {
		{ "18446744073709551615", "18446744073709551615" }, { "0", "0" },
	};
	for (size_t i = 0; i < 2; i++) {
		const char *sl[] = { "slice", path, out, "--from", windows[i][0], "--to", windows[i][1],
				     NULL };
		katra(&p, NULL, sl);
		cr_assert_eq(p.status, 0, "%s", p.err);
		const char *v[] = { "verify", "--json", out, NULL };
		katra(&p, NULL, v);
		cr_assert_eq(p.status, 0, "%s", p.out);
		cr_assert_not_null(strstr(p.out, "\"events\": 0"), "%s", p.out);
	}
	const char *bad[] = { "slice", path, out, "--from", "-1", NULL };
	katra(&p, NULL, bad);
	cr_assert_eq(p.status, 2);
	/* Reversed: a usage error, and the old output stays as it was. */
	struct stat before, after;
	cr_assert_eq(stat(out, &before), 0);
	const char *rev[] = { "slice", path, out, "--from", "10", "--to", "5", NULL };
	katra(&p, NULL, rev);
	cr_assert_eq(p.status, 2);
	cr_assert_eq(stat(out, &after), 0);
	cr_assert_eq(after.st_ino, before.st_ino);
	remove_dir();
}

/* A FIFO another user planted at the output's name (in /tmp, say) would
 * receive the output, or hold the command until someone reads it: refused
 * at once.  (Needs root, to give the FIFO to another user.) */
Test(outputs, a_fifo_of_another_user_is_refused)
{
	if (geteuid() != 0)
		return;
	fresh_dir();
	AT(path, "in.katra");
	AT(fifo, "out");
	small_trace(path, 0);
	cr_assert_eq(mkfifo(fifo, 0666), 0);
	cr_assert_eq(chown(fifo, 65534, 65534), 0);
	for (size_t i = 0; i < sizeof(writers) / sizeof(*writers); i++) {
		const char *args[5];
		struct proc p;
		struct t_run_opts ro = { .deadline_s = 20, .hold_fd = -1 };
		writer_args(args, writers[i], path, fifo);
		t_katra(&p, &ro, args);
		cr_assert_eq(p.status, 1, "%s: exit %d (-1: it waited on the FIFO)", writers[i],
			     p.status);
		cr_assert_not_null(strstr(p.err, "a FIFO of another user"), "%s", p.err);
	}
	remove_dir();
}

/* ---- zones in hostile shapes ---------------------------------------------- */

static json_t *name_entry(json_t *stats, json_int_t id)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(stats, "names"), i, e)
		if (json_integer_value(json_object_get(e, "id")) == id)
			return e;
	cr_assert_fail("no name %lld in the stats", (long long)id);
	return NULL;
}

/* `katra stats --json` of @path, parsed. */
static json_t *stats_json(const char *path)
{
	struct proc p;
	const char *args[] = { "stats", "--json", path, NULL };
	katra(&p, NULL, args);
	assert_ok(&p, "stats");
	return load_json(p.out, p.out_len);
}

static json_int_t zones_of(json_t *stats, json_int_t id)
{
	return json_integer_value(json_object_get(json_object_get(name_entry(stats, id), "zone"),
						  "count"));
}

/* Each end closes the innermost open zone of its name, and the zones
 * opened after it; ends that match nothing are skipped, in O(1) each. */
Test(stats, zone_ends_match_the_innermost_begin)
{
	fresh_dir();
	AT(path, "z.katra");
	kt_writer *w = w_open(path, 0);
	kt_event evs[2100];
	size_t n = 0;
	uint64_t ts = 1000;
	static const struct { uint8_t type; uint32_t name; } seq[] = {
		{ KT_EV_ZONE_BEGIN, 1 }, { KT_EV_ZONE_BEGIN, 2 }, { KT_EV_ZONE_BEGIN, 1 },
		{ KT_EV_ZONE_BEGIN, 2 }, { KT_EV_ZONE_END, 3 }, { KT_EV_ZONE_END, 1 },
		{ KT_EV_ZONE_END, 2 }, { KT_EV_ZONE_END, 2 },
	};
	for (size_t i = 0; i < 8; i++)
		evs[n++] = (kt_event){ .ts = ts += 10, .name_id = seq[i].name, .type = seq[i].type };
	for (int i = 0; i < 1000; i++)
		evs[n++] = (kt_event){ .ts = ts += 1, .name_id = 4, .type = KT_EV_ZONE_BEGIN };
	for (int i = 0; i < 1000; i++)
		evs[n++] = (kt_event){ .ts = ts += 1, .name_id = 5, .type = KT_EV_ZONE_END };
	w_events(w, 1, evs, n);
	w_close(w);
	json_t *o = stats_json(path);
	/* The inner 1, closing the inner 2: 30 ticks, 10 ns at 3 ticks per ns. */
	cr_assert_eq(zones_of(o, 1), 1);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(name_entry(o, 1), "zone"),
							"max_ns")), 10);
	cr_assert_eq(zones_of(o, 2), 1);  /* the outer 2; the second end of 2 matches nothing */
	cr_assert_eq(zones_of(o, 3), 0);
	cr_assert_eq(zones_of(o, 4), 0);
	cr_assert_eq(zones_of(o, 5), 0);
	cr_assert_null(json_object_get(o, "zones_not_timed"));
	json_decref(o);
	remove_dir();
}

/* Open zones are capped (4194304 over all threads): a small file of nested
 * begins cannot ask for gigabytes.  The begins past the cap are counted,
 * and their ends close them, so every zone inside the cap stays exact. */
Test(stats, open_zones_are_capped, .timeout = 600)
{
	fresh_dir();
	AT(path, "deep.katra");
	kt_writer *w = w_open(path, 0);
	uint32_t cap = 1u << 22, extra = 10, depth = cap + extra;
	size_t per = 1 << 16, len = 0;
	uint8_t *buf = malloc(per * 16);
	cr_assert_not_null(buf);
	for (uint64_t i = 0; i < 2 * (uint64_t)depth; i++) {
		kt_event ev = { .ts = 1000 + i, .name_id = 1,
				.type = i < depth ? KT_EV_ZONE_BEGIN : KT_EV_ZONE_END };
		len += kt_event_encode(buf + len, per * 16 - len, &ev);
		if (len == per * 16 || i + 1 == 2 * (uint64_t)depth) {
			cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4_DELTA, 1, buf, len), 0);
			len = 0;
		}
	}
	free(buf);
	w_close(w);
	json_t *o = stats_json(path);
	cr_assert_eq(json_integer_value(json_object_get(o, "zones_not_timed")), extra);
	cr_assert_eq(zones_of(o, 1), cap);
	/* The innermost timed zone ends with the eleventh end: 21 ticks, 7 ns. */
	json_t *z = json_object_get(name_entry(o, 1), "zone");
	cr_assert_eq(json_integer_value(json_object_get(z, "min_ns")), (2 * extra + 1) / 3);
	json_decref(o);
	remove_dir();
}

/* A write that fails is said with its own reason, and nothing is left. */
Test(outputs, a_failed_write_is_said)
{
	fresh_dir();
	AT(path, "in.katra");
	small_trace(path, 0);
	struct proc p;
	const char *ex[] = { "export", "--chrome", path, "/dev/full", NULL };
	katra(&p, NULL, ex);
	cr_assert_eq(p.status, 1);
	cr_assert_str_eq(p.err, "katra: /dev/full: write failed: No space left on device\n");
	remove_dir();
}

/* ---- time going back within a thread ------------------------------------- */

/* SPEC §4.1 does not forbid a thread's timestamps to go back (katra's own
 * producer never writes them so, but the writer API takes any): verify
 * counts them as a warning, and stats never turns one into a wrapped or
 * negative duration. */
#define B0 UINT64_C(4000000) /* ticks; 3 a ns from the header's calibration */

static void backwards_trace(const char *path)
{
	kt_writer *w = w_open(path, 0);
	w_name(w, 1, "zone");
	w_name(w, 2, "frame");
	uint64_t fno = 7;
	const kt_event a[] = {
		{ .ts = B0 + 30000, .name_id = 1, .type = KT_EV_ZONE_BEGIN },
		{ .ts = B0 + 300, .name_id = 1, .type = KT_EV_ZONE_END },     /* back 1 */
		{ .ts = B0 + 15000, .name_id = 2, .type = KT_EV_FRAME, .payload = (const uint8_t *)&fno,
		  .payload_len = 8 },
		{ .ts = B0 + 3000, .name_id = 2, .type = KT_EV_FRAME, .payload = (const uint8_t *)&fno,
		  .payload_len = 8 },                                          /* back 2 */
	};
	const kt_event b[] = { { .ts = B0 + 150, .name_id = 2, .type = KT_EV_INSTANT } }; /* 3 */
	const kt_event c[] = { { .ts = B0, .name_id = 2, .type = KT_EV_INSTANT },
			       { .ts = B0 + 60, .name_id = 2, .type = KT_EV_INSTANT } };
	w_events(w, 1, a, 4);
	w_events(w, 1, b, 1);
	w_events(w, 2, c, 2);
	w_close(w);
}

static json_int_t jint(json_t *o, const char *k1, const char *k2)
{
	json_t *v = json_object_get(o, k1);
	return json_integer_value(k2 ? json_object_get(v, k2) : v);
}

/* katra CMD [FLAG] PATH, which must exit 0. */
static void katra_ok(struct proc *p, const char *cmd, const char *flag, const char *path)
{
	const char *args[] = { cmd, flag ? flag : path, flag ? path : NULL, NULL };
	katra(p, NULL, args);
	assert_ok(p, cmd);
}

Test(time, going_back_is_a_warning_and_never_a_wrapped_duration)
{
	fresh_dir();
	AT(path, "back.katra");
	backwards_trace(path);
	struct proc p;
	katra_ok(&p, "verify", NULL, path);
	cr_assert_not_null(strstr(p.out, ": valid: "), "%s", p.out);
	cr_assert_not_null(strstr(p.out, ": warning: 3 events are earlier than the event "
					 "before them on their thread"), "%s", p.out);
	katra_ok(&p, "verify", "--json", path);
	json_t *o = load_json(p.out, p.out_len);
	cr_assert_eq(jint(o, "ts_backwards", NULL), 3);
	cr_assert(json_is_true(json_object_get(o, "valid")));
	json_decref(o);

	o = stats_json(path);
	cr_assert_eq(jint(o, "ts_backwards", NULL), 3);
	cr_assert_eq(jint(o, "negative_durations", NULL), 2);
	json_t *t1 = json_array_get(json_object_get(o, "threads"), 0);
	cr_assert_eq(jint(t1, "tid", NULL), 1);
	cr_assert_eq(jint(t1, "span_ns", NULL), 9950, "earliest to latest, never negative");
	json_t *zone = json_object_get(name_entry(o, 1), "zone");
	cr_assert_eq(jint(zone, "count", NULL), 1);
	cr_assert_eq(jint(zone, "min_ns", NULL), 0);
	cr_assert_eq(jint(zone, "max_ns", NULL), 0, "an end before its begin lasts 0");
	cr_assert_eq(jint(o, "frames", "max_ns"), 0);
	json_decref(o);

	katra_ok(&p, "stats", NULL, path);
	cr_assert_null(strstr(p.out, "18446744"), "no wrapped duration: %s", p.out);
	cr_assert_not_null(strstr(p.out, "time: 3 events earlier than the event before them "
					 "on their thread; 2 durations"), "%s", p.out);
	remove_dir();
}

/* An ordinary trace keeps its keys: no ts_backwards when nothing went back. */
Test(time, an_ordered_trace_has_no_backwards_keys)
{
	fresh_dir();
	AT(path, "ok.katra");
	small_trace(path, 0);
	json_t *o = stats_json(path);
	cr_assert_null(json_object_get(o, "ts_backwards"));
	cr_assert_null(json_object_get(o, "negative_durations"));
	json_decref(o);
	struct proc p;
	katra_ok(&p, "verify", "--json", path);
	cr_assert_null(strstr(p.out, "ts_backwards"));
	remove_dir();
}

/* A span or duration past INT64_MAX ns (a clock of 1 GHz and timestamps
 * from 0 to 2^64 - 1) is INT64_MAX in JSON, never a wrapped negative. */
Test(time, spans_past_int64_saturate_in_json)
{
	fresh_dir();
	AT(path, "wide.katra");
	kt_header h;
	t_header(&h);
	h.flags = 0;
	h.run_id = h.capture_id = "";
	h.epoch = 0;
	h.clock.tick_hz = 1000000000;
	h.clock.ticks = h.clock.mono_ns = 0;
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	w_name(w, 1, "zone");
	const kt_event evs[] = { { .ts = 0, .name_id = 1, .type = KT_EV_ZONE_BEGIN },
				 { .ts = UINT64_MAX, .name_id = 1, .type = KT_EV_ZONE_END } };
	w_events(w, 1, evs, 2);
	w_close(w);
	json_t *o = stats_json(path);
	json_t *t1 = json_array_get(json_object_get(o, "threads"), 0);
	cr_assert_eq(jint(t1, "span_ns", NULL), INT64_MAX);
	json_t *zone = json_object_get(name_entry(o, 1), "zone");
	cr_assert_eq(jint(zone, "max_ns", NULL), INT64_MAX);
	cr_assert_null(json_object_get(o, "ts_backwards"));
	json_decref(o);
	remove_dir();
}

/*
 * examples/lua_trace, a Lua 5.4 host with every call a zone (issue #28):
 * tests/data/lua_calls.lua's exact zone count per function, every zone
 * ended and nested on its thread (those of frames an error unwound, a
 * tail call replaced, a coroutine left suspended or dead included), the
 * trace valid to `katra verify` and the same in `katra export --chrome`;
 * a full name table still traces; the bundled workload, small.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <katra/reader.h>

#include "cli.h"

#define MAX_IDS 4096
#define FALLBACK "(lua: name table full)" /* examples/lua/lua_hook.h */

struct tally {
	char *names[MAX_IDS];
	uint64_t begun[MAX_IDS];
	uint32_t parent[MAX_IDS]; /* the zone open where its first zone began */
	uint8_t parents[MAX_IDS]; /* 2: its zones began inside different ones */
	uint32_t stack[1024];     /* the open zones of the one thread */
	size_t depth;
	uint64_t zones, dropped;
	uint32_t tid;
};

/* lua_trace @mode_args... SCRIPT @arg into @out, run in tests/data;
 * asserts it exits 0. */
static void run_lua(const char *out, const char *names, const char *script, const char *arg)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (chdir(KT_TEST_DATA) < 0 || null < 0)
			_exit(126);
		dup2(null, 1);
		const char *argv[9] = { KT_LUA_TRACE, "--out", out };
		int n = 3;
		if (names) {
			argv[n++] = "--names";
			argv[n++] = names;
		}
		argv[n++] = script;
		argv[n++] = arg;
		execv(KT_LUA_TRACE, (char *const *)argv);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lua_trace failed: %d", st);
}

static void on_event(struct tally *t, const kt_event *ev)
{
	cr_assert_lt(ev->name_id, MAX_IDS);
	if (!t->tid)
		t->tid = ev->thread_id;
	cr_assert_eq(ev->thread_id, t->tid, "one thread runs Lua");
	if (ev->type == KT_EV_ZONE_BEGIN) {
		cr_assert_lt(t->depth, 1024);
		uint32_t up = t->depth ? t->stack[t->depth - 1] : 0, id = ev->name_id;
		if (!t->parents[id]++)
			t->parent[id] = up;
		t->parents[id] = t->parent[id] == up ? 1 : 2;
		t->stack[t->depth++] = id;
		t->begun[ev->name_id]++;
		t->zones++;
	} else if (ev->type == KT_EV_ZONE_END) {
		cr_assert_gt(t->depth, 0, "an end with no zone open");
		uint32_t top = t->stack[--t->depth];
		cr_assert_eq(ev->name_id, top, "%s ends inside %s", t->names[ev->name_id],
		             t->names[top]);
	}
}

/* @path read back: names, then every zone nested and ended, counted. */
static void read_tally(const char *path, struct tally *t)
{
	memset(t, 0, sizeof(*t));
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_trace_frame fr;
	int rc;
	while ((rc = kt_reader_next_frame(r, &fr)) > 0) {
		if (fr.kind == KT_FRAME_NAME && fr.u.name.id < MAX_IDS)
			t->names[fr.u.name.id] = strdup(fr.u.name.str);
		else if (fr.kind == KT_FRAME_DROP)
			t->dropped += fr.u.drop.count;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(kt_reader_rewind(r), 0);
	kt_event ev;
	while ((rc = kt_reader_next(r, &ev)) > 0)
		on_event(t, &ev);
	cr_assert_eq(rc, 0);
	cr_assert_eq(t->depth, 0, "%zu zones never end, the innermost %s", t->depth,
	             t->depth ? t->names[t->stack[t->depth - 1]] : "");
	cr_assert_eq(t->dropped, 0);
	kt_reader_close(r);
}

static uint64_t count_of(const struct tally *t, const char *name)
{
	uint64_t n = 0;
	for (size_t i = 0; i < MAX_IDS; i++)
		if (t->names[i] && !strcmp(t->names[i], name))
			n += t->begun[i];
	return n;
}

static void free_tally(struct tally *t)
{
	for (size_t i = 0; i < MAX_IDS; i++)
		free(t->names[i]);
}

struct want {
	const char *name;
	uint64_t zones;
};

static void expect_counts(const struct tally *t, const struct want *w, size_t n, uint64_t all)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(count_of(t, w[i].name), w[i].zones, "%s", w[i].name);
		sum += w[i].zones;
	}
	cr_assert_eq(sum, all, "the list covers every zone");
	cr_assert_eq(t->zones, all);
}

/* lua_calls.lua's zones.  A coroutine's frames end when it yields and
 * begin again when it resumes: its body and `yield` count once per
 * slice.  Functions first called from C (coroutine bodies) are named
 * where they are defined. */
static const struct want calls[] = {
	{ "lua_calls.lua:0", 1 }, /* the chunk */
	{ "main_fn", 1 },
	{ "fib", 177 }, /* fib(10) */
	{ "try_dive", 3 },
	{ "pcall", 3 },
	{ "lua_calls.lua:27", 3 }, /* try_dive's closure */
	{ "dive", 22 },            /* 3 x dive(5..0), then dive(3..0) in `failing` */
	{ "error", 4 },            /* each unwinds to pcall or resume */
	{ "down", 11 },            /* down(10..0): a call, then 10 tail calls */
	{ "create", 2 },
	{ "resume", 5 },
	{ "lua_calls.lua:18", 5 }, /* gen: 4 slices of co, 1 of `abandoned` */
	{ "yield", 7 },            /* 3 + 3 resumed in co, 1 in `abandoned` */
	{ "lua_calls.lua:22", 1 }, /* failing, dead by its error */
	{ "wrap", 1 },
	{ "abandoned", 1 }, /* suspended at the end: its zones end */
};

#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/* Where every zone of a name begins: its caller's zone.  A frame an
 * error unwound, or a tail call replaced, left open would be the parent
 * of what comes after it (its zones still nest and all end: the trace
 * would be well formed but wrong). */
static const struct want_parent {
	const char *name, *parent;
} parents[] = {
	{ "main_fn", "lua_calls.lua:0" },
	{ "try_dive", "main_fn" },
	{ "pcall", "try_dive" },
	{ "lua_calls.lua:27", "pcall" },
	{ "error", "dive" },
	{ "down", "main_fn" },
	{ "create", "main_fn" },
	{ "resume", "main_fn" },
	{ "lua_calls.lua:22", "resume" },
	{ "yield", "lua_calls.lua:18" },
	{ "wrap", "main_fn" },
	{ "abandoned", "main_fn" },
};

static uint32_t id_of(const struct tally *t, const char *name)
{
	for (uint32_t i = 0; i < MAX_IDS; i++)
		if (t->names[i] && !strcmp(t->names[i], name))
			return i;
	cr_assert_fail("no name %s", name);
	return 0;
}

static void expect_parents(const struct tally *t)
{
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		uint32_t id = id_of(t, parents[i].name);
		cr_assert_eq(t->parents[id], 1, "%s begins inside different zones",
		             parents[i].name);
		cr_assert_str_eq(t->names[t->parent[id]], parents[i].parent, "%s", parents[i].name);
	}
}

static void verified(const char *path)
{
	struct proc *p = malloc(sizeof(*p));
	run_katra(p, (const char *const[]){ "verify", path, NULL });
	cr_assert_eq(p->status, 0, "%.*s%.*s", (int)p->out_len, p->out, (int)p->err_len, p->err);
	free(p);
}

static char dir[] = "/tmp/katra-lua-XXXXXX";
static char out[64];

/* Each test's directory (Criterion runs each in a process of its own;
 * the ThreadSanitizer build's stand-in has no .init or .fini). */
static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/lua.katra", dir);
}

static void teardown(void)
{
	unlink(out);
	rmdir(dir);
}

Test(lua, every_call_is_one_zone_ended_in_order)
{
	setup();
	struct tally *t = calloc(1, sizeof(*t));
	run_lua(out, NULL, "lua_calls.lua", "");
	read_tally(out, t);
	expect_counts(t, calls, NCALLS, 247);
	expect_parents(t);
	verified(out);
	free_tally(t);
	free(t);
	teardown();
}

/* The same zones in `katra export --chrome`, as Chrome's own format: a
 * "B" and an "E" per zone, the Bs counted by name. */
Test(lua, chrome_export_has_the_same_zones)
{
	setup();
	run_lua(out, NULL, "lua_calls.lua", "");
	char json_path[96];
	snprintf(json_path, sizeof(json_path), "%s/lua.json", dir);
	struct proc *p = malloc(sizeof(*p));
	run_katra(p, (const char *const[]){ "export", "--chrome", out, json_path, NULL });
	cr_assert_eq(p->status, 0, "%.*s", (int)p->err_len, p->err);
	free(p);
	json_error_t err;
	json_t *doc = json_load_file(json_path, 0, &err);
	unlink(json_path);
	cr_assert_not_null(doc, "%s", err.text);
	json_t *evs = json_object_get(doc, "traceEvents"), *e;
	size_t i, begins = 0, ends = 0;
	uint64_t by_name[NCALLS] = { 0 };
	json_array_foreach(evs, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));
		const char *name = json_string_value(json_object_get(e, "name"));
		ends += ph && !strcmp(ph, "E");
		if (!ph || strcmp(ph, "B"))
			continue;
		begins++;
		for (size_t k = 0; k < NCALLS; k++)
			by_name[k] += name && !strcmp(name, calls[k].name);
	}
	cr_assert_eq(begins, 247);
	cr_assert_eq(ends, 247);
	for (size_t k = 0; k < NCALLS; k++)
		cr_assert_eq(by_name[k], calls[k].zones, "%s", calls[k].name);
	json_decref(doc);
	teardown();
}

/* A name table of 2: the chunk and main_fn are named, every other call
 * is still a zone, under the fallback name, and still nested. */
Test(lua, a_full_name_table_still_traces)
{
	setup();
	struct tally *t = calloc(1, sizeof(*t));
	run_lua(out, "2", "lua_calls.lua", "");
	read_tally(out, t);
	static const struct want w[] = {
		{ "lua_calls.lua:0", 1 },
		{ "main_fn", 1 },
		{ FALLBACK, 245 },
	};
	expect_counts(t, w, 3, 247);
	verified(out);
	free_tally(t);
	free(t);
	teardown();
}

/* examples/lua/workload.lua at scale 1: each part's zones, all ended. */
Test(lua, the_bundled_workload_small)
{
	setup();
	struct tally *t = calloc(1, sizeof(*t));
	run_lua(out, NULL, KT_LUA_WORKLOAD, "1");
	read_tally(out, t);
	cr_assert_eq(count_of(t, "fib"), 753); /* fib(13) */
	cr_assert_eq(count_of(t, "new"), 602); /* 3 per step of 200, 2 more */
	cr_assert_eq(count_of(t, "pcall"), 20);
	cr_assert_eq(count_of(t, "error"), 20);         /* unwound from dive(6..10) */
	cr_assert_eq(count_of(t, "dive"), 180);         /* dive(6 + i % 5) for i = 1..20 */
	cr_assert_eq(count_of(t, "yield"), 200);        /* 100 yields, each resumed */
	cr_assert_eq(count_of(t, "count_down"), 301);   /* a call and 300 tail calls */
	cr_assert_eq(count_of(t, "count_leaves"), 255); /* a tree of depth 7 */
	verified(out);
	free_tally(t);
	free(t);
	teardown();
}

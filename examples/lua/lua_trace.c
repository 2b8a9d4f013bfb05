/*
 * lua_trace - run a Lua 5.4 script with every function call and return
 * traced as a katra zone named after the function (lua_hook.h).
 *
 *   lua_trace [--out FILE] [--names N] SCRIPT [ARG...]   traced (lua.katra)
 *   lua_trace --hook-only SCRIPT [ARG...]   the same hook, emitting nothing
 *   lua_trace --hook-clock SCRIPT [ARG...]  --hook-only reading katra's clock
 *                                           where a zone begins or ends
 *   lua_trace --hook-empty SCRIPT [ARG...]  a hook that returns at once
 *   lua_trace --plain SCRIPT [ARG...]       no hook
 *
 * The script gets its ARGs as `...`.  bench/lua_rows.sh times the five
 * against each other: Lua's own hook machinery (--hook-empty), the
 * tracer's bookkeeping (--hook-only), the clock reads (--hook-clock) and
 * the rest of katra's emits and its flusher (traced).
 * Exit status: 0; 1 when the script failed; 2 for bad arguments or a
 * session that did not start or stop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>
#include <katra/katra.h>

#include "lua_hook.h"

struct args {
	int plain;
	lt_mode mode;
	const char *out;
	uint32_t names;
	int first; /* argv index of SCRIPT */
};

static int usage(void)
{
	fprintf(stderr,
	        "usage: lua_trace [--plain | --hook-empty | --hook-only | --out FILE]"
	        " [--names N] SCRIPT [ARG...]\n");
	return 2;
}

static int parse(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .mode = LT_TRACE, .out = "lua.katra" };
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (!strcmp(argv[i], "--plain"))
			a->plain = 1;
		else if (!strcmp(argv[i], "--hook-only"))
			a->mode = LT_WALK;
		else if (!strcmp(argv[i], "--hook-empty"))
			a->mode = LT_EMPTY;
		else if (!strcmp(argv[i], "--hook-clock"))
			a->mode = LT_CLOCK;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			a->out = argv[++i];
		else if (!strcmp(argv[i], "--names") && i + 1 < argc)
			a->names = (uint32_t)strtoul(argv[++i], NULL, 10);
		else
			return -1;
	}
	a->first = i;
	return i < argc ? 0 : -1;
}

/* Run SCRIPT with its ARGs on @L; 0, or 1 with the error printed. */
static int run_script(lua_State *L, int argc, char **argv, int first)
{
	if (luaL_loadfile(L, argv[first]) != LUA_OK) {
		fprintf(stderr, "lua_trace: %s\n", lua_tostring(L, -1));
		return 1;
	}
	for (int i = first + 1; i < argc; i++)
		lua_pushstring(L, argv[i]);
	if (lua_pcall(L, argc - first - 1, 0, 0) != LUA_OK) {
		fprintf(stderr, "lua_trace: %s\n", lua_tostring(L, -1));
		return 1;
	}
	return 0;
}

/* The hooked run; the session around it when tracing.  Its counts go to
 * stderr (tests/test_lua.c reads them). */
static int run_hooked(lua_State *L, const struct args *a, int argc, char **argv)
{
	lt_tracer *t = lt_tracer_new(a->mode, a->names);
	kt_session *s = NULL;
	if (!t || lt_tracer_attach(t, L)) {
		fprintf(stderr, "lua_trace: no tracer\n");
		lt_tracer_free(t);
		return 2;
	}
	kt_thread_name("lua");
	/* The clock a session would read (the TSC where it is invariant). */
	if (a->mode == LT_CLOCK && kt_init(NULL)) {
		fprintf(stderr, "lua_trace: kt_init failed\n");
		lt_tracer_free(t);
		return 2;
	}
	if (a->mode == LT_TRACE && kt_session_start(a->out, NULL, &s)) {
		fprintf(stderr, "lua_trace: %s\n", kt_session_get_start_error());
		lt_tracer_free(t);
		return 2;
	}
	int rc = run_script(L, argc, argv, a->first);
	/* A script that failed leaves its frames open: no return came. */
	lt_tracer_finish(t);
	lua_sethook(L, NULL, 0, 0);
	kt_summary sum = { 0 };
	if (s && kt_session_stop(s, &sum)) {
		fprintf(stderr, "lua_trace: the session did not stop cleanly\n");
		rc = 2;
	}
	lt_counts c = lt_tracer_counts(t);
	fprintf(stderr,
	        "lua_trace: names %llu fallback %llu unwound %llu switches %llu evicted %llu"
	        " events %llu dropped %llu\n",
	        (unsigned long long)c.names, (unsigned long long)c.fallback,
	        (unsigned long long)c.unwound, (unsigned long long)c.switches,
	        (unsigned long long)c.evicted, (unsigned long long)sum.events_written,
	        (unsigned long long)sum.events_dropped);
	if (s)
		kt_summary_release(&sum);
	lt_tracer_free(t);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	if (parse(argc, argv, &a))
		return usage();
	lua_State *L = luaL_newstate();
	if (!L)
		return 2;
	luaL_openlibs(L);
	int rc = a.plain ? run_script(L, argc, argv, a.first) : run_hooked(L, &a, argc, argv);
	lua_close(L);
	return rc;
}

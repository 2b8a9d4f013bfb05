/*
 * lua_hook.h - every Lua function call and return as a katra zone named
 * after the function, through lua_sethook(LUA_MASKCALL | LUA_MASKRET).
 *
 * One tracer serves one Lua universe (a main state and the coroutines
 * made from it) run by one thread.  Per call the hook takes no lock and
 * allocates nothing once warm: a function's zone id is found in a fixed
 * table by its identity (a C function's pointer; a Lua function's chunk
 * and first line), interned once on first sight; with the table full a
 * call still makes a zone, named LT_FALLBACK_NAME.
 *
 * Lua gives no return event for a frame an error unwinds, nor for one a
 * tail call replaces; a coroutine's frames stay open while it is
 * suspended.  The tracer keeps each state's frames and closes what Lua
 * did not: a tail call ends the frame it replaces, a return whose
 * function is not the innermost frame's ends the frames the error
 * unwound (counted from the state's real depth), and a switch of
 * coroutine ends the leaving coroutine's zones and begins again those of
 * the one resumed, so the thread's zones always nest.
 */
#ifndef KATRA_EXAMPLES_LUA_HOOK_H
#define KATRA_EXAMPLES_LUA_HOOK_H

#include <stdint.h>
#include <lua.h>

/* The name of the zones of functions met once the name table is full. */
#define LT_FALLBACK_NAME "(lua: name table full)"

/* What the hook does per event. */
typedef enum lt_mode {
	LT_TRACE = 0, /* keeps frames and emits zones */
	LT_WALK = 1,  /* keeps frames as LT_TRACE does, emits nothing */
	LT_EMPTY = 2, /* a hook that returns at once: Lua's own cost */
	LT_CLOCK = 3, /* as LT_WALK, reading katra's clock where LT_TRACE emits */
} lt_mode;

/* What a tracer met (lt_tracer_counts). */
typedef struct lt_counts {
	uint64_t names;    /* functions given an id */
	uint64_t fallback; /* calls named LT_FALLBACK_NAME */
	uint64_t unwound;  /* frames ended for Lua (errors, tail calls) */
	uint64_t switches; /* coroutine switches */
	uint64_t evicted;  /* states forgotten to make room */
} lt_counts;

typedef struct lt_tracer lt_tracer;

/**
 * lt_tracer_new - a tracer in @mode whose name table holds @names
 * functions (0: the default, 4096; at most 1 << 20).  Return: the
 * tracer, or NULL when memory ran out.
 */
lt_tracer *lt_tracer_new(lt_mode mode, uint32_t names);

/**
 * lt_tracer_attach - hook @L (a main state, before it makes coroutines:
 * they inherit the hook and the extra space that names the tracer).
 * Return: 0; -1 when LUA_EXTRASPACE cannot hold a pointer.
 */
int lt_tracer_attach(lt_tracer *t, lua_State *L);

/**
 * lt_tracer_finish - end every zone still open (after the host's
 * lua_pcall() returned, an error included) and forget every state.
 */
void lt_tracer_finish(lt_tracer *t);

/** lt_tracer_counts - what @t met so far. */
lt_counts lt_tracer_counts(const lt_tracer *t);

/** lt_tracer_free - free @t (its states must be closed or unhooked). */
void lt_tracer_free(lt_tracer *t);

#endif

/*
 * lua_hook.c - Lua calls and returns as katra zones (lua_hook.h).
 *
 * Each Lua state (the main one, each coroutine) has its frames as the
 * tracer saw them: @base frames below that it never saw (a state first
 * met deep, or forgotten), @len frames it tracks (function and zone id),
 * and @over frames above LT_DEPTH_CAP it only counts.  The resume chain
 * is the states whose zones are open on the thread, the running one on
 * top: a coroutine resumed is pushed (its zones begun again), and an
 * event on a state lower in the chain pops those above it (their zones
 * ended, their frames kept for their next resume).
 *
 * Lua says nothing of a frame an error unwinds.  Such an error is caught
 * by a C function (pcall, xpcall, coroutine.resume, ...) whose own return
 * is the next return event on the state, and its frame is then not the
 * innermost tracked one: only then is the real depth counted
 * (lua_getstack, O(depth log depth)) and the frames above it ended.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <katra/katra.h>

#include "lua_hook.h"
#include "lua_names.h"

#define LT_STATES 256     /* states known at once (nested resumes stop at ~200) */
#define LT_HINTS 1024     /* state lookup by address */
#define LT_DEPTH_CAP 8192 /* frames tracked per state */
#define LT_NAMES 4096     /* functions named, by default */

/*
 * A frame is known by lua_Debug's i_ci, the CallInfo Lua keeps per depth
 * of a state's stack and reuses there: lua.h declares it (its "private
 * part") but no function gives it.  It is compared, never followed: a
 * return whose i_ci is not the innermost tracked frame's comes from a
 * frame below it, and those between were unwound.  Asking Lua for the
 * function instead (lua_getinfo "f") costs a call and a push per return.
 */
struct lt_frame {
	const void *frame; /* lua_Debug.i_ci at its call */
	uint32_t id;       /* its zone id */
};

struct lt_state {
	lua_State *L; /* NULL: a free slot */
	struct lt_frame *f;
	uint32_t len, cap;
	uint32_t base, over;
	int chained; /* in the resume chain: its zones are open */
};

struct lt_tracer {
	lt_mode mode;
	lt_names *names;
	struct lt_state *cur; /* the chain's top, the running state */
	uint32_t nchain, victim;
	uint32_t chain[LT_STATES];
	uint16_t hint[LT_HINTS]; /* slot + 1 */
	lt_counts c;
	struct lt_state st[LT_STATES];
};

lt_tracer *lt_tracer_new(lt_mode mode, uint32_t names)
{
	if (names > (1u << 20))
		return NULL;
	lt_tracer *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->mode = mode;
	t->names = lt_names_new(names ? names : LT_NAMES);
	if (!t->names) {
		free(t);
		return NULL;
	}
	return t;
}

/* LT_CLOCK's reads land here, so that they are made. */
static volatile uint64_t clock_sink;

static void begin(const lt_tracer *t, uint32_t id)
{
	if (t->mode == LT_TRACE && id)
		kt_zone_begin(id);
	else if (t->mode == LT_CLOCK && id)
		clock_sink = kt_now();
}

static void end(const lt_tracer *t, uint32_t id)
{
	if (t->mode == LT_TRACE && id)
		kt_zone_end(id);
	else if (t->mode == LT_CLOCK && id)
		clock_sink = kt_now();
}

static uint32_t total(const struct lt_state *s)
{
	return s->base + s->len + s->over;
}

/* A frame called on @s: tracked (its zone begun) below the cap. */
static void push(lt_tracer *t, struct lt_state *s, const void *frame, uint32_t id)
{
	if (!s->over && s->len == s->cap && s->cap < LT_DEPTH_CAP) {
		/* Growth only to a depth not seen before: warm-up, bounded. */
		uint32_t cap = s->cap ? 2 * s->cap : 64;
		struct lt_frame *f = realloc(s->f, cap * sizeof(*f));
		if (f) {
			s->f = f;
			s->cap = cap;
		}
	}
	if (s->over || s->len == s->cap) {
		s->over++;
		return;
	}
	s->f[s->len++] = (struct lt_frame){ frame, id };
	if (s->chained)
		begin(t, id);
}

/* The innermost frame of @s is gone: its zone ends if it is open. */
static void pop(lt_tracer *t, struct lt_state *s)
{
	if (s->over)
		s->over--;
	else if (s->len) {
		s->len--;
		if (s->chained)
			end(t, s->f[s->len].id);
	} else if (s->base)
		s->base--;
}

/* How many frames @L's stack holds (levels lua_getstack() finds). */
static uint32_t real_depth(lua_State *L)
{
	lua_Debug ar;
	uint32_t lo = 0, hi = 1; /* lo <= depth; depth < hi once a probe fails */
	while (lua_getstack(L, (int)hi - 1, &ar)) {
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (lua_getstack(L, (int)mid - 1, &ar))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Make @s hold @depth frames: those above it were unwound (ended), those
 * missing below were never seen. */
static void settle(lt_tracer *t, struct lt_state *s, uint32_t depth)
{
	while (total(s) > depth) {
		pop(t, s);
		t->c.unwound++;
	}
	s->base += depth - total(s);
}

/* The chain's top leaves the thread: its zones end, innermost first. */
static void suspend(lt_tracer *t, struct lt_state *s)
{
	for (uint32_t i = s->len; i-- > 0;)
		end(t, s->f[i].id);
	s->chained = 0;
}

static uint32_t hint_of(const lua_State *L)
{
	uint64_t x = (uint64_t)(uintptr_t)L * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 40) & (LT_HINTS - 1);
}

/* @L's slot: known, free, or taken from a state not in the chain (its
 * zones are closed; if it runs again it is met anew). */
static struct lt_state *slot_for(lt_tracer *t, lua_State *L)
{
	uint16_t *h = &t->hint[hint_of(L)];
	if (*h && t->st[*h - 1].L == L)
		return &t->st[*h - 1];
	struct lt_state *free_slot = NULL;
	for (uint32_t i = 0; i < LT_STATES; i++) {
		if (t->st[i].L == L) {
			*h = (uint16_t)(i + 1);
			return &t->st[i];
		}
		if (!t->st[i].L && !free_slot)
			free_slot = &t->st[i];
	}
	struct lt_state *s = free_slot;
	while (!s) { /* the chain is shorter than LT_STATES: this ends */
		struct lt_state *v = &t->st[t->victim++ % LT_STATES];
		if (!v->chained) {
			s = v;
			t->c.evicted++;
		}
	}
	s->L = L;
	s->len = s->base = s->over = 0;
	*h = (uint16_t)(s - t->st + 1);
	return s;
}

/* An event on @L, not the running state: a coroutine resumed (pushed,
 * its zones begun again) or a state lower in the chain running again
 * (the states above it suspended).  NULL: not traced (a full chain). */
static struct lt_state *switch_to(lt_tracer *t, lua_State *L, int event)
{
	t->c.switches++;
	for (uint32_t k = t->nchain; k-- > 0;) {
		if (t->st[t->chain[k]].L != L)
			continue;
		while (t->nchain > k + 1)
			suspend(t, &t->st[t->chain[--t->nchain]]);
		return t->cur = &t->st[t->chain[k]];
	}
	if (t->nchain == LT_STATES) /* Lua stops nested resumes first: never */
		return NULL;
	struct lt_state *s = slot_for(t, L);
	/* At a call the callee is on the stack but not yet a frame of @s. */
	uint32_t depth = real_depth(L);
	settle(t, s, depth - (depth && event == LUA_HOOKCALL));
	t->chain[t->nchain++] = (uint32_t)(s - t->st);
	s->chained = 1;
	for (uint32_t i = 0; i < s->len; i++)
		begin(t, s->f[i].id);
	return t->cur = s;
}

static void on_call(lt_tracer *t, struct lt_state *s, lua_State *L, lua_Debug *ar)
{
	int fallback = 0;
	lua_getinfo(L, "S", ar);
	uint32_t id = lt_names_id(t->names, L, ar, &fallback);
	t->c.fallback += (uint64_t)fallback;
	if (ar->event == LUA_HOOKTAILCALL) { /* the frame replaced never returns */
		pop(t, s);
		t->c.unwound++;
	}
	push(t, s, ar->i_ci, id);
}

static void on_return(lt_tracer *t, struct lt_state *s, lua_State *L, lua_Debug *ar)
{
	if (!s->over && s->len && s->f[s->len - 1].frame != ar->i_ci)
		settle(t, s, real_depth(L)); /* an error unwound frames */
	pop(t, s);
}

static void hook(lua_State *L, lua_Debug *ar)
{
	lt_tracer *t;
	memcpy(&t, lua_getextraspace(L), sizeof(t));
	struct lt_state *s = t->cur;
	if (!s || s->L != L)
		s = switch_to(t, L, ar->event);
	if (!s)
		return;
	if (ar->event == LUA_HOOKRET)
		on_return(t, s, L, ar);
	else
		on_call(t, s, L, ar);
}

static void hook_empty(lua_State *L, lua_Debug *ar)
{
	(void)L;
	(void)ar;
}

int lt_tracer_attach(lt_tracer *t, lua_State *L)
{
	if (LUA_EXTRASPACE < sizeof(t))
		return -1;
	memcpy(lua_getextraspace(L), &t, sizeof(t));
	lua_sethook(L, t->mode == LT_EMPTY ? hook_empty : hook, LUA_MASKCALL | LUA_MASKRET, 0);
	return 0;
}

void lt_tracer_finish(lt_tracer *t)
{
	while (t->nchain)
		suspend(t, &t->st[t->chain[--t->nchain]]);
	t->cur = NULL;
	for (uint32_t i = 0; i < LT_STATES; i++) {
		t->st[i].L = NULL;
		t->st[i].len = t->st[i].base = t->st[i].over = 0;
	}
	memset(t->hint, 0, sizeof(t->hint));
}

lt_counts lt_tracer_counts(const lt_tracer *t)
{
	lt_counts c = t->c;
	c.names = lt_names_count(t->names);
	return c;
}

void lt_tracer_free(lt_tracer *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < LT_STATES; i++)
		free(t->st[i].f);
	lt_names_free(t->names);
	free(t);
}

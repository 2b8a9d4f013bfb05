/*
 * sql_duck.c - finding libduckdb.so at run time; sql_duck.h says where
 * and why.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/sql_duck.h"

struct duck duck;

/* Every function of DUCK_FUNCTIONS from @h into @d; the first missing
 * name, or NULL when all are there. */
static const char *duck_bind(void *h, struct duck *d)
{
#define DUCK_SYM(ret, name, args)                                 \
	*(void **)&d->name = dlsym(h, #name);                     \
	if (!d->name)                                             \
		return #name;
	DUCK_FUNCTIONS(DUCK_SYM)
#undef DUCK_SYM
	return NULL;
}

int duck_load(char *why, size_t cap)
{
	if (duck.handle)
		return 0;
	const char *env = getenv("KATRA_DUCKDB");
	/* KATRA_DUCKDB, when set, is the one place looked at. */
	const char *tries[] = { env && *env ? env : NULL, env && *env ? NULL : SQL_DUCK_DEFAULT,
				env && *env ? NULL : "libduckdb.so" };
	const char *last = "not found";
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		if (!tries[i])
			continue;
		/* RTLD_LOCAL: DuckDB's symbols stay out of katra's namespace. */
		void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			last = dlerror();
			continue;
		}
		struct duck d = { .handle = h };
		const char *missing = duck_bind(h, &d);
		if (!missing) {
			duck = d;
			return 0;
		}
		snprintf(why, cap, "%s lacks %s (DuckDB 1.1 or later is needed)", tries[i],
			 missing);
		dlclose(h);
		return -1;
	}
	snprintf(why, cap,
		 "DuckDB's libduckdb.so was not found (%s).\n"
		 "Install it with scripts/deps.sh (npm's @duckdb/node-bindings-linux-x64,\n"
		 "into /opt/katra-duckdb), or set KATRA_DUCKDB to the path of a libduckdb.so",
		 last ? last : "not found");
	return -1;
}

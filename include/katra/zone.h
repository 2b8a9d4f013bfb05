/*
 * katra/zone.h - call sites and categories (included by katra.h).
 *
 * A call site (KT_ZONE, KT_ZONE_C and the KT_* macros below) is a static
 * kt_site: its name, file, line, function and category, interned once
 * into an id of its own (SPEC §4.7: the trace names the id and gives its
 * location).  After the first pass a site costs what kt_zone_begin() and
 * kt_zone_end() cost: the cached id is read, nothing is looked up.
 *
 * A category is a flag byte, one per category name, that every site of
 * that category caches a pointer to: with the category off, a site costs
 * one load of the pointer, one of the flag and a branch, and emits
 * nothing.  Categories start enabled; the environment variable
 * KT_CATEGORIES, read when a category is first named, changes that: a
 * comma-separated list where "name" enables and "-name" disables a
 * category, and where naming any category without "-" disables every
 * category it does not name ("render,physics": only those two;
 * "-physics": every one but physics).  kt_category_enable() changes a
 * category at run time.  The trace records every category's state at
 * its session's start and stop (SPEC §4.8).
 *
 * Threads: any thread.  kt_site_id(), kt_category() and
 * kt_category_enable() take a lock (not from a signal handler).
 */
#ifndef KATRA_ZONE_H
#define KATRA_ZONE_H

#include <stdint.h>
#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Categories a process may name; kt_category() beyond them says "on". */
#define KT_MAX_CATEGORIES 256u

/** A call site.  Made by the macros as a static; the fields after @line
 * are katra's. */
typedef struct kt_site {
	const char *name;          /* the zone's (or event's) name */
	const char *file;          /* __FILE__ */
	const char *function;      /* __func__ */
	const char *category;      /* NULL: no category, always on */
	uint32_t line;             /* __LINE__ */
	uint32_t id;               /* 0 until interned */
	const uint8_t *enabled;    /* the category's flag; &kt__flag_on until interned */
} kt_site;

/* A flag that is always on: where a site points before it is interned
 * (its first pass then goes to kt_site_id()). */
extern KT_API const uint8_t kt__flag_on;

/**
 * kt_site_id - intern @site: an id (non-zero) for its name, file, line,
 * function and category together, the same for equal sites; the session
 * writes its name and location entries.  Also points @site->enabled at
 * its category's flag.  The macros call it on a site's first pass.
 *
 * Return: the id, also stored in @site->id; 0 when a string is empty
 * (the name) or over 65535 bytes, or memory ran out (@site stays
 * uninterned and the next pass tries again).  Any thread.
 */
KT_API __attribute__((cold)) uint32_t kt_site_id(kt_site *site);

/**
 * kt_category - the flag of category @name, registering it (its first
 * state from KT_CATEGORIES).  Return: a pointer valid for the process's
 * life; the always-on flag when @name is NULL, empty, over 65535 bytes,
 * or KT_MAX_CATEGORIES are named already.  Any thread.
 */
KT_API const uint8_t *kt_category(const char *name);

/**
 * kt_category_enable - switch category @name on (@on non-zero) or off,
 * registering it if needed.  Sites of the category see the change at
 * their next pass (a relaxed store: at once on this thread, soon on
 * others).  Return: 0; -EINVAL for a name kt_category() would refuse;
 * -ENOSPC when KT_MAX_CATEGORIES are named already.  Any thread.
 */
KT_API int kt_category_enable(const char *name, int on);

/**
 * kt_category_get_enabled - whether category @name is on (1) or off (0);
 * -EINVAL for a name kt_category() would refuse.  Any thread.
 */
KT_API int kt_category_get_enabled(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_ZONE_H */

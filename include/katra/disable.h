/*
 * katra/disable.h - katra compiled out.  Define KATRA_DISABLE before the
 * first katra header (or build with -DKATRA_DISABLE) and katra.h includes
 * this in place of its producer fast path; never include it yourself
 * (included alone, it is katra.h with KATRA_DISABLE defined).
 *
 * Every emit, macro and call of katra.h, zone.h, args.h, mem.h, track.h
 * and katra.hpp then turns into nothing that names the library: a program
 * built so references no kt_ symbol and links without libkatra
 * (tests/disable_check.sh checks `nm -u` on examples/).  The code compiles
 * as it is, C and C++, with no new warning under -Wall -Wextra:
 *
 * - the out-of-line calls (kt_name(), kt_session_start(), ...) are
 *   function-like macros that check their arguments against the real
 *   prototype inside sizeof, unevaluated: their arguments are not
 *   evaluated, and taking such a function's address (&kt_name) still
 *   needs the library;
 * - the inline emits (kt_zone_begin(), kt_counter(), kt_arg_i64(),
 *   kt_alloc(), kt_track_counter(), ...) stay functions that do nothing:
 *   their arguments are evaluated, and the compiler drops them;
 * - KT_ZONE, KT_ZONE_C, the KT_ARG_* macros, KT_FRAME, KT_COUNTER and
 *   KT_MESSAGE declare no site (their values are evaluated); a
 *   KT_ZONE_AS handle is a const 0 marked unused, so KT_ZONE_ON() is false.
 *
 * What the calls give back, compiled out:
 * - ids: kt_name(), kt_site_id() and kt_track_create() return 0 (no id: a
 *   katra::track is not ok()); kt_now() returns 0;
 * - sessions fail, so a program sees that it traces nothing:
 *   kt_session_start() returns -ENOSYS and sets *out to NULL, and
 *   kt_session_get_start_error() and kt_strerror() say "tracing compiled out
 *   (KATRA_DISABLE)"; kt_session_stop(), kt_session_snapshot() and
 *   kt_session_snapshot_threads() return KT_ENOSESSION with the summary or
 *   result they fill zeroed; kt_summary_release() does nothing;
 * - settings succeed and do nothing: kt_init(), kt_shutdown(),
 *   kt_thread_name(), kt_category_enable() and kt_track_calibrate() return
 *   0; kt_category_get_enabled() returns 0 and kt_category() a flag that is
 *   off (nothing is traced);
 * - kt_version() and kt_version_string() give the headers' version.
 *
 * katra/reader.h, writer.h and capture.h are the library's: a program that
 * reads or writes traces, or runs the capture manager, links it.
 */
#ifndef KATRA_KATRA_H
/* Included on its own: it is katra.h compiled out, which includes this
 * file again where it belongs (its producer path). */
#ifndef KATRA_DISABLE
#define KATRA_DISABLE
#endif
#include <katra/katra.h>
#elif !defined(KATRA_DISABLE)
#error "katra.h was included without KATRA_DISABLE: define it before the first katra header"
#elif !defined(KATRA_DISABLE_H)
#define KATRA_DISABLE_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @call checked against its prototype, never evaluated, then @value (a
 * call, so a discarded result raises no -Wunused-value). */
#define KT__OFF(call, value) ((void)sizeof((call, 0)), value)

static inline int kt__off_int(int v)
{
	return v;
}
static inline unsigned kt__off_unsigned(unsigned v)
{
	return v;
}
static inline uint32_t kt__off_id(void)
{
	return 0;
}
static inline void kt__off_void(void)
{
}
static inline const char *kt__off_why(void)
{
	return "tracing compiled out (KATRA_DISABLE)";
}
static inline const char *kt__off_text(const char *s)
{
	return s;
}
/* An off category's flag: the string's terminating 0. */
static inline const uint8_t *kt__off_flag(void)
{
	return (const uint8_t *)"";
}
static inline int kt__off_start(kt_session **out)
{
	if (out)
		*out = NULL;
	return -ENOSYS;
}
static inline int kt__off_stop(kt_summary *sum)
{
	if (sum)
		memset(sum, 0, sizeof(*sum));
	return KT_ENOSESSION;
}
static inline int kt__off_snapshot(kt_snapshot_result *res)
{
	if (res)
		memset(res, 0, sizeof(*res));
	return KT_ENOSESSION;
}

#define kt_init(cfg) KT__OFF(kt_init(cfg), kt__off_int(0))
#define kt_shutdown() KT__OFF(kt_shutdown(), kt__off_int(0))
#define kt_name(s) KT__OFF(kt_name(s), kt__off_id())
#define kt_thread_name(s) KT__OFF(kt_thread_name(s), kt__off_int(0))
#define kt_session_start(path, opts, out)                                           \
	KT__OFF(kt_session_start(path, opts, out), kt__off_start(out))
#define kt_session_get_start_error() KT__OFF(kt_session_get_start_error(), kt__off_why())
#define kt_session_stop(s, sum) KT__OFF(kt_session_stop(s, sum), kt__off_stop(sum))
#define kt_session_snapshot(s, path, fd, age, bytes, res)                           \
	KT__OFF(kt_session_snapshot(s, path, fd, age, bytes, res), kt__off_snapshot(res))
#define kt_session_snapshot_threads(s, path, fd, age, bytes, res, rows, cap)        \
	KT__OFF(kt_session_snapshot_threads(s, path, fd, age, bytes, res, rows, cap),   \
		kt__off_snapshot(res))
#define kt_summary_release(sum) KT__OFF(kt_summary_release(sum), kt__off_void())
#define kt_site_id(site) KT__OFF(kt_site_id(site), kt__off_id())
#define kt_category(s) KT__OFF(kt_category(s), kt__off_flag())
#define kt_category_enable(s, on) KT__OFF(kt_category_enable(s, on), kt__off_int(0))
#define kt_category_get_enabled(s) KT__OFF(kt_category_get_enabled(s), kt__off_int(0))
#define kt_strerror(err) KT__OFF(kt_strerror(err), kt__off_why())
#define kt_err_name(err) KT__OFF(kt_err_name(err), kt__off_why())
#define kt_overflow_name(p) KT__OFF(kt_overflow_name(p), kt__off_why())
#define kt_version() KT__OFF(kt_version(), kt__off_unsigned(KT_VERSION_NUMBER))
#define kt_version_string() KT__OFF(kt_version_string(), kt__off_text(KT_VERSION_STRING))

/* No site, no guard: a zone's handle is 0, so KT_ZONE_ON() is false. */
#define KT_ZONE_AS(var, literal)                                                    \
	const uint32_t var __attribute__((unused)) = KT__OFF(kt__off_text(literal), kt__off_id())
#define KT_ZONE_C_AS(var, cat, literal)                                             \
	const uint32_t var __attribute__((unused)) =                                \
		KT__OFF(kt__off_text(cat), KT__OFF(kt__off_text(literal), kt__off_id()))
#define KT__ZONE_ID(var) (var)

/* katra.h's fast path, compiled out: what the inline emits call. */
static inline uint64_t kt_now(void)
{
	return 0;
}
static inline int kt__on(void)
{
	return 0;
}
static inline void kt__emit(uint8_t type, uint32_t id, uint8_t flags, const void *payload,
			    size_t len)
{
	(void)type;
	(void)id;
	(void)flags;
	(void)payload;
	(void)len;
}
static inline void kt__refuse(void)
{
}

#ifdef __cplusplus
}
#endif
#endif /* KATRA_DISABLE_H */

/*
 * katra/args.h - zone arguments, message severities and named frames
 * (included by katra.h; needs its emit path).
 *
 * An argument is a record of its own that follows its zone's begin on the
 * same thread (SPEC §4.2, types 10-13): it belongs to the thread's
 * innermost zone open when it was emitted.  Its name is an interned id
 * (kt_name(), or the KT_ARG_* macros, which intern once per call site);
 * name 0 is the zone's own value or text (Tracy's ZoneValue, ZoneText).
 * Each costs what kt_counter() costs: one record of 24 bytes, or 16 plus
 * the text's length rounded up to 8.
 *
 * An argument knows nothing of its zone's category: inside a KT_ZONE_C
 * whose category is off it is still written, and a reader gives it to the
 * enclosing zone.  For a zone that may be off, name it with KT_ZONE_C_AS
 * and give its arguments through KT_ZONE_ARG_* (katra.h), or guard them
 * with KT_ZONE_ON(): they are then written only if the zone began.
 *
 * Threads: any thread, and async-signal-safe as katra.h's emits are.
 */
#ifndef KATRA_ARGS_H
#define KATRA_ARGS_H

/* The emit path this header builds on: katra.h includes this file at its
 * end, so included first it is katra.h, whole. */
#include <katra/katra.h>

#ifdef __cplusplus
#include <type_traits>
#include <utility>
extern "C" {
#endif

/* A record while a session runs; the one shape of every emit below. */
static inline void kt__emit_on(uint8_t type, uint32_t id, uint8_t flags, const void *payload,
			       size_t len)
{
	if (kt__on())
		kt__emit(type, id, flags, payload, len);
}

/** kt_arg_i64 - the innermost open zone's argument @name_id is @value. */
static inline void kt_arg_i64(uint32_t name_id, int64_t value)
{
	kt__emit_on(KT_EV_ARG_I64, name_id, 0, &value, 8);
}

/** kt_arg_u64 - as kt_arg_i64(), unsigned. */
static inline void kt_arg_u64(uint32_t name_id, uint64_t value)
{
	kt__emit_on(KT_EV_ARG_U64, name_id, 0, &value, 8);
}

/** kt_arg_f64 - as kt_arg_i64(), a double. */
static inline void kt_arg_f64(uint32_t name_id, double value)
{
	kt__emit_on(KT_EV_ARG_F64, name_id, 0, &value, 8);
}

/** kt_arg_str - as kt_arg_i64(), @len bytes of text (refused, as a
 * message is, over 65535 bytes or a quarter of the ring). */
static inline void kt_arg_str(uint32_t name_id, const char *text, size_t len)
{
	kt__emit_on(KT_EV_ARG_STR, name_id, 0, text, len);
}

/** kt_zone_value_i64, _u64, _f64 - the innermost open zone's value. */
static inline void kt_zone_value_i64(int64_t value)
{
	kt_arg_i64(0, value);
}
static inline void kt_zone_value_u64(uint64_t value)
{
	kt_arg_u64(0, value);
}
static inline void kt_zone_value_f64(double value)
{
	kt_arg_f64(0, value);
}

/** kt_zone_text - the innermost open zone's text, @len bytes. */
static inline void kt_zone_text(const char *text, size_t len)
{
	kt_arg_str(0, text, len);
}

/**
 * kt_message_sev - kt_message() with a severity (a kt_severity; others
 * are refused and counted in events_refused).
 */
static inline void kt_message_sev(uint32_t id, kt_severity sev, const char *text, size_t len)
{
	if (kt__on()) {
		if (__builtin_expect((unsigned)sev > KT_SEV_FATAL, 0))
			kt__refuse();
		else
			kt__emit(KT_EV_MESSAGE, id, (uint8_t)sev, text, len);
	}
}

/**
 * kt_frame_begin, kt_frame_end - discontinuous frame @id number
 * @frame_no starts or ends (a frame that is not one iteration of a loop:
 * a level load, a job batch), where kt_frame() marks the end of a loop's
 * frame.  Frames of one name do not overlap; any thread may end a frame.
 */
static inline void kt_frame_begin(uint32_t id, uint64_t frame_no)
{
	kt__emit_on(KT_EV_FRAME, id, KT_FRAME_PHASE_BEGIN, &frame_no, 8);
}
static inline void kt_frame_end(uint32_t id, uint64_t frame_no)
{
	kt__emit_on(KT_EV_FRAME, id, KT_FRAME_PHASE_END, &frame_no, 8);
}

/* A call site's first pass: intern @literal and cache its id.  Cold and
 * out of line, so the site's hot part holds no call (check_fastpath.sh). */
static __attribute__((cold, noinline, unused)) uint32_t kt__name_intern(uint32_t *cache,
									  const char *literal)
{
	uint32_t id = kt_name(literal);
	/* Relaxed: racing threads intern the same string and store the same
	 * id; nothing else is published through the cache. */
	kt__store_relaxed(cache, id);
	return id;
}

/* A literal's id, interned on its first pass and cached at the call site. */
static inline uint32_t kt__name_cached(uint32_t *cache, const char *literal)
{
	/* Relaxed: the cache holds the one id of @literal or 0 (as above). */
	uint32_t id = kt__load_stale(cache);
	if (__builtin_expect(id == 0, 0))
		id = kt__name_intern(cache, literal);
	return id;
}

/* A frame mark of a KT_FRAME site: its number is the count of marks the
 * site wrote before it. */
static inline void kt__frame_next(uint32_t id, uint64_t *frame_no)
{
	if (kt__on()) {
		/* Relaxed load and store, no read-modify-write: a loop's frame is
		 * marked from one thread, so nothing races; two threads marking
		 * one site at once may write one number twice, never a torn one,
		 * and the mark costs no lock-prefixed instruction. */
		uint64_t n = kt__load_own(frame_no);
		kt__store_relaxed(frame_no, n + 1);
		kt__emit(KT_EV_FRAME, id, 0, &n, 8);
	}
}

/**
 * KT_ARG_I64("name", v), KT_ARG_U64, KT_ARG_F64, KT_ARG_STR("name", s, n)
 * - a named argument of the innermost open zone, the name interned once
 * per call site.  Statements (each declares a static).
 */
#ifndef KATRA_DISABLE
#define KT__ARG(fn, literal, ...)                                                   \
	do {                                                                        \
		static uint32_t kt__arg_id;                                         \
		fn(kt__name_cached(&kt__arg_id, literal), __VA_ARGS__);             \
	} while (0)
#else
/* Compiled out (katra/disable.h): no static, the name checked only. */
#define KT__ARG(fn, literal, ...)                                                   \
	fn(KT__OFF(kt__off_text(literal), kt__off_id()), __VA_ARGS__)
#endif
#define KT_ARG_I64(literal, v) KT__ARG(kt_arg_i64, literal, (int64_t)(v))
#define KT_ARG_U64(literal, v) KT__ARG(kt_arg_u64, literal, (uint64_t)(v))
#define KT_ARG_F64(literal, v) KT__ARG(kt_arg_f64, literal, (double)(v))
#define KT_ARG_STR(literal, s, n) KT__ARG(kt_arg_str, literal, s, n)

/*
 * KT_FRAME("name"), KT_COUNTER("name", v), KT_MESSAGE("name", text) and
 * KT_MESSAGE("name", text, len) - kt_frame(), kt_counter() or
 * kt_counter_f64(), and kt_message() with the name interned once per call
 * site (kt_name(): two sites of one name are one frame, counter or
 * message name), then costing what the call costs.  Statements (each
 * declares a static).
 *
 * KT_FRAME numbers its marks 0, 1, 2, ... in the order the site writes
 * them (marks while no session runs are not counted); kt_frame() takes the
 * number from the caller.  KT_COUNTER is kt_counter_f64() for a float,
 * double or long double @v and kt_counter() (an int64_t) for an integer
 * (a _Generic selection in C, overloads in C++).  KT_MESSAGE's @text is
 * NUL-terminated without @len (in C++ also anything with data() and
 * size(), a std::string_view or std::string); it is copied into the
 * trace and need not outlive the call.  Threads and signal handlers: as
 * the calls they make, once each site has made its first pass (which
 * interns, so takes a lock: not in a handler).
 */
#ifndef KATRA_DISABLE
#define KT__NAMED(var, literal) kt__name_cached(&var, literal)
#define KT_FRAME(literal)                                                           \
	do {                                                                        \
		static uint32_t kt__frame_id;                                       \
		static uint64_t kt__frame_no;                                       \
		kt__frame_next(KT__NAMED(kt__frame_id, literal), &kt__frame_no);    \
	} while (0)
#define KT__SITE_CALL(fn, literal, ...)                                             \
	do {                                                                        \
		static uint32_t kt__site_name;                                      \
		fn(KT__NAMED(kt__site_name, literal), __VA_ARGS__);                 \
	} while (0)
#else
/* Compiled out (katra/disable.h): no static, the name checked only, the
 * value evaluated and dropped as the inline call drops it. */
#define KT_FRAME(literal) kt_frame(KT__OFF(kt__off_text(literal), kt__off_id()), 0)
#define KT__SITE_CALL(fn, literal, ...)                                             \
	fn(KT__OFF(kt__off_text(literal), kt__off_id()), __VA_ARGS__)
#endif

#ifndef __cplusplus
#define KT__COUNTER_FN(v)                                                           \
	_Generic((v), float: kt_counter_f64, double: kt_counter_f64,                 \
		 long double: kt_counter_f64, default: kt__counter_int)
#define KT_COUNTER(literal, v) KT__SITE_CALL(KT__COUNTER_FN(v), literal, v)
#define KT__MESSAGE2(literal, text) KT__SITE_CALL(kt__message_cstr, literal, text)
#else
#define KT_COUNTER(literal, v) KT__SITE_CALL(kt__counter_any, literal, v)
#define KT__MESSAGE2(literal, text) KT__SITE_CALL(kt__message_any, literal, text)
#endif
#define KT__MESSAGE3(literal, text, len) KT__SITE_CALL(kt_message, literal, text, len)
#define KT__PICK3(a, b, c, m, ...) m
#define KT_MESSAGE(...) KT__PICK3(__VA_ARGS__, KT__MESSAGE3, KT__MESSAGE2, )(__VA_ARGS__)

/* An integer counter: @value converted as kt_counter() converts it (a
 * _Generic selection's default takes any integer type). */
static inline void kt__counter_int(uint32_t id, int64_t value)
{
	kt_counter(id, value);
}

/* A NUL-terminated message (strlen of a literal folds at compile time). */
static inline void kt__message_cstr(uint32_t id, const char *text)
{
	kt_message(id, text, strlen(text));
}

#ifdef __cplusplus
}

/* KT_COUNTER's and KT_MESSAGE's overloads in C++. */
template <class T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
static inline void kt__counter_any(uint32_t id, T value) noexcept
{
	kt_counter(id, static_cast<int64_t>(value));
}
static inline void kt__counter_any(uint32_t id, double value) noexcept
{
	kt_counter_f64(id, value);
}
static inline void kt__counter_any(uint32_t id, float value) noexcept
{
	kt_counter_f64(id, value);
}
static inline void kt__counter_any(uint32_t id, long double value) noexcept
{
	kt_counter_f64(id, static_cast<double>(value));
}
static inline void kt__message_any(uint32_t id, const char *text) noexcept
{
	kt__message_cstr(id, text);
}
template <class S, class = decltype(std::declval<const S &>().size())>
static inline void kt__message_any(uint32_t id, const S &text) noexcept
{
	kt_message(id, text.data(), text.size());
}
#endif
#endif /* KATRA_ARGS_H */

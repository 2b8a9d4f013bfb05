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

#ifdef __cplusplus
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

/* A literal's id, interned on its first pass and cached at the call site. */
static inline uint32_t kt__name_cached(uint32_t *cache, const char *literal)
{
	/* Relaxed: racing threads intern the same string and store the same
	 * id; nothing else is published through the cache. */
	uint32_t id = kt__load_stale(cache);
	if (__builtin_expect(id == 0, 0)) {
		id = kt_name(literal);
		kt__store_relaxed(cache, id);
	}
	return id;
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

#ifdef __cplusplus
}
#endif
#endif /* KATRA_ARGS_H */

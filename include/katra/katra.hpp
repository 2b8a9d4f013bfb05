/*
 * katra/katra.hpp - katra for C++17 and later: katra.h (which already
 * compiles as C++, with the same inline fast path) plus a scoped zone type
 * and overloads a C++ caller expects.  Nothing here throws or allocates;
 * every call costs what the C call it wraps costs.
 *
 *   void render() {
 *       KT_ZONE("render");                   // ends at the closing brace
 *       katra::counter(draws_id, n);         // int64_t or double
 *   }
 *
 * Threads: as katra.h (any thread; nothing here is async-signal-safe
 * beyond what katra.h says of the calls it wraps).
 */
#ifndef KATRA_KATRA_HPP
#define KATRA_KATRA_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <katra/katra.h>
#include <katra/track.h>

namespace katra {

/* A zone for the lifetime of the object: begun when made, ended when
 * destroyed (also by an exception leaving its scope).  Neither copied nor
 * moved, so it ends exactly once, on the thread that began it. */
using zone = kt__zone_guard;

/* name - intern @s and return its id (never 0); see kt_name().  Interning
 * takes a lock and may allocate: do it once and keep the id. */
inline std::uint32_t name(const char *s) noexcept
{
	return kt_name(s);
}

/* counter - a counter sample, as kt_counter() and kt_counter_f64(). */
inline void counter(std::uint32_t id, std::int64_t value) noexcept
{
	kt_counter(id, value);
}
inline void counter(std::uint32_t id, double value) noexcept
{
	kt_counter_f64(id, value);
}

/* instant, frame - as kt_instant() and kt_frame(). */
inline void instant(std::uint32_t id) noexcept
{
	kt_instant(id);
}
inline void frame(std::uint32_t id, std::uint64_t frame_no) noexcept
{
	kt_frame(id, frame_no);
}

/* message - @text (any bytes, not NUL-terminated) as kt_message(), or
 * with a severity as kt_message_sev(). */
inline void message(std::uint32_t id, std::string_view text) noexcept
{
	kt_message(id, text.data(), text.size());
}
inline void message(std::uint32_t id, kt_severity sev, std::string_view text) noexcept
{
	kt_message_sev(id, sev, text.data(), text.size());
}

/* arg - argument @name_id of the innermost open zone (katra/args.h);
 * the overload is the type.  Name 0 is the zone's own value or text. */
inline void arg(std::uint32_t name_id, std::int64_t value) noexcept
{
	kt_arg_i64(name_id, value);
}
inline void arg(std::uint32_t name_id, std::uint64_t value) noexcept
{
	kt_arg_u64(name_id, value);
}
inline void arg(std::uint32_t name_id, double value) noexcept
{
	kt_arg_f64(name_id, value);
}
inline void arg(std::uint32_t name_id, std::string_view text) noexcept
{
	kt_arg_str(name_id, text.data(), text.size());
}

/* zone_text - the innermost open zone's text, as kt_zone_text(). */
inline void zone_text(std::string_view text) noexcept
{
	kt_zone_text(text.data(), text.size());
}

/* frame_begin, frame_end - a discontinuous frame, as kt_frame_begin(). */
inline void frame_begin(std::uint32_t id, std::uint64_t frame_no) noexcept
{
	kt_frame_begin(id, frame_no);
}
inline void frame_end(std::uint32_t id, std::uint64_t frame_no) noexcept
{
	kt_frame_end(id, frame_no);
}

/* alloc, free - memory events, as kt_alloc_pool() and kt_free_pool();
 * @pool_id 0 is the default pool. */
inline void alloc(const void *ptr, std::size_t size, std::uint32_t pool_id = 0) noexcept
{
	kt_alloc_pool(pool_id, ptr, size);
}
inline void free(const void *ptr, std::uint32_t pool_id = 0) noexcept
{
	kt_free_pool(pool_id, ptr);
}

/* category_enable - switch category @name on or off, as
 * kt_category_enable(); @name must be NUL-terminated. */
inline int category_enable(const char *name, bool on) noexcept
{
	return kt_category_enable(name, on);
}

/* A track with a clock of its own (katra/track.h): made by name and
 * clock rate (kt_track_create(); the slow path), then its zones and
 * counters at the track's times, from any thread.  A track that could not
 * be made (ok() false) records nothing. */
class track {
public:
	track(const char *name, std::uint64_t clock_hz) noexcept
		: id_(kt_track_create(name, clock_hz))
	{
	}
	bool ok() const noexcept { return id_ > 0; }
	std::uint32_t id() const noexcept { return ok() ? (std::uint32_t)id_ : 0; }
	/* calibrate - @track_ts and @ticks (kt_now()) are one instant; as
	 * kt_track_calibrate(), whose result it returns. */
	int calibrate(std::uint64_t track_ts, std::uint64_t ticks) const noexcept
	{
		return kt_track_calibrate(id(), track_ts, ticks);
	}
	void zone_begin(std::uint32_t name_id, std::uint64_t track_ts) const noexcept
	{
		if (ok())
			kt_track_zone_begin(id(), name_id, track_ts);
	}
	void zone_end(std::uint32_t name_id, std::uint64_t track_ts) const noexcept
	{
		if (ok())
			kt_track_zone_end(id(), name_id, track_ts);
	}
	void counter(std::uint32_t name_id, std::uint64_t track_ts, std::int64_t v) const noexcept
	{
		if (ok())
			kt_track_counter(id(), name_id, track_ts, v);
	}
	void counter(std::uint32_t name_id, std::uint64_t track_ts, double v) const noexcept
	{
		if (ok())
			kt_track_counter_f64(id(), name_id, track_ts, v);
	}

private:
	int id_;
};

} /* namespace katra */

#endif /* KATRA_KATRA_HPP */

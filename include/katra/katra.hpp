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

#include <cstdint>
#include <string_view>

#include <katra/katra.h>

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

/* message - @text (any bytes, not NUL-terminated) as kt_message(). */
inline void message(std::uint32_t id, std::string_view text) noexcept
{
	kt_message(id, text.data(), text.size());
}

} /* namespace katra */

#endif /* KATRA_KATRA_HPP */

/*
 * The fast path as a C++ translation unit sees it (katra.h compiled as
 * C++, through katra.hpp): check_fastpath.sh holds it to the same rule as
 * fastpath_probe.c - no call and no lock-prefixed instruction in the hot
 * part.  The probes keep C names so the script finds them.
 */
#include <katra/katra.hpp>

extern "C" void kt_probe_zone_begin(std::uint32_t id);
extern "C" void kt_probe_counter(std::uint32_t id, std::int64_t v);
extern "C" void kt_probe_site(void);
extern "C" void kt_probe_site_category(void);
extern "C" void kt_probe_arg(std::uint32_t id, std::int64_t v);
extern "C" void kt_probe_alloc(const void *p, std::size_t n);
extern "C" void kt_probe_frame_site(void);
extern "C" void kt_probe_counter_site(double v);
extern "C" void kt_probe_message_site(void);

extern "C" void kt_probe_zone_begin(std::uint32_t id)
{
	kt_zone_begin(id);
}

extern "C" void kt_probe_counter(std::uint32_t id, std::int64_t v)
{
	katra::counter(id, v);
}

/* Call sites through the C++ scope guards. */
extern "C" void kt_probe_site(void)
{
	KT_ZONE("probe");
}

extern "C" void kt_probe_site_category(void)
{
	KT_ZONE_C("probe_category", "probe");
}

extern "C" void kt_probe_arg(std::uint32_t id, std::int64_t v)
{
	kt_arg_i64(id, v);
}

extern "C" void kt_probe_alloc(const void *p, std::size_t n)
{
	katra::alloc(p, n);
}

/* The site macros through their C++ overloads. */
extern "C" void kt_probe_frame_site(void)
{
	KT_FRAME("probe frame");
}

extern "C" void kt_probe_counter_site(double v)
{
	KT_COUNTER("probe counter", v);
}

extern "C" void kt_probe_message_site(void)
{
	KT_MESSAGE("probe message", std::string_view{ "text" });
}

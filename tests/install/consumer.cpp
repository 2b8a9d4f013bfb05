/*
 * consumer.cpp - a C++ program built against an installed katra (katra.hpp
 * over katra.h), outside the katra tree: it traces a few zones, counters
 * and messages to a file in a session, reads the file back and checks
 * every event arrived, in order, with the scoped zones balanced - also
 * the one an exception ended.  It uses every call of the profiler API
 * (call sites, categories, arguments, severities, named frames) and
 * checks the trace holds their source locations.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <unistd.h>

#include <katra/katra.hpp>
#include <katra/reader.h>

namespace {

void work(std::uint32_t count_id, std::uint32_t log_id, int i)
{
	KT_ZONE("work");
	katra::counter(count_id, static_cast<std::int64_t>(i));
	katra::counter(count_id, i + 0.5);
	katra::message(log_id, std::string_view("step"));
}

void throws()
{
	KT_ZONE("throws");
	throw std::runtime_error("leaves the zone");
}

/* Every profiler API call once: 21 events. */
void api(std::uint32_t log_id, std::uint32_t load_id)
{
	KT_ZONE_C_AS(z, "render", "api");
	KT_ZONE_ARG_I64(z, "j", 4);
	kt_zone_value_i64(-1);
	kt_zone_value_u64(2);
	kt_zone_value_f64(0.5);
	katra::zone_text("text");
	KT_ARG_I64("i", 1);
	KT_ARG_U64("u", 2);
	KT_ARG_F64("f", 0.25);
	KT_ARG_STR("s", "x", 1);
	katra::arg(katra::name("n"), std::int64_t{3});
	katra::message(log_id, KT_SEV_WARN, "careful");
	katra::frame_begin(load_id, 1);
	katra::frame_end(load_id, 1);
	static char block[16];
	katra::alloc(block, sizeof(block), katra::name("pool"));
	katra::free(block, katra::name("pool"));
	katra::track gpu("gpu", 19200000);
	gpu.calibrate(1000, kt_now());
	gpu.zone_begin(katra::name("pass"), 1100);
	gpu.counter(katra::name("gpu bytes"), 1150, std::int64_t{4096});
	gpu.counter(katra::name("gpu load"), 1160, 0.5);
	gpu.zone_end(katra::name("pass"), 1200);
}

/* A category switched off: nothing, its zone's own arguments included. */
void off()
{
	KT_ZONE_C_AS(z, "physics", "off");
	KT_ZONE_ARG_STR(z, "lost", "x", 1);
	if (KT_ZONE_ON(z))
		kt_zone_value_i64(1);
}

int fail(const char *what)
{
	std::fprintf(stderr, "consumer.cpp: %s\n", what);
	return 1;
}

} // namespace

int main()
{
	std::string path = "/tmp/katra-consumer-cpp-" + std::to_string(getpid()) + ".katra";
	kt_session *s = nullptr;
	kt_session_options o{};
	if (kt_session_start(path.c_str(), &o, &s) != 0)
		return fail(kt_session_get_start_error());
	std::uint32_t count_id = katra::name("count"), log_id = katra::name("log");
	{
		katra::zone outer(katra::name("outer"));
		for (int i = 0; i < 10; i++)
			work(count_id, log_id, i);
		try {
			throws();
		} catch (const std::exception &) {
		}
		api(log_id, katra::name("load"));
		katra::category_enable("physics", false);
		off();
	}
	kt_summary sum{};
	if (kt_session_stop(s, &sum) != 0)
		return fail("kt_session_stop failed");
	/* outer (2) + 10 x (zone 2, counters 2, message 1) + throws (2) + api (21) */
	bool written = sum.events_written == 2 + 10 * 5 + 2 + 21 && sum.events_dropped == 0;
	kt_summary_release(&sum);
	if (!written)
		return fail("events_written is not 75");

	kt_reader *r = nullptr;
	kt_reader_error err{};
	if (kt_reader_open(path.c_str(), &err, &r) != 0)
		return fail(err.message);
	kt_trace_frame f;
	int locs = 0, tracks = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		locs += f.kind == KT_FRAME_SRCLOC && f.u.srcloc.line > 0 &&
			(std::strcmp(f.u.srcloc.function, "api") || f.u.srcloc.category);
		const kt_track_def *t = kt_trace_frame_get_track(&f);
		tracks += t && t->clock_hz == 19200000 && t->pair_count == 1;
	}
	kt_reader_rewind(r);
	kt_event ev;
	int depth = 0, max_depth = 0, n = 0, rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		n++;
		depth += ev.type == KT_EV_ZONE_BEGIN ? 1 : ev.type == KT_EV_ZONE_END ? -1 : 0;
		max_depth = depth > max_depth ? depth : max_depth;
	}
	kt_reader_close(r);
	std::remove(path.c_str());
	if (rc != 0 || n != 75 || depth != 0 || max_depth != 2)
		return fail("the trace read back is not the 75 balanced events traced");
	if (tracks != 1)
		return fail("the trace does not hold the gpu track and its pair");
	/* work, throws, api and off (interned on its first pass, its
	 * category off): the call sites' zones; outer is a plain guard. */
	if (locs != 4)
		return fail("the trace does not hold 4 source locations");
	std::printf("consumer.cpp (C++%ld): 75 events, 4 locations and a track traced and read back\n",
		    __cplusplus / 100 % 100);
	return 0;
}

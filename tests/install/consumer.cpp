/*
 * consumer.cpp - a C++ program built against an installed katra (katra.hpp
 * over katra.h), outside the katra tree: it traces a few zones, counters
 * and messages to a file in a session, reads the file back and checks
 * every event arrived, in order, with the scoped zones balanced - also
 * the one an exception ended.
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
		return fail(kt_session_start_error());
	std::uint32_t count_id = katra::name("count"), log_id = katra::name("log");
	{
		katra::zone outer(katra::name("outer"));
		for (int i = 0; i < 10; i++)
			work(count_id, log_id, i);
		try {
			throws();
		} catch (const std::exception &) {
		}
	}
	kt_summary sum{};
	if (kt_session_stop(s, &sum) != 0)
		return fail("kt_session_stop failed");
	/* outer (2) + 10 x (zone 2, counters 2, message 1) + throws (2) */
	bool written = sum.events_written == 2 + 10 * 5 + 2 && sum.events_dropped == 0;
	kt_summary_release(&sum);
	if (!written)
		return fail("events_written is not 54");

	kt_reader *r = nullptr;
	kt_reader_error err{};
	if (kt_reader_open(&r, path.c_str(), &err) != 0)
		return fail(err.message);
	kt_event ev;
	int depth = 0, max_depth = 0, n = 0, rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		n++;
		depth += ev.type == KT_EV_ZONE_BEGIN ? 1 : ev.type == KT_EV_ZONE_END ? -1 : 0;
		max_depth = depth > max_depth ? depth : max_depth;
	}
	kt_reader_close(r);
	std::remove(path.c_str());
	if (rc != 0 || n != 54 || depth != 0 || max_depth != 2)
		return fail("the trace read back is not the 54 balanced events traced");
	std::printf("consumer.cpp (C++%ld): 54 events traced and read back\n", __cplusplus / 100 % 100);
	return 0;
}

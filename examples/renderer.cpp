/*
 * renderer - a small software rasterizer traced by a flight recorder, the
 * shape of issue #25's user: a main thread runs the frame loop, two tile
 * threads rasterize the left and right halves of each frame, and when a
 * frame is slow the newest history of every thread goes to a file.
 *
 *   renderer [--frames N] [--hitch-at F] [--slow-ms MS] [--snapshot-at S]
 *            [--out PREFIX] [--record FILE] [--unpaced] [--no-session]
 *
 * Each frame: a frame mark and a "frame" zone on the main thread around
 * "raster" (the tiles' work, waited for); a "tile" zone per tile thread
 * with a "triangle" zone per triangle (its candidate pixels as argument
 * "pixels") and a "shade" zone per covered pixel in category "shading";
 * each tile's z-buffer allocated and freed in pool "zbuffers", the colour
 * buffer once in pool "framebuffers".  Frame F (default 80) also holds an
 * 80 ms "hitch" zone on the main thread.  Frames are paced to 16 ms.
 *
 * The session is a flight recorder with every option at its default.  A
 * frame over MS ms (default 50) takes a snapshot, PREFIX-F.katra (at most
 * 16 of them), as does frame S whatever its time (a machine too slow to
 * tell the hitch by time: under a sanitizer every frame is slow),
 * and prints one line for it and one per thread of it: each thread's own
 * window and what its ring lost before it, in trace ticks, as
 * kt_session_snapshot_threads() gives them:
 *
 *   snapshot PREFIX-F.katra frame F ms M events E threads T
 *   thread TID window START END events N overwritten O FIRST LAST trimmed R
 *
 * --record FILE records every event to FILE with a session of default
 * options in place of the flight recorder (no snapshots); --unpaced runs
 * the frames back to back, not every 16 ms.  Together, and with
 * --hitch-at -1, they measure what tracing costs the program: the build's
 * renderer_off is this file with tracing compiled out (KATRA_DISABLE),
 * and bench/RESULTS.md has the two timed side by side (issue #28).
 * --no-session starts no session of the program's own: under `katra
 * record` the session the environment starts records every event (its
 * options are katra record's: sampling with KT_SAMPLE_HZ, which a flight
 * session does not do), as it records a program with no session code.
 *
 * renderer_clock is renderer_off plus the two clock reads a timestamped
 * zone around each shaded pixel needs, and nothing else (RENDERER_CLOCK):
 * what any tracer that reads the clock per event costs this program, the
 * bound under the traced build's cost (bench/renderer_rows.sh).
 *
 * Only katra's public API is used; with tracing compiled out the session
 * part goes too (the #ifndef KATRA_DISABLE below).
 */
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <katra/katra.hpp>
#ifdef RENDERER_CLOCK
#include <x86intrin.h>
#endif

namespace {

using clk = std::chrono::steady_clock;
constexpr int kW = 256, kH = 192, kTris = 400;

struct vec {
	float x, y, z;
};
struct tri {
	vec a, b, c;
	std::uint32_t colour;
};

/* A deterministic scene: triangles scattered over the screen, moving a
 * little each frame. */
std::vector<tri> scene(long frame)
{
	std::vector<tri> t(kTris);
	std::uint32_t s = 12345;
	auto rnd = [&s](float lo, float hi) {
		s = s * 1664525u + 1013904223u;
		return lo + (hi - lo) * (float)(s >> 8) / (float)(1u << 24);
	};
	for (auto &x : t) {
		float cx = rnd(0, kW) + (float)(frame % 32), cy = rnd(0, kH), r = rnd(6, 24);
		x.a = { cx, cy - r, rnd(0, 1) };
		x.b = { cx + r, cy + r, rnd(0, 1) };
		x.c = { cx - r, cy + r, rnd(0, 1) };
		x.colour = s;
	}
	return t;
}

float edge(const vec &a, const vec &b, float x, float y)
{
	return (b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x);
}

#ifdef RENDERER_CLOCK
/* A zone's two clock reads, as katra's emit makes them (rdtsc, not
 * serialised), kept live through a thread's sum so neither is dropped. */
thread_local std::uint64_t clock_sum;
struct clock_pair {
	std::uint64_t t0 = __rdtsc();
	~clock_pair() { clock_sum += __rdtsc() - t0; }
};
#endif

/* Shade one pixel: a little arithmetic, in its own zone (the per-pixel
 * work the user traced, which fills a ring in milliseconds). */
std::uint32_t shade(std::uint32_t colour, float w0, float w1)
{
	KT_ZONE_C("shading", "shade");
#ifdef RENDERER_CLOCK
	clock_pair zone;
#endif
	float l = 0.5f + 0.5f * w0 * w1;
	return colour ^ (std::uint32_t)(l * 255.0f);
}

/* Rasterize @t into columns [x0, x1) of @fb with its z-buffer @zb. */
void triangle(const tri &t, int x0, int x1, std::uint32_t *fb, float *zb)
{
	int bx0 = std::max(x0, (int)std::min({ t.a.x, t.b.x, t.c.x }));
	int bx1 = std::min(x1, (int)std::max({ t.a.x, t.b.x, t.c.x }) + 1);
	int by0 = std::max(0, (int)std::min({ t.a.y, t.b.y, t.c.y }));
	int by1 = std::min(kH, (int)std::max({ t.a.y, t.b.y, t.c.y }) + 1);
	if (bx0 >= bx1 || by0 >= by1)
		return;
	KT_ZONE_AS(z, "triangle");
	KT_ZONE_ARG_I64(z, "pixels", (std::int64_t)(bx1 - bx0) * (by1 - by0));
	float area = edge(t.a, t.b, t.c.x, t.c.y);
	for (int y = by0; y < by1; y++)
		for (int x = bx0; x < bx1; x++) {
			float w0 = edge(t.b, t.c, (float)x, (float)y) / area;
			float w1 = edge(t.c, t.a, (float)x, (float)y) / area;
			float w2 = 1 - w0 - w1;
			float d = w0 * t.a.z + w1 * t.b.z + w2 * t.c.z;
			if (w0 < 0 || w1 < 0 || w2 < 0 || d >= zb[y * kW + x])
				continue;
			zb[y * kW + x] = d;
			fb[y * kW + x] = shade(t.colour, w0, w1);
		}
}

/* Two tile threads, each rendering its half of every frame it is given. */
class tiles {
public:
	tiles(std::uint32_t *fb) : fb_(fb)
	{
		for (int i = 0; i < 2; i++)
			t_[i] = std::thread([this, i] { run(i); });
	}
	~tiles()
	{
		{
			std::lock_guard<std::mutex> g(m_);
			quit_ = true;
		}
		cv_.notify_all();
		for (auto &t : t_)
			t.join();
	}
	void start(const std::vector<tri> *tris)
	{
		std::lock_guard<std::mutex> g(m_);
		tris_ = tris;
		gen_++;
		left_ = 2;
		cv_.notify_all();
	}
	void wait()
	{
		std::unique_lock<std::mutex> g(m_);
		done_.wait(g, [this] { return left_ == 0; });
	}

private:
	void run(int i)
	{
		kt_thread_name(i ? "tile right" : "tile left");
		std::uint32_t zpool = katra::name("zbuffers");
		std::uint64_t seen = 0;
		for (;;) {
			std::unique_lock<std::mutex> g(m_);
			cv_.wait(g, [&] { return quit_ || gen_ != seen; });
			if (quit_)
				return;
			seen = gen_;
			const std::vector<tri> *tris = tris_;
			g.unlock();
			{
				KT_ZONE("tile");
				std::vector<float> zb(kW * kH, 1.0f);
				katra::alloc(zb.data(), zb.size() * sizeof(float), zpool);
				for (const tri &t : *tris)
					triangle(t, i * kW / 2, (i + 1) * kW / 2, fb_, zb.data());
				katra::free(zb.data(), zpool);
			}
			g.lock();
			if (--left_ == 0)
				done_.notify_all();
		}
	}
	std::uint32_t *fb_;
	std::thread t_[2];
	std::mutex m_;
	std::condition_variable cv_, done_;
	const std::vector<tri> *tris_ = nullptr;
	std::uint64_t gen_ = 0;
	int left_ = 0;
	bool quit_ = false;
};

struct options {
	long frames = 100, hitch_at = 80, slow_ms = 50, snapshot_at = -1;
	std::string out = "renderer", record;
	bool unpaced = false, no_session = false;
};

#ifndef KATRA_DISABLE
/* A slow frame's snapshot: the file, then each thread's window and loss. */
void snapshot(kt_session *s, const options &o, long frame, double ms)
{
	std::string path = o.out + "-" + std::to_string(frame) + ".katra";
	kt_snapshot_result r;
	kt_snapshot_thread rows[16];
	int rc = kt_session_snapshot_threads(s, path.c_str(), -1, 0, 0, &r, rows, 16);
	if (rc) {
		std::fprintf(stderr, "renderer: snapshot %s: %s\n", path.c_str(), kt_strerror(rc));
		return;
	}
	std::printf("snapshot %s frame %ld ms %.1f events %" PRIu64 " threads %u\n", path.c_str(),
		    frame, ms, r.events, r.thread_count);
	for (std::uint32_t i = 0; i < r.thread_rows; i++)
		std::printf("thread %u window %" PRIu64 " %" PRIu64 " events %" PRIu64
			    " overwritten %" PRIu64 " %" PRIu64 " %" PRIu64 " trimmed %" PRIu64 "\n",
			    rows[i].thread_id, rows[i].window_start, rows[i].window_end,
			    rows[i].events, rows[i].overwritten, rows[i].overwritten_first,
			    rows[i].overwritten_last, rows[i].trimmed);
	std::fflush(stdout);
}
#endif

/* The frame loop; @slow is called with each frame over o.slow_ms and
 * with frame o.snapshot_at. */
template <class F> void frames(const options &o, F slow)
{
	std::vector<std::uint32_t> fb(kW * kH);
	std::uint32_t fpool = katra::name("framebuffers"), frame_id = katra::name("frame");
	katra::alloc(fb.data(), fb.size() * sizeof(std::uint32_t), fpool);
	tiles workers(fb.data());
	auto next = clk::now();
	for (long f = 0; f < o.frames; f++) {
		auto t0 = clk::now();
		std::vector<tri> tris = scene(f);
		{
			KT_ZONE("frame");
			workers.start(&tris);
			if (f == o.hitch_at) {
				KT_ZONE("hitch"); /* a blocking load, say */
				std::this_thread::sleep_for(std::chrono::milliseconds(80));
			}
			KT_ZONE("raster");
			workers.wait();
		}
		katra::frame(frame_id, (std::uint64_t)f);
		double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
		if (ms > (double)o.slow_ms || f == o.snapshot_at)
			slow(f, ms);
		next += std::chrono::milliseconds(16);
		if (!o.unpaced)
			std::this_thread::sleep_until(next);
	}
	katra::free(fb.data(), fpool);
}

int parse(int argc, char **argv, options &o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--unpaced" || a == "--no-session") {
			(a == "--unpaced" ? o.unpaced : o.no_session) = true;
			continue;
		}
		if (i + 1 == argc)
			return 1;
		const char *v = argv[++i];
		if (a == "--out")
			o.out = v;
		else if (a == "--record")
			o.record = v;
		else if (a == "--frames")
			o.frames = std::atol(v);
		else if (a == "--hitch-at")
			o.hitch_at = std::atol(v);
		else if (a == "--slow-ms")
			o.slow_ms = std::atol(v);
		else if (a == "--snapshot-at")
			o.snapshot_at = std::atol(v);
		else
			return 1;
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	options o;
	if (parse(argc, argv, o)) {
		std::fprintf(stderr, "usage: renderer [--frames N] [--hitch-at F] [--slow-ms MS] "
				     "[--snapshot-at S] [--out PREFIX] [--record FILE] [--unpaced] "
				     "[--no-session]\n");
		return 2;
	}
	kt_thread_name("main");
#ifndef KATRA_DISABLE
	if (o.no_session) { /* katra record's session, if any */
		frames(o, [](long, double) {});
		return 0;
	}
	kt_session_options so{};
	so.mode = o.record.empty() ? KT_SESSION_FLIGHT : KT_SESSION_NORMAL;
	kt_session *s = nullptr;
	if (kt_session_start(o.record.empty() ? nullptr : o.record.c_str(), &so, &s) != 0) {
		std::fprintf(stderr, "renderer: %s\n", kt_session_get_start_error());
		return 1;
	}
	int taken = 0;
	frames(o, [&](long f, double ms) {
		if (o.record.empty() && taken++ < 16)
			snapshot(s, o, f, ms);
	});
	return kt_session_stop(s, nullptr) ? 1 : 0;
#else
	frames(o, [](long, double) {});
	return 0;
#endif
}

/*
 * particles - a headless particle renderer traced with katra, shaped like
 * the programs katra is for: a main thread runs the frame loop, a pool of
 * workers integrates the particles in jobs, a render thread rasterizes
 * each frame into a small framebuffer while the next one is simulated.
 *
 *   particles [--frames N] [--out FILE] [--physics-off-from F]
 *
 * Every frame records: a frame mark; on the main thread a "loop" zone
 * around an "update" and a "present" zone; JOBS "integrate" zones
 * (category "physics") on the workers, each with its first particle and
 * count as arguments; a "raster" zone (category "render", around "clear"
 * and "plot") with the lit pixels as its value, and its framebuffer
 * allocated and freed in pool "framebuffers".  From frame F on, the
 * physics category is switched off at run time: the jobs
 * still run, untraced.  Frame times and lit pixels go out as counters.
 * The render thread also drives a simulated GPU queue with a clock of its
 * own (a 19.2 MHz counter with an offset): each frame's "gpu frame" zone
 * around "shadow", "opaque" and "post" passes goes onto track "gpu" once
 * the frame's timestamp queries come back, a frame or more late, in
 * batches, with the frame's number as counter "gpu frame no" at its start.
 * The run is deterministic in what it records (not in its timings), which
 * tests/test_example.c checks.
 */
#include <algorithm>
#include <chrono>
#include <deque>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <katra/katra.hpp>

namespace {

constexpr int kParticles = 20000;
constexpr int kJobs = 8;
constexpr int kWidth = 160, kHeight = 90;

struct particle {
	float x, y, vx, vy;
};

/* A fixed pool of workers that run one frame's jobs and wait for the
 * next; the main thread waits until every job of the frame is done. */
class pool {
public:
	explicit pool(int n)
	{
		for (int i = 0; i < n; i++)
			threads_.emplace_back([this, i] { run(i); });
	}
	~pool()
	{
		{
			std::lock_guard<std::mutex> g(m_);
			quit_ = true;
		}
		cv_.notify_all();
		for (auto &t : threads_)
			t.join();
	}
	/* Run integrate(job) for every job of one frame, on the workers. */
	template <class F> void frame(F integrate)
	{
		std::unique_lock<std::mutex> g(m_);
		work_ = integrate;
		next_ = 0;
		done_ = 0;
		gen_++;
		cv_.notify_all();
		done_cv_.wait(g, [this] { return done_ == kJobs; });
	}

private:
	void run(int i)
	{
		std::string name = "worker " + std::to_string(i);
		kt_thread_name(name.c_str());
		unsigned seen = 0;
		std::unique_lock<std::mutex> g(m_);
		for (;;) {
			cv_.wait(g, [&] { return quit_ || gen_ != seen; });
			if (quit_)
				return;
			seen = gen_;
			while (next_ < kJobs) {
				int job = next_++;
				g.unlock();
				work_(job);
				g.lock();
				if (++done_ == kJobs)
					done_cv_.notify_one();
			}
		}
	}
	std::vector<std::thread> threads_;
	std::mutex m_;
	std::condition_variable cv_, done_cv_;
	std::function<void(int)> work_;
	int next_ = 0, done_ = 0;
	unsigned gen_ = 0;
	bool quit_ = false;
};

void integrate(std::vector<particle> &ps, int job)
{
	KT_ZONE_C_AS(zone, "physics", "integrate");
	int per = kParticles / kJobs, first = job * per;
	/* The zone's own: with physics off they go with it. */
	KT_ZONE_ARG_I64(zone, "first", first);
	KT_ZONE_ARG_I64(zone, "count", per);
	for (int i = first; i < first + per; i++) {
		particle &p = ps[i];
		p.vy += 0.01f;
		p.x += p.vx;
		p.y += p.vy;
		if (p.x < 0 || p.x >= kWidth)
			p.vx = -p.vx, p.x = std::clamp(p.x, 0.0f, kWidth - 1.0f);
		if (p.y < 0 || p.y >= kHeight)
			p.vy = -p.vy * 0.9f, p.y = std::clamp(p.y, 0.0f, kHeight - 1.0f);
	}
}

/* The frame's particles into a framebuffer of its own, allocated in pool
 * @pool_id and freed before the next frame; the count of lit pixels. */
int raster(const std::vector<particle> &ps, std::uint32_t pool_id)
{
	KT_ZONE_C("render", "raster");
	std::vector<unsigned char> fb(kWidth * kHeight);
	katra::alloc(fb.data(), fb.size(), pool_id);
	{
		KT_ZONE("clear");
		std::fill(fb.begin(), fb.end(), 0);
	}
	{
		KT_ZONE("plot");
		for (const particle &p : ps)
			fb[(size_t)p.y * kWidth + (size_t)p.x] = 255;
	}
	int lit = (int)std::count(fb.begin(), fb.end(), 255);
	kt_zone_value_i64(lit);
	katra::free(fb.data(), pool_id);
	return lit;
}

/*
 * A GPU queue, simulated (this machine has none): its clock is a 19.2 MHz
 * counter that started at kGpuOffset; a frame's passes run back to back
 * from kLatency after their submission (or after the previous frame's),
 * and their timestamp queries can be read kReadback after the last pass
 * ends.  Results are polled once a frame and emitted in a batch, as a
 * renderer reads its query pool.
 */
class gpu_queue {
public:
	static constexpr std::uint64_t kHz = 19200000, kGpuOffset = 123456789;
	static constexpr std::uint64_t kLatency = 384, kReadback = 192; /* 20 us, 10 us */
	static constexpr std::uint64_t kPass[3] = { 1920, 3840, 960 }; /* 100, 200, 50 us */

	gpu_queue() : t0_(std::chrono::steady_clock::now()), track_("gpu", kHz)
	{
		frame_id_ = katra::name("gpu frame");
		frame_no_id_ = katra::name("gpu frame no");
		const char *names[3] = { "shadow", "opaque", "post" };
		for (int i = 0; i < 3; i++)
			pass_id_[i] = katra::name(names[i]);
		calibrate();
	}
	/* The GPU's clock now. */
	std::uint64_t now() const
	{
		auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
			std::chrono::steady_clock::now() - t0_).count();
		return kGpuOffset + (std::uint64_t)ns * kHz / 1000000000u;
	}
	/* One instant on both clocks: how a reader puts the track on katra's. */
	void calibrate() { track_.calibrate(now(), kt_now()); }
	void submit(std::uint64_t frame)
	{
		job j{ frame, {} };
		j.ts[0] = std::max(now() + kLatency, busy_until_);
		for (int i = 0; i < 3; i++)
			j.ts[i + 1] = j.ts[i] + kPass[i];
		busy_until_ = j.ts[3];
		pending_.push_back(j);
		if (frame % 16 == 15)
			calibrate();
	}
	/* Emit the frames whose queries are back; with @wait, all of them. */
	void collect(bool wait)
	{
		while (!pending_.empty()) {
			const job &j = pending_.front();
			while (wait && now() < j.ts[3] + kReadback)
				std::this_thread::yield();
			if (now() < j.ts[3] + kReadback)
				return;
			track_.counter(frame_no_id_, j.ts[0], (std::int64_t)j.frame);
			track_.zone_begin(frame_id_, j.ts[0]);
			for (int i = 0; i < 3; i++) {
				track_.zone_begin(pass_id_[i], j.ts[i]);
				track_.zone_end(pass_id_[i], j.ts[i + 1]);
			}
			track_.zone_end(frame_id_, j.ts[3]);
			pending_.pop_front();
		}
	}

private:
	struct job {
		std::uint64_t frame, ts[4]; /* pass i runs from ts[i] to ts[i + 1] */
	};
	std::chrono::steady_clock::time_point t0_;
	katra::track track_;
	std::uint32_t frame_id_, frame_no_id_, pass_id_[3];
	std::uint64_t busy_until_ = 0;
	std::deque<job> pending_;
};

/* The render thread: takes one frame's particles at a time. */
class renderer {
public:
	renderer() : t_([this] { run(); }) {}
	~renderer()
	{
		{
			std::lock_guard<std::mutex> g(m_);
			quit_ = true;
		}
		cv_.notify_all();
		t_.join();
	}
	/* Hand over a frame, once the previous one is drawn. */
	void submit(const std::vector<particle> &ps)
	{
		KT_ZONE("present");
		std::unique_lock<std::mutex> g(m_);
		cv_.wait(g, [this] { return !busy_; });
		frame_ = ps;
		busy_ = true;
		cv_.notify_all();
	}
	void finish()
	{
		std::unique_lock<std::mutex> g(m_);
		cv_.wait(g, [this] { return !busy_; });
	}

private:
	void run()
	{
		kt_thread_name("render");
		std::uint32_t lit_id = katra::name("lit pixels");
		std::uint32_t pool_id = katra::name("framebuffers");
		gpu_queue gpu;
		std::uint64_t frame = 0;
		std::unique_lock<std::mutex> g(m_);
		for (;;) {
			cv_.wait(g, [this] { return quit_ || busy_; });
			if (!busy_) {
				gpu.collect(true);
				return;
			}
			g.unlock();
			katra::counter(lit_id, std::int64_t{ raster(frame_, pool_id) });
			gpu.submit(frame++);
			gpu.collect(false);
			g.lock();
			busy_ = false;
			cv_.notify_all();
		}
	}
	std::vector<particle> frame_;
	std::mutex m_;
	std::condition_variable cv_;
	bool busy_ = false, quit_ = false;
	std::thread t_;
};

struct options {
	long frames = 300;
	long physics_off_from = -1;
	const char *out = "particles.katra";
};

int usage(const char *why)
{
	std::fprintf(stderr, "particles: %s\n"
			     "usage: particles [--frames N] [--out FILE] [--physics-off-from F]\n",
		     why);
	return 2;
}

/* Return: -1 to run, else the exit status. */
int parse(int argc, char **argv, options &o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "-h" || a == "--help") {
			std::printf("usage: particles [--frames N] [--out FILE] [--physics-off-from F]\n"
				    "Renders N frames (default 300) of %d particles headless,\n"
				    "traced into FILE (default particles.katra); from frame F on,\n"
				    "the \"physics\" category is switched off.\n",
				    kParticles);
			return 0;
		}
		if (i + 1 == argc)
			return usage(("missing value after " + a).c_str());
		char *end;
		const char *v = argv[++i];
		if (a == "--out") {
			o.out = v;
			continue;
		}
		long n = std::strtol(v, &end, 10);
		if (*end || n < 0)
			return usage(("not a count: " + std::string(v)).c_str());
		if (a == "--frames")
			o.frames = n;
		else if (a == "--physics-off-from")
			o.physics_off_from = n;
		else
			return usage(("unknown option " + a).c_str());
	}
	return -1;
}

void frames(const options &o)
{
	std::vector<particle> ps(kParticles);
	for (int i = 0; i < kParticles; i++)
		ps[i] = { (float)(i % kWidth), (float)(i % kHeight), (i % 7 - 3) * 0.1f, 0 };
	pool workers(2);
	renderer render;
	auto last = std::chrono::steady_clock::now();
	for (long f = 0; f < o.frames; f++) {
		KT_ZONE("loop");
		if (f == o.physics_off_from)
			katra::category_enable("physics", false);
		{
			KT_ZONE("update");
			workers.frame([&ps](int job) { integrate(ps, job); });
		}
		render.submit(ps);
		KT_FRAME("frame"); /* numbered 0, 1, 2, ...: f */
		auto now = std::chrono::steady_clock::now();
		std::chrono::duration<double, std::milli> ms = now - last;
		KT_COUNTER("frame ms", ms.count()); /* a double: an f64 counter */
		last = now;
	}
	render.finish();
}

} // namespace

int main(int argc, char **argv)
{
	options o;
	int rc = parse(argc, argv, o);
	if (rc >= 0)
		return rc;
	kt_thread_name("main");
	kt_session *s = nullptr;
	kt_session_options so{};
	if (kt_session_start(o.out, &so, &s) != 0) {
		std::fprintf(stderr, "particles: %s: %s\n", o.out, kt_session_get_start_error());
		return 1;
	}
	frames(o);
	kt_summary sum;
	rc = kt_session_stop(s, &sum);
	if (rc == 0)
		std::printf("particles: %ld frames, %llu events, %llu dropped, in %s\n", o.frames,
			    (unsigned long long)sum.events_written, (unsigned long long)sum.events_dropped,
			    o.out);
	else
		std::fprintf(stderr, "particles: stopping the session failed (%d)\n", rc);
	kt_summary_release(&sum);
	return rc == 0 ? 0 : 1;
}

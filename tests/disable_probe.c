/*
 * disable_probe.c - every emit, macro and call of katra.h, zone.h,
 * args.h, mem.h and track.h, used as a program would.  Built by
 * tests/disable_check.sh with KATRA_DISABLE, as C and as C++, under
 * -Wall -Wextra -Werror: it must compile with no warning, reference no
 * kt_ symbol and link without libkatra; run, it checks what the calls
 * return compiled out (katra/disable.h).  Built without KATRA_DISABLE it
 * is an ordinary traced program (a session in /tmp), so the same code is
 * known to be the real API's.
 */
#include <stdio.h>
#include <string.h>
#include <katra/katra.h>
#include <katra/track.h>

static int failures;

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "disable_probe: %s:%d: %s\n", __FILE__,      \
				__LINE__, #cond);                                   \
			failures++;                                                 \
		}                                                                   \
	} while (0)

static void work(uint32_t counter, int n)
{
	KT_ZONE("work");
	KT_ZONE_C_AS(z, "physics", "step");
	KT_ZONE_ARG_I64(z, "n", n);
	KT_ZONE_ARG_STR(z, "what", "x", 1);
	KT_ARG_U64("u", (uint64_t)n);
	KT_ARG_F64("f", n * 0.5);
	kt_zone_value_i64(n);
	kt_zone_text("text", 4);
	kt_counter(counter, n);
	kt_counter_f64(counter, n * 0.25);
	KT_COUNTER("c_i64", n);
	KT_COUNTER("c_f64", n * 0.5);
	KT_MESSAGE("log", "text");
	KT_MESSAGE("log", "text", 2);
	KT_FRAME("site frame");
}

int main(void)
{
	kt_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	CHECK(kt_init(&cfg) == 0);
	CHECK(kt_thread_name("main") == 0);
	uint32_t id = kt_name("frame"), pool = kt_name("pool");
	kt_session *s;
	kt_session_options o;
	memset(&o, 0, sizeof(o));
	int rc = kt_session_start("/tmp/katra-disable-probe.katra", &o, &s);
#ifdef KATRA_DISABLE
	CHECK(id == 0 && pool == 0);
	CHECK(rc == -ENOSYS && s == NULL);
	CHECK(!strcmp(kt_session_get_start_error(), "tracing compiled out (KATRA_DISABLE)"));
	CHECK(kt_category_get_enabled("physics") == 0 && *kt_category("physics") == 0);
	CHECK(kt_now() == 0 && kt_version() == KT_VERSION_NUMBER);
#else
	CHECK(id != 0 && rc == 0);
#endif
	if (rc)
		fprintf(stderr, "not traced: %s (%s)\n", kt_strerror(rc), kt_err_name(rc));
	CHECK(kt_category_enable("physics", 1) == 0);
	static char buf[64];
	for (int i = 0; i < 3; i++) {
		work(id, i);
		kt_instant(id);
		kt_frame(id, (uint64_t)i);
		kt_frame_begin(id, (uint64_t)i);
		kt_frame_end(id, (uint64_t)i);
		kt_flow(id, 7, KT_FLOW_BEGIN);
		kt_message(id, "hello", 5);
		kt_message_sev(id, KT_SEV_WARN, "careful", 7);
		kt_emit(KT_EV_USER, id, 0, buf, 8);
		kt_alloc(buf, sizeof(buf));
		kt_free(buf);
		kt_alloc_pool(pool, buf, 8);
		kt_free_pool(pool, buf);
	}
	int track = kt_track_create("gpu", 1000000000);
	uint32_t t = track > 0 ? (uint32_t)track : 0;
	kt_track_calibrate(t, 10, kt_now());
	kt_track_zone_begin(t, id, 11);
	kt_track_zone_end(t, id, 12);
	kt_track_counter(t, id, 13, 5);
	kt_track_counter_f64(t, id, 14, 0.5);
	kt_snapshot_result res;
	kt_snapshot_thread rows[2];
	int snap = kt_session_snapshot(s, NULL, 1, 0, 0, &res);
	snap |= kt_session_snapshot_threads(s, NULL, 1, 0, 0, &res, rows, 2);
	kt_summary sum;
	int stop = rc ? kt_session_stop(NULL, &sum) : kt_session_stop(s, &sum);
	printf("events %llu, snapshot %d, stop %d, %s %s\n",
	       (unsigned long long)sum.events_written, snap, stop, kt_version_string(),
	       kt_overflow_name(0));
#ifdef KATRA_DISABLE
	CHECK(track == 0 && snap == KT_ENOSESSION && stop == KT_ENOSESSION);
	CHECK(sum.events_written == 0 && res.events == 0);
#else
	CHECK(stop == 0 && sum.events_written > 0);
	remove("/tmp/katra-disable-probe.katra");
#endif
	kt_summary_release(&sum);
	CHECK(kt_shutdown() == 0);
	return failures != 0;
}

/*
 * consumer.c - a program built against an installed katra, outside the
 * katra tree, to prove the installed headers, libraries, katra.pc and CMake
 * package are complete.  The profiler API's C macros compile and link
 * here too (no session: they record nothing).
 */
#include <stdio.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/track.h>

static void frame(int n)
{
	KT_ZONE_C("render", "frame");
	KT_ARG_I64("n", n);
	kt_zone_text("c", 1);
	kt_message_sev(kt_name("log"), KT_SEV_INFO, "ok", 2);
	kt_alloc(&n, sizeof(n));
	kt_free_pool(kt_name("pool"), &n);
	int gpu = kt_track_create("gpu", 1000000000);
	if (gpu > 0) {
		kt_track_calibrate((uint32_t)gpu, 10, kt_now());
		kt_track_zone_begin((uint32_t)gpu, kt_name("pass"), 20);
		kt_track_zone_end((uint32_t)gpu, kt_name("pass"), 30);
	}
}

int main(void)
{
	frame(1);
	if (kt_category_enable("render", 0) || kt_category_get_enabled("render") != 0) {
		fprintf(stderr, "kt_category_enable did not switch render off\n");
		return 1;
	}
	printf("katra %s (header %s)\n", kt_version_string(), KT_VERSION_STRING);
	printf("KT_ECHECKSUM: %s\n", kt_strerror(KT_ECHECKSUM));
	if (kt_version() != KT_VERSION_NUMBER) {
		fprintf(stderr, "library version %u != header version %u\n",
			kt_version(), (unsigned)KT_VERSION_NUMBER);
		return 1;
	}
	return 0;
}

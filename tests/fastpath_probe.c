/*
 * Compiled with the project's flags and disassembled by check_fastpath.sh:
 * the hot part of each probe must hold no call and no lock-prefixed
 * instruction.  Out-of-line work lives in the compiler's ".cold" part.
 */
#include <katra/katra.h>

void kt_probe_zone_begin(uint32_t id);
void kt_probe_counter(uint32_t id, int64_t v);
void kt_probe_site(void);
void kt_probe_site_category(void);
void kt_probe_arg(uint32_t id, int64_t v);
void kt_probe_alloc(const void *p, size_t n);
void kt_probe_frame_site(void);
void kt_probe_counter_site(double v);
void kt_probe_message_site(void);

void kt_probe_zone_begin(uint32_t id)
{
	kt_zone_begin(id);
}

void kt_probe_counter(uint32_t id, int64_t v)
{
	kt_counter(id, v);
}

/* A call site once its id is cached: the same path as kt_probe_zone_begin,
 * begin and end, with the site's first pass in the cold part. */
void kt_probe_site(void)
{
	KT_ZONE("probe");
}

/* A site in a category: the flag check adds two loads and a branch. */
void kt_probe_site_category(void)
{
	KT_ZONE_C("probe_category", "probe");
}

/* A zone argument: a counter's path with its own type. */
void kt_probe_arg(uint32_t id, int64_t v)
{
	kt_arg_i64(id, v);
}

/* An allocation: a counter's path with a 16-byte payload. */
void kt_probe_alloc(const void *p, size_t n)
{
	kt_alloc(p, n);
}

/* The site macros once their name is cached: a frame mark (its number a
 * load and a store), a counter and a message, their first pass cold. */
void kt_probe_frame_site(void)
{
	KT_FRAME("probe frame");
}

void kt_probe_counter_site(double v)
{
	KT_COUNTER("probe counter", v);
}

void kt_probe_message_site(void)
{
	KT_MESSAGE("probe message", "text");
}

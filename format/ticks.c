/*
 * Ticks to CLOCK_MONOTONIC nanoseconds (SPEC §2.1): through the header's
 * calibration point, or the line through it and the summary's.
 */
#include <katra/reader.h>
#include "format/reader_internal.h"

void kt__conv_init(struct kt__conv *cv, const kt_clock_calibration *c, const kt_file_summary *stop)
{
	cv->t0 = c->ticks;
	cv->ns0 = c->mono_ns;
	cv->num = 1000000000u;
	cv->den = c->tick_hz ? c->tick_hz : 1;
	if (stop && stop->clock_ticks1 > c->ticks && stop->clock_ns1 >= c->mono_ns) {
		cv->num = stop->clock_ns1 - c->mono_ns;
		cv->den = stop->clock_ticks1 - c->ticks;
	}
	cv->whole = cv->num / cv->den;
	cv->frac = cv->num % cv->den;
	cv->fast = cv->den < (UINT64_C(1) << 63);
	cv->recip = (uint64_t)(((unsigned __int128)cv->frac << 64) / cv->den);
}

uint64_t kt_ticks_to_ns(const kt_clock_calibration *c, const kt_file_summary *stop,
			uint64_t ticks)
{
	struct kt__conv cv;
	kt__conv_init(&cv, c, stop);
	return kt__conv_apply(&cv, ticks);
}

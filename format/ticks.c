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
	cv->ratio = (double)cv->num / (double)cv->den;
}

/*
 * floor(dt * num / den), exactly, without a 128-bit division in the common
 * case: a double-precision estimate, then integer corrections (products
 * only), which settle in a step or two; far off, the division after all.
 * Saturates at UINT64_MAX.
 */
static uint64_t conv_scale(const struct kt__conv *cv, uint64_t dt)
{
	unsigned __int128 x = (unsigned __int128)dt * cv->num;
	if ((uint64_t)(x >> 64) >= cv->den)
		return UINT64_MAX;
	double est = (double)dt * cv->ratio;
	uint64_t q = est >= 18446744073709549568.0 ? UINT64_MAX - 1 : (uint64_t)est;
	unsigned __int128 qd = (unsigned __int128)q * cv->den;
	for (int i = 0; i < 4; i++) {
		if (qd > x) {
			q--;
			qd -= cv->den;
		} else if (x - qd >= cv->den) {
			q++;
			qd += cv->den;
		} else {
			return q;
		}
	}
	return (uint64_t)(x / cv->den);
}

uint64_t kt__conv_apply(const struct kt__conv *cv, uint64_t ticks)
{
	if (ticks >= cv->t0) {
		uint64_t add = conv_scale(cv, ticks - cv->t0);
		return add > UINT64_MAX - cv->ns0 ? UINT64_MAX : cv->ns0 + add;
	}
	/* Before the calibration point: rare, so the plain way, truncating
	 * toward zero as C division does. */
	unsigned __int128 back = (unsigned __int128)(cv->t0 - ticks) * cv->num / cv->den;
	return back >= cv->ns0 ? 0 : cv->ns0 - (uint64_t)back;
}

uint64_t kt_ticks_to_ns(const kt_clock_calibration *c, const kt_file_summary *stop,
			uint64_t ticks)
{
	struct kt__conv cv;
	kt__conv_init(&cv, c, stop);
	return kt__conv_apply(&cv, ticks);
}

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

/*
 * floor(dt * num / den), saturating at UINT64_MAX, exactly and without a
 * division: every event of every reader comes through here, and a 128-bit
 * division (or a double estimate and its corrections) was a third of the
 * merged read's time.  num / den = whole + frac / den; the reciprocal
 * recip = floor(frac * 2^64 / den) falls short of frac * 2^64 / den by
 * under 1, so dt * recip / 2^64 falls short of dt * frac / den by under
 * dt / 2^64 < 1: its integer part q is floor(dt * frac / den) or one
 * less.  The remainder dt * frac - q * den then lies in [0, 2 den), which
 * the low 64 bits hold exactly when den < 2^63, and says which.
 */
static uint64_t conv_scale(const struct kt__conv *cv, uint64_t dt)
{
	if (__builtin_expect(!cv->fast, 0)) {
		unsigned __int128 x = (unsigned __int128)dt * cv->num;
		return (uint64_t)(x >> 64) >= cv->den ? UINT64_MAX : (uint64_t)(x / cv->den);
	}
	uint64_t q = (uint64_t)(((unsigned __int128)dt * cv->recip) >> 64), w;
	if (dt * cv->frac - q * cv->den >= cv->den)
		q++;
	if (__builtin_mul_overflow(dt, cv->whole, &w) || __builtin_add_overflow(w, q, &w))
		return UINT64_MAX;
	return w;
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

/*
 * Compiled with the project's flags and disassembled by check_fastpath.sh:
 * the hot part of each probe must hold no call and no lock-prefixed
 * instruction.  Out-of-line work lives in the compiler's ".cold" part.
 */
#include <katra/katra.h>

void kt_probe_zone_begin(uint32_t id);
void kt_probe_counter(uint32_t id, int64_t v);

void kt_probe_zone_begin(uint32_t id)
{
	kt_zone_begin(id);
}

void kt_probe_counter(uint32_t id, int64_t v)
{
	kt_counter(id, v);
}

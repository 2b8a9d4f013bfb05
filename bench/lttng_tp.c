/* The tracepoint provider's probes, compiled once. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "bench/lttng_tp.h"

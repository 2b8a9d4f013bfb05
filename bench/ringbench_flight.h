/*
 * bench/ringbench_flight.h - ringbench --flight (ringbench_flight.c).
 */
#ifndef KATRA_BENCH_RINGBENCH_FLIGHT_H
#define KATRA_BENCH_RINGBENCH_FLIGHT_H

#include <stddef.h>

/*
 * ringbench_flight - run @threads producers at full rate in a flight
 * session over rings of @ring_size bytes, take @snapshots snapshots one
 * second apart with @codec (a kt_session_options.codec), and print the
 * table.  Return: the process's exit status.
 */
int ringbench_flight(size_t ring_size, int threads, int snapshots, int codec);

#endif

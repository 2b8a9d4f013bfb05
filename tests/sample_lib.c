/*
 * The shared library of test_sample (issue #31's must-show 2): two
 * functions that only spend CPU, in proportion to their argument, so that
 * a sampled zone calling them shows their names in the shares it gave.
 * Built with frame pointers (tests/CMakeLists.txt), as the samples need.
 */
#include "sample_lib.h"

/* The volatile sum keeps the loop: its cost is its count.  Both start on
 * a cache line, so that their loops lie alike and cost alike. */
__attribute__((noinline, aligned(64))) unsigned kt_sample_heavy(unsigned n)
{
	volatile unsigned x = 0;
	for (unsigned i = 0; i < n; i++)
		x += i;
	return x;
}

__attribute__((noinline, aligned(64))) unsigned kt_sample_light(unsigned n)
{
	volatile unsigned x = 0;
	for (unsigned i = 0; i < n; i++)
		x += i;
	return x;
}

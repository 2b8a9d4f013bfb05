/*
 * sample_cxx.cpp - test_sample's C++ function: a sampled frame whose
 * symbol is mangled (_ZN6kt_cxx4spinEj), which katra names as C++ reads
 * it, "kt_cxx::spin(unsigned int)".  Built with frame pointers, as
 * sample_lib.c.
 */
#include "sample_cxx.h"

namespace kt_cxx {

/* Kept a frame of its own: the wrapper below calls it, not inlines it. */
__attribute__((noinline)) unsigned spin(unsigned n)
{
	unsigned x = 1;
	for (unsigned i = 0; i < n; i++)
		x = x * 2654435761u + i;
	return x;
}

} // namespace kt_cxx

unsigned kt_sample_cxx(unsigned n)
{
	/* Not a tail call: the wrapper stays the caller's frame. */
	return kt_cxx::spin(n) + 1;
}

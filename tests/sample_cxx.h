/*
 * sample_cxx.h - sample_cxx.cpp's entry from C: kt_sample_cxx() spins
 * @n rounds in the C++ function kt_cxx::spin() and returns its sum.
 */
#ifndef KT_TEST_SAMPLE_CXX_H
#define KT_TEST_SAMPLE_CXX_H

#ifdef __cplusplus
extern "C" {
#endif

unsigned kt_sample_cxx(unsigned n);

#ifdef __cplusplus
}
#endif

#endif

/* test_sample's shared library (tests/sample_lib.c). */
#ifndef KT_TEST_SAMPLE_LIB_H
#define KT_TEST_SAMPLE_LIB_H

/* Each spends CPU in proportion to @n (a loop of @n adds); returns its sum. */
__attribute__((visibility("default"))) unsigned kt_sample_heavy(unsigned n);
__attribute__((visibility("default"))) unsigned kt_sample_light(unsigned n);

#endif

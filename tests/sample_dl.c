/*
 * test_sample's second library, not linked: dlopen()ed while the session
 * samples, so that its functions are named only if the session took the
 * kernel's mmap record of it (flush/sample.c) into a map entry.
 */
__attribute__((visibility("default"))) unsigned kt_sample_dlopened(unsigned n);

__attribute__((noinline, visibility("default"))) unsigned kt_sample_dlopened(unsigned n)
{
	volatile unsigned x = 0;
	for (unsigned i = 0; i < n; i++)
		x += i;
	return x;
}

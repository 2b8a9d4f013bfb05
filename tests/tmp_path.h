/*
 * tmp_path.h - the tests' names of files of their own under /tmp:
 * "/tmp/katra-test-PID-" and then what the test says, PID this process's
 * (each Criterion test runs in a process of its own, so two tests, or
 * two test programs run side by side, never share a name).  The test
 * removes what it made.
 */
#ifndef KT_TEST_TMP_PATH_H
#define KT_TEST_TMP_PATH_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* "/tmp/katra-test-PID-" and @fmt's words into @buf (@size bytes);
 * returns @buf. */
__attribute__((format(printf, 3, 4))) static inline char *tmp_path(char *buf, size_t size,
								   const char *fmt, ...)
{
	int n = snprintf(buf, size, "/tmp/katra-test-%d-", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < size)
		vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
	return buf;
}

#endif

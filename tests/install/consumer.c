/*
 * consumer.c - a program built against an installed katra, outside the
 * katra tree, to prove the installed headers, libraries, katra.pc and CMake
 * package are complete.
 */
#include <stdio.h>

#include <katra/katra.h>
#include <katra/reader.h>

int main(void)
{
	printf("katra %s (header %s)\n", kt_version_string(), KT_VERSION_STRING);
	printf("KT_ECHECKSUM: %s\n", kt_strerror(KT_ECHECKSUM));
	if (kt_version() != KT_VERSION_NUMBER) {
		fprintf(stderr, "library version %u != header version %u\n",
			kt_version(), (unsigned)KT_VERSION_NUMBER);
		return 1;
	}
	return 0;
}

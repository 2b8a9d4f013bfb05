/* The library's version at run time: katra/version.h's numbers, as built. */
#include <katra/version.h>

unsigned kt_version(void)
{
	return KT_VERSION_NUMBER;
}

const char *kt_version_string(void)
{
	return KT_VERSION_STRING;
}

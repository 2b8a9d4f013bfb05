/*
 * fuzz_sidecar - a published capture's sidecar, as `katra verify` reads
 * it: any bytes as the JSON, checked against a fixed trace name, size and
 * digest.  It must never crash, and must accept only a matching object.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "capture/capture_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char sha[] =
		"9151adedeb0bde2df63eb9cd19b4e0338098dafdb5c4b8dddbe310429040b172";
	char why[256];
	why[0] = 0;
	int rc = kt__sidecar_check((const char *)data, size, "run.1.cap.katra", sha, 1032, why,
				   sizeof(why));
	/* A refusal always says why, in a terminated string. */
	if (rc != 0 && (!why[0] || !memchr(why, 0, sizeof(why))))
		__builtin_trap();
	return 0;
}

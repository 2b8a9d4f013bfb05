/*
 * fuzz_sidecar - a published capture's sidecar, as `katra verify` reads
 * it: any bytes as the JSON, checked against a fixed trace name, size and
 * digest.  It must never crash, and must accept only a matching object.
 * The same bytes as `katra sql`'s captures view reads them (tools/pipeline/sql_side.h),
 * against a header of the same capture.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "tools/pipeline/sql_side.h"

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
	kt_header h = { .flags = KT_HDR_CAPTURE, .epoch = 1, .run_id = "run", .capture_id = "cap" };
	struct sql_sidecar s;
	memset(&s, 0, sizeof(s));
	sql_sidecar_match((const char *)data, size, "run.1.cap.katra", sha, 1032, &h, &s);
	/* It matches only where verify's check does, and a refusal says why. */
	if ((s.match > 0 && rc != 0) || (s.match < 0 && (!s.why[0] || !memchr(s.why, 0, 256))))
		__builtin_trap();
	return 0;
}

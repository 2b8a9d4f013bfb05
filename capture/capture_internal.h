/*
 * capture/capture_internal.h - internal: what the `katra` command and the
 * fuzz targets use of the capture manager's files.
 */
#ifndef KATRA_CAPTURE_INTERNAL_H
#define KATRA_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * SHA-256 of everything in @fd (read with pread from offset 0) as 64
 * lowercase hex digits; *@bytes gets the length.  Return: 0, -ENOMEM or
 * -errno of a read.
 */
int kt__sha256_fd(int fd, char hex[65], uint64_t *bytes);

/*
 * Check a sidecar's @len bytes of JSON (format/SPEC.md section 9) against
 * the trace it sits beside: named @file, @bytes long, hashing to @sha256.
 * Return: 0 when it is a published capture's sidecar that matches; 1 when
 * it is a joined capture's whose join did not finish (the trace is the one
 * its joined_from_sha256 and joined_from_bytes name: the capture as its
 * harness published it), said in @why; -1 with the first problem in @why
 * (NUL-terminated, at most @why_len bytes).
 */
int kt__sidecar_check(const char *json, size_t len, const char *file, const char *sha256,
		      uint64_t bytes, char *why, size_t why_len);

#endif

/*
 * The SHA-256 of a published trace, shared by the manager (which writes it
 * into the sidecar) and `katra verify` (which checks it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include <katra/capture.h>
#include "capture/capture_internal.h"

#define SHA_BUF (1 << 16)

/* Hash all of @fd into @sc through @buf (SHA_BUF bytes); *@off gets its
 * length.  Return: 0 or -errno. */
static int hash_all(int fd, struct sha256_ctx *sc, uint8_t *buf, uint64_t *off)
{
	for (;;) {
		ssize_t n = pread(fd, buf, SHA_BUF, (off_t)*off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		sha256_update(sc, (size_t)n, buf);
		*off += (uint64_t)n;
	}
}

int kt__sha256_fd(int fd, char hex[65], uint64_t *bytes)
{
	static const char digits[] = "0123456789abcdef";
	/* On the heap: not a hot path, and 64 KiB of TLS would sit in every
	 * thread of every program linked with katra (static TLS). */
	uint8_t *buf = malloc(SHA_BUF);
	struct sha256_ctx sc;
	uint8_t d[SHA256_DIGEST_SIZE];
	uint64_t off = 0;
	if (!buf)
		return -ENOMEM;
	sha256_init(&sc);
	int rc = hash_all(fd, &sc, buf, &off);
	free(buf);
	if (rc)
		return rc;
	sha256_digest(&sc, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = 0;
	*bytes = off;
	return 0;
}

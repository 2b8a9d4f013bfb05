/*
 * Reading a published capture back: the SHA-256 of a trace and the check
 * of its sidecar, shared by the manager (which writes them) and `katra
 * verify` (which trusts neither).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
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

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

int kt__sidecar_check(const char *json, size_t len, const char *file, const char *sha256,
		      uint64_t bytes, char *why, size_t why_len)
{
	json_error_t err;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
	int rc = -1;
	if (!o) {
		snprintf(why, why_len, "not JSON: line %d, column %d: %s", err.line, err.column,
			 err.text);
		return -1;
	}
	json_t *b = json_object_get(o, "bytes");
	if (!json_is_object(o))
		snprintf(why, why_len, "not a JSON object");
	else if (strcmp(str_of(o, "schema"), KT_CAPTURE_SCHEMA))
		snprintf(why, why_len, "schema is \"%.64s\", not \"%s\"", str_of(o, "schema"),
			 KT_CAPTURE_SCHEMA);
	else if (strcmp(str_of(o, "state"), "published"))
		snprintf(why, why_len, "state is \"%.32s\", not \"published\"", str_of(o, "state"));
	else if (strcmp(str_of(o, "file"), file))
		snprintf(why, why_len, "it names the file \"%.128s\", not \"%.128s\"",
			 str_of(o, "file"), file);
	else if (!json_is_integer(b) || (uint64_t)json_integer_value(b) != bytes)
		snprintf(why, why_len, "bytes is %" PRId64 ", the file has %" PRIu64,
			 json_is_integer(b) ? (int64_t)json_integer_value(b) : (int64_t)-1, bytes);
	else if (strcmp(str_of(o, "sha256"), sha256))
		snprintf(why, why_len, "sha256 is %.64s, the file's is %s", str_of(o, "sha256"),
			 sha256);
	else
		rc = 0;
	json_decref(o);
	return rc;
}

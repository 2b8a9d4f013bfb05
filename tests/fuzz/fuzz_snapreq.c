/*
 * libFuzzer target over a snapshot request's parse (flush/control_parse.c),
 * what a flight session's socket hands the traced process: its first byte
 * says whether the ancillary data was truncated, its second how many of
 * the bytes after are ancillary data, the rest are the request's words.
 * The parse may refuse anything, but what it accepts must be whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "flush/flush.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	int flags = data[0] & 1 ? MSG_CTRUNC : 0;
	size_t ctl_len = data[1] < size - 2 ? data[1] : size - 2;
	/* Ancillary data is aligned as a header: copied to such memory, and
	 * to memory of its exact size, so ASan sees any read past it. */
	struct cmsghdr *ctl = malloc(ctl_len ? ctl_len : 1);
	if (!ctl)
		return 0;
	memcpy(ctl, data + 2, ctl_len);
	size_t len = size - 2 - ctl_len;
	uint8_t *words = malloc(len ? len : 1);
	if (!words) {
		free(ctl);
		return 0;
	}
	memcpy(words, data + 2 + ctl_len, len);
	kt__ctl_req req;
	int rc = kt__ctl_request_parse(words, len, (const uint8_t *)ctl, ctl_len, flags, &req);
	uint64_t magic;
	if (rc == 0) {
		memcpy(&magic, words, 8);
		unsigned version = magic == KT__CTL_MAGIC_V3 ? 3 : magic == KT__CTL_MAGIC ? 2
				 : magic == KT__CTL_MAGIC_V1 ? 1 : 0;
		if (len != KT__CTL_REQ_WORDS * 8 || !version || req.version != version || flags)
			abort();
		if (version < 3 ? req.nfds != 1 || req.fd != req.fds[0] : req.nfds || req.fd != -1)
			abort();
	} else if (req.fd != -1) {
		abort();
	}
	/* Each descriptor takes 4 bytes of ancillary data. */
	if (req.nfds > ctl_len / sizeof(int))
		abort();
	free(words);
	free(ctl);
	return 0;
}

/*
 * A snapshot request's bytes, as recvmsg() left them: its words and its
 * ancillary data.  Pure, so libFuzzer can feed it anything
 * (tests/fuzz/fuzz_snapreq.c): the kernel shapes ancillary data, but the
 * walk below trusts no length in it that would reach past the buffer.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "flush/flush.h"

/* The SCM_RIGHTS descriptors of one header whose @len bytes lie within
 * the buffer, appended to @req (those past its room counted only). */
static void take_rights(const uint8_t *data, size_t len, kt__ctl_req *req)
{
	for (size_t i = 0; i + sizeof(int) <= len; i += sizeof(int)) {
		int fd;
		memcpy(&fd, data + i, sizeof(int));
		if (req->nfds < KT__CTL_FDS)
			req->fds[req->nfds] = fd;
		req->nfds++;
	}
}

/* Every header of @ctl, each one checked to lie within it. */
static void walk_ancillary(const uint8_t *ctl, size_t ctl_len, kt__ctl_req *req)
{
	size_t off = 0;
	while (ctl_len - off >= sizeof(struct cmsghdr)) {
		struct cmsghdr h;
		memcpy(&h, ctl + off, sizeof(h));
		if (h.cmsg_len < CMSG_LEN(0) || h.cmsg_len > ctl_len - off)
			return;
		if (h.cmsg_level == SOL_SOCKET && h.cmsg_type == SCM_RIGHTS)
			take_rights(ctl + off + CMSG_LEN(0), h.cmsg_len - CMSG_LEN(0), req);
		size_t step = CMSG_ALIGN(h.cmsg_len);
		if (step > ctl_len - off)
			return;
		off += step;
	}
}

int kt__ctl_request_parse(const uint8_t *words, size_t len, const uint8_t *ctl, size_t ctl_len,
			  int msg_flags, kt__ctl_req *req)
{
	memset(req, 0, sizeof(*req));
	req->fd = -1;
	if (ctl)
		walk_ancillary(ctl, ctl_len, req);
	uint64_t w[KT__CTL_REQ_WORDS];
	/* A truncated ancillary part may have lost descriptors: closed ones
	 * are no worse than a file half-named. */
	if (len != sizeof(w) || (msg_flags & MSG_CTRUNC))
		return -EINVAL;
	memcpy(w, words, sizeof(w));
	unsigned version = w[0] == KT__CTL_MAGIC_V3 ? 3 : w[0] == KT__CTL_MAGIC ? 2
			 : w[0] == KT__CTL_MAGIC_V1 ? 1 : 0;
	/* Versions 1 and 2 bring the output file, version 3 nothing. */
	if (!version || req->nfds != (version < 3 ? 1u : 0u))
		return -EINVAL;
	req->version = version;
	req->fd = version < 3 ? req->fds[0] : -1;
	req->max_age_ns = w[1];
	req->max_bytes = w[2];
	return 0;
}

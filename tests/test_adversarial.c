/* Valid traces built to hurt a reader: ids in the worst order, many
 * threads at once, and every allocation failing in turn.  Complexity is
 * asserted by counting the id tables' work (kt__idtab_work), never by
 * timing. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <criterion/criterion.h>

#include "format/format.h"

/* A header that asks for no capture flag, so nothing of t_header's
 * matters but the clock. */
static int t_open_writer(kt_writer **w)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("katra-adversarial", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(kt_writer_open_fd(w, fd, &h), 0);
	return fd;
}

/* Two events, a zone begin at @ts and its end at @ts + 1. */
static size_t t_zone(uint8_t *buf, uint64_t ts, uint32_t name)
{
	kt_event b = { .ts = ts, .name_id = name, .type = KT_EV_ZONE_BEGIN };
	kt_event e = { .ts = ts + 1, .name_id = name, .type = KT_EV_ZONE_END };
	size_t n = kt_event_encode(buf, 64, &b);
	return n + kt_event_encode(buf + n, 64, &e);
}

static int t_finish(kt_writer *w, int fd)
{
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	return fd;
}

/* @n names with ids n..1, descending, then one thread whose events use
 * them all. */
static int t_names_descending(uint32_t n)
{
	kt_writer *w;
	int fd = t_open_writer(&w);
	char name[32];
	for (uint32_t id = n; id >= 1; id--) {
		int len = snprintf(name, sizeof(name), "name-%u", id);
		cr_assert_eq(kt_writer_name(w, id, name, (size_t)len), 0);
	}
	uint8_t ev[64];
	for (uint32_t id = 1; id <= n; id += n / 8 + 1)
		cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, ev, t_zone(ev, 1000 + id, id)), 0);
	return t_finish(w, fd);
}

/* Issue 12: names in descending id order made every rewrite (compress,
 * decompress, slice, the capture's trim) quadratic in the names. */
Test(adversarial, rewrite_with_names_in_descending_order_is_linear)
{
	const uint32_t n = 40000;
	int in = t_names_descending(n);
	int out = memfd_create("katra-rewrite", MFD_CLOEXEC);
	kt__rewrite_opts o = { .in_fds = &in, .n_in = 1, .out_fd = out, .codec = -1 };
	kt__rewrite_result res;
	kt__idtab_work = 0;
	cr_assert_eq(kt__rewrite(&o, &res), 0, "%s", res.in_err.message);
	/* A hash probe or two per name; the sorted array moved n^2/2. */
	cr_assert_leq(kt__idtab_work, 8 * (uint64_t)n, "work %llu for %u names",
		      (unsigned long long)kt__idtab_work, n);
	/* Same frames in the same order through the same writer: the same
	 * bytes. */
	size_t a_len = 0, b_len = 0;
	uint8_t *a = t_slurp_fd(in, &a_len), *b = t_slurp_fd(out, &b_len);
	cr_assert(a && b);
	cr_assert_eq(a_len, b_len);
	cr_assert_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
	close(in);
	close(out);
}

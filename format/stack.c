/*
 * Stack and map entries (SPEC §4.11, §4.12, version 5): what sample records
 * (type 21) need to be read as functions.  A stack entry is a sampled call
 * chain, written once and named by id by every sample that took it; a map
 * entry a file mapped executable, which says which file and offset an
 * address of a stack was.  Both ways: the writer's encoders and the
 * reader's checks.
 */
#include <errno.h>
#include <string.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "format/reader_impl.h"

int kt__rd_decode_stack(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
                        kt_trace_frame *f)
{
	kt_stack_def *s = &f->u.stack;
	s->id = kt__get32(b + KT__STACK_ID);
	s->depth = kt__get32(b + KT__STACK_DEPTH);
	/* The depth is bounded before it sizes anything, and the body must
	 * hold exactly that many addresses. */
	if (!s->id || !s->depth || s->depth > KT_MAX_STACK_DEPTH ||
	    (uint64_t)blen != KT__STACK_FIXED + 8ull * s->depth)
		return kt__rd_stop(r, KT_EFRAME, off + KT__FRAME_HEAD,
		                   "stack entry of id %u, depth %u in a %u-byte body", s->id,
		                   s->depth, blen);
	if (kt__rd_grow(r, (void **)&r->str_buf, &r->str_cap, 8ull * s->depth))
		return kt__rd_stop(r, -ENOMEM, off, "a stack");
	uint64_t *fr = (uint64_t *)(void *)r->str_buf; /* malloc'd: aligned */
	for (uint32_t i = 0; i < s->depth; i++)
		fr[i] = kt__get64(b + KT__STACK_FIXED + 8ull * i);
	s->frames = fr;
	return 0;
}

int kt__rd_decode_map(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
                      kt_trace_frame *f)
{
	kt_map_def *m = &f->u.map;
	m->ts = kt__get64(b + KT__MAP_TS);
	m->start = kt__get64(b + KT__MAP_START);
	m->len = kt__get64(b + KT__MAP_LEN);
	m->pgoff = kt__get64(b + KT__MAP_PGOFF);
	m->process = kt__get32(b + KT__MAP_PROCESS);
	m->path_len = kt__get32(b + KT__MAP_PATH_LEN);
	const uint8_t *path = b + KT__MAP_FIXED;
	if (!m->path_len || m->path_len > KT_MAX_MAP_PATH ||
	    (uint64_t)blen != KT__MAP_FIXED + (uint64_t)m->path_len || !m->len ||
	    m->start + m->len < m->start)
		return kt__rd_stop(
			r, KT_EFRAME, off + KT__FRAME_HEAD,
			"map entry of %u path bytes, %llu bytes mapped, in a %u-byte body",
			m->path_len, (unsigned long long)m->len, blen);
	return kt__rd_body_str(r, off, path, m->path_len, off + KT__FRAME_HEAD + KT__MAP_FIXED,
			       "map path", &m->path);
}

const kt_stack_def *kt_trace_frame_get_stack(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_STACK ? &f->u.stack : NULL;
}

const kt_map_def *kt_trace_frame_get_map(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_MAP ? &f->u.map : NULL;
}

int kt_writer_stack(kt_writer *w, const kt_stack_def *s)
{
	int rc;
	if (!s->id || !s->depth || s->depth > KT_MAX_STACK_DEPTH || !s->frames)
		return -EINVAL;
	uint32_t len = KT__STACK_FIXED + 8u * s->depth;
	uint8_t *b = kt__writer_body(w, len, &rc);
	if (!b)
		return rc;
	kt__put32(b + KT__STACK_ID, s->id);
	kt__put32(b + KT__STACK_DEPTH, s->depth);
	for (uint32_t i = 0; i < s->depth; i++)
		kt__put64(b + KT__STACK_FIXED + 8u * i, s->frames[i]);
	return kt__writer_emit(w, KT_FRAME_STACK, len);
}

int kt_writer_map(kt_writer *w, const kt_map_def *m)
{
	int rc;
	if (!m->path || !m->path_len || m->path_len > KT_MAX_MAP_PATH ||
	    memchr(m->path, 0, m->path_len) || !m->len || m->start + m->len < m->start)
		return -EINVAL;
	uint32_t len = KT__MAP_FIXED + m->path_len;
	uint8_t *b = kt__writer_body(w, len, &rc);
	if (!b)
		return rc;
	kt__put64(b + KT__MAP_TS, m->ts);
	kt__put64(b + KT__MAP_START, m->start);
	kt__put64(b + KT__MAP_LEN, m->len);
	kt__put64(b + KT__MAP_PGOFF, m->pgoff);
	kt__put32(b + KT__MAP_PROCESS, m->process);
	kt__put32(b + KT__MAP_PATH_LEN, m->path_len);
	memcpy(b + KT__MAP_FIXED, m->path, m->path_len);
	return kt__writer_emit(w, KT_FRAME_MAP, len);
}

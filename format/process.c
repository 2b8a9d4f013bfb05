/*
 * Process entries (SPEC §4.10, version 4): the reader's check of one.
 * A merged trace (`katra merge`, `katra record`) holds one per process,
 * and each thread entry names its process.
 */
#include <errno.h>
#include <string.h>

#include <katra/reader.h>
#include "format/format.h"
#include "format/reader_impl.h"

int kt__rd_decode_process(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			  kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	kt_process_def *p = &f->u.process;
	if (blen < KT__PROC_FIXED)
		return kt__rd_stop(r, KT_EFRAME, off, "process body is %u bytes, under %u", blen,
				   KT__PROC_FIXED);
	p->id = kt__get32(b + KT__PROC_ID);
	p->flags = kt__get32(b + KT__PROC_FLAGS);
	p->pid = kt__get64(b + KT__PROC_PID);
	p->parent_pid = kt__get64(b + KT__PROC_PPID);
	p->start_ns = kt__get64(b + KT__PROC_START);
	p->end_ns = kt__get64(b + KT__PROC_END);
	p->name_len = kt__get32(b + KT__PROC_NAME_LEN);
	p->cmdline_len = kt__get32(b + KT__PROC_CMD_LEN);
	/* Each length is bounded before the two are added, and their sum must
	 * be the body's: nothing is sized by them beyond the body. */
	if (p->name_len > KT_MAX_STRING || p->cmdline_len > KT_MAX_STRING ||
	    (uint64_t)p->name_len + p->cmdline_len != blen - KT__PROC_FIXED)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__PROC_NAME_LEN,
				   "process lengths %u and %u in a %u-byte body", p->name_len,
				   p->cmdline_len, blen);
	if (p->flags & ~KT__PROCESS_FLAGS)
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__PROC_FLAGS, "process flags 0x%x",
				   p->flags);
	const uint8_t *name = b + KT__PROC_FIXED;
	if (memchr(name, 0, p->name_len))
		return kt__rd_stop(r, KT_EFRAME, boff + KT__PROC_FIXED, "process name holds a zero byte");
	size_t n = (size_t)p->name_len + p->cmdline_len;
	if (kt__rd_grow(r, (void **)&r->str_buf, &r->str_cap, n + 2))
		return kt__rd_stop(r, -ENOMEM, off, "a process");
	memcpy(r->str_buf, name, p->name_len);
	r->str_buf[p->name_len] = 0;
	memcpy(r->str_buf + p->name_len + 1, name + p->name_len, p->cmdline_len);
	r->str_buf[n + 1] = 0;
	p->name = r->str_buf;
	p->cmdline = r->str_buf + p->name_len + 1;
	return 0;
}

const kt_process_def *kt_trace_frame_get_process(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_PROCESS ? &f->u.process : NULL;
}

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
	int rc;
	if ((rc = kt__rd_two_lengths(r, boff + KT__PROC_NAME_LEN, p->name_len, p->cmdline_len,
				     blen, KT__PROC_FIXED, "process")))
		return rc;
	if (p->flags & ~KT__PROCESS_FLAGS)
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__PROC_FLAGS, "process flags 0x%x",
				   p->flags);
	const uint8_t *name = b + KT__PROC_FIXED;
	if (memchr(name, 0, p->name_len))
		return kt__rd_stop(r, KT_EFRAME, boff + KT__PROC_FIXED, "process name holds a zero byte");
	return kt__rd_two_strings(r, off, name, p->name_len, p->cmdline_len, "process", &p->name,
				  &p->cmdline);
}

const kt_process_def *kt_trace_frame_get_process(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_PROCESS ? &f->u.process : NULL;
}

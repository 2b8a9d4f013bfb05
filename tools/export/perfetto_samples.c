/*
 * perfetto_samples.c - sample records as Perfetto's PerfSample packets;
 * perfetto_samples.h says how.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/perfetto_samples.h"
#include "tools/export/perfetto_sched.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/stacks.h"
#include "tools/pipeline/text.h"

#define CLOCK_MONO_ID 3
#define SEQ_CLEARED 1
#define SEQ_NEEDS 2
#define MAPPING_IID 1

typedef Perfetto__Protos__InternedString IString;
typedef Perfetto__Protos__Frame PFrame;

struct psamples {
	struct symbolizer *sym;
	struct stacks stacks;
	struct idmap names;  /* a name's pointer -> its iid */
	struct idmap frames; /* an address (<< 1 | return) -> its iid */
	struct idmap calls;  /* a stack id -> 1 once written */
	uint64_t pid;
	uint32_t proc;       /* the process of the sample being put: its
			      * addresses are named among its map entries
			      * (a merged trace's processes map files apart) */
	int started;
};

/* What one packet interns, at most a stack's worth of each. */
struct pnew {
	IString name[KT_MAX_STACK_DEPTH], *namep[KT_MAX_STACK_DEPTH];
	char *text[KT_MAX_STACK_DEPTH];
	PFrame fr[KT_MAX_STACK_DEPTH], *frp[KT_MAX_STACK_DEPTH];
	size_t nname, nfr;
	uint64_t ids[KT_MAX_STACK_DEPTH];
	Perfetto__Protos__Callstack cs, *csp;
	Perfetto__Protos__Mapping map, *mapp;
};

struct psamples *psamples_new(kt_reader *r, int *rc)
{
	struct psamples *ps = calloc(1, sizeof(*ps));
	*rc = -ENOMEM;
	if (!ps)
		return NULL;
	stacks_init(&ps->stacks);
	idmap_init(&ps->names);
	idmap_init(&ps->frames);
	idmap_init(&ps->calls);
	ps->pid = kt_reader_get_header(r)->process_id;
	if ((ps->sym = sym_new()))
		*rc = stacks_read(&ps->stacks, r, ps->sym);
	return ps;
}

/* Frame @addr's iid, interned into @x when new; 0 without memory. */
static uint64_t frame_iid(struct psamples *ps, struct pnew *x, uint64_t addr, int ret)
{
	int added;
	uint32_t *f = idmap_slot(&ps->frames, addr << 1 | (ret ? 1 : 0),
	                         (uint32_t)ps->frames.len + 1, &added);
	if (!f || !added)
		return f ? *f : 0;
	uint64_t fid = *f;
	const char *name = sym_name_in(ps->sym, ps->proc, addr, ret);
	uint32_t *n = idmap_slot(&ps->names, (uint64_t)(uintptr_t)name, (uint32_t)ps->names.len + 1,
	                         &added);
	if (!n)
		return 0;
	if (added) {
		IString *s = &x->name[x->nname];
		perfetto__protos__interned_string__init(s);
		if (!(x->text[x->nname] = text_utf8(name, strlen(name), NULL)))
			return 0;
		s->has_iid = s->has_str = 1;
		s->iid = *n;
		s->str.data = (uint8_t *)x->text[x->nname];
		s->str.len = strlen(x->text[x->nname]);
		x->namep[x->nname++] = s;
	}
	PFrame *fr = &x->fr[x->nfr];
	perfetto__protos__frame__init(fr);
	fr->has_iid = fr->has_function_name_id = fr->has_mapping_id = fr->has_rel_pc = 1;
	fr->iid = fid;
	fr->function_name_id = *n;
	fr->mapping_id = MAPPING_IID;
	fr->rel_pc = addr;
	x->frp[x->nfr++] = fr;
	return fid;
}

/* The callstack of stack @id into @x the first time; 0, 1 (no such
 * stack), -ENOMEM. */
static int intern(struct psamples *ps, struct pnew *x, uint64_t id,
                  Perfetto__Protos__InternedData *in)
{
	uint32_t depth;
	const uint64_t *fr = stacks_get(&ps->stacks, id, &depth);
	int added;
	if (!fr)
		return 1;
	uint32_t *c = idmap_slot(&ps->calls, id, 1, &added);
	if (!c)
		return -ENOMEM;
	if (!added)
		return 0;
	for (uint32_t i = 0; i < depth; i++) /* outermost first */
		if (!(x->ids[i] = frame_iid(ps, x, fr[depth - 1 - i], depth - 1 - i > 0)))
			return -ENOMEM;
	perfetto__protos__callstack__init(&x->cs);
	x->cs.has_iid = 1;
	x->cs.iid = id;
	x->cs.n_frame_ids = depth;
	x->cs.frame_ids = x->ids;
	x->csp = &x->cs;
	in->n_callstacks = 1;
	in->callstacks = &x->csp;
	in->n_frames = x->nfr;
	in->frames = x->frp;
	in->n_function_names = x->nname;
	in->function_names = x->namep;
	if (!ps->started) { /* one mapping for every frame: names are ours */
		perfetto__protos__mapping__init(&x->map);
		x->map.has_iid = x->map.has_start = x->map.has_end = 1;
		x->map.iid = MAPPING_IID;
		x->map.end = UINT64_MAX;
		x->mapp = &x->map;
		in->n_mappings = 1;
		in->mappings = &x->mapp;
	}
	return 0;
}

int psamples_put(struct psamples *ps, struct xout *o, const struct tables *t, const kt_event *ev,
                 uint64_t ns)
{
	kt_value v;
	if (!kt_event_get_value(ev, &v) || !v.thread)
		return 0;
	struct pnew *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__PerfSample ps_ = PERFETTO__PROTOS__PERF_SAMPLE__INIT;
	Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	ps->proc = tables_thread_process(t, v.thread);
	int rc = intern(ps, x, v.u64, &in);
	if (!rc) {
		uint64_t pid = tables_process_pid(t, ps->proc);
		ps_.has_pid = ps_.has_tid = ps_.has_callstack_iid = 1;
		ps_.pid = (uint32_t)(pid ? pid : ps->pid);
		ps_.tid = export_os_tid(t, v.thread);
		ps_.callstack_iid = v.u64;
		pk.has_trusted_packet_sequence_id = pk.has_timestamp = pk.has_timestamp_clock_id =
			1;
		pk.trusted_packet_sequence_id = PSAMPLES_SEQ;
		pk.timestamp = ns;
		pk.timestamp_clock_id = CLOCK_MONO_ID;
		pk.has_sequence_flags = 1;
		pk.sequence_flags = ps->started ? SEQ_NEEDS : SEQ_CLEARED;
		ps->started = 1;
		if (in.n_callstacks)
			pk.interned_data = &in;
		pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_PERF_SAMPLE;
		pk.perf_sample = &ps_;
		pf_put_packet(o, &pk);
	}
	for (size_t i = 0; i < x->nname; i++)
		free(x->text[i]);
	free(x);
	return rc < 0 ? rc : o->failed ? -EIO : 0;
}

void psamples_free(struct psamples *ps)
{
	if (!ps)
		return;
	sym_free(ps->sym);
	stacks_free(&ps->stacks);
	idmap_free(&ps->names);
	idmap_free(&ps->frames);
	idmap_free(&ps->calls);
	free(ps);
}

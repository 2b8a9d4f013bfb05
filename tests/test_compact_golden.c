/*
 * The compact encoder's bytes, pinned: the corpus's shapes of
 * bench/workloads.h (a renderer, an interpreter, a job system's thread)
 * as chunks on a synthetic clock, encoded at a session's level 1 by one
 * encoder from chunk to chunk, as a flusher's, through both entry points
 * (kt__compact_encode and the flusher's kt__compact_encode_upto).  The
 * hashes are those of the encoder before it was made faster (issue #28,
 * the walk's slot pointers, two-byte varints without a branch, integers
 * inline): a change meant
 * to cost less must leave every byte as it was.  A change of the bytes
 * is a change of the format's encoder (format/SPEC.md), and of these.
 */
#include "helpers.h"

#include <inttypes.h>
#include <criterion/criterion.h>
#include <xxhash.h>

#include <katra/katra.h>
#include "format/compact.h"

#define G_CHUNK (256u << 10)
#define G_MAX (G_CHUNK + (64u << 10))
#define G_CHUNKS 6

/* A shape's chunks, cut at G_CHUNK as the flusher cuts them. */
struct gbuild {
	uint8_t *buf;
	size_t len;
	uint64_t clock, rng;
	uint8_t *chunks[G_CHUNKS];
	size_t lens[G_CHUNKS];
	uint32_t counts[G_CHUNKS], count;
	int n;
};
static struct gbuild *gcur;

/* A record at the synthetic clock: an emit's 24 ticks, a few more now
 * and then (codecbench_workloads.c's clock). */
static void g_rec(uint8_t type, uint32_t id, uint8_t flags, const void *p, size_t len)
{
	struct gbuild *b = gcur;
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	b->clock += 24 + (b->rng % 16 == 0 ? 8 + (b->rng >> 8) % 32 : 0);
	if (b->n == G_CHUNKS)
		return;
	kt__put_record(b->buf + b->len, b->clock, type, id, flags, p, len);
	b->len += KT__EVENT_HEAD + kt__align8(len);
	b->count++;
	if (b->len >= G_CHUNK) {
		b->chunks[b->n] = malloc(b->len);
		cr_assert_not_null(b->chunks[b->n]);
		memcpy(b->chunks[b->n], b->buf, b->len);
		b->counts[b->n] = b->count;
		b->lens[b->n++] = b->len;
		b->len = 0;
		b->count = 0;
	}
}

#define WL_REC(type, id, flags, payload, len) g_rec(type, id, flags, payload, len)
#define WL_WORK(ticks) (gcur->clock += (ticks))
#include "bench/workloads.h"

enum { G_RENDERER, G_INTERP, G_JOBS };

static void g_make(struct gbuild *b, int kind)
{
	struct wl_state s;
	memset(b, 0, sizeof(*b));
	b->buf = malloc(G_MAX);
	cr_assert_not_null(b->buf);
	b->rng = 0x2545F4914F6CDD1Du;
	gcur = b;
	wl_state_init(&s, kind == G_JOBS ? 1 : 0);
	for (uint64_t n = 0; b->n < G_CHUNKS; n++) {
		if (kind == G_RENDERER)
			wl_renderer_unit(&s, 0, n);
		else if (kind == G_INTERP)
			wl_interp_unit(&s, 0, n);
		else /* the scheduler's and the workers' units, interleaved */
			wl_jobs_unit(&s, (int)(n % 6), n, 5);
	}
	free(b->buf);
}

static void g_free(struct gbuild *b)
{
	for (int i = 0; i < b->n; i++)
		free(b->chunks[i]);
}

/* XXH64 of the chunks' level-1 encodings in turn, through
 * kt__compact_encode (@upto 0) or kt__compact_encode_upto (1), each
 * decoded back and compared. */
static uint64_t g_hash(const struct gbuild *b, int upto)
{
	void *e;
	kt__compact_dec *d;
	size_t max = G_MAX + kt_event_size(UINT16_MAX);
	uint8_t *out = malloc(max), *back = malloc(G_MAX);
	uint64_t h = 0;
	cr_assert(out && back);
	cr_assert_eq(kt__codec_compact.enc_new(&e, max, 1), 0);
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	for (int i = 0; i < b->n; i++) {
		long n;
		if (upto) {
			kt__compact_run run;
			n = kt__compact_encode_upto(e, b->chunks[i], b->lens[i], b->lens[i], out, max,
						    &run);
			cr_assert_eq(run.used, b->lens[i]);
			cr_assert_eq(run.count, b->counts[i]);
		} else {
			n = kt__compact_encode(e, b->chunks[i], b->lens[i], out, max);
		}
		cr_assert_gt(n, 0, "chunk %d: %ld", i, n);
		cr_assert_eq(kt__compact_decode(d, out, (size_t)n, back, b->lens[i], b->counts[i]), 0);
		cr_assert_eq(memcmp(back, b->chunks[i], b->lens[i]), 0, "chunk %d changed", i);
		h = XXH64(out, (size_t)n, h);
	}
	kt__codec_compact.enc_free(e);
	kt__compact_dec_free(d);
	free(out);
	free(back);
	return h;
}

static void check(int kind, uint64_t want)
{
	struct gbuild b;
	g_make(&b, kind);
	uint64_t h0 = g_hash(&b, 0), h1 = g_hash(&b, 1);
	/* One assertion naming both: the TSan build's stand-in for Criterion
	 * (tests/tsan/) has no cr_expect. */
	cr_assert(h0 == want && h1 == want,
		  "encode: %016" PRIx64 ", encode_upto: %016" PRIx64 ", was %016" PRIx64, h0, h1,
		  want);
	g_free(&b);
}

Test(compact_golden, the_renderer_shape_keeps_its_bytes)
{
	check(G_RENDERER, UINT64_C(0x5178413a8e8c6f2e));
}

Test(compact_golden, the_interpreter_shape_keeps_its_bytes)
{
	check(G_INTERP, UINT64_C(0xba03370654485941));
}

Test(compact_golden, the_job_system_shape_keeps_its_bytes)
{
	check(G_JOBS, UINT64_C(0x19c28546983a38c5));
}

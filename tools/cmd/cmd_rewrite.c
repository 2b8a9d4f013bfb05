/*
 * cmd_rewrite.c - `katra compress`, `decompress` and `slice`: a new trace
 * from IN through kt_rewrite(), re-encoded or filtered, written whole or
 * not at all.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <katra/writer.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/outfile.h"
#include "tools/pipeline/progress.h"
#include "tools/cmd/when.h"

/* What a rewrite keeps and how it encodes it. */
struct rewrite_args {
	int codec;              /* kt_codec; -1 keeps each chunk's */
	int filter;             /* slice: keep only what the next fields say */
	uint64_t from, to;      /* ns, inclusive: @win resolved */
	struct when_window win;
	struct thread_list threads;
};

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	progress(done, total);
}

/*
 * Copy IN to OUT through kt_rewrite(): chunks re-encoded with @a's codec,
 * events outside its filter dropped, names, threads and drops
 * carried over, the summary recomputed.  IN is opened once (the fd the
 * header was checked on is the one rewritten); OUT is created beside its
 * final name and renamed, so it is never left partial and never IN.
 */
static int rewrite(const char *in_path, const char *out, struct rewrite_args *a)
{
	struct input in;
	int rc = input_open(&in, in_path);
	if (rc)
		return rc;
	outfile of;
	int result = EXIT_BAD;
	if (a->filter &&
	    (result = when_resolve("slice", in_path, &a->win, in.r, &a->from, &a->to)) != OPTS_GO)
		goto done;
	result = EXIT_BAD;
	if (output_open(&of, out, &in) < 0)
		goto done;
	kt_rewrite_options o = {
		.in_fds = &in.fd, .n_in = 1, .out_fd = of.fd, .codec = a->codec,
		.filter = a->filter, .from_ns = a->from, .to_ns = a->to,
		.threads = a->threads.ids, .nthreads = (size_t)a->threads.n,
		.progress = progress_cb,
	};
	kt_rewrite_result res;
	progress_init(0, NULL);
	rc = kt_rewrite(&o, &res);
	progress_end();
	if (rc < 0 && res.in_index >= 0) {
		read_failed(in_path, rc, &res.in_err);
	} else if (rc < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if ((rc = outfile_commit(&of)) < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if (res.have_summary) {
		result = EXIT_OK;
	} else {
		/* A cut input gives a cut output: the same valid prefix. */
		say("%s: truncated: %s holds the frames before the cut", in_path, out);
		result = EXIT_TRUNC;
	}
	outfile_abort(&of);
done:
	input_close(&in);
	return result;
}

/* --codec: compact (compress's default, the sessions'), zstd (compact-zstd),
 * lz4-delta or lz4. */
static int opt_codec(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	if (!strcmp(value, "lz4"))
		*(int *)dst = KT_CODEC_LZ4;
	else if (!strcmp(value, "lz4-delta"))
		*(int *)dst = KT_CODEC_LZ4_DELTA;
	else if (!strcmp(value, "compact"))
		*(int *)dst = KT_CODEC_COMPACT;
	else if (!strcmp(value, "zstd") || !strcmp(value, "compact-zstd"))
		*(int *)dst = KT_CODEC_COMPACT_ZSTD;
	else
		return opt_bad(cmd, o, value);
	return 0;
}

#define RECODE_HELP_TAIL                                                          \
	"; everything else is carried over and the\n"                             \
	"summary recomputed.  The result verifies and dumps identically.\n"       \
	"OUT is written whole or not at all; IN itself is never replaced.\n"

static const struct opts_spec compress_spec = {
	.cmd = "compress", .npos = 2, .unknown = "unknown option",
	.opts = (const struct opt[]){
		{ "--codec", opt_codec, offsetof(struct rewrite_args, codec),
		  .wants = "compact, zstd, lz4-delta or lz4" },
		{ .name = NULL } },
	.help = "usage: katra compress IN OUT [--codec compact|zstd|lz4-delta|lz4]\n"
		"Rewrites every chunk compressed: compact (the default, as sessions write:\n"
		"each field predicted, only the misses stored, about 3x smaller than\n"
		"lz4-delta), zstd (compact, then zstd level 3: about 4x smaller again, for\n"
		"traces kept long or shipped), lz4-delta (timestamps as differences first,\n"
		"about 2.5x smaller than lz4) or lz4 (plain LZ4).  IN's codec level is kept\n"
		"when IN is raw or already in that codec, so compress --codec X of\n"
		"decompress's output is byte for byte the file X wrote" RECODE_HELP_TAIL,
};

static const struct opts_spec decompress_spec = {
	.cmd = "decompress", .npos = 2, .unknown = "unknown option",
	.help = "usage: katra decompress IN OUT\n"
		"Rewrites every chunk raw" RECODE_HELP_TAIL,
};

static const struct opts_spec slice_spec = {
	.cmd = "slice", .npos = 2, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		WHEN_OPTS(offsetof(struct rewrite_args, win)),
		OPT_THREAD(offsetof(struct rewrite_args, threads)),
		{ .name = NULL } },
	.help = "usage: katra slice IN OUT [--from T] [--to T] [--window T..T]\n"
		"                  [--frames A..B] [--thread ID ...]\n"
		"Writes a smaller valid trace: the events in the window (ends\n"
		"included) of the chosen threads (up to 64), the names, those threads'\n"
		"entries and drop records that overlap, and a recomputed summary.\n"
		WHEN_HELP,
};

/* compress, decompress and slice: @a holds the defaults. */
static int cmd_rewrite(const struct opts_spec *spec, int argc, char **argv,
		       struct rewrite_args *a)
{
	const char *pos[2];
	int rc = opts_parse(spec, argc, argv, a, pos);
	if (rc == OPTS_GO)
		rc = when_early(spec->cmd, &a->win);
	return rc != OPTS_GO ? rc : rewrite(pos[0], pos[1], a);
}

int cmd_compress(int argc, char **argv)
{
	/* The codec sessions write by default (kt_session_options.codec 0):
	 * a compressed trace is as small as the one a session would have
	 * written. */
	struct rewrite_args a = { .codec = KT_CODEC_COMPACT };
	return cmd_rewrite(&compress_spec, argc, argv, &a);
}

int cmd_decompress(int argc, char **argv)
{
	struct rewrite_args a = { .codec = KT_CODEC_NONE };
	return cmd_rewrite(&decompress_spec, argc, argv, &a);
}

int cmd_slice(int argc, char **argv)
{
	struct rewrite_args a = { .codec = -1, .filter = 1, .to = UINT64_MAX };
	return cmd_rewrite(&slice_spec, argc, argv, &a);
}

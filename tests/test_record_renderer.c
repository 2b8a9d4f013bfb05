/*
 * test_record_renderer.c - examples/renderer under `katra record` with
 * every default (no option but -o: scheduler records on, the compact
 * codec) and sampling on (KT_SAMPLE_HZ), the renderer
 * without a session of its own (--no-session), so that katra record's
 * session records it.  What the renderer does is fixed for a given
 * --frames, so its zones are counted exactly; the trace verifies; the
 * samples are there (the test fails with sampling off) and most of the
 * frames of those taken inside a "shade" zone are named, not bare
 * addresses.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define FRAMES 30
/* examples/renderer.cpp at 30 frames: a "frame" and a "raster" zone and a
 * frame mark per frame; a "tile" zone per tile thread (2) a frame; a
 * "triangle" zone for each of a frame's 400 triangles in each tile its
 * bounding box reaches (13216: also counted from scene()'s generator
 * alone, outside katra); a "shade" zone per pixel that passes the edge
 * and depth tests (2667920, the same in every run and build: the scene
 * is a fixed sequence, each tile drawn by one thread in order). */
#define TRIANGLES 13216
#define SHADES 2667920

static const struct {
	const char *name;
	json_int_t count;
} zones[] = {
	{ "frame", FRAMES },         { "raster", FRAMES },  { "tile", 2 * FRAMES },
	{ "triangle", TRIANGLES },   { "shade", SHADES },
};

/* The zone count of @name in `katra stats --json`'s @o (-1: no such zone). */
static json_int_t zone_count(json_t *o, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(o, "names"), i, n) {
		json_t *z = json_object_get(n, "zone");
		if (z && !strcmp(json_string_value(json_object_get(n, "name")), name))
			return json_integer_value(json_object_get(z, "count"));
	}
	return -1;
}

/* The frame marks named "frame" in @o. */
static json_int_t frame_marks(json_t *o)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(o, "names"), i, n) {
		json_t *m = json_object_get(n, "frame_marks");
		if (m && !strcmp(json_string_value(json_object_get(n, "name")), "frame"))
			return json_integer_value(m);
	}
	return -1;
}

/* In `export --collapsed --samples`' @path: the samples inside a "shade"
 * zone, and their frames (after the zones), named and all, each line's
 * frames counted as many times as its samples. */
static void shade_frames(const char *path, long *samples, long *named, long *frames)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	char line[8192];
	*samples = *named = *frames = 0;
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, ";shade;"), *sp = strrchr(line, ' ');
		if (!at || !sp || sp < at)
			continue;
		long n = atol(sp + 1);
		*sp = 0;
		*samples += n;
		for (char *fr = strtok(at + 7, ";"); fr; fr = strtok(NULL, ";")) {
			*frames += n;
			*named += strncmp(fr, "0x", 2) ? n : 0;
		}
	}
	fclose(f);
}

Test(record_renderer, every_default_with_sampling_counts_zones_and_names_shading,
     .timeout = 300)
{
	char dir[] = "/tmp/katra-test-rend-XXXXXX", frames[16], cmd[64], out[64], folded[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/r.katra", dir);
	snprintf(folded, sizeof(folded), "%s/c.txt", dir);
	setenv("KT_SAMPLE_HZ", "2000", 1);
	snprintf(frames, sizeof(frames), "%d", FRAMES);
	struct proc p;
	run_katra(&p, (const char *const[]){ "record", "-o", out, "--", KT_RENDERER, "--frames",
					     frames, "--unpaced", "--no-session", NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	run_katra(&p, (const char *const[]){ "verify", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);

	run_katra(&p, (const char *const[]){ "stats", out, "--json", NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_t *o = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(o, "%.*s", (int)p.out_len, p.out);
	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++)
		cr_assert_eq(zone_count(o, zones[i].name), zones[i].count, "%s", zones[i].name);
	cr_assert_eq(frame_marks(o), FRAMES);
	/* Sampling on: samples, every one of a known stack. */
	json_t *s = json_object_get(o, "samples");
	json_int_t nsamples = json_integer_value(json_object_get(s, "samples"));
	cr_assert_gt(nsamples, 0, "no samples: sampling is off");
	cr_assert_eq(json_integer_value(json_object_get(s, "unknown")), 0);
	json_decref(o);

	run_katra(&p, (const char *const[]){ "export", "--collapsed", "--samples", out, folded,
					     NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	long shade, named, all;
	shade_frames(folded, &shade, &named, &all);
	/* About a fifth of the tiles' CPU is in shading: 46 of 228 samples
	 * at 2000 Hz in a plain build. */
	cr_assert_geq(shade, 10, "%ld samples in shade zones of %lld", shade,
		      (long long)nsamples);
	cr_assert_gt(2 * named, all, "%ld of %ld frames of shading's samples named", named, all);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* this test's own directory */
	cr_assert_eq(system(cmd), 0);
}

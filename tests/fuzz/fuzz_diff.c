/*
 * fuzz_diff - `katra diff` over two traces made of any bytes: the input
 * split at its first 8 bytes' count into A and B, each written to a file
 * of its own (the command reads paths), then the whole command as text
 * and as JSON: both runs read on their threads, the samples and counts
 * compared (the Beta/Gamma draws), the rows printed.  It must never
 * crash or leak, and its JSON must parse whenever it says it printed it.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/parses.h"
#include "tools/cmd/cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int put(const char *path, const uint8_t *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int ok = n == 0 || write(fd, d, n) == (ssize_t)n;
	close(fd);
	return ok ? 0 : -1;
}

/* cmd_diff() with its stdout into memory and its messages into
 * /dev/null (libFuzzer's own stay on stderr); returns its exit status. */
static int run(char **argv, int argc, char **out, size_t *len)
{
	fflush(stdout);
	fflush(stderr);
	int saved = dup(1), saved2 = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved2 < 0 || null < 0)
		abort();
	dup2(null, 2);
	close(null);
	char tmp[96];
	snprintf(tmp, sizeof(tmp), "%s/out", dir);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (saved < 0 || fd < 0)
		abort();
	dup2(fd, 1);
	int rc = cmd_diff(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved, 1);
	dup2(saved2, 2);
	close(saved);
	close(saved2);
	off_t end = lseek(fd, 0, SEEK_END);
	*len = end > 0 ? (size_t)end : 0;
	*out = malloc(*len + 1);
	if (!*out || pread(fd, *out, *len, 0) != (ssize_t)*len)
		abort();
	close(fd);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/katra-fuzzdiff.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			abort();
	}
	if (size < 8)
		return 0;
	uint64_t cut;
	memcpy(&cut, data, 8);
	data += 8;
	size -= 8;
	cut = size ? cut % (size + 1) : 0;
	char a[96], b[96];
	snprintf(a, sizeof(a), "%s/a.katra", dir);
	snprintf(b, sizeof(b), "%s/b.katra", dir);
	if (put(a, data, cut) || put(b, data + cut, size - cut))
		return 0;
	char *text[] = { "diff", "--min-count", "1", a, b, NULL };
	char *json[] = { "diff", "--json", a, b, NULL };
	char *out;
	size_t len;
	run(text, 5, &out, &len);
	free(out);
	int rc = run(json, 4, &out, &len);
	if ((rc == 0 || rc == 3 || rc == 4) && len)
		must_parse(out, len);
	free(out);
	return 0;
}

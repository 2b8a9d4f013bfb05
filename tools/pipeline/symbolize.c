/*
 * Sampled addresses to function names with elfutils' libdwfl
 * (symbolize.h).  No ELF or DWARF is parsed here: libelf reads a file's
 * program headers (for the bias of its mapping), libdwfl its symbols.
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/pipeline/symbolize.h"

struct smap {
	uint64_t start, len, pgoff;
	uint32_t process;
	char *path;
};

/* A C++ symbol (libdwfl's string, which lives as long as its Dwfl) and
 * the name a reader reads: demangled, or the symbol itself. */
struct demangled {
	const char *sym;
	char *name; /* malloc'd by the demangler, or NULL: the symbol's own */
};

/* libstdc++'s demangler (the Itanium C++ ABI's, C linkage). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

struct cached {
	uint64_t key; /* addr << 1 | ret, plus 1: 0 is empty */
	uint64_t space;
	const char *name;
};

/* One address space: a process's map entries (or, SYM_ANY, every entry,
 * each file at its first entry's bias) reported to a Dwfl of its own, as
 * two processes may map one file at two addresses (ASLR). */
struct space {
	uint64_t process; /* a process entry's id, or SYM_ANY */
	Dwfl *dwfl;
	const char **paths; /* its files reported */
	size_t npaths;
};

#define SYM_ANY UINT64_MAX

struct symbolizer {
	struct smap *maps;
	size_t nmaps, cap;
	struct space spaces[SYM_SPACES];
	size_t nspaces;
	size_t nfiles; /* files reported in all spaces, SYM_FILES at most */
	int elf_ready;
	struct cached *cache; /* SYM_CACHE slots */
	size_t ncache;
	char **owned; /* the "FILE+0xOFF" strings made */
	size_t nowned, cap_owned;
	struct demangled *dem; /* SYM_DEMANGLED slots, made at the first */
	size_t ndem;
	uint64_t named, unnamed;
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct symbolizer *sym_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	if (s && !(s->cache = calloc(SYM_CACHE, sizeof(*s->cache)))) {
		free(s);
		return NULL;
	}
	return s;
}

int sym_add_map(struct symbolizer *s, const kt_map_def *m)
{
	if (s->nmaps == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct smap *p = realloc(s->maps, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->maps = p;
		s->cap = cap;
	}
	char *path = strdup(m->path);
	if (!path)
		return -ENOMEM;
	s->maps[s->nmaps++] = (struct smap){ m->start, m->len, m->pgoff, m->process, path };
	return 0;
}

/* A regular file at @path, opened without following a symlink in its last
 * part or blocking on a FIFO: an fd, or -1. */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The bias of @m's file (an address less the file's p_vaddr for it): the
 * PT_LOAD segment holding file offset m->pgoff says what vaddr m->start
 * is.  0 and *@ok 0 when the file has no such segment. */
static uint64_t bias_of(int fd, const struct smap *m, int *ok)
{
	uint64_t bias = 0;
	size_t n;
	*ok = 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return 0;
	if (elf_kind(e) == ELF_K_ELF && !elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n && !*ok; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    m->pgoff < ph.p_offset || m->pgoff - ph.p_offset >= ph.p_filesz)
				continue;
			bias = m->start - (ph.p_vaddr + (m->pgoff - ph.p_offset));
			*ok = 1;
		}
	}
	elf_end(e);
	return bias;
}

static int reported(const struct space *sp, const char *path)
{
	for (size_t i = 0; i < sp->npaths; i++)
		if (!strcmp(sp->paths[i], path))
			return 1;
	return 0;
}

static int in_space(const struct smap *m, uint64_t process)
{
	return process == SYM_ANY || m->process == process;
}

/* Report every file of @sp's process once, at the bias of its first map
 * entry there. */
static void report_space(struct symbolizer *s, struct space *sp)
{
	if (!s->elf_ready) {
		s->elf_ready = 1;
		elf_version(EV_CURRENT);
	}
	if (!(sp->dwfl = dwfl_begin(&callbacks)))
		return;
	if (!(sp->paths = calloc(SYM_FILES, sizeof(*sp->paths))))
		return;
	dwfl_report_begin(sp->dwfl);
	for (size_t i = 0; i < s->nmaps && s->nfiles < SYM_FILES; i++) {
		const struct smap *m = &s->maps[i];
		if (!in_space(m, sp->process) || reported(sp, m->path))
			continue;
		sp->paths[sp->npaths++] = m->path;
		s->nfiles++;
		int ok, fd = open_regular(m->path);
		if (fd < 0)
			continue;
		uint64_t bias = bias_of(fd, m, &ok);
		/* On success the fd is libdwfl's. */
		if (!ok || !dwfl_report_elf(sp->dwfl, m->path, m->path, fd, bias, true))
			close(fd);
	}
	dwfl_report_end(sp->dwfl, NULL, NULL);
}

/* @process's space, reported the first time; NULL past SYM_SPACES. */
static struct space *space_of(struct symbolizer *s, uint64_t process)
{
	for (size_t i = 0; i < s->nspaces; i++)
		if (s->spaces[i].process == process)
			return &s->spaces[i];
	if (s->nspaces == SYM_SPACES)
		return NULL;
	struct space *sp = &s->spaces[s->nspaces++];
	sp->process = process;
	report_space(s, sp);
	return sp;
}

/* "FILE+0xOFF" for an address of a mapped file no symbol holds. */
static const char *fallback(struct symbolizer *s, uint64_t process, uint64_t addr)
{
	char buf[64], *p = NULL;
	const struct smap *m = NULL;
	for (size_t i = 0; i < s->nmaps && !m; i++)
		if (in_space(&s->maps[i], process) && addr - s->maps[i].start < s->maps[i].len)
			m = &s->maps[i];
	if (m) {
		const char *base = strrchr(m->path, '/');
		if (asprintf(&p, "%s+0x%" PRIx64, base ? base + 1 : m->path,
		             addr - m->start + m->pgoff) < 0)
			p = NULL;
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
		p = strdup(buf);
	}
	if (!p)
		return "?";
	if (s->nowned == s->cap_owned) {
		size_t cap = s->cap_owned ? 2 * s->cap_owned : 64;
		char **o = realloc(s->owned, cap * sizeof(*o));
		if (!o) {
			free(p);
			return "?";
		}
		s->owned = o;
		s->cap_owned = cap;
	}
	return s->owned[s->nowned++] = p;
}

/* @sym as C++ reads it ("ns::f(int)" for "_ZN2ns1fEi"), each symbol
 * demangled once; a symbol that is not a C++ one, that the demangler
 * refuses, longer than SYM_DEMANGLE_MAX (the demangler's work and depth
 * grow with it; the names are the traced files', not katra's), or past
 * SYM_DEMANGLED of them stays as it is. */
static const char *demangle(struct symbolizer *s, const char *sym)
{
	if (sym[0] != '_' || sym[1] != 'Z' || strnlen(sym, SYM_DEMANGLE_MAX + 1) > SYM_DEMANGLE_MAX)
		return sym;
	if (!s->dem && !(s->dem = calloc(SYM_DEMANGLED, sizeof(*s->dem))))
		return sym;
	size_t i = (size_t)(((uintptr_t)sym * UINT64_C(0x9e3779b97f4a7c15)) >> 40) &
		   (SYM_DEMANGLED - 1);
	for (size_t probes = 0; s->dem[i].sym && probes < 64; probes++) {
		if (s->dem[i].sym == sym)
			return s->dem[i].name ? s->dem[i].name : sym;
		i = (i + 1) & (SYM_DEMANGLED - 1);
	}
	if (s->dem[i].sym || s->ndem >= SYM_DEMANGLED / 2)
		return sym;
	int st = -1;
	char *d = __cxa_demangle(sym, NULL, NULL, &st);
	if (st) {
		free(d);
		d = NULL;
	}
	s->dem[i] = (struct demangled){ sym, d };
	s->ndem++;
	return d ? d : sym;
}

static const char *lookup(struct symbolizer *s, uint64_t process, uint64_t addr, int ret)
{
	/* A return address is the instruction after the call: the call is
	 * the byte before it, which may be the last of another function. */
	uint64_t a = ret && addr ? addr - 1 : addr;
	struct space *sp = space_of(s, process);
	Dwfl_Module *mod = sp && sp->dwfl ? dwfl_addrmodule(sp->dwfl, a) : NULL;
	const char *name = mod ? dwfl_module_addrname(mod, a) : NULL;
	if (name && *name) {
		s->named++;
		return demangle(s, name);
	}
	s->unnamed++;
	return fallback(s, process, addr);
}

static const char *name_in(struct symbolizer *s, uint64_t process, uint64_t addr, int ret)
{
	uint64_t key = (addr << 1 | (ret ? 1 : 0)) + 1;
	size_t i = (size_t)(((key ^ process * UINT64_C(0xff51afd7ed558ccd)) *
			     UINT64_C(0x9e3779b97f4a7c15)) >> 44) & (SYM_CACHE - 1);
	for (size_t probes = 0; s->cache[i].key && probes < 64; probes++) {
		if (s->cache[i].key == key && s->cache[i].space == process)
			return s->cache[i].name;
		i = (i + 1) & (SYM_CACHE - 1);
	}
	const char *name = lookup(s, process, addr, ret);
	if (!s->cache[i].key && s->ncache < SYM_CACHE / 2) {
		s->cache[i] = (struct cached){ key, process, name };
		s->ncache++;
	}
	return name;
}

const char *sym_name(struct symbolizer *s, uint64_t addr, int ret)
{
	return name_in(s, SYM_ANY, addr, ret);
}

const char *sym_name_in(struct symbolizer *s, uint32_t process, uint64_t addr, int ret)
{
	return name_in(s, process, addr, ret);
}

void sym_counts(const struct symbolizer *s, uint64_t *named, uint64_t *unnamed)
{
	*named = s->named;
	*unnamed = s->unnamed;
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nspaces; i++) {
		if (s->spaces[i].dwfl)
			dwfl_end(s->spaces[i].dwfl);
		free(s->spaces[i].paths);
	}
	for (size_t i = 0; i < s->nmaps; i++)
		free(s->maps[i].path);
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	for (size_t i = 0; s->dem && i < SYM_DEMANGLED; i++)
		free(s->dem[i].name);
	free(s->dem);
	free(s->owned);
	free(s->maps);
	free(s->cache);
	free(s);
}

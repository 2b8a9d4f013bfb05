/*
 * symbolize.h - the function names of a trace's sampled addresses (SPEC
 * §4.11, §4.12), offline, through elfutils' libdwfl: each executable file
 * the trace's map entries name (a PIE, a shared library, a non-PIE
 * executable) is reported to libdwfl at the bias its mapping gives, and an
 * address is named by the symbol table of the file that holds it.
 *
 * The paths are the trace's, not katra's: a file is opened only when it is
 * a regular file (no symlink in its last part, no FIFO, O_NONBLOCK), and a
 * file that changed since the trace was written gives wrong names (the
 * map entries hold no build-id yet).  Each process's map entries are an
 * address space of their own (ASLR puts one library at two addresses in
 * two processes of a merged trace).  Bounded: at most SYM_FILES files
 * reported in all, SYM_SPACES processes (the addresses of those past it
 * unnamed) and SYM_CACHE names remembered; past them addresses are
 * looked up again.  C++ names are demangled (libstdc++'s demangler):
 * SYM_DEMANGLED of them, each at most SYM_DEMANGLE_MAX bytes mangled;
 * others stay mangled.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_SYMBOLIZE_H
#define KT_TOOLS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

#define SYM_FILES 1024u
#define SYM_CACHE (1u << 20)
#define SYM_SPACES 256u
#define SYM_DEMANGLED (1u << 16)
#define SYM_DEMANGLE_MAX 1024u

struct symbolizer;

/* An empty symbolizer; NULL without memory. */
struct symbolizer *sym_new(void);

/* Take map entry @m (copied).  0, or -ENOMEM; a file past SYM_FILES or
 * one that cannot be opened is left out (its addresses unnamed). */
int sym_add_map(struct symbolizer *s, const kt_map_def *m);

/*
 * sym_name - the function that holds @addr: its symbol's name, or, when
 * no symbol holds it, "FILE+0xOFF" for an address inside a mapped file,
 * else "0xADDR".  @ret: @addr is a return address (a caller's frame), so
 * the call before it is looked up.  The string stays valid until
 * sym_free(); it is the file's text, not escaped.  Every process's map
 * entries at once, each file where its first entry put it: right for a
 * trace of one process (sym_name_in() for a merged one).
 */
const char *sym_name(struct symbolizer *s, uint64_t addr, int ret);

/* As sym_name(), among process @process's map entries alone (SPEC §4.12:
 * a map entry's process; 0 the file's own): the name of @addr in that
 * process, wherever another process mapped the same file. */
const char *sym_name_in(struct symbolizer *s, uint32_t process, uint64_t addr, int ret);

/* How many addresses sym_name() named by a symbol, and how many not. */
void sym_counts(const struct symbolizer *s, uint64_t *named, uint64_t *unnamed);

/* Free @s (NULL accepted). */
void sym_free(struct symbolizer *s);

#endif

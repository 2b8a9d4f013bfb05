/*
 * katra/version.h - which katra this is, and the export macro.
 *
 * Every other public header includes it.  The numbers here are the one
 * copy of the version: CMakeLists.txt reads the project's version from
 * them.
 *
 * Threads: kt_version() and kt_version_string() from any thread, any time.
 */
#ifndef KATRA_VERSION_H
#define KATRA_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports: every public function is marked with it, and
 * the library is built with hidden visibility for everything else. */
#if defined(KT_BUILDING_LIBRARY)
#define KT_API __attribute__((visibility("default")))
#else
#define KT_API
#endif

/*
 * The library's version, MAJOR.MINOR.PATCH.  MAJOR changes break the API
 * or the ABI; MINOR adds to them (while MAJOR is 0, a MINOR change may
 * break them too, so a build asks for the same minor); PATCH fixes without
 * changing either.
 */
#define KT_VERSION_MAJOR 0
#define KT_VERSION_MINOR 4
#define KT_VERSION_PATCH 0
/* One number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define KT_VERSION_NUMBER \
	(KT_VERSION_MAJOR * 10000 + KT_VERSION_MINOR * 100 + KT_VERSION_PATCH)
#define KT__STR2(x) #x
#define KT__STR(x) KT__STR2(x)
/* "MAJOR.MINOR.PATCH", e.g. "0.2.0". */
#define KT_VERSION_STRING \
	KT__STR(KT_VERSION_MAJOR) "." KT__STR(KT_VERSION_MINOR) "." KT__STR(KT_VERSION_PATCH)

/** The trace format version this library writes (format/SPEC.md). */
#define KT_FORMAT_VERSION 5u
/** The oldest version it still reads: version 1 lacks codecs 2-4 only,
 * version 2 codecs 3 and 4, version 3 process entries, version 4 stack
 * and map entries and sample records. */
#define KT_FORMAT_VERSION_MIN 1u

/**
 * kt_version - the library's version at run time.
 *
 * Return: KT_VERSION_NUMBER of the library actually loaded, which may differ
 * from the header a program was compiled against.  Any thread, any time.
 */
KT_API unsigned kt_version(void);

/**
 * kt_version_string - the library's version as text, e.g. "0.2.0".
 *
 * Return: a static string.  Any thread, any time.
 */
KT_API const char *kt_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_VERSION_H */

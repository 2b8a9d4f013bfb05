/*
 * katra/error.h - error codes shared by every katra header.
 *
 * Every katra function that can fail returns 0 (or a count) on success and a
 * negative value on failure.  A negative value is either -errno from the C
 * library (for example -ENOENT when a path does not exist) or one of the
 * katra codes below, which sit far below the errno range so the two never
 * collide.  kt_strerror() names either kind.
 */
#ifndef KATRA_ERROR_H
#define KATRA_ERROR_H

#include <katra/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The one list of katra error codes.  It generates the enum below and the
 * message table behind kt_strerror(), so a code cannot exist without its
 * message.  Append only: the numbers are part of the ABI.
 */
#define KT_ERROR_LIST(X)                                                      \
	X(KT_EMAGIC,      -4096, "not a katra trace (bad magic)")              \
	X(KT_EVERSION,    -4097, "unsupported format version")                 \
	X(KT_EHEADER,     -4098, "malformed file header")                      \
	X(KT_EHDRSUM,     -4099, "file header checksum mismatch")              \
	X(KT_EFRAMEHEAD,  -4100, "frame head check mismatch (length or kind corrupt)") \
	X(KT_EFRAMELEN,   -4101, "frame length out of range")                  \
	X(KT_ECHECKSUM,   -4102, "frame checksum mismatch")                    \
	X(KT_ERESERVED,   -4103, "reserved field or padding not zero")         \
	X(KT_EFRAME,      -4104, "malformed frame body")                       \
	X(KT_ECODEC,      -4105, "unknown chunk codec")                        \
	X(KT_ERAWLEN,     -4106, "chunk raw length does not match its payload") \
	X(KT_ECOUNT,      -4107, "chunk event count does not match its payload") \
	X(KT_EEVENT,      -4108, "malformed event record")                     \
	X(KT_ETOOBIG,     -4109, "size exceeds a stated limit")                \
	X(KT_ETRUNCATED,  -4110, "file is truncated")                          \
	X(KT_ETRAILING,   -4111, "data after the session summary")             \
	X(KT_EORDER,      -4112, "frame out of order")                         \
	X(KT_ENOSESSION,  -4113, "no session is active")                       \
	X(KT_EBUSY,       -4114, "a session is already active")                \
	X(KT_ESTATE,      -4115, "object is in the wrong state for this call") \
	X(KT_ESUMMARY,    -4116, "session summary disagrees with the file") \
	X(KT_ENOTFILE,    -4117, "not a regular file (traces are read from files: save a stream to a file first)")

/** katra error codes; every value is negative. */
typedef enum kt_err {
#define KT__ERR_ENUM(name, value, msg) name = value,
	KT_ERROR_LIST(KT__ERR_ENUM)
#undef KT__ERR_ENUM
	KT__ERR_LAST_UNUSED = 0
} kt_err;

/**
 * kt_strerror - describe an error value.
 * @err: a value returned by any katra function: a katra code, -errno, or 0.
 *
 * Return: a static, NUL-terminated English message; never NULL.  For 0 it is
 * "success"; for an unknown value, "unknown katra error".  Any thread may
 * call it at any time; the strings are never freed.
 */
KT_API const char *kt_strerror(int err);

/**
 * kt_err_name - the symbolic name of an error value.
 * @err: as for kt_strerror().
 *
 * Return: a static string such as "KT_ECHECKSUM" or "ENOENT"; for a value
 * katra does not know, "KT_EUNKNOWN".  Thread-safe.
 */
KT_API const char *kt_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* KATRA_ERROR_H */

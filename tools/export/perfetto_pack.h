/*
 * perfetto_pack.h - Perfetto packets compressed in batches: each batch of
 * whole TracePackets (the bytes of a Trace) goes out as one TracePacket
 * whose zstd_compressed_packets (field 133) or compressed_packets (field
 * 50, zlib's deflate) holds them, as Perfetto's own service writes them.
 * export_perfetto.c hands its output buffer's batches here (xout.sink).
 *
 * One thread per packer.
 */
#ifndef KT_TOOLS_PERFETTO_PACK_H
#define KT_TOOLS_PERFETTO_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct perfetto_pack;

/* perfetto_pack_new - a packer of batches up to @batch bytes, compressed
 * with @codec (PERFETTO_ZSTD or PERFETTO_DEFLATE), into @f.  NULL when out
 * of memory. */
struct perfetto_pack *perfetto_pack_new(FILE *f, int codec, size_t batch);

/* perfetto_pack_write - compress @len bytes of whole packets and write
 * them as one packet.  Returns 0, or -1 when compressing or writing
 * failed (an xout sink). */
int perfetto_pack_write(void *pack, const uint8_t *buf, size_t len);

/* perfetto_pack_free - release; NULL is a no-op. */
void perfetto_pack_free(struct perfetto_pack *pk);

#endif

/*
 * The deprecated names of public functions: each calls the function that
 * replaced it, so programs built against older headers still link.
 */
#include <katra/reader.h>
#include <katra/writer.h>

const kt_header *kt_reader_header(const kt_reader *r)
{
	return kt_reader_get_header(r);
}

const kt_reader_error *kt_reader_last_error(const kt_reader *r)
{
	return kt_reader_get_last_error(r);
}

uint64_t kt_writer_bytes(const kt_writer *w)
{
	return kt_writer_get_bytes(w);
}

/*
 * sql_duck.h - the part of DuckDB's C API that `katra sql` and
 * `katra export --parquet` call, loaded at run time.
 *
 * katra does not link DuckDB: it builds and runs without it, and dlopen()s
 * libduckdb.so only when a command needs the engine.  The types and
 * functions below are katra's own declarations of DuckDB's documented C
 * API (names, argument types and the layout of duckdb_result are the
 * API's facts); each function is looked up by name with dlsym() into
 * struct duck, so a library that lacks one is refused at load, never
 * called.
 *
 * Where the library is looked for, in order: $KATRA_DUCKDB (a path to
 * libduckdb.so), then SQL_DUCK_DEFAULT (where scripts/deps.sh installs
 * npm's @duckdb/node-bindings-linux-x64), then the loader's own search
 * (LD_LIBRARY_PATH, ld.so.cache) for "libduckdb.so".  When KATRA_DUCKDB is
 * set, it is the one place looked at.
 *
 * Threads: duck_load() once, on the command's thread; DuckDB then calls
 * katra's table function (tools/cmd/sql_scan.h) from threads of its own.
 */
#ifndef KT_TOOLS_SQL_DUCK_H
#define KT_TOOLS_SQL_DUCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQL_DUCK_DEFAULT \
	"/opt/katra-duckdb/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so"

typedef uint64_t idx_t;
typedef enum { DuckDBSuccess = 0, DuckDBError = 1 } duckdb_state;

/* The column types katra's views use, and the ones its output tells apart
 * (DUCKDB_TYPE_* values of the API). */
typedef enum {
	DUCKDB_TYPE_BOOLEAN = 1,
	DUCKDB_TYPE_TINYINT = 2,
	DUCKDB_TYPE_SMALLINT = 3,
	DUCKDB_TYPE_INTEGER = 4,
	DUCKDB_TYPE_BIGINT = 5,
	DUCKDB_TYPE_UTINYINT = 6,
	DUCKDB_TYPE_USMALLINT = 7,
	DUCKDB_TYPE_UINTEGER = 8,
	DUCKDB_TYPE_UBIGINT = 9,
	DUCKDB_TYPE_FLOAT = 10,
	DUCKDB_TYPE_DOUBLE = 11,
	DUCKDB_TYPE_HUGEINT = 16,
	DUCKDB_TYPE_VARCHAR = 17,
	DUCKDB_TYPE_DECIMAL = 19,
	DUCKDB_TYPE_UHUGEINT = 32,
} duckdb_type;

/* Opaque handles: a pointer each. */
typedef struct duck_opaque_ *duckdb_database;
typedef struct duck_opaque_ *duckdb_connection;
typedef struct duck_opaque_ *duckdb_config;
typedef struct duck_opaque_ *duckdb_logical_type;
typedef struct duck_opaque_ *duckdb_data_chunk;
typedef struct duck_opaque_ *duckdb_vector;
typedef struct duck_opaque_ *duckdb_value;
typedef struct duck_opaque_ *duckdb_table_function;
typedef struct duck_opaque_ *duckdb_bind_info;
typedef struct duck_opaque_ *duckdb_init_info;
typedef struct duck_opaque_ *duckdb_function_info;

/* A materialized result: six words, of which katra reads none directly. */
typedef struct {
	idx_t column_count_, row_count_, rows_changed_;
	void *columns_;
	char *error_message_;
	void *internal_data_;
} duckdb_result;

typedef void (*duckdb_delete_callback_t)(void *data);
typedef void (*duckdb_table_function_bind_t)(duckdb_bind_info info);
typedef void (*duckdb_table_function_init_t)(duckdb_init_info info);
typedef void (*duckdb_table_function_t)(duckdb_function_info info, duckdb_data_chunk output);

/* X(return type, name, parameters): every function katra calls. */
#define DUCK_FUNCTIONS(X)                                                                    \
	X(duckdb_state, duckdb_create_config, (duckdb_config *))                             \
	X(duckdb_state, duckdb_set_config, (duckdb_config, const char *, const char *))      \
	X(void, duckdb_destroy_config, (duckdb_config *))                                    \
	X(duckdb_state, duckdb_open_ext, (const char *, duckdb_database *, duckdb_config,   \
					  char **))                                          \
	X(void, duckdb_close, (duckdb_database *))                                           \
	X(duckdb_state, duckdb_connect, (duckdb_database, duckdb_connection *))              \
	X(void, duckdb_disconnect, (duckdb_connection *))                                    \
	X(duckdb_state, duckdb_query, (duckdb_connection, const char *, duckdb_result *))    \
	X(void, duckdb_destroy_result, (duckdb_result *))                                    \
	X(const char *, duckdb_result_error, (duckdb_result *))                              \
	X(idx_t, duckdb_column_count, (duckdb_result *))                                     \
	X(const char *, duckdb_column_name, (duckdb_result *, idx_t))                        \
	X(duckdb_type, duckdb_column_type, (duckdb_result *, idx_t))                         \
	X(idx_t, duckdb_row_count, (duckdb_result *))                                        \
	X(char *, duckdb_value_varchar, (duckdb_result *, idx_t, idx_t))                     \
	X(bool, duckdb_value_is_null, (duckdb_result *, idx_t, idx_t))                       \
	X(void, duckdb_free, (void *))                                                       \
	X(const char *, duckdb_library_version, (void))                                      \
	X(duckdb_logical_type, duckdb_create_logical_type, (duckdb_type))                    \
	X(void, duckdb_destroy_logical_type, (duckdb_logical_type *))                        \
	X(char *, duckdb_get_varchar, (duckdb_value))                                        \
	X(int64_t, duckdb_get_int64, (duckdb_value))                                         \
	X(void, duckdb_destroy_value, (duckdb_value *))                                      \
	X(duckdb_table_function, duckdb_create_table_function, (void))                       \
	X(void, duckdb_destroy_table_function, (duckdb_table_function *))                    \
	X(void, duckdb_table_function_set_name, (duckdb_table_function, const char *))       \
	X(void, duckdb_table_function_add_parameter, (duckdb_table_function,                 \
						      duckdb_logical_type))                  \
	X(void, duckdb_table_function_set_extra_info, (duckdb_table_function, void *,        \
						       duckdb_delete_callback_t))            \
	X(void, duckdb_table_function_set_bind, (duckdb_table_function,                      \
						 duckdb_table_function_bind_t))              \
	X(void, duckdb_table_function_set_init, (duckdb_table_function,                      \
						 duckdb_table_function_init_t))              \
	X(void, duckdb_table_function_set_local_init, (duckdb_table_function,                \
						       duckdb_table_function_init_t))        \
	X(void, duckdb_table_function_set_function, (duckdb_table_function,                  \
						     duckdb_table_function_t))               \
	X(void, duckdb_table_function_supports_projection_pushdown, (duckdb_table_function,  \
								     bool))                  \
	X(duckdb_state, duckdb_register_table_function, (duckdb_connection,                  \
							 duckdb_table_function))             \
	X(void *, duckdb_bind_get_extra_info, (duckdb_bind_info))                            \
	X(void, duckdb_bind_add_result_column, (duckdb_bind_info, const char *,              \
						duckdb_logical_type))                        \
	X(duckdb_value, duckdb_bind_get_parameter, (duckdb_bind_info, idx_t))                \
	X(void, duckdb_bind_set_bind_data, (duckdb_bind_info, void *,                        \
					    duckdb_delete_callback_t))                       \
	X(void, duckdb_bind_set_error, (duckdb_bind_info, const char *))                     \
	X(void *, duckdb_init_get_bind_data, (duckdb_init_info))                             \
	X(void *, duckdb_init_get_extra_info, (duckdb_init_info))                            \
	X(void *, duckdb_function_get_extra_info, (duckdb_function_info))                    \
	X(void, duckdb_init_set_init_data, (duckdb_init_info, void *,                        \
					    duckdb_delete_callback_t))                       \
	X(idx_t, duckdb_init_get_column_count, (duckdb_init_info))                           \
	X(idx_t, duckdb_init_get_column_index, (duckdb_init_info, idx_t))                    \
	X(void, duckdb_init_set_max_threads, (duckdb_init_info, idx_t))                      \
	X(void *, duckdb_function_get_bind_data, (duckdb_function_info))                     \
	X(void *, duckdb_function_get_init_data, (duckdb_function_info))                     \
	X(void *, duckdb_function_get_local_init_data, (duckdb_function_info))               \
	X(void, duckdb_function_set_error, (duckdb_function_info, const char *))             \
	X(void, duckdb_data_chunk_set_size, (duckdb_data_chunk, idx_t))                      \
	X(duckdb_vector, duckdb_data_chunk_get_vector, (duckdb_data_chunk, idx_t))           \
	X(void *, duckdb_vector_get_data, (duckdb_vector))                                   \
	X(uint64_t *, duckdb_vector_get_validity, (duckdb_vector))                           \
	X(void, duckdb_vector_ensure_validity_writable, (duckdb_vector))                     \
	X(void, duckdb_vector_assign_string_element_len, (duckdb_vector, idx_t,              \
							  const char *, idx_t))              \
	X(idx_t, duckdb_vector_size, (void))

#define DUCK_MEMBER(ret, name, args) ret(*name) args;
struct duck {
	void *handle;
	DUCK_FUNCTIONS(DUCK_MEMBER)
};
#undef DUCK_MEMBER

/* The loaded API; valid once duck_load() returned 0. */
extern struct duck duck;

/*
 * duck_load - dlopen() libduckdb.so (where the head says) and look up
 * every function.  Once loaded, later calls return 0 at once.
 * Return: 0; -1 with @why (@cap bytes) saying what was tried and what to
 * install.
 */
int duck_load(char *why, size_t cap);

#endif

/* Tessera common: the one status enum, allocation hooks, an arena, logging, a
 * monotonic clock and located diagnostics. Every other module builds on this
 * header. */
#ifndef TS_COMMON_H
#define TS_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TS_VERSION "0.1.0"

/* ---- status ------------------------------------------------------------ */

/* Negative values are errors, grouped by who is at fault. */
typedef enum {
  TS_OK = 0,
  TS_INPROGRESS = 1,
  /* the caller's fault */
  TS_ERR_INVALID_ARGUMENT = -1,
  TS_ERR_INVALID_USAGE = -2,
  /* the user's input (HLO text, shardings, flags naming files) */
  TS_ERR_PARSE = -10,
  TS_ERR_VERIFY = -11,
  /* a check that ran and found a difference (e.g. numerical mismatch) */
  TS_ERR_CHECK_FAILED = -20,
  /* valid input that this build or machine cannot run (too large, no GPU) */
  TS_ERR_UNSUPPORTED = -30,
  /* our bug */
  TS_ERR_INTERNAL = -40,
  /* the environment */
  TS_ERR_SYSTEM = -50,
  TS_ERR_NOMEM = -51,
  /* a peer or the transport */
  TS_ERR_REMOTE = -60,
  TS_ERR_TIMEOUT = -61,
} ts_status_t;

const char *ts_status_string(ts_status_t st);

/* CLI exit code for a status: 0 ok, 1 check failed, 2 bad input or usage,
 * 3 cannot run here, 4 anything else (internal, system, remote). */
int ts_status_exit_code(ts_status_t st);

#define TS_CHECK(expr)                          \
  do {                                          \
    ts_status_t ts_check_st_ = (expr);          \
    if (ts_check_st_ < 0) return ts_check_st_;  \
  } while (0)

#define TS_CHECK_GOTO(expr, st, label) \
  do {                                 \
    (st) = (expr);                     \
    if ((st) < 0) goto label;          \
  } while (0)

#ifdef NDEBUG
#define TS_ASSERT(cond) ((void)0)
#else
void ts_assert_fail(const char *cond, const char *file, int line);
#define TS_ASSERT(cond) ((cond) ? (void)0 : ts_assert_fail(#cond, __FILE__, __LINE__))
#endif

/* ---- allocation -------------------------------------------------------- */

/* Every heap allocation in Tessera goes through these hooks, so an embedder
 * (or a test that injects failures) can replace them. Defaults: libc. */
typedef struct {
  void *(*malloc_fn)(size_t size, void *ctx);
  void *(*realloc_fn)(void *p, size_t size, void *ctx);
  void (*free_fn)(void *p, void *ctx);
  void *ctx;
} ts_allocator_t;

void ts_set_allocator(const ts_allocator_t *a); /* NULL restores libc */
void *ts_malloc(size_t size);
void *ts_calloc(size_t n, size_t size);
void *ts_realloc(void *p, size_t size);
void ts_free(void *p);
char *ts_strdup(const char *s);

/* A bump allocator: many small objects that die together. Memory is zeroed.
 * Allocation failure returns NULL. */
typedef struct ts_arena ts_arena_t;

ts_arena_t *ts_arena_create(void);
void ts_arena_destroy(ts_arena_t *a); /* NULL is a no-op */
void *ts_arena_alloc(ts_arena_t *a, size_t size);
char *ts_arena_strndup(ts_arena_t *a, const char *s, size_t n);
char *ts_arena_strdup(ts_arena_t *a, const char *s);
char *ts_arena_printf(ts_arena_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
size_t ts_arena_bytes(const ts_arena_t *a); /* bytes reserved from the heap */

/* ---- growable string buffer -------------------------------------------- */

typedef struct {
  char *data; /* NUL-terminated; owned, free with ts_buf_free */
  size_t len, cap;
  bool oom;   /* set when an append failed; the buffer keeps what fit */
} ts_buf_t;

void ts_buf_append(ts_buf_t *b, const char *s, size_t n);
void ts_buf_puts(ts_buf_t *b, const char *s);
void ts_buf_putc(ts_buf_t *b, char c);
void ts_buf_printf(ts_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_buf_vprintf(ts_buf_t *b, const char *fmt, va_list ap);
void ts_buf_free(ts_buf_t *b);

/* ---- lists ------------------------------------------------------------- */

/* A list of integers (dimensions, a replica group, ...). Not owned. */
typedef struct {
  int n;
  int64_t *v;
} ts_i64_list_t;

/* ---- string map ------------------------------------------------------ */

/* Open-addressing hash map from strings to pointers. Keys are not copied:
 * they must outlive the map (arena strings do). A zeroed map is empty. */
typedef struct {
  const char *key; /* NULL: an empty slot */
  size_t len;
  void *val;
  uint64_t hash;
} ts_strmap_slot_t;

typedef struct {
  ts_strmap_slot_t *slots;
  size_t cap, count;
} ts_strmap_t;

/* Returns false when out of memory. Replaces an existing key's value. */
bool ts_strmap_put(ts_strmap_t *m, const char *key, size_t len, void *val);
/* One probe for "add unless there": key -> val is added when key is absent
 * (*existing = NULL); otherwise the map is left as it is and *existing is
 * key's value (so values added this way should not be NULL). Returns false
 * when out of memory. */
bool ts_strmap_insert(ts_strmap_t *m, const char *key, size_t len, void *val, void **existing);
void *ts_strmap_get(const ts_strmap_t *m, const char *key, size_t len);
/* Makes room for n keys without growing again (one allocation instead of a
 * chain of doublings, each rehashing every key). False when out of memory. */
bool ts_strmap_reserve(ts_strmap_t *m, size_t n);
void ts_strmap_free(ts_strmap_t *m);

/* ---- pointer map ------------------------------------------------------- */

/* Open-addressing hash map from non-NULL pointers (identity) to integers.
 * A zeroed map is empty. */
typedef struct {
  const void **keys;
  intptr_t *vals;
  size_t cap, count;
} ts_ptrmap_t;

/* Each returns false when out of memory. put replaces an existing key's
 * value; reserve makes room for n keys without growing again. */
bool ts_ptrmap_put(ts_ptrmap_t *m, const void *key, intptr_t val);
bool ts_ptrmap_reserve(ts_ptrmap_t *m, size_t n);
/* Whether key is there; its value into *val. */
bool ts_ptrmap_get(const ts_ptrmap_t *m, const void *key, intptr_t *val);
void ts_ptrmap_free(ts_ptrmap_t *m);

/* ---- interval tree ---------------------------------------------------- */

/* Closed intervals [a, b] of positions 0..npos-1, each stored with an id
 * below max_id: a segment tree in which an interval lives in the O(log n)
 * nodes that cover it exactly, so that a query meets only the intervals that
 * overlap it (O(log n + k)). What first-fit buffer packing asks (the
 * runtime's buffer assignment, the scheduler's arena estimate). */
typedef struct ts_interval_tree ts_interval_tree_t;

ts_status_t ts_interval_tree_create(int npos, int max_id, ts_interval_tree_t **out);
void ts_interval_tree_destroy(ts_interval_tree_t *t); /* NULL is a no-op */
/* Stores `id` over [a, b]; 0 <= a <= b < npos, 0 <= id < max_id. */
ts_status_t ts_interval_tree_insert(ts_interval_tree_t *t, int a, int b, int id);
/* Writes the id of every stored interval that meets [a, b] to out, once
 * each, in no particular order; returns how many. out holds as many ids as
 * have been inserted. */
int ts_interval_tree_query(ts_interval_tree_t *t, int a, int b, int *out);

/* ---- logging ----------------------------------------------------------- */

typedef enum { TS_LOG_ERROR, TS_LOG_WARN, TS_LOG_INFO, TS_LOG_DEBUG } ts_log_level_t;

void ts_log_set_level(ts_log_level_t lvl);
/* Rank prefix for multi-process runs ("[rank 3] "); -1 (default) prints none. */
void ts_log_set_rank(int rank);
void ts_log(ts_log_level_t lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define TS_LOG_WARN(...) ts_log(TS_LOG_WARN, __VA_ARGS__)
#define TS_LOG_INFO(...) ts_log(TS_LOG_INFO, __VA_ARGS__)
#define TS_LOG_DEBUG(...) ts_log(TS_LOG_DEBUG, __VA_ARGS__)

/* ---- time -------------------------------------------------------------- */

/* Milliseconds on CLOCK_MONOTONIC, for timing a stage: only differences mean
 * anything. */
double ts_now_ms(void);

/* ---- diagnostics ------------------------------------------------------- */

/* A source text that located errors point into. Not owned. */
typedef struct {
  const char *name; /* file name as the user gave it ("-" reads "<stdin>") */
  const char *text;
  size_t len;
} ts_source_t;

/* A position in a source: 1-based line and column (column counts bytes). */
typedef struct {
  int line, col;
} ts_loc_t;

/* Collects the first error of an operation as text:
 *   file:line:col: error: message
 *   <the source line>
 *   <spaces>^
 * Later errors are counted but not kept: the first one is the cause. */
typedef struct {
  char *text; /* NULL when no error; owned, free with ts_diag_free */
  int count;
} ts_diag_t;

void ts_diag_error(ts_diag_t *d, const ts_source_t *src, ts_loc_t loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ts_diag_verror(ts_diag_t *d, const ts_source_t *src, ts_loc_t loc, const char *fmt,
                    va_list ap);
/* An error about a whole file ("PATH: error: message", the form located
 * errors take for binary files and files that cannot be opened); returns st. */
ts_status_t ts_diag_path_error(ts_diag_t *d, const char *path, ts_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An error with no source position ("error: message"). */
void ts_diag_plain(ts_diag_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_diag_free(ts_diag_t *d);

/* Read a whole file ("-" is stdin) into a NUL-terminated heap buffer that the
 * caller frees with ts_free. Errors go to diag. */
ts_status_t ts_read_file(const char *path, char **out, size_t *out_len, ts_diag_t *diag);

/* A whole file's text, NUL-terminated and read-only: a big regular file is
 * mapped from the page cache (no fresh pages, no copy), anything else read
 * as ts_read_file does. */
typedef struct {
  char *data;
  size_t len;
  bool mapped;
} ts_text_t;
ts_status_t ts_text_load(const char *path, ts_text_t *t, ts_diag_t *diag);
void ts_text_free(ts_text_t *t); /* a zeroed text is fine */

/* Atomic output: writes go to PATH.tmp.XXXXXX in the same folder, renamed
 * over PATH only when complete, so PATH never holds a half-written file.
 * A symbolic link is followed (the link stays a link; the file it names is
 * replaced). A character device, FIFO or socket is written in place: a
 * rename would replace the node itself (`-o /dev/null` as root). */
typedef struct {
  FILE *f;      /* write here */
  char *tmp;    /* owned; NULL when written in place */
  char *path;   /* owned copy: the name errors give */
  char *target; /* owned: PATH through its links, what tmp is renamed over */
} ts_atomic_file_t;

ts_status_t ts_atomic_file_open(ts_atomic_file_t *af, const char *path, ts_diag_t *diag);
/* With `commit`, renames the file over PATH unless a write or the close
 * failed ("PATH: error: cannot write: No space left on device (ENOSPC)");
 * without, discards it silently (the caller reports why). Either way the
 * temporary file is gone after. */
ts_status_t ts_atomic_file_close(ts_atomic_file_t *af, bool commit, ts_diag_t *diag);
/* Writes `len` bytes to `path` atomically. */
ts_status_t ts_write_file_atomic(const char *path, const void *data, size_t len, ts_diag_t *diag);

/* Whether a write to `path` can work, asked before the work that makes the
 * bytes (a long run must not lose its result at the end): not a folder,
 * and a file can be created in its folder (or, for a device or FIFO,
 * it is writable). NULL and "-" (stdout) pass. TS_ERR_INVALID_ARGUMENT
 * with "PATH: error: ..." otherwise. */
ts_status_t ts_file_check_writable(const char *path, ts_diag_t *diag);

/* A file set: the files a folder receives as one result (`tessera run
 * --outputs DIR`), replaced whole. Files are written into a staging folder;
 * the close swaps it with DIR in one rename (renameat2 RENAME_EXCHANGE) when
 * DIR holds only members of the set and shares its parent's file system,
 * else moves the staged files in and removes members the new set lacks.
 * A write error (a full disk) leaves DIR as it was. `member` says which
 * names in DIR belong to the set. */
typedef struct {
  char *dir, *target, *stage; /* owned: as given, through its links, the staging folder */
  bool exists, inside;        /* DIR existed; the staging folder is inside it */
  unsigned mode;              /* DIR's permission bits */
  bool (*member)(const char *name);
  char **names; /* owned: the files written */
  int nnames, names_cap;
} ts_file_set_t;

/* Whether `dir` can receive a set: an existing folder a file can be created
 * in, or a missing one whose parent can. NULL passes. */
ts_status_t ts_file_set_check(const char *dir, ts_diag_t *diag);
ts_status_t ts_file_set_open(ts_file_set_t *s, const char *dir, bool (*member)(const char *name), ts_diag_t *diag);
/* Opens member `name` for writing (errors name DIR/name); close it with
 * ts_atomic_file_close before the set. */
ts_status_t ts_file_set_file(ts_file_set_t *s, const char *name, ts_atomic_file_t *af, ts_diag_t *diag);
/* With `commit`, puts the set in place; either way the staging folder is gone after. */
ts_status_t ts_file_set_close(ts_file_set_t *s, bool commit, ts_diag_t *diag);

#endif

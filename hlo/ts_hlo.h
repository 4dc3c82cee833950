/* Tessera HLO: the IR (module, computation, instruction, shape, layout,
 * literal, sharding syntax), the text parser and printer, and the verifier.
 *
 * The IR structs are public: every pass walks them. A module owns an arena;
 * every object reachable from it (shapes, attributes, strings, literals)
 * lives there and dies with ts_hlo_module_destroy. Mutate through the
 * functions below so that operand/user links stay consistent. */
#ifndef TS_HLO_H
#define TS_HLO_H

#include "ts_collective.h"
#include "ts_common.h"
#include "ts_elem.h"

/* ---- opcodes ------------------------------------------------------------ */

typedef enum {
#define X(e, s, arity) TS_OP_##e,
#include "opcodes.def"
#undef X
  TS_OP_COUNT
} ts_opcode_t;

const char *ts_opcode_name(ts_opcode_t op);
int ts_opcode_arity(ts_opcode_t op); /* -1: variadic */
bool ts_opcode_from_name(const char *s, size_t n, ts_opcode_t *out);
/* The collective kind of an opcode: a collective's synchronous form, its
 * -start and -done forms, send and recv. False for any other opcode. */
bool ts_opcode_coll_kind(ts_opcode_t op, ts_coll_kind_t *out);

/* ---- shapes and layouts ------------------------------------------------- */

/* A dimension of unbounded dynamic size (`?`). */
#define TS_DIM_UNBOUNDED INT64_C(-1)

/* Layout: `{minor_to_major : extensions}`. The extensions a CPU executor
 * ignores are kept as their own text so they print back as read. */
typedef struct {
  int rank;
  int64_t *minor_to_major; /* `rank` entries, minor-most first */
  int ntiles;              /* T(8,128)(2,1): one list per tile, -1 for '*' */
  ts_i64_list_t *tiles;
  int64_t element_size_bits; /* E(n); 0 when absent */
  int64_t memory_space;      /* S(n); 0 when absent */
  /* Other extensions (D(...), L(n), #(..), *(..), SC(..), P(..), M(n)) in
   * text order, verbatim, separated by nothing: printed right after T/E/S
   * in canonical order is not attempted. NULL when absent. */
  const char *other;
} ts_layout_t;

typedef struct ts_shape {
  ts_elem_t elem; /* TS_TUPLE for tuples, TS_TOKEN for token[] */
  int rank;
  int64_t *dims;        /* static size, or the bound of a dynamic dim */
  uint8_t *dynamic;     /* NULL when all static; else 1 for `<=N` and `?` */
  ts_layout_t *layout;  /* NULL when the text gave none */
  int ntuple;           /* tuples only */
  struct ts_shape **tuple;
} ts_shape_t;

/* Number of elements of an array shape (1 for a scalar). */
int64_t ts_shape_elements(const ts_shape_t *s);
/* Leaves of a (nested) tuple shape; an array is its own single leaf. An empty
 * tuple has 0 leaves. */
int ts_shape_leaf_count(const ts_shape_t *s);
/* Equality of type and dimensions (and dynamic markers); layouts compared
 * only when `layouts` is true and both shapes carry one. */
bool ts_shape_equal(const ts_shape_t *a, const ts_shape_t *b, bool layouts);
bool ts_shape_is_array(const ts_shape_t *s);
/* Bytes of a shape as the HLO types say, sub-byte types packed
 * (ceil(elements * bits / 8)); tuples sum their elements; token and opaque
 * (and NULL) are 0. */
uint64_t ts_shape_bytes(const ts_shape_t *s);
/* Bytes a shape takes in memory: elements * ts_elem_storage_bytes (one
 * storage unit per element); tuples sum their elements; token and opaque
 * (and NULL) are 0. */
uint64_t ts_shape_storage_bytes(const ts_shape_t *s);
/* Prints `f32[2,3]{1,0}` (layout only if `layouts`) / `(s32[], f32[4])`. */
void ts_shape_print(ts_buf_t *b, const ts_shape_t *s, bool layouts);

/* ---- literals ----------------------------------------------------------- */

/* A constant's value, row-major in logical index order whatever the layout.
 * Floating values keep the double the text gave (narrowing to the element
 * type is the interpreter's job); complex values are (re, im) pairs.
 * Integers and pred are int64; u64 values above INT64_MAX are stored as
 * their two's-complement bit pattern. */
typedef struct ts_literal {
  const ts_shape_t *shape;
  bool elided;         /* `{...}`: the data was left out by the dumper */
  int64_t count;       /* elements (not doubles) */
  double *f;           /* float/complex types: count (x2 for complex) */
  int64_t *i;          /* integer and pred types */
  int ntuple;          /* tuple literals */
  struct ts_literal **tuple;
} ts_literal_t;

/* ---- sharding (syntax) -------------------------------------------------- */

/* The sharding exactly as written, validated for syntax and the rules of
 * hlo_text_format.md section 8.2. Semantics (tiles, equality, propagation)
 * live in sharding/. */
typedef enum {
  TS_SHARD_REPLICATED,
  TS_SHARD_MANUAL,
  TS_SHARD_MAXIMAL,
  TS_SHARD_TILED,
  TS_SHARD_UNKNOWN,
  TS_SHARD_UNREDUCED,
  TS_SHARD_TUPLE,
  TS_SHARD_NAMED, /* V3 `{mesh[...], ...}` form: kept verbatim in `text` */
} ts_shard_kind_t;

typedef enum { TS_SUBGROUP_MANUAL, TS_SUBGROUP_REPLICATED, TS_SUBGROUP_MAXIMAL, TS_SUBGROUP_UNREDUCED } ts_subgroup_t;

typedef struct ts_sharding {
  ts_shard_kind_t kind;
  int64_t device;            /* MAXIMAL */
  ts_i64_list_t tile_dims;   /* TILED: the tile-assignment shape */
  bool iota;                 /* TILED: V2 iota form instead of an explicit list */
  ts_i64_list_t devices;     /* TILED: all device ids, row-major (filled for both forms) */
  ts_i64_list_t iota_reshape;/* V2: `<=[r0,...]` */
  ts_i64_list_t iota_perm;   /* V2: `T(p0,...)`; n == 0 when absent */
  bool last_tile_dim_replicate;
  int nsubgroups;            /* last_tile_dims={...} */
  ts_subgroup_t *subgroups;
  int shard_group;           /* 0 none, 1 shard_as, 2 shard_like */
  int64_t shard_group_id;
  const char *metadata;      /* `metadata=...` value verbatim, or NULL */
  const char *text;          /* NAMED: the whole text verbatim */
  int ntuple;                /* TUPLE */
  struct ts_sharding **tuple;
} ts_sharding_t;

void ts_sharding_print(ts_buf_t *b, const ts_sharding_t *s);

/* ---- attribute values --------------------------------------------------- */

typedef struct {
  int n;                   /* dimensions */
  int64_t *start, *limit, *stride;
} ts_slice_t;

typedef struct {
  int n;
  int64_t *lo, *hi, *interior;
} ts_padding_t;

typedef struct {
  int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
  bool reversal;
} ts_window_dim_t;

typedef struct {
  int n;
  ts_window_dim_t *dims;
} ts_window_t;

/* `dim_labels=b01f_01io->b01f`. Spatial lists are in label order. */
typedef struct {
  const char *text; /* the label string, printed back verbatim */
  int rank;         /* length of each of the three parts */
  int64_t in_batch, in_feature;
  int64_t k_in_feature, k_out_feature;
  int64_t out_batch, out_feature;
  int nspatial;
  int64_t *in_spatial, *k_spatial, *out_spatial;
} ts_conv_dnums_t;

/* `replica_groups=`: the explicit `{{0,1},{2,3}}` form or the iota form
 * `[G,S]<=[dims]T(perm)`, or the mesh form `mesh['x'=2,'y'=2] {'y'}` (groups
 * span the named axes). `groups` is filled in every case. */
typedef struct {
  bool iota;
  int64_t iota_groups, iota_group_size;
  ts_i64_list_t iota_reshape, iota_perm;
  int ngroups;
  ts_i64_list_t *groups;
  const char *mesh; /* the `mesh[...] {...}` text it was written as, or NULL */
} ts_replica_groups_t;

/* `input_output_alias={ {0}: (0, {}, may-alias), ... }` */
typedef struct {
  ts_i64_list_t output_index;
  int64_t param_number;
  ts_i64_list_t param_index;
  int kind; /* 0 unspecified, 1 may-alias, 2 must-alias */
} ts_alias_t;

/* `buffer_donor={ (0, {}), ... }` */
typedef struct {
  int64_t param_number;
  ts_i64_list_t param_index;
} ts_donor_t;

typedef enum {
  TS_ATTR_INT,        /* 5 */
  TS_ATTR_BOOL,       /* true */
  TS_ATTR_FLOAT,      /* 1e-05 */
  TS_ATTR_STRING,     /* "..." (value unescaped) */
  TS_ATTR_IDENT,      /* a bare word: LT, TOTALORDER, rng_uniform, kLoop */
  TS_ATTR_INT_LIST,   /* {1,0} */
  TS_ATTR_INT_LISTS,  /* {{0,1},{1,0}}: source_target_pairs, slice_sizes */
  TS_ATTR_BOOL_LIST,  /* {true,false} */
  TS_ATTR_SLICE,
  TS_ATTR_PADDING,
  TS_ATTR_WINDOW,
  TS_ATTR_CONV_DNUMS,
  TS_ATTR_REPLICA_GROUPS,
  TS_ATTR_COMP,       /* to_apply=%f, condition=, body=, calls=, ... */
  TS_ATTR_COMP_LIST,  /* branch_computations={%a, %b}, called_computations= */
  TS_ATTR_SHAPE,      /* outfeed_shape=... */
  TS_ATTR_SHAPE_LIST, /* operand_layout_constraints={...} */
  TS_ATTR_LITERAL,    /* literal= on custom-call */
  TS_ATTR_LAYOUT_SIG, /* entry_computation_layout={(...)->...} */
  TS_ATTR_ALIASES,    /* input_output_alias= */
  TS_ATTR_DONORS,     /* buffer_donor= */
  TS_ATTR_BLOB,       /* a brace blob kept verbatim, braces included:
                         metadata, backend_config={...}, frontend_attributes */
  TS_ATTR_RAW,        /* an attribute the parser does not know: value verbatim */
} ts_attr_kind_t;

struct ts_hlo_comp;

typedef struct {
  const char *name; /* without the '=' */
  ts_attr_kind_t kind;
  ts_loc_t loc;     /* of the attribute name; {0,0} when built by a pass */
  union {
    int64_t i;
    bool b;
    double f;
    const char *s;  /* STRING, IDENT, BLOB, RAW */
    ts_i64_list_t list;  /* INT_LIST; BOOL_LIST stores 0/1 */
    struct { int n; ts_i64_list_t *lists; } lists; /* INT_LISTS */
    ts_slice_t *slice;
    ts_padding_t *padding;
    ts_window_t *window;
    ts_conv_dnums_t *conv;
    ts_replica_groups_t *rg;
    struct { int n; struct ts_hlo_comp **comps; } comps; /* COMP (n == 1), COMP_LIST */
    const ts_shape_t *shape;
    struct { int n; const ts_shape_t **shapes; } shapes;
    ts_literal_t *literal;
    struct { int nparams; const ts_shape_t **params; const ts_shape_t *result; } sig;
    struct { int n; ts_alias_t *v; } aliases;
    struct { int n; ts_donor_t *v; } donors;
  } v;
} ts_hlo_attr_t;

/* ---- instructions, computations, modules -------------------------------- */

typedef struct ts_hlo_instr ts_hlo_instr_t;
typedef struct ts_hlo_comp ts_hlo_comp_t;
typedef struct ts_hlo_module ts_hlo_module_t;

struct ts_hlo_instr {
  const char *name;   /* unique in the module */
  ts_opcode_t op;
  /* For async sugar (`reduce-scatter-start`, `custom-call-done`, ...):
   * op is TS_OP_ASYNC_START/UPDATE/DONE and `async_wrapped` is the wrapped
   * opcode, printed back as `<wrapped>-start`. Otherwise TS_OP_COUNT. */
  ts_opcode_t async_wrapped;
  const ts_shape_t *shape;
  ts_hlo_comp_t *parent;
  int id;             /* dense per module, in creation order */
  ts_loc_t loc;       /* of the name in the source; {0,0} if built by a pass */
  bool is_root;

  int nops;
  ts_hlo_instr_t **ops;
  int nusers, users_cap;   /* unique users, in order of first use */
  ts_hlo_instr_t **users;
  int nctrl_preds;         /* control-predecessors={...} */
  ts_hlo_instr_t **ctrl_preds;

  int64_t param_number;    /* TS_OP_PARAMETER */
  ts_literal_t *literal;   /* TS_OP_CONSTANT */
  ts_sharding_t *sharding; /* NULL when unannotated; may be shared by several
                              instructions (propagation): replace, never modify */

  /* Every other attribute, in text order. Called computations are COMP /
   * COMP_LIST attributes; `called` flattens them in the same order. */
  int nattrs, attrs_cap;
  ts_hlo_attr_t *attrs;
  int ncalled;
  ts_hlo_comp_t **called;
};

struct ts_hlo_comp {
  const char *name;
  ts_hlo_module_t *module;
  ts_loc_t loc;
  bool is_entry;
  const char *execution_thread;  /* `, execution_thread="..."`, or NULL */
  int ninstrs, instrs_cap;       /* in text order (not necessarily topological) */
  ts_hlo_instr_t **instrs;
  int nparams;                   /* params[i] is parameter(i) */
  ts_hlo_instr_t **params;
  ts_hlo_instr_t *root;
};

struct ts_hlo_module {
  const char *name;
  ts_arena_t *arena;
  int ncomps, comps_cap;         /* in text order; callees usually first */
  ts_hlo_comp_t **comps;
  ts_hlo_comp_t *entry;
  int64_t replica_count;         /* header value, default 1 */
  int64_t num_partitions;        /* header value, default 1 */
  int nattrs, attrs_cap;         /* header attributes in text order (incl.
                                    replica_count/num_partitions when given) */
  ts_hlo_attr_t *attrs;
  ts_source_t source;            /* the text it was parsed from (arena copy),
                                    for located diagnostics; zero if built */
  int next_id;
  ts_strmap_t names;             /* instruction names, module-wide */
  ts_strmap_t comp_names;
  ts_strmap_t name_next;          /* name stem -> next free `.N` (renaming) */
  ts_strmap_t interned;          /* ts_hlo_intern: string -> its module copy */
  ts_strmap_t shape_keys;        /* ts_hlo_shape_intern: shape bytes -> shape */
  ts_buf_t shape_key;            /* scratch for the key being looked up */
  char *pool;                    /* small objects are carved from here at */
  size_t pool_left;              /* their own alignment (hlo_internal.h) */
};

/* ---- building and editing ----------------------------------------------- */

ts_hlo_module_t *ts_hlo_module_create(const char *name); /* NULL on OOM */
void ts_hlo_module_destroy(ts_hlo_module_t *m);          /* NULL is a no-op */
/* Room for ninstrs more instructions' names without growing the name map
 * again: a builder that knows its size skips the doublings (each rehashes
 * every name; at a million instructions, 128 MB of maps thrown away). */
ts_status_t ts_hlo_module_reserve(ts_hlo_module_t *m, size_t ninstrs);

/* XLA's group mode (ts_coll_group_mode) of collective i from its
 * channel_id and use_global_device_ids=true. `op` is the collective's
 * opcode: i's own, or the one its async wrapper runs (TS_OP_COUNT: i's). */
ts_coll_group_mode_t ts_hlo_group_mode(const ts_hlo_instr_t *i, ts_opcode_t op);

/* Adds a computation; the name must be unique (else TS_ERR_INVALID_ARGUMENT). */
ts_status_t ts_hlo_comp_add(ts_hlo_module_t *m, const char *name, ts_hlo_comp_t **out);
ts_hlo_comp_t *ts_hlo_module_find_comp(const ts_hlo_module_t *m, const char *name);

/* The ids of c's instructions all lie in [*lo, *hi): a table indexed by
 * id - lo is sized to the computation, not to the module (a module with many
 * small computations, fused ones say, stays linear). */
void ts_hlo_comp_id_range(const ts_hlo_comp_t *c, int *lo, int *hi);

/* The instructions of `c` in a post-order over operands and control
 * predecessors (every instruction after what it depends on), visiting roots
 * in text order; iterative, since chains in real modules are deep.
 * order[0..c->ninstrs) is filled (order has room for c->ninstrs). */
ts_status_t ts_hlo_comp_post_order(const ts_hlo_comp_t *c, const ts_hlo_instr_t **order);
/* The same walk over operands alone (control predecessors ignored): the
 * order of a pass that follows data dependencies only. */
ts_status_t ts_hlo_comp_operand_post_order(const ts_hlo_comp_t *c, const ts_hlo_instr_t **order);

/* Appends an instruction with the given operands (users are updated). The
 * name is made unique in the module (`name`, else `name.N`); NULL names it
 * after the opcode. The shape is not copied: allocate it in the module arena
 * (ts_hlo_shape_array/tuple) or reuse one from the module. */
ts_status_t ts_hlo_instr_add(ts_hlo_comp_t *c, ts_opcode_t op, const ts_shape_t *shape,
                             ts_hlo_instr_t *const *ops, int nops, const char *name,
                             ts_hlo_instr_t **out);
ts_hlo_instr_t *ts_hlo_comp_find_instr(const ts_hlo_comp_t *c, const char *name);
/* Moves i, name, attributes and all, to the end of `to` (a pass that
 * outlines instructions, e.g. fusion). Only i->parent and to->instrs
 * change: the caller rewires operands and users and drops i from its old
 * computation's list. */
ts_status_t ts_hlo_instr_move(ts_hlo_instr_t *i, ts_hlo_comp_t *to);
/* Gives c's instructions fresh ids, consecutive in list order, so that an
 * id-indexed walk of c stays as small as c (after ts_hlo_instr_move). */
void ts_hlo_comp_renumber(ts_hlo_comp_t *c);
ts_status_t ts_hlo_instr_add_operand(ts_hlo_instr_t *i, ts_hlo_instr_t *op);
/* Appends an attribute (a shallow copy of `a`; its payload must live in the
 * module arena). Called computations also go to `called`. */
ts_status_t ts_hlo_instr_add_attr(ts_hlo_instr_t *i, const ts_hlo_attr_t *a);
/* Makes room for n more attributes, exactly: a pass that copies a known
 * number of them calls this first, so the array is not grown by doubling
 * (a module holds millions of these arrays). */
ts_status_t ts_hlo_instr_reserve_attrs(ts_hlo_instr_t *i, int n);
/* The module's one copy of s[0..n) (NUL-terminated): equal strings get the
 * same pointer, so an attribute name copied into a module a million times
 * takes its bytes once. Lives as long as the module; NULL when out of
 * memory. */
const char *ts_hlo_intern(ts_hlo_module_t *m, const char *s, size_t n);
const ts_hlo_attr_t *ts_hlo_instr_attr(const ts_hlo_instr_t *i, const char *name);

/* What a custom-call's target means to Tessera (hlo/custom_call.c). */
typedef enum {
  TS_CC_UNKNOWN,        /* no meaning here: an error naming the target */
  TS_CC_SHARDING,       /* a sharding annotation: the value passes through */
  TS_CC_REGION_ENTER,   /* SPMDFullToShardShape: a manual region begins */
  TS_CC_REGION_EXIT,    /* SPMDShardToFullShape: it ends */
  TS_CC_IDENTITY,       /* a placement or layout annotation: the value passes through */
  TS_CC_TOPK,           /* XLA's TopK */
  TS_CC_DEVICE_LIBRARY, /* a vendor library's kernel (cuBLAS, cuDNN, ...): cannot run on CPU */
} ts_custom_call_kind_t;
ts_custom_call_kind_t ts_hlo_custom_call_kind(const ts_hlo_instr_t *i);
const char *ts_hlo_custom_call_target(const ts_hlo_instr_t *i); /* "" when none */
ts_status_t ts_hlo_module_add_attr(ts_hlo_module_t *m, const ts_hlo_attr_t *a);
const ts_hlo_attr_t *ts_hlo_module_attr(const ts_hlo_module_t *m, const char *name);
void ts_hlo_comp_set_root(ts_hlo_comp_t *c, ts_hlo_instr_t *root);
/* Rebuilds c->params from its parameter instructions (after a pass added
 * them with ts_hlo_instr_add and set param_number). TS_ERR_INVALID_ARGUMENT
 * when numbers repeat or leave a gap. */
ts_status_t ts_hlo_comp_index_params(ts_hlo_comp_t *c);

/* Shapes allocated in the module arena. */
ts_shape_t *ts_hlo_shape_array(ts_hlo_module_t *m, ts_elem_t elem, int rank, const int64_t *dims);
ts_shape_t *ts_hlo_shape_tuple(ts_hlo_module_t *m, int n, ts_shape_t *const *elems);
/* The module's shared shape equal to s in every field (element type, dims,
 * dynamic markers, layout with its tiles and extensions; a tuple element by
 * element), copied into the arena the first time it is seen; s itself is not
 * kept. The parser gives instructions their shapes this way, so equal shapes
 * are one object: never modify a shape an instruction has. NULL when out of
 * memory. */
const ts_shape_t *ts_hlo_shape_intern(ts_hlo_module_t *m, const ts_shape_t *s);

/* ---- text --------------------------------------------------------------- */

typedef struct {
  int max_nesting; /* braces/parens/tuple depth limit; 0 means 256 */
  /* The caller keeps src->text unchanged for as long as the module lives
   * (the compile driver holds the file it read), with src->text[src->len]
   * readable: when that byte is '\0' the module's source points at the
   * caller's text instead of a copy, which for a 200 MB dump is 200 MB of
   * fresh pages; otherwise it is copied as usual. */
  bool borrow_text;
} ts_hlo_parse_opts_t;

/* Parses HLO text (a module with a header, a headerless list of computations,
 * or one bare computation body). The text is copied into the module arena
 * (unless opts->borrow_text).
 * On error returns TS_ERR_PARSE (or TS_ERR_NOMEM) with the first error in
 * `diag` as `file:line:col: error: ...`, source line and caret; *out is NULL.
 * opts may be NULL. Structural checks that need the whole module (cycles,
 * shapes) are the verifier's. */
ts_status_t ts_hlo_parse(const ts_source_t *src, const ts_hlo_parse_opts_t *opts,
                         ts_hlo_module_t **out, ts_diag_t *diag);

/* Writes canonical HLO text. Parse -> print -> parse -> print is a fixed
 * point. Returns TS_ERR_NOMEM if the buffer could not grow. */
ts_status_t ts_hlo_print(const ts_hlo_module_t *m, ts_buf_t *out);
void ts_hlo_instr_print(ts_buf_t *b, const ts_hlo_instr_t *i);

/* ---- verifier ----------------------------------------------------------- */

typedef struct {
  /* Overrides for the header's replica_count / num_partitions (0: keep):
   * a collective without replica_groups takes its group size from these. */
  int64_t replica_count, num_partitions;
} ts_hlo_verify_opts_t;

/* Checks structure (ownership links, operands in the same computation,
 * unique names, one root, called computations with the right signatures,
 * dense parameter numbers, no cycles) and re-derives every instruction's
 * shape from its operands and attributes. The first violation goes to diag
 * naming the instruction, its location when parsed from text, and the rule;
 * returns TS_ERR_VERIFY. opts may be NULL. */
ts_status_t ts_hlo_verify(const ts_hlo_module_t *m, const ts_hlo_verify_opts_t *opts,
                          ts_diag_t *diag);

#endif

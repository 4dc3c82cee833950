/* Unit tests for ts_hlo_verify on parsed text: a zoo module with every
 * inferred opcode once, then one broken rule per case with the exact message.
 * Result shapes and messages are worked out by hand from the rules. */
#include "ts_hlo.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>

/* ---- parsed text: every inferred opcode once, then one broken rule each ---- */

/* Parses and verifies `text`; `want` is the expected message after
 * "error: " on the first line, or NULL for a module that must verify. */
static void expect_text(const char *text, const ts_hlo_verify_opts_t *o, const char *want, int line) {
  ts_source_t src = {"t.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &d);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: does not parse: %s", __FILE__, line, d.text ? d.text : "?\n");
    failures++;
  } else {
    st = ts_hlo_verify(m, o, &d);
    const char *msg = d.text ? strstr(d.text, "error: ") : NULL;
    size_t len = msg ? strcspn(msg + 7, "\n") : 0;
    bool ok = want ? st == TS_ERR_VERIFY && msg && len == strlen(want) && strncmp(msg + 7, want, len) == 0
                   : st == TS_OK;
    if (!ok) {
      fprintf(stderr, "%s:%d: FAIL\n--- want\n%s\n--- got\n%s", __FILE__, line, want ? want : "(verifies)",
              d.text ? d.text : "(verifies)\n");
      failures++;
    }
  }
  ts_diag_free(&d);
  ts_hlo_module_destroy(m);
}
#define TEXT_OK(text, o) expect_text(text, o, NULL, __LINE__)
#define TEXT_FAILS(text, o, want) expect_text(text, o, want, __LINE__)

/* Result shapes below are worked out by hand from the operation semantics. */
static const char zoo[] =
    "HloModule zoo, replica_count=2, num_partitions=2\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] multiply(a, b)\n}\n"
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT p = pred[] compare(a, b), direction=GE\n}\n"
    "cmp2 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
    "  ROOT p = pred[] compare(a, b), direction=LT\n}\n"
    "add2 {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n  d = s32[] parameter(3)\n"
    "  s = f32[] add(a, c)\n  t = s32[] add(b, d)\n  ROOT r = (f32[], s32[]) tuple(s, t)\n}\n"
    "neg {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a)\n}\n"
    "br0 {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a)\n}\n"
    "br1 {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] exponential(a)\n}\n"
    "ENTRY main {\n"
    "  x = f32[2,3,4] parameter(0)\n"
    "  img = f32[8,32,32,16] parameter(1)\n"
    "  k = f32[3,3,16,32] parameter(2)\n"
    "  idx = s32[] parameter(3)\n"
    "  z = c64[8] parameter(4)\n"
    "  r = f32[8] parameter(5)\n"
    "  m = f32[4,4] parameter(6)\n"
    "  src = f32[8,16,16,16] parameter(7)\n"
    "  lhs = f32[5,2,3] parameter(8)\n"
    "  rhs = f32[5,3,7,2] parameter(9)\n"
    "  kg = f32[3,3,8,32] parameter(10)\n"
    "  scale = f32[16] parameter(11)\n"
    "  table = f32[100,64] parameter(12)\n"
    "  ids = s32[16,1] parameter(13)\n"
    "  st = u64[2] parameter(14)\n"
    "  tok = token[] after-all()\n"
    "  clz = s32[] count-leading-zeros(idx)\n"
    "  pop = s32[] popcnt(idx)\n"
    "  fin = pred[8] is-finite(r)\n"
    "  re = f32[8] real(z)\n"
    "  im = f32[8] imag(z)\n"
    "  cx = c64[8] complex(re, im)\n"
    "  ab = f32[8] abs(z)\n"
    "  lo = f32[] constant(0)\n"
    "  hi = f32[] constant(1)\n"
    "  cl = f32[8] clamp(lo, r, hi)\n"
    "  h = f16[8,2] bitcast-convert(r)\n"
    "  w = f32[8] bitcast-convert(h)\n"
    "  u = u32[8] bitcast-convert(r)\n"
    "  cv = s8[2,3,4] convert(x)\n"
    "  rp = f32[8] reduce-precision(r), exponent_bits=5, mantissa_bits=10\n"
    "  sel = f32[8] select(fin, r, re)\n"
    "  rev = f32[2,3,4] reverse(x), dimensions={0,2}\n"
    "  tr = f32[4,2,3] transpose(x), dimensions={2,0,1}\n"
    "  sl = f32[1,2,2] slice(x), slice={[1:2], [0:3:2], [1:4:2]}\n"
    "  ds = f32[2,2,2] dynamic-slice(x, idx, idx, idx), dynamic_slice_sizes={2,2,2}\n"
    "  upd = f32[1,3,4] slice(x), slice={[0:1], [0:3], [0:4]}\n"
    "  dus = f32[2,3,4] dynamic-update-slice(x, upd, idx, idx, idx)\n"
    "  cat = f32[2,6,4] concatenate(x, x), dimensions={1}\n"
    "  pd = f32[3,10,9] pad(x, lo), padding=1_0x0_1_3x-1_0_2\n"
    "  io = s32[4,5] iota(), iota_dimension=1\n"
    "  gds = s32[] get-dimension-size(x), dimensions={1}\n"
    "  sds = f32[2,<=3,4] set-dimension-size(x, idx), dimensions={1}\n"
    "  bc = f32[3,2,7,4] broadcast(x), dimensions={1,0,3}\n"
    "  rs = f32[6,4] reshape(x)\n"
    "  red = f32[3] reduce(x, lo), dimensions={0,2}, to_apply=add\n"
    "  xi = s32[2,3,4] convert(x)\n"
    "  zi = s32[] constant(0)\n"
    "  vred = (f32[2], s32[2]) reduce(x, xi, lo, zi), dimensions={1,2}, to_apply=add2\n"
    "  rw = f32[8,16,16,16] reduce-window(img, lo), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add\n"
    "  rwp = f32[8,33,32,16] reduce-window(img, lo), window={size=1x3x3x1 pad=0_0x1_2x1_1x0_0}, to_apply=add\n"
    "  sas = f32[8,32,32,16] select-and-scatter(img, src, lo), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, "
    "scatter=add\n"
    "  dt = f32[5,2,7,2] dot(lhs, rhs), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
    "rhs_contracting_dims={1}\n"
    "  conv = f32[8,16,16,32] convolution(img, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
    "  gconv = f32[8,32,32,32] convolution(img, kg), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
    "feature_group_count=2\n"
    "  bconv = f32[4,28,28,32] convolution(img, k), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f, "
    "batch_group_count=2\n"
    "  dconv = f32[8,61,61,32] convolution(img, k), window={size=3x3 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f\n"
    "  tconv = f32[32,30,30,8] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->f01b\n"
    "  ff = c64[8] fft(z), fft_type=FFT, fft_length={8}\n"
    "  rf = c64[5] fft(r), fft_type=RFFT, fft_length={8}\n"
    "  ir = f32[8] fft(rf), fft_type=IRFFT, fft_length={8}\n"
    "  ch = f32[4,4] cholesky(m), lower=true\n"
    "  trs = f32[4,4] triangular-solve(m, m), left_side=true, lower=true, transpose_a=NO_TRANSPOSE\n"
    "  bnt = (f32[8,32,32,16], f32[16], f32[16]) batch-norm-training(img, scale, scale), epsilon=0.001, "
    "feature_index=3\n"
    "  bni = f32[8,32,32,16] batch-norm-inference(img, scale, scale, scale, scale), epsilon=0.001, feature_index=3\n"
    "  bng = (f32[8,32,32,16], f32[16], f32[16]) batch-norm-grad(img, scale, scale, scale, img), epsilon=0.001, "
    "feature_index=3\n"
    "  g = f32[16,64] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
    "index_vector_dim=1, slice_sizes={1,64}\n"
    "  g2 = f32[16,1,8] gather(table, ids), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, "
    "index_vector_dim=1, slice_sizes={1,8}\n"
    "  sc = f32[100,64] scatter(table, ids, g), update_window_dims={1}, inserted_window_dims={0}, "
    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
    "  si = s32[8] iota(), iota_dimension=0\n"
    "  srt = (f32[8], s32[8]) sort(r, si), dimensions={0}, to_apply=cmp2\n"
    "  tk = (f32[3], s32[3]) topk(r), k=3, largest=true\n"
    "  mp = f32[8] map(r, r), dimensions={0}, to_apply=mul\n"
    "  rn = f32[3,3] rng(lo, hi), distribution=rng_uniform\n"
    "  rbg = (u64[2], u32[4,4]) rng-bit-generator(st), algorithm=rng_default\n"
    "  ar = f32[8] all-reduce(r), replica_groups={{0,1}}, to_apply=add\n"
    "  ar2 = (f32[8], f32[4,4]) all-reduce(r, m), to_apply=add\n"
    "  ag = f32[16] all-gather(r), dimensions={0}, replica_groups={{0,1}}\n"
    "  agc = f32[32] all-gather(r), dimensions={0}, channel_id=1\n"
    "  agg = f32[32] all-gather(r), dimensions={0}, channel_id=2, replica_groups={{0,1,2,3}}, "
    "use_global_device_ids=true\n"
    "  rsc = f32[4] reduce-scatter(r), dimensions={0}, replica_groups={{0,1}}, to_apply=add\n"
    "  a2a = f32[8] all-to-all(r), dimensions={0}, replica_groups={{0,1}}\n"
    "  a2p = f32[8] all-to-all(r), dimensions={0}, channel_id=3\n"
    "  cp = f32[8] collective-permute(r), source_target_pairs={{0,1},{1,0}}\n"
    "  pid = u32[] partition-id()\n"
    "  rid = u32[] replica-id()\n"
    "  dep = f32[8] add-dependency(r, tok)\n"
    "  inf = ((f32[2]), token[]) infeed(tok)\n"
    "  outf = token[] outfeed(r, tok), outfeed_shape=f32[8]\n"
    "  tp = (f32[8], f32[8]) tuple(r, r)\n"
    "  ob = (f32[8], f32[8]) opt-barrier(tp)\n"
    "  gte = f32[8] get-tuple-element(ob), index=1\n"
    "  cl2 = f32[8] call(r), to_apply=neg\n"
    "  cond = f32[8] conditional(idx, r, cl2), branch_computations={br0, br1}\n"
    "  fu = f32[8] fusion(r), kind=kLoop, calls=neg\n"
    "  cc = f32[99] custom-call(r), custom_call_target=\"anything\"\n"
    "  ROOT out = (f32[8], f32[8], f32[99]) tuple(cond, fu, cc)\n"
    "}\n";

static void test_zoo(void) { TEXT_OK(zoo, NULL); }

/* One broken rule per module; the message is what the rule says. */
static void test_broken_rules(void) {
#define ENTRY1(body) "HloModule t\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT sum = f32[] add(a, b)\n}\n" \
                     "ENTRY main {\n" body "}\n"
  /* the module text and the message after "error: " */
  static const struct {
    const char *text, *want;
  } broken[] = {
      {ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,8,32] parameter(1)\n"
              "  ROOT c = f32[8,30,30,32] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n"),
       "'c': input feature size 16 of f32[8,32,32,16] is not the kernel input feature size 8 of f32[3,3,8,32] "
       "times feature_group_count 1"},
      {ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,16,32] parameter(1)\n"
              "  ROOT c = f32[8,30,30,32] convolution(img, k), window={size=3x5}, dim_labels=b01f_01io->b01f\n"),
       "'c': window size 5 of spatial dimension 1 does not match the kernel's 3"},
      {ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,16,32] parameter(1)\n"
              "  ROOT c = f32[8,32,32,32] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n"),
       "'c': result shape f32[8,32,32,32] does not match the inferred shape f32[8,30,30,32]"},
      {ENTRY1("  p = f32[8,32] parameter(0)\n  z = f32[] constant(0)\n"
              "  ROOT w = f32[8,16] reduce-window(p, z), window={size=1x3 stride=1x2}, to_apply=add\n"),
       "'w': result shape f32[8,16] does not match the inferred shape f32[8,15]"},
      {ENTRY1("  t = f32[100,64] parameter(0)\n  i = s32[16,1] parameter(1)\n"
              "  ROOT g = f32[16,65] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,65}\n"),
       "'g': slice size 65 of dimension 1 is out of bounds for f32[100,64]"},
      {ENTRY1("  t = f32[100,64] parameter(0)\n  i = s32[16,1] parameter(1)\n  u = f32[8,64] parameter(2)\n"
              "  ROOT s = f32[100,64] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, "
              "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"),
       "'s': update scatter dimension 0 of f32[8,64] does not match the indices s32[16,1]"},
      {ENTRY1("  a = f32[2,3] parameter(0)\n  b = f32[4,5] parameter(1)\n"
              "  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"),
       "'d': dot contracting dimension sizes differ: lhs dimension 1 of f32[2,3] and rhs dimension 0 of "
       "f32[4,5]"},
      {"HloModule t, replica_count=4\n"
       "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
       "ENTRY main {\n  p = f32[6] parameter(0)\n"
       "  ROOT r = f32[1] reduce-scatter(p), dimensions={0}, to_apply=add\n}\n",
       "'r': reduce-scatter dimension 0 of f32[6] is not divisible by the group size 4 (no replica_groups and "
       "replica_count=4)"},
      {ENTRY1("  p = f32[4] parameter(0)\n  ROOT s = f32[4] select(p, p, p)\n"),
       "'s': select predicate must be pred, got f32[4]"},
      {ENTRY1("  p = f32[4] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT c = f32[4] clamp(b, p, b)\n"),
       "'c': clamp bound f32[2] must be a scalar or match the operand f32[4]"},
      {ENTRY1("  p = f32[4,3] parameter(0)\n  ROOT c = f64[4] bitcast-convert(p)\n"),
       "'c': bitcast-convert from f32[4,3] to 64-bit elements needs a last dimension of 2"},
      {ENTRY1("  ROOT i = s32[4] iota(), iota_dimension=1\n"),
       "'i': iota_dimension 1 is out of range for s32[4]"},
      {ENTRY1("  p = f32[4] parameter(0)\n  i = s32[] parameter(1)\n"
              "  ROOT d = f32[5] dynamic-slice(p, i), dynamic_slice_sizes={5}\n"),
       "'d': dynamic slice size 5 of dimension 0 is out of bounds for f32[4]"},
      {ENTRY1("  p = f32[4] parameter(0)\n  ROOT s = f32[4] sort(p), dimensions={0}, to_apply=add\n"),
       "'s': to_apply 'add' has the wrong signature for a sort comparator: expected (f32[], f32[]) -> pred[], "
       "got (f32[], f32[]) -> f32[]"},
      {ENTRY1("  p = f32[4] parameter(0)\n  ROOT t = (f32[5], s32[5]) topk(p), k=5\n"),
       "'t': topk k=5 is out of range for the last dimension of f32[4]"},
      {ENTRY1("  p = f32[4] parameter(0)\n"
              "  ROOT c = f32[4] collective-permute(p), source_target_pairs={{0,1},{0,2}}\n"),
       "'c': source_target_pairs names source 0 twice"},
      {ENTRY1("  p = f32[4] parameter(0)\n"
              "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, "
              "to_apply=add\n"),
       "'r': use_global_device_ids=true needs a channel_id"},
      {ENTRY1("  p = f32[4] parameter(0)\n"
              "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1},{1,2}}, to_apply=add\n"),
       "'r': replica_groups name id 1 more than once"},
      {ENTRY1("  p = f32[4] parameter(0)\n"
              "  ROOT t = (f32[4], f32[4]) tuple(p, p), sharding={{replicated}, {replicated}, {replicated}}\n"),
       "'t': tuple sharding has 3 elements but the shape (f32[4], f32[4]) has 2 leaves"},
      {"HloModule t\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"
       "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT x = f32[8] fusion(p), kind=kLoop, calls=f\n}\n",
       "'x': calls 'f' has the wrong signature for a fusion: expected (f32[4]) -> f32[8], got (f32[4]) -> "
       "f32[4]"},
      {"HloModule t\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"
       "ENTRY main {\n  p = f32[5] parameter(0)\n  ROOT x = f32[4] call(p), to_apply=f\n}\n",
       "'x': to_apply 'f' has the wrong signature for a call: expected (f32[5]) -> f32[4], got (f32[4]) -> "
       "f32[4]"},
      {ENTRY1("  p = f32[4] parameter(0)\n  ROOT n = s32[4] exponential(p)\n"),
       "'n': result shape s32[4] does not match the inferred shape f32[4]"},
      {ENTRY1("  p = s32[4] parameter(0)\n  q = s32[4] parameter(1)\n  ROOT n = s32[4] atan2(p, q)\n"),
       "'n': atan2 needs floating-point or complex operands, got s32[4]"},
      {ENTRY1("  p = f32[4,4] parameter(0)\n  z = f32[] constant(0)\n"
              "  ROOT r = f32[4] reduce(p, z), dimensions={2}, to_apply=add\n"),
       "'r': reduce dimensions value 2 is out of range for f32[4,4] (rank 2)"},
  };
  for (size_t k = 0; k < sizeof broken / sizeof broken[0]; k++) TEXT_FAILS(broken[k].text, NULL, broken[k].want);
#undef ENTRY1
}

int test_verifier_text(void) {
  test_zoo();
  test_broken_rules();
  return failures;
}

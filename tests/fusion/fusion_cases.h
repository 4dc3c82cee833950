/* Modules every fusion kind comes from, shared by tests/fusion and
 * tests/codegen: name, HLO text, loop and input fusions the pass must make,
 * fusions codegen/ must compile. */
#ifndef FUSION_CASES_H
#define FUSION_CASES_H

typedef struct {
  const char *name, *text;
  int loop, input, compiled;
} fusion_case_t;

static const fusion_case_t fusion_cases[] = {
    {"elementwise",
     "HloModule m\nENTRY e {\n a = f32[257] parameter(0)\n b = f32[257] parameter(1)\n"
     " c = f32[] constant(0.5)\n cb = f32[257] broadcast(c), dimensions={}\n m = f32[257] multiply(a, cb)\n"
     " s = f32[257] subtract(m, b)\n d = f32[257] divide(s, a)\n n = f32[257] negate(d)\n x = f32[257] abs(n)\n"
     " mx = f32[257] maximum(x, b)\n ROOT mn = f32[257] minimum(mx, a)\n}\n",
     1, 0, 1},
    {"math",
     "HloModule m\nENTRY e {\n a = f32[300] parameter(0)\n b = f32[300] parameter(1)\n x = f32[300] exponential(a)\n"
     " l = f32[300] log(b)\n t = f32[300] tanh(x)\n g = f32[300] logistic(l)\n q = f32[300] sqrt(b)\n"
     " r = f32[300] rsqrt(a)\n s = f32[300] add(t, g)\n u = f32[300] add(q, r)\n p1 = f32[300] log-plus-one(b)\n"
     " m1 = f32[300] exponential-minus-one(a)\n w = f32[300] add(p1, m1)\n u2 = f32[300] add(u, w)\n"
     " ROOT v = f32[300] multiply(s, u2)\n}\n",
     1, 0, 1},
    {"transcendental", /* one fusion per function, so that each is compared alone */
     "HloModule m\nENTRY e {\n a = f32[300] parameter(0)\n b = f32[300] parameter(1)\n e = f32[300] erf(a)\n"
     " s = f32[300] sine(b)\n c = f32[300] cosine(a)\n p = f32[300] power(a, b)\n ne = f32[300] negate(e)\n"
     " ns = f32[300] negate(s)\n nc = f32[300] negate(c)\n np = f32[300] negate(p)\n"
     " ROOT t = (f32[300], f32[300], f32[300], f32[300]) tuple(ne, ns, nc, np)\n}\n",
     4, 0, 4},
    {"select_compare_convert",
     "HloModule m\nENTRY e {\n a = f32[64] parameter(0)\n b = f32[64] parameter(1)\n"
     " lt = pred[64] compare(a, b), direction=LT\n ne = pred[64] compare(a, a), direction=NE\n"
     " o = pred[64] or(lt, ne)\n f = f32[64] convert(o)\n s = f32[64] select(lt, a, b)\n"
     " c = f32[] constant(-1)\n cb = f32[64] broadcast(c), dimensions={}\n fl = f32[64] floor(s)\n"
     " cl = f32[64] clamp(cb, fl, b)\n ROOT r = f32[64] add(cl, f)\n}\n",
     1, 0, 1},
    {"index_maps",
     "HloModule m\nENTRY e {\n a = f32[4,6] parameter(0)\n b = f32[6,4] parameter(1)\n t = f32[6,4] transpose(a), dimensions={1,0}\n"
     " s = f32[6,4] add(t, b)\n r = f32[24] reshape(s)\n v = f32[4] parameter(2)\n"
     " bv = f32[6,4] broadcast(v), dimensions={1}\n w = f32[6,4] multiply(s, bv)\n rw = f32[24] reshape(w)\n"
     " ROOT o = f32[24] subtract(r, rw)\n}\n",
     1, 0, 1},
    {"slice_concat_iota",
     "HloModule m\nENTRY e {\n a = f32[10] parameter(0)\n s0 = f32[4] slice(a), slice={[0:4]}\n"
     " s1 = f32[6] slice(a), slice={[4:10]}\n e0 = f32[4] exponential(s0)\n c = f32[10] concatenate(s1, e0), dimensions={0}\n"
     " i = s32[10] iota(), iota_dimension=0\n fi = f32[10] convert(i)\n ROOT r = f32[10] add(c, fi)\n}\n",
     1, 0, 1},
    {"reduce_input",
     "HloModule m\nsum {\n p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT a = f32[] add(p, q)\n}\n"
     "ENTRY e {\n a = f32[8,32] parameter(0)\n b = f32[8,32] parameter(1)\n m = f32[8,32] multiply(a, b)\n"
     " x = f32[8,32] exponential(m)\n z = f32[] constant(0)\n ROOT r = f32[8] reduce(x, z), dimensions={1}, to_apply=sum\n}\n",
     0, 1, 1},
    {"no_duplicate_expensive",
     /* x = exp(a) has two consumers in different fusions: it must stay
      * outside both (computed once), while the scalar broadcast is copied. */
     "HloModule m\nENTRY e {\n a = f32[128] parameter(0)\n x = f32[128] exponential(a)\n"
     " c = f32[] constant(2)\n cb = f32[128] broadcast(c), dimensions={}\n"
     " p = f32[128] multiply(x, cb)\n q = f32[128] add(p, a)\n d = f32[] dot(q, q), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
     " u = f32[128] subtract(x, cb)\n v = f32[128] multiply(u, u)\n ROOT t = (f32[], f32[128]) tuple(d, v)\n}\n",
     2, 0, 2},
    {"pred_output",
     "HloModule m\nENTRY e {\n a = f32[33] parameter(0)\n b = f32[33] parameter(1)\n s = f32[33] add(a, b)\n"
     " ROOT g = pred[33] compare(s, a), direction=GE\n}\n",
     1, 0, 1},
    {"bf16_mixed", /* bf16 arithmetic, f32 in between, f16 out: compiled since codegen/ takes bf16 and f16 */
     "HloModule m\nENTRY e {\n a = bf16[300] parameter(0)\n b = bf16[300] parameter(1)\n c = f32[300] parameter(2)\n"
     " m = bf16[300] multiply(a, b)\n s = bf16[300] add(m, a)\n x = bf16[300] maximum(s, b)\n"
     " e = bf16[300] exponential(x)\n"
     " f = f32[300] convert(e)\n y = f32[300] multiply(f, c)\n h = f16[300] convert(y)\n n = f16[300] negate(h)\n"
     " k = f16[] constant(0.1)\n kb = f16[300] broadcast(k), dimensions={}\n ROOT r = f16[300] add(n, kb)\n}\n",
     1, 0, 1},
    {"bf16_reduce",
     "HloModule m\nsum {\n p = bf16[] parameter(0)\n q = bf16[] parameter(1)\n ROOT a = bf16[] add(p, q)\n}\n"
     "ENTRY e {\n a = bf16[8,40] parameter(0)\n b = bf16[8,40] parameter(1)\n m = bf16[8,40] multiply(a, b)\n"
     " z = bf16[] constant(0)\n ROOT r = bf16[8] reduce(m, z), dimensions={1}, to_apply=sum\n}\n",
     0, 1, 1},
};

#define NFUSION_CASES ((int)(sizeof fusion_cases / sizeof fusion_cases[0]))

#endif

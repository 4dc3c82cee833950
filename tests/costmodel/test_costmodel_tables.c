/* Performance tables: text <-> binary round trips, malformed text with exact
 * error messages, kind detection, merging, files, and entries read back as
 * measurements (schemes from iota lists and permute pairs). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

static ts_perf_table_t *parse(const char *text, ts_diag_t *d) {
  ts_source_t src = {"t.txtpb", text, strlen(text)};
  ts_perf_table_t *t = NULL;
  if (ts_perf_table_parse_text(&src, &t, d) != TS_OK) return NULL;
  return t;
}

static char *to_text(const ts_perf_table_t *t) {
  ts_buf_t b = {0};
  EXPECT(ts_perf_table_to_text(t, &b) == TS_OK);
  return b.data;
}

/* A collective table built the way the collector will build one. */
static ts_perf_table_t *coll_table(void) {
  ts_perf_table_t *t;
  EXPECT(ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &t) == TS_OK);
  ts_coll_measurement_t ms[] = {
      {TS_COLL_ALL_REDUCE, TS_SCHEME_CONTIGUOUS, 11, 4096, 4, 2, 123456789, "fp-ar"},
      {TS_COLL_ALL_GATHER, TS_SCHEME_STRIDED, 16, 8192, 2, 4, 987654321, "fp-ag"},
      {TS_COLL_REDUCE_SCATTER, TS_SCHEME_CONTIGUOUS, 11, 8192, 8, 1, 5555, NULL},
      {TS_COLL_ALL_TO_ALL, TS_SCHEME_CONTIGUOUS, 11, 1024, 8, 1, 77, "fp-a2a"},
      {TS_COLL_COLLECTIVE_PERMUTE, TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL, 11, 1024, 8, 1, 42, "fp-ring"},
      {TS_COLL_COLLECTIVE_PERMUTE, TS_SCHEME_ONE_WAY, 11, 1024, 8, 1, 43, "fp-oneway"},
      {TS_COLL_COLLECTIVE_PERMUTE, TS_SCHEME_TWO_WAY_ALL_MUTUAL, 11, 1024, 4, 1, 44, "fp-mutual"},
  };
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
    EXPECT(ts_perf_table_add_collective(t, i < 5 ? "host:test" : "sm_90", &ms[i], NULL) == TS_OK);
  return t;
}

static void test_round_trip(void) {
  ts_perf_table_t *t = coll_table();
  char *text = to_text(t);
  /* what the text says, in XLA's layout */
  EXPECT(strstr(text, "# proto-message: xla.gpu.DeviceHloInstructionProfiles\n") == text + strlen(
         "# proto-file: xla/service/gpu/model/hlo_op_profile.proto\n"));
  EXPECT(strstr(text, "        iota_collective_device_list {\n"
                      "          num_replica_groups: 4\n"
                      "          num_devices_per_group: 2\n"
                      "          iota_reshape_dims: 2\n"
                      "          iota_reshape_dims: 4\n"
                      "          iota_transpose_perm: 1\n"
                      "          iota_transpose_perm: 0\n"
                      "        }\n") != NULL);
  EXPECT(strstr(text, "        metadata {}\n") != NULL);
  EXPECT(strstr(text, "          element_type: BF16\n") != NULL);
  EXPECT(strstr(text, "        source_target_pairs {\n          target: 1\n        }\n") != NULL);
  EXPECT(strstr(text, "      network_throughput_bytes_per_sec: 987654321\n") != NULL);
  /* text -> table -> text is the identity; binary -> table -> binary too */
  ts_perf_table_t *t2 = parse(text, NULL);
  EXPECT(t2 != NULL);
  char *text2 = t2 ? to_text(t2) : NULL;
  EXPECT(text2 && strcmp(text, text2) == 0);
  uint8_t *b1, *b2;
  size_t n1, n2;
  EXPECT(ts_perf_table_to_binary(t, &b1, &n1) == TS_OK);
  ts_perf_table_t *t3 = NULL;
  EXPECT(ts_perf_table_parse_binary("t.pb", b1, n1, &t3, NULL) == TS_OK);
  EXPECT(t3 && ts_perf_table_to_binary(t3, &b2, &n2) == TS_OK && n1 == n2 && memcmp(b1, b2, n1) == 0);
  char *text3 = t3 ? to_text(t3) : NULL;
  EXPECT(text3 && strcmp(text, text3) == 0);
  /* binary keeps the device list in collective_device_list, field 87:
   * tag (87 << 3) | 2 = 698 = varint 0xba 0x05 */
  bool tag87 = false;
  for (size_t i = 0; i + 1 < n1; i++) tag87 |= b1[i] == 0xba && b1[i + 1] == 0x05;
  EXPECT(tag87);
  ts_free(b1);
  ts_free(b2);
  ts_free(text);
  ts_free(text2);
  ts_free(text3);
  ts_perf_table_destroy(t2);
  ts_perf_table_destroy(t3);

  /* entries read back as the measurements that made them */
  ts_coll_measurement_t *ms;
  size_t n;
  EXPECT(ts_perf_table_num_devices(t) == 2 && strcmp(ts_perf_table_device(t, 1), "sm_90") == 0);
  EXPECT(ts_perf_table_collectives(t, "host:test", &ms, &n, NULL) == TS_OK && n == 5);
  EXPECT(ms[0].kind == TS_COLL_ALL_REDUCE && ms[0].scheme == TS_SCHEME_CONTIGUOUS && ms[0].tensor_bytes == 4096 &&
         ms[0].devices_per_group == 4 && ms[0].num_groups == 2 && ms[0].throughput_bytes_per_sec == 123456789);
  EXPECT(ms[1].scheme == TS_SCHEME_STRIDED && ms[1].element_type == 16 && ms[1].tensor_bytes == 8192);
  EXPECT(ms[2].kind == TS_COLL_REDUCE_SCATTER && ms[2].tensor_bytes == 8192); /* output 1 KiB x 8 */
  EXPECT(ms[4].scheme == TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL && ms[4].devices_per_group == 8);
  ts_free(ms);
  EXPECT(ts_perf_table_collectives(t, "sm_90", &ms, &n, NULL) == TS_OK && n == 2);
  EXPECT(ms[0].scheme == TS_SCHEME_ONE_WAY && ms[0].devices_per_group == 8);
  EXPECT(ms[1].scheme == TS_SCHEME_TWO_WAY_ALL_MUTUAL && ms[1].devices_per_group == 4);
  ts_free(ms);
  ts_diag_t d = {0};
  EXPECT(ts_perf_table_collectives(t, "sm_80", &ms, &n, &d) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strcmp(d.text, "error: the table has no device 'sm_80' (it has 'host:test', 'sm_90')\n") == 0);
  ts_diag_free(&d);
  ts_perf_table_destroy(t);
}

/* Each malformed input and the exact message it gets. */
static void expect_error(const char *text, const char *want) {
  ts_diag_t d = {0};
  ts_perf_table_t *t = parse(text, &d);
  EXPECT(t == NULL);
  EXPECT(d.text && strcmp(d.text, want) == 0);
  if (d.text && strcmp(d.text, want) != 0) fprintf(stderr, "  got:\n%s  want:\n%s", d.text, want);
  ts_perf_table_destroy(t);
  ts_diag_free(&d);
}

#define GEMM_HDR "# proto-message: xla.GemmPerfTable\n"

static void test_malformed(void) {
  expect_error(GEMM_HDR "entries { key: \"sm_90\" value { entries { b: 1 q: 2 } } }\n",
               "t.txtpb:2:47: error: unknown field 'q' in xla.GemmPerfTableEntry\n"
               "entries { key: \"sm_90\" value { entries { b: 1 q: 2 } } }\n"
               "                                              ^\n");
  expect_error(GEMM_HDR "entries {\n  key: \"sm_90\"\n  value {\n",
               "t.txtpb:5:1: error: unexpected end of input, expected '}' to close xla.GemmPerfTableEntryValues\n"
               "\n^\n");
  expect_error(GEMM_HDR "entries { value { entries { b: 12x } } }",
               "t.txtpb:2:32: error: malformed integer '12x' for int64 field 'b'\n"
               "entries { value { entries { b: 12x } } }\n"
               "                               ^\n");
  expect_error(GEMM_HDR "entries { value { entries { m: 9223372036854775808 } } }",
               "t.txtpb:2:32: error: 9223372036854775808 is out of range for int64 field 'm'\n"
               "entries { value { entries { m: 9223372036854775808 } } }\n"
               "                               ^\n");
  expect_error(GEMM_HDR "entries { key: \"sm_90 }\n",
               "t.txtpb:2:16: error: unterminated string\n"
               "entries { key: \"sm_90 }\n"
               "               ^\n");
  expect_error(GEMM_HDR "entries { key: \"a\" key: \"b\" }",
               "t.txtpb:2:20: error: field 'key' of xla.GemmPerfTable.EntriesEntry given twice\n"
               "entries { key: \"a\" key: \"b\" }\n"
               "                   ^\n");
  expect_error(GEMM_HDR "entries { key \"a\" }",
               "t.txtpb:2:15: error: expected ':' after field 'key', found '\"a\"'\n"
               "entries { key \"a\" }\n"
               "              ^\n");
  expect_error(GEMM_HDR "entries { key: 5 }",
               "t.txtpb:2:16: error: expected a string for field 'key', found '5'\n"
               "entries { key: 5 }\n"
               "               ^\n");
  expect_error(GEMM_HDR "entries { key: \"a\\q\" }",
               "t.txtpb:2:18: error: unknown escape '\\q'\n"
               "entries { key: \"a\\q\" }\n"
               "                 ^\n");
  expect_error("entries { value { entries { instruction { shape { element_type: F33 } } } } }",
               "t.txtpb:1:65: error: unknown value 'F33' for enum xla.PrimitiveType (field 'element_type')\n"
               "entries { value { entries { instruction { shape { element_type: F33 } } } } }\n"
               "                                                                ^\n");
  expect_error("entries { value { entries { instruction { use_global_device_ids: maybe } } } }",
               "t.txtpb:1:66: error: expected true or false for field 'use_global_device_ids', found 'maybe'\n"
               "entries { value { entries { instruction { use_global_device_ids: maybe } } } }\n"
               "                                                                 ^\n");
  expect_error("# proto-message: xla.HloModuleProto\nentries {}\n",
               "t.txtpb:1:18: error: proto-message 'xla.HloModuleProto' is not a performance table "
               "(expected xla.gpu.DeviceHloInstructionProfiles or xla.GemmPerfTable)\n"
               "# proto-message: xla.HloModuleProto\n"
               "                 ^\n");
  /* no header: the message that reads further names the error (here, GEMM) */
  expect_error("entries { key: \"x\" value { entries { b: 1 flops { key: \"bf16\" valu: 3 } } } }",
               "t.txtpb:1:63: error: unknown field 'valu' in xla.GemmPerfTableEntry.FlopsEntry\n"
               "entries { key: \"x\" value { entries { b: 1 flops { key: \"bf16\" valu: 3 } } } }\n"
               "                                                              ^\n");
  expect_error("entries { value { entries { instruction { } } } } }",
               "t.txtpb:1:51: error: expected a field name in xla.DeviceHloInstructionProfiles, found '}'\n"
               "entries { value { entries { instruction { } } } } }\n"
               "                                                  ^\n");
  expect_error("entries { value { entries { instruction { iota_collective_device_list {} "
               "collective_device_list {} } } } }",
               "t.txtpb:1:74: error: field 'collective_device_list' of xla.HloInstructionProto given twice\n"
               "entries { value { entries { instruction { iota_collective_device_list {} "
               "collective_device_list {} } } } }\n"
               "                                                                         ^\n");
  expect_error("entries { value { entries { instruction { id: 1 } } } } \x01",
               "t.txtpb:1:57: error: unexpected character 0x01\n"
               "entries { value { entries { instruction { id: 1 } } } } \x01\n"
               "                                                        ^\n");
}

/* Forms of the text format the tables do not use but a hand-written table may. */
static void test_text_forms(void) {
  ts_diag_t d = {0};
  ts_perf_table_t *t = parse(GEMM_HDR "entries < key: 'sm' 'X' , value: { entries { b: 0x2; m: 010 n: 3 k: 4 "
                                      "flops: [{ key: \"a\\x41\\101\" value: -0 }] } } >\n",
                             &d);
  EXPECT(t != NULL);
  if (d.text) fprintf(stderr, "%s", d.text);
  ts_gemm_measurement_t *g;
  size_t n;
  EXPECT(t && ts_perf_table_gemms(t, "smX", &g, &n, NULL) == TS_OK && n == 1);
  if (t && n == 1) {
    EXPECT(g[0].b == 2 && g[0].m == 8 && g[0].n == 3 && g[0].k == 4 && strcmp(g[0].dtype, "aAA") == 0 &&
           g[0].flops == 0);
    ts_free(g);
  }
  ts_perf_table_destroy(t);
  ts_diag_free(&d);
}

static void test_merge_and_files(void) {
  ts_perf_table_t *a, *b;
  ts_perf_table_create(TS_PERF_TABLE_GEMM, &a);
  ts_perf_table_create(TS_PERF_TABLE_GEMM, &b);
  ts_gemm_measurement_t m1 = {1, 256, 256, 256, "bf16xbf16->bf16", 100};
  ts_gemm_measurement_t m2 = {1, 256, 256, 256, "f32xf32->f32", 50};
  ts_gemm_measurement_t m3 = {1, 256, 256, 256, "bf16xbf16->bf16", 200}; /* re-measured */
  ts_gemm_measurement_t m4 = {2, 256, 256, 256, "bf16xbf16->bf16", 300};
  EXPECT(ts_perf_table_add_gemm(a, "sm_90", &m1, NULL) == TS_OK);
  EXPECT(ts_perf_table_add_gemm(a, "sm_90", &m2, NULL) == TS_OK);
  EXPECT(ts_perf_table_add_gemm(b, "sm_90", &m3, NULL) == TS_OK);
  EXPECT(ts_perf_table_add_gemm(b, "sm_90", &m4, NULL) == TS_OK);
  EXPECT(ts_perf_table_add_gemm(b, "gfx942", &m4, NULL) == TS_OK);
  EXPECT(ts_perf_table_merge(a, b, NULL) == TS_OK);
  ts_gemm_measurement_t *g;
  size_t n;
  EXPECT(ts_perf_table_gemms(a, "sm_90", &g, &n, NULL) == TS_OK && n == 3);
  EXPECT(g[0].flops == 200 && g[1].flops == 50 && g[2].b == 2 && g[2].flops == 300);
  ts_free(g);
  EXPECT(ts_perf_table_num_devices(a) == 2);

  ts_perf_table_t *c = coll_table(), *c2 = coll_table();
  ts_diag_t d = {0};
  EXPECT(ts_perf_table_merge(a, c, &d) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strcmp(d.text, "error: cannot merge a collective table into a GEMM table\n") == 0);
  ts_diag_free(&d);
  /* the same fingerprints again: replaced, not duplicated; the entry with no
   * fingerprint is kept twice */
  EXPECT(ts_perf_table_merge(c, c2, NULL) == TS_OK);
  ts_coll_measurement_t *ms;
  EXPECT(ts_perf_table_collectives(c, "host:test", &ms, &n, NULL) == TS_OK && n == 6);
  ts_free(ms);

  /* files: the name picks the form; both load back to the same table */
  char dir[] = "/tmp/ts_costmodel_XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char txt[64], pb[64], bad[64];
  snprintf(txt, sizeof txt, "%s/c.pbtxt", dir);
  snprintf(pb, sizeof pb, "%s/c.pb", dir);
  snprintf(bad, sizeof bad, "%s/c.json", dir);
  EXPECT(ts_perf_table_write(c, txt, NULL) == TS_OK);
  EXPECT(ts_perf_table_write(c, pb, NULL) == TS_OK);
  EXPECT(ts_perf_table_write(c, bad, &d) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strstr(d.text, "c.json: error: cannot tell the table format from the name") != NULL);
  ts_diag_free(&d);
  ts_perf_table_t *lt = NULL, *lb = NULL;
  EXPECT(ts_perf_table_load(txt, &lt, NULL) == TS_OK);
  EXPECT(ts_perf_table_load(pb, &lb, NULL) == TS_OK);
  char *s0 = to_text(c), *s1 = lt ? to_text(lt) : NULL, *s2 = lb ? to_text(lb) : NULL;
  EXPECT(s1 && s2 && strcmp(s0, s1) == 0 && strcmp(s0, s2) == 0);
  ts_free(s0);
  ts_free(s1);
  ts_free(s2);
  /* a binary file that is not a table */
  FILE *f = fopen(pb, "wb");
  fputs("\x08\x01", f);
  fclose(f);
  ts_perf_table_t *junk = NULL;
  EXPECT(ts_perf_table_load(pb, &junk, &d) == TS_ERR_PARSE && junk == NULL);
  EXPECT(d.text && strstr(d.text, "c.pb: error: not a binary performance table (first byte 0x08;") != NULL);
  ts_diag_free(&d);
  f = fopen(pb, "wb");
  fputs("\x12\x7f", f); /* a length past the end */
  fclose(f);
  EXPECT(ts_perf_table_load(pb, &junk, &d) == TS_ERR_PARSE);
  EXPECT(d.text && strstr(d.text, "c.pb: error: malformed binary xla.DeviceHloInstructionProfiles (2 bytes)") != NULL);
  ts_diag_free(&d);
  unlink(txt);
  unlink(pb);
  rmdir(dir);
  ts_perf_table_destroy(lt);
  ts_perf_table_destroy(lb);
  ts_perf_table_destroy(c);
  ts_perf_table_destroy(c2);
  ts_perf_table_destroy(a);
  ts_perf_table_destroy(b);
}

int main(void) {
  test_round_trip();
  test_malformed();
  test_text_forms();
  test_merge_and_files();
  return failures != 0;
}

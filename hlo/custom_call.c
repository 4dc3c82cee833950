/* What each custom-call target Tessera knows means: one table for the
 * partitioner, the reference interpreter and the runtime. Targets not in
 * it have no meaning here (an error naming the target); targets that call
 * a vendor library (cuBLAS, cuDNN, oneDNN, Triton, TransformerEngine) are
 * known but cannot run on this machine. */
#include "ts_hlo.h"

#include <string.h>

static const struct {
  const char *target;
  bool prefix; /* matches every target that starts with it */
  ts_custom_call_kind_t kind;
} targets[] = {
    {"Sharding", false, TS_CC_SHARDING},
    {"xla.sdy.FuncResultSharding", false, TS_CC_SHARDING},
    {"xla.sdy.ShardingConstraint", false, TS_CC_SHARDING},
    {"SPMDFullToShardShape", false, TS_CC_REGION_ENTER},
    {"xla.sdy.GlobalToLocalShape", false, TS_CC_REGION_ENTER},
    {"SPMDShardToFullShape", false, TS_CC_REGION_EXIT},
    {"xla.sdy.LocalToGlobalShape", false, TS_CC_REGION_EXIT},
    /* Placement and layout annotations: the value passes through. */
    {"annotate_device_placement", false, TS_CC_IDENTITY},
    {"MoveToHost", false, TS_CC_IDENTITY},
    {"MoveToDevice", false, TS_CC_IDENTITY},
    {"LayoutConstraint", false, TS_CC_IDENTITY},
    /* XLA's TopK: the k largest (or smallest, by the comparator) of the
     * last dim, values and s32 indices. */
    {"TopK", false, TS_CC_TOPK},
    {"__cublas$", true, TS_CC_DEVICE_LIBRARY},
    {"__cudnn$", true, TS_CC_DEVICE_LIBRARY},
    {"__onednn$", true, TS_CC_DEVICE_LIBRARY},
    {"__triton", true, TS_CC_DEVICE_LIBRARY},
    {"__gpu$", true, TS_CC_DEVICE_LIBRARY},
    {"te_", true, TS_CC_DEVICE_LIBRARY}, /* TransformerEngine (te_fused_attn_*, te_scaled_softmax_*) */
};

const char *ts_hlo_custom_call_target(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = i && i->op == TS_OP_CUSTOM_CALL ? ts_hlo_instr_attr(i, "custom_call_target") : NULL;
  return a && a->kind == TS_ATTR_STRING ? a->v.s : "";
}

ts_custom_call_kind_t ts_hlo_custom_call_kind(const ts_hlo_instr_t *i) {
  if (!i || i->op != TS_OP_CUSTOM_CALL) return TS_CC_UNKNOWN;
  const char *t = ts_hlo_custom_call_target(i);
  for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
    size_t n = strlen(targets[k].target);
    if (targets[k].prefix ? strncmp(t, targets[k].target, n) == 0 : strcmp(t, targets[k].target) == 0)
      return targets[k].kind;
  }
  return TS_CC_UNKNOWN;
}

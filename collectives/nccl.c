/* NCCL backend. Placeholder until the data path lands. */
#include "coll_internal.h"

ts_status_t coll_nccl_world(coll_boot_t *b, coll_world_t **out) { return TS_ERR_UNSUPPORTED; }

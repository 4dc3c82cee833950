/* libFuzzer target: the hang detector's message decoder reads bytes from
 * the network, so any input must decode or be rejected without crashing;
 * whatever decodes must encode and decode back to the same message. */
#include <stdlib.h>
#include <string.h>

#include "ts_hang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ts_hang_msg_t m, again;
  static uint8_t buf[TS_HANG_MSG_HEADER + TS_HANG_MSG_MAX];
  size_t off = 0;
  /* A stream of frames, as a connection delivers them. */
  while (off < size) {
    size_t used = 0;
    ts_status_t st = ts_hang_msg_decode(data + off, size - off, &m, &used);
    if (st != TS_OK) break;
    if (used == 0 || used > size - off) abort();
    size_t n = ts_hang_msg_encode(&m, buf, sizeof buf), used2 = 0;
    if (n == 0) abort(); /* a decoded message always fits */
    if (ts_hang_msg_decode(buf, n, &again, &used2) != TS_OK || used2 != n || again.type != m.type) abort();
    if (memcmp(&again.state, &m.state, sizeof m.state) != 0 || strcmp(again.text, m.text) ||
        strcmp(again.auth, m.auth) || again.request != m.request)
      abort();
    off += used;
  }
  return 0;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Cluster times (ts.h): comparison. Pure; any thread.
 */
#include "base/ts.h"

int
relay_ts_cmp(relay_ts_t a, relay_ts_t b)
{
   if (a.t != b.t) {
      return a.t < b.t ? -1 : 1;
   }
   if (a.i != b.i) {
      return a.i < b.i ? -1 : 1;
   }
   return 0;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Where an event's seq falls against the highest seq applied before it (outbox/inbox.h):
 * pure functions, no state, safe from any thread. Below both inbox.c and inbox-store.c, whose
 * apply loop classifies each applied event with it.
 */
#include "outbox/inbox.h"

outbox_seq_order_t
outbox_seq_classify(int64_t previous, int64_t seq)
{
   if (seq <= 0)
      return OUTBOX_SEQ_UNTRACKED;
   if (previous < 0)
      previous = 0;
   if (seq == previous + 1)
      return OUTBOX_SEQ_IN_ORDER;
   return seq > previous ? OUTBOX_SEQ_GAP : OUTBOX_SEQ_LATE;
}

const char *
outbox_seq_order_name(outbox_seq_order_t order)
{
   switch (order) {
   case OUTBOX_SEQ_UNTRACKED:
      return "untracked";
   case OUTBOX_SEQ_IN_ORDER:
      return "in-order";
   case OUTBOX_SEQ_GAP:
      return "gap";
   case OUTBOX_SEQ_LATE:
      return "late";
   }
   return "unknown";
}

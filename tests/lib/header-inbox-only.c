/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Includes only outbox/inbox.h, so the build fails if that header stops being
 * self-sufficient (see test-headers.c).
 */
#include <outbox/inbox.h>

const char *header_inbox_only_version(void);
outbox_seq_order_t header_inbox_only_classify(int64_t previous, int64_t seq);

const char *
header_inbox_only_version(void)
{
   return outbox_get_version();
}

outbox_seq_order_t
header_inbox_only_classify(int64_t previous, int64_t seq)
{
   return outbox_seq_classify(previous, seq);
}

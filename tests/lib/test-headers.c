/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The public headers: outbox/outbox.h alone declares the whole API, inbox included, and
 * outbox/inbox.h alone compiles too (header-inbox-only.c includes nothing else).
 */
#include <outbox/outbox.h>

#include <criterion/criterion.h>

/* From header-trace-only.c. */
bool header_trace_only_valid(const char *traceparent);

/* From header-inbox-only.c. */
const char *header_inbox_only_version(void);
outbox_seq_order_t header_inbox_only_classify(int64_t previous, int64_t seq);

Test(headers, outbox_h_declares_the_inbox)
{
   outbox_inbox_t *inbox = NULL;

   cr_assert_eq(outbox_seq_classify(1, 2), OUTBOX_SEQ_IN_ORDER);
   cr_assert_str_eq(outbox_seq_order_name(OUTBOX_SEQ_GAP), "gap");
   outbox_inbox_destroy(inbox);
}

Test(headers, inbox_h_alone_declares_the_outbox)
{
   cr_assert_str_eq(header_inbox_only_version(), OUTBOX_VERSION_STRING);
   cr_assert_eq(header_inbox_only_classify(2, 1), OUTBOX_SEQ_LATE);
}

Test(headers, trace_h_alone_declares_the_trace_context)
{
   cr_assert(header_trace_only_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
   cr_assert(
      outbox_traceparent_is_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
}

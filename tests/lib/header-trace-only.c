/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Includes only outbox/trace.h, so the build fails if that header stops being
 * self-sufficient (see test-headers.c).
 */
#include <outbox/trace.h>

bool header_trace_only_valid(const char *traceparent);

bool
header_trace_only_valid(const char *traceparent)
{
   return outbox_traceparent_is_valid(traceparent);
}

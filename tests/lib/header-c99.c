/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The public headers compiled as C99 with -pedantic (tests/lib/meson.build): programs that
 * include them choose their own C standard. C11 features such as a repeated typedef break
 * the build here.
 */
#include <outbox/outbox.h>
#include <outbox/trace.h>

int header_c99_trace_len(void);

int
header_c99_trace_len(void)
{
   return OUTBOX_TRACEPARENT_LEN;
}

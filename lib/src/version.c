/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "outbox-version.h"

const char *
outbox_get_version(void)
{
   return OUTBOX_VERSION_STRING;
}

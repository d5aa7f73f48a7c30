/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox_get_version() (outbox-version.h): the version the library was built as. No state.
 */
#include "outbox-version.h"

const char *
outbox_get_version(void)
{
   return OUTBOX_VERSION_STRING;
}

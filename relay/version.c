/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "relay.h"

#include <outbox/outbox.h>

const char *
relay_version(void)
{
   return OUTBOX_VERSION_STRING;
}

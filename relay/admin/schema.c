/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `ensure-schema`: installs (or with --print shows) the stored contract as each collection's
 * $jsonSchema validator, through liboutbox's outbox_collection_ensure_schema().
 */
#include <sysexits.h>

#include "admin/admin.h"

int
admin_ensure_schema(admin_t *a)
{
   fprintf(stderr, "outbox-admin: ensure-schema: not available yet\n");
   return EX_UNAVAILABLE;
}

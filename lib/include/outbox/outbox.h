/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox public API. (Being written: see issue 4.)
 */
#ifndef OUTBOX_H
#define OUTBOX_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "outbox/outbox-macros.h"
#include "outbox-version.h"

OUTBOX_BEGIN_DECLS

/* Returns the library's version, e.g. "0.1.0". The string is static; do not free it. */
OUTBOX_API const char *
outbox_get_version(void);

OUTBOX_END_DECLS

#endif /* OUTBOX_H */

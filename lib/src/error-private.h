/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Setting liboutbox's own errors (OUTBOX_ERROR_DOMAIN, outbox/error.h) and naming BSON types
 * in their messages (error.c). No state.
 */
#ifndef OUTBOX_ERROR_PRIVATE_H
#define OUTBOX_ERROR_PRIVATE_H

#include "outbox/error.h"

/* bson_set_error() in OUTBOX_ERROR_DOMAIN. `error` may be NULL. */
#define _outbox_set_error(error, code, ...)                                                        \
   bson_set_error((error), OUTBOX_ERROR_DOMAIN, (uint32_t)(code), __VA_ARGS__)

/* A short name of a BSON type for error messages ("int32", "document", ...). Static string. */
const char *_outbox_bson_type_name(bson_type_t type);

#endif /* OUTBOX_ERROR_PRIVATE_H */

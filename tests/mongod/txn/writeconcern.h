/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Write concerns as the one-member set's primary sees them (writeconcern.c). The command
 * dispatcher calls both, with the server lock held: a malformed `w` fails the command before
 * it runs (9); after it ran, a `w` the set cannot satisfy adds a writeConcernError to `reply`.
 * `name` is the command's name, `cmd` its body.
 */
#ifndef MD_WRITECONCERN_H
#define MD_WRITECONCERN_H

#include <bson/bson.h>

bool
md_write_concern_parse(const char *name, const bson_t *cmd, bson_error_t *error);
void
md_write_concern_check(const char *name, const bson_t *cmd, bson_t *reply);

#endif

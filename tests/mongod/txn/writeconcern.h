/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Write concerns (writeconcern.c). The command dispatcher calls these with the server lock
 * held: a malformed `w` fails the command before it runs (9); after it ran, a `w` the set
 * cannot satisfy adds a writeConcernError to `reply`, and one it can is waited for
 * (commands/cmd-repl.c) until enough members hold the write or wtimeout passes.
 * `name` is the command's name, `cmd` its body.
 */
#ifndef MD_WRITECONCERN_H
#define MD_WRITECONCERN_H

#include <bson/bson.h>

bool md_write_concern_parse(const char *name, const bson_t *cmd, bson_error_t *error);
void md_write_concern_check(const char *name, const bson_t *cmd, int n_members, bson_t *reply);
/* How many members must hold the write before the reply (w: N, or a majority of
 * `n_members` for "majority"; 1: nothing to wait for), and the wtimeout (0: none). */
int md_write_concern_members(const char *name, const bson_t *cmd, int n_members,
                             int64_t *wtimeout_ms);
/* Adds 6.0's writeConcernError for a wtimeout: 64 WriteConcernFailed "waiting for
 * replication timed out", errInfo {wtimeout: true, writeConcern}. The write stays. */
void md_write_concern_timed_out(const bson_t *cmd, bson_t *reply);
/* 6.0's writeConcernError when the primary steps down during the wait: 189
 * PrimarySteppedDown "Primary stepped down while waiting for replication"
 * (replication_coordinator_impl.cpp, _awaitReplication's checkForStepDown). */
void md_write_concern_stepped_down(const bson_t *cmd, bson_t *reply);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Retryable writes: a write sent again with the same lsid and txnNumber (a driver retrying
 * after a network error) is not executed again; the first execution's reply is returned.
 * Older txnNumbers get 225 TransactionTooOld. Callers hold the server lock.
 */
#ifndef MD_SESSIONS_H
#define MD_SESSIONS_H

#include <bson/bson.h>

#include "hmap.h"

typedef struct {
   md_hmap_t *map; /* lsid bytes -> session */
} md_sessions_t;

void
md_sessions_init(md_sessions_t *sessions);
void
md_sessions_destroy(md_sessions_t *sessions);

/* Looks up the write `cmd` (with lsid and txnNumber). Returns true if it may run; then
 * *replay is NULL. If it already ran, *replay is its stored reply (borrowed, valid while the
 * lock is held). Returns false with 225 if the txnNumber is older than the session's. */
bool
md_sessions_begin(md_sessions_t *sessions, const bson_t *cmd, const bson_t **replay,
                  bson_error_t *error);

/* Records the reply of a write that ran (fields only, no ok/$clusterTime). */
void
md_sessions_record(md_sessions_t *sessions, const bson_t *cmd, const bson_t *reply);

/* Forgets the sessions in an endSessions/killSessions command's array. */
void
md_sessions_end(md_sessions_t *sessions, const bson_t *cmd);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Logical sessions (lsid) and their transaction numbers, which retryable writes and
 * transactions share as in mongod's TransactionParticipant:
 *  - a retryable write sent again with the same lsid and txnNumber (a driver retrying after a
 *    network error) is not executed again; the first execution's reply is returned;
 *  - a number older than the session's newest gets 225 TransactionTooOld; a newer one ends
 *    (aborts) the session's open transaction;
 *  - transaction statements start (startTransaction) or continue the session's transaction.
 * Callers hold the server lock.
 */
#ifndef MD_SESSIONS_H
#define MD_SESSIONS_H

#include <bson/bson.h>

#include "data/hmap.h"
#include "txn/txn.h"

typedef struct {
   md_hmap_t *map; /* lsid bytes -> session */
} md_sessions_t;

void md_sessions_init(md_sessions_t *sessions);
void md_sessions_destroy(md_sessions_t *sessions, md_txns_t *txns);

/* Looks up the write `cmd` (with lsid and txnNumber). Returns true if it may run; then
 * *replay is NULL. If it already ran, *replay is its stored reply (borrowed, valid while the
 * lock is held). Fails with 225 if the txnNumber is older than the session's, with 217 if it
 * is the number of a transaction. */
bool md_sessions_begin(md_sessions_t *sessions, md_txns_t *txns, const bson_t *cmd,
                       const bson_t **replay, bson_error_t *error);

/* Records the reply of a write that ran (fields only, no ok/$clusterTime). */
void md_sessions_record(md_sessions_t *sessions, const bson_t *cmd, const bson_t *reply);

/* Starts (`start`) or continues transaction `number` of the session `lsid` for the command
 * `name`. Returns the transaction (borrowed from the session): in progress, or committed for
 * a repeated commitTransaction. NULL with 225 TransactionTooOld, 117
 * ConflictingOperationInProgress, 251 NoSuchTransaction or 256 TransactionCommitted. */
md_txn_t *md_sessions_txn(md_sessions_t *sessions, md_txns_t *txns, const bson_t *lsid,
                          int64_t number, bool start, const char *name, bson_error_t *error);

/* endSessions (`forget`: the sessions' state goes) and killSessions: aborts the open
 * transactions of the sessions in the command's array. */
void md_sessions_end(md_sessions_t *sessions, md_txns_t *txns, const bson_t *cmd, bool forget);
/* killAllSessions: aborts every open transaction. */
void md_sessions_kill_all(md_sessions_t *sessions, md_txns_t *txns);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Command dispatch. A handler runs with the server lock held, appends its result fields to
 * `reply` and returns true, or returns false with a MongoDB error code in error->code; the
 * dispatcher adds ok, errmsg, code, codeName, errorLabels, $clusterTime and operationTime.
 */
#ifndef MD_COMMANDS_H
#define MD_COMMANDS_H

#include "data/query.h"
#include "data/write.h"
#include "net/server.h"
#include "txn/writeconcern.h"

typedef struct {
   md_server_t *srv;
   md_conn_t *conn;
   const bson_t *cmd;
   const char *name; /* the first key */
   const char *db;   /* $db */
   bson_t *reply;
   bson_t labels; /* extra errorLabels for an error reply (array) */
   uint32_t n_labels;
   bson_t error_extra;    /* fields an error reply carries after codeName (errInfo ...) */
   bool close_connection; /* close without replying */
   bool has_op_time;      /* use op_time as operationTime instead of the cluster time */
   md_ts_t op_time;
   bool labels_fixed;   /* failCommand named the errorLabels: mongod adds none */
   int32_t wc_code;     /* the reply's writeConcernError code, 0 if none */
   int64_t deadline_ms; /* maxTimeMS as a monotonic deadline (INT64_MAX: none) */
   bool in_txn;         /* a statement of a transaction (autocommit: false) */
   bool txn_start;      /* startTransaction: true */
   int64_t txn_number;
   md_txn_t *txn;   /* in_txn: its transaction, once begun or continued */
   bool txn_failed; /* a write error ended the statement: the transaction aborts */
} md_cmd_t;

typedef bool (*md_cmd_fn)(md_cmd_t *c, bson_error_t *error);

/* Runs the command in `req` for `conn`. `*reply` is initialised by the callee. Returns false
 * if the connection must be closed without an answer. */
bool md_command_run(md_conn_t *conn, const bson_t *cmd, bson_t *reply);
/* The same on this server itself, never through a router (what a router runs on its shards
 * and on its own config store). */
bool md_command_run_local(md_conn_t *conn, const bson_t *cmd, bson_t *reply);
/* failCommand alone, as a router applies it to what it routes: true when it fired, with the
 * error reply in *reply (initialised) or *close set (close without answering); else
 * *epilogue (always initialised) holds the fields the reply must end with, if any
 * (failCommand's writeConcernError and its errorLabels). */
bool md_command_failpoint(md_conn_t *conn, const bson_t *cmd, bson_t *reply, bool *close,
                          bson_t *epilogue);

/* Builds an error reply (used by the connection loop for protocol errors too). */
void md_error_reply(md_server_t *srv, const bson_error_t *error, const bson_t *labels,
                    bson_t *reply);
/* The same with `extra` (may be NULL) appended after codeName, as mongod places errInfo. */
void md_error_reply_with(md_server_t *srv, const bson_error_t *error, const bson_t *labels,
                         const bson_t *extra, bson_t *reply);

void md_cmd_add_label(md_cmd_t *c, const char *label);

/* The symbolic name of a server error code, or NULL if it has none. */
const char *md_code_name(int32_t code);

/* Checks that every field of the command is in `allowed` (NULL-terminated) or is a generic
 * argument; else 40415 "BSON field '<cmd>.<field>' is an unknown field." */
bool md_cmd_check_fields(const md_cmd_t *c, const char *const *allowed, bson_error_t *error);

/* The collection named by the command's first value (a string), or error 2 / 73. */
const char *md_cmd_coll_name(const md_cmd_t *c, bson_error_t *error);

/* Reads optional fields with type checks (14 TypeMismatch on a wrong type). */
bool md_cmd_get_doc(const bson_t *cmd, const char *field, bson_t *out, bool *found,
                    bson_error_t *error);
bool md_cmd_get_int64(const bson_t *cmd, const char *field, int64_t *out, bson_error_t *error);

/* Whether mongod labels an error `code` TransientTransactionError (isTransientTransactionError
 * in error_labels.cpp). */
bool md_is_transient_txn_error(int32_t code, bool has_write_concern_error, bool commit_or_abort);

/* Transactions (cmd-txn.c). md_txn_gate checks the session fields of every command (errors
 * that leave an open transaction as it was); md_txn_run runs a transaction statement in its
 * transaction, which a failed statement aborts. */
bool md_txn_gate(md_cmd_t *c, bson_error_t *error);
bool md_txn_run(md_cmd_t *c, md_cmd_fn fn, bson_error_t *error);

/* The collection `name` of the command's database as the command must see it (through its
 * transaction, if any); *coll NULL if absent. Flags: */
#define MD_COLL_WRITE 1u  /* the statement writes it (inside a transaction: its own copy) */
#define MD_COLL_CREATE 2u /* create it if missing (inside a transaction: in the transaction) */
#define MD_COLL_FAM 4u    /* findAndModify (error code 50781 for system collections) */
bool md_cmd_coll(md_cmd_t *c, const char *name, unsigned flags, md_coll_t **coll, bool *created,
                 bson_error_t *error);
/* For reads: the collection `name` of the command's database as the command sees it (see
 * md_cmd_coll), NULL if absent; a view is replaced by a snapshot of its documents, which the
 * caller frees with md_coll_snapshot_free(*snapshot) (NULL when not a view). */
bool md_read_coll(md_cmd_t *c, const char *name, md_coll_t **coll, md_coll_t **snapshot,
                  bson_error_t *error);
/* A write outside transactions that met a document an open transaction holds waits for a
 * transaction to end (then the statement runs again); DDL waits while an open transaction
 * uses the collection (coll NULL: any of the database). False with 50 MaxTimeMSExpired. */
bool md_cmd_wait_blocked(md_cmd_t *c, bson_error_t *error);
bool md_cmd_wait_ddl(md_cmd_t *c, const char *db, const char *coll, bson_error_t *error);

/* hello's replica-set fields (topologyVersion ... lastWrite), also serverStatus's `repl`. */
void md_append_repl_info(md_server_t *srv, int member, bson_t *r, const char *primary_field);
/* For an awaitable hello naming this server's topologyVersion: how long to wait before
 * answering (0: at once, the client's version is stale); -1 when `cmd` is not an awaitable
 * hello (or a malformed one, which the command then refuses). */
int64_t md_hello_await_ms(md_conn_t *conn, const bson_t *cmd, int64_t *max_await_ms);

/* Families of commands, in cmd-*.c. */
bool md_cmd_hello(md_cmd_t *c, bson_error_t *error);
bool md_cmd_ping(md_cmd_t *c, bson_error_t *error);
bool md_cmd_end_sessions(md_cmd_t *c, bson_error_t *error);
bool md_cmd_kill_all_sessions(md_cmd_t *c, bson_error_t *error);
bool md_cmd_commit_transaction(md_cmd_t *c, bson_error_t *error);
bool md_cmd_abort_transaction(md_cmd_t *c, bson_error_t *error);
bool md_cmd_build_info(md_cmd_t *c, bson_error_t *error);
bool md_cmd_get_parameter(md_cmd_t *c, bson_error_t *error);
bool md_cmd_configure_fail_point(md_cmd_t *c, bson_error_t *error);
bool md_cmd_server_status(md_cmd_t *c, bson_error_t *error);
bool md_cmd_repl_set_get_status(md_cmd_t *c, bson_error_t *error);
bool md_cmd_repl_set_get_config(md_cmd_t *c, bson_error_t *error);
bool md_cmd_repl_set_step_down(md_cmd_t *c, bson_error_t *error);
bool md_cmd_repl_set_step_up(md_cmd_t *c, bson_error_t *error);
bool md_cmd_repl_set_freeze(md_cmd_t *c, bson_error_t *error);
/* {testMemberFault: "host:port", mode: "hang" | "refuse" | "heal" | "pause" | "resume" |
 * "lag" | "clock", ms: N} (--enable-test-commands). */
bool md_cmd_test_member_fault(md_cmd_t *c, bson_error_t *error);
/* {testRollbackLog: 1} (--enable-test-commands, cmd-isolation.c): {rbid, rolledBack: [the
 * writes every rollback so far undid]}. */
bool md_cmd_test_rollback_log(md_cmd_t *c, bson_error_t *error);
/* Replica-set members (cmd-repl.c): on a secondary, what only a primary runs fails with
 * 10107, and reads without a secondary read preference with 13435. */
bool md_cmd_check_member(md_cmd_t *c, bson_error_t *error);
/* The history position a read outside transactions runs at (cmd-repl.c): the member's
 * applied position (the newest on a primary); with readConcern "majority" the commit point
 * as the member knows it (md_repl_member_commit: an isolated member's stops at the cut). */
uint64_t md_cmd_read_position(md_cmd_t *c);
/* Whether the command reads with readConcern level "majority". */
bool md_cmd_reads_majority(const md_cmd_t *c);
/* readConcern afterClusterTime (cmd-causal.c): waits, releasing the server lock, until the
 * member has applied that time (the commit point has, for "majority"), or fails with 72
 * (a time past the cluster time), 50 (maxTimeMS) or 11600; a secondary's read then answers
 * with the time it read at as operationTime. */
bool md_cmd_wait_read_concern(md_cmd_t *c, bson_error_t *error);
/* The catalog at the member's read position (cmd-catalog-at.c): a no-op history entry
 * before an explicit create or createIndexes; the collection `name` as of the position
 * (`live` unless its catalog changed since; NULL if it did not exist); each collection that
 * existed then and is gone from the store now. */
void md_cmd_catalog_note(md_cmd_t *c, const char *name);
md_coll_t *md_cmd_catalog_at(md_cmd_t *c, const char *name, md_coll_t *live);
void md_cmd_catalog_gone(md_cmd_t *c, void (*fn)(md_coll_t *coll, void *ctx), void *ctx);
/* Isolated primaries (cmd-isolation.c): the branch holding the writes of the command's
 * member while it is cut off from the set, or NULL. */
md_txn_t *md_cmd_branch(const md_cmd_t *c);
/* testMemberFault "isolate" of member `m` (a primary starts a branch) and, just before it
 * rejoins, its heal: the branch's writes are rolled back if the set elected a primary of
 * a newer term than the member knows, else they join the history. */
void md_isolation_start(md_server_t *srv, int m);
/* A command's gossiped $clusterTime moves the set's clock forward (cmd-causal.c). */
void md_cmd_gossip_in(md_server_t *srv, const bson_t *cmd);
void md_isolation_heal(md_server_t *srv, int m);
/* An isolated primary's clock: each write its branch took since `ops_before` gets a new time
 * of the branch, the command's operationTime. */
void md_isolation_tick(md_cmd_t *c, size_t ops_before);
/* The cluster time member `m` answers with: the set's, or its branch's when newer. */
md_ts_t md_isolation_cluster_time(const md_server_t *srv, int m);
/* The time of an isolated member's committed snapshot (none of its branch's writes). */
md_ts_t md_isolation_commit_time(const md_server_t *srv, int m);
/* An isolated primary's w > 1: wtimeout (64), or 189 once it steps down (never met). */
void md_isolation_wait_write_concern(md_cmd_t *c, int64_t deadline);
/* On an isolated primary, refuses (2) what its branch cannot hold: DDL and transactions. */
bool md_isolation_check(const md_cmd_t *c, bool in_txn, bool primary_only, bson_error_t *error);
/* After a write: waits (releasing the server lock) until as many members as its write
 * concern asks hold it, or adds writeConcernError 64 when wtimeout passes first. */
void md_cmd_wait_write_concern(md_cmd_t *c);
bool md_cmd_list_databases(md_cmd_t *c, bson_error_t *error);
bool md_cmd_connection_status(md_cmd_t *c, bson_error_t *error);
bool md_cmd_whatsmyuri(md_cmd_t *c, bson_error_t *error);
bool md_cmd_host_info(md_cmd_t *c, bson_error_t *error);
bool md_cmd_get_cmd_line_opts(md_cmd_t *c, bson_error_t *error);

bool md_cmd_insert(md_cmd_t *c, bson_error_t *error);
bool md_cmd_update(md_cmd_t *c, bson_error_t *error);
bool md_cmd_delete(md_cmd_t *c, bson_error_t *error);
bool md_cmd_find_and_modify(md_cmd_t *c, bson_error_t *error);

bool md_cmd_find(md_cmd_t *c, bson_error_t *error);
bool md_cmd_get_more(md_cmd_t *c, bson_error_t *error);
bool md_cmd_kill_cursors(md_cmd_t *c, bson_error_t *error);
bool md_cmd_aggregate(md_cmd_t *c, bson_error_t *error);
bool md_cmd_count(md_cmd_t *c, bson_error_t *error);
bool md_cmd_distinct(md_cmd_t *c, bson_error_t *error);

bool md_cmd_create(md_cmd_t *c, bson_error_t *error);
bool md_cmd_drop(md_cmd_t *c, bson_error_t *error);
bool md_cmd_drop_database(md_cmd_t *c, bson_error_t *error);
bool md_cmd_create_indexes(md_cmd_t *c, bson_error_t *error);
bool md_cmd_drop_indexes(md_cmd_t *c, bson_error_t *error);
bool md_cmd_list_indexes(md_cmd_t *c, bson_error_t *error);
bool md_cmd_list_collections(md_cmd_t *c, bson_error_t *error);
bool md_cmd_rename_collection(md_cmd_t *c, bson_error_t *error);
bool md_cmd_coll_mod(md_cmd_t *c, bson_error_t *error);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Multi-document transactions with snapshot isolation, as a MongoDB 6.0 replica set runs
 * them. A transaction sees the data as of its first statement plus its own writes:
 *  - it reads the store's collections until someone else changes one; just before that
 *    change the store's hooks give every open transaction a private copy of the collection
 *    as it was (copy-on-write per collection and transaction);
 *  - it writes into its own copy of a collection; the oplog entries of its writes wait in the
 *    transaction and reach the oplog at commit, under one cluster time;
 *  - a document written by an open transaction, or by anyone after a transaction's snapshot,
 *    cannot be written by that transaction: WriteConflict (112), as WiredTiger's first
 *    writer wins. A write outside transactions waits for the transaction holding the
 *    document to end (mongod retries such conflicts internally), up to its maxTimeMS;
 *  - DDL on a collection an open transaction has used waits for the transaction to end (it
 *    needs the collection's exclusive lock, which the transaction's intent lock blocks).
 * A transaction ends by commit, abort, a newer transaction number on its session, the end
 * or kill of its session, or after the transaction lifetime limit (60 s by default).
 *
 * Everything here runs with the server lock held; md_txns_wait releases it while waiting.
 */
#ifndef MD_TXN_H
#define MD_TXN_H

#include <pthread.h>

#include "data/cursor.h"
#include "data/hmap.h"
#include "data/oplog.h"
#include "data/store.h"

/* A statement outside transactions met a document an open transaction holds: the caller
 * waits (md_txns_wait) and runs the statement again. Never sent to clients. */
#define MD_CODE_BLOCKED 0x7fff0001

typedef enum { MD_TXN_IN_PROGRESS, MD_TXN_COMMITTED, MD_TXN_ABORTED } md_txn_state_t;

typedef struct _md_txn_t md_txn_t;
typedef struct _md_txns_t md_txns_t;

/* One namespace as a transaction sees it. */
struct _md_txn_view_t {
   char *name;
   md_db_t db;         /* the copy's database: a name only, outside the store */
   md_coll_t *copy;    /* the transaction's copy; NULL: it reads the store's collection */
   bool absent;        /* the namespace did not exist at the snapshot (copy NULL) */
   bool used;          /* a statement used it: DDL on it waits for the transaction */
   bool created;       /* the transaction created the collection */
   bool changed;       /* created, dropped, renamed or re-indexed since the snapshot */
   md_hmap_t *written; /* _id keys the transaction wrote */
   md_hmap_t *others;  /* _id keys others wrote since the snapshot */
   md_txn_t *txn;
   md_txn_view_t *next;
};

struct _md_txn_t {
   int64_t number;
   md_txn_state_t state;
   bson_t *lsid;           /* {id, uid} as change events show the session */
   md_txn_view_t *views;   /* in order of first use */
   md_oplog_entry_t **ops; /* the transaction's writes, logged at commit */
   size_t n_ops, cap_ops;
   int64_t expire_ms;     /* monotonic time after which it is aborted */
   md_ts_t commit_ts;     /* once committed */
   bool branch;           /* an isolated primary's writes (md_txn_begin_branch) */
   md_ts_t cut_time;      /* a branch's: the cluster time at the cut */
   md_ts_t branch_time;   /* a branch's own clock: the time of its newest write */
   md_txn_t *prev, *next; /* the list of open transactions */
};

struct _md_txns_t {
   md_txn_t *open;
   pthread_cond_t cond; /* broadcast whenever a transaction ends or a DDL gives up waiting */
   uint64_t ended;      /* transactions ended so far: waiters compare it */
   int64_t lifetime_ms; /* transactionLifetimeLimitSeconds * 1000 */
   struct {
      char *db, *coll; /* a DDL waiting for `coll` (NULL: the whole database) */
   } pending[16];
   int n_pending;
   md_cursors_t *cursors; /* a transaction's cursors die with it */
};

void md_txns_init(md_txns_t *txns, md_store_t *store, md_cursors_t *cursors, int64_t lifetime_ms);
/* Aborts the open transactions (their objects belong to their sessions). */
void md_txns_destroy(md_txns_t *txns);

/* Starts a transaction for the session `lsid` (the command's lsid document): its snapshot
 * is the store as it is now. The caller (the session) owns it; free with md_txn_free. */
md_txn_t *md_txn_begin(md_txns_t *txns, int64_t number, const bson_t *lsid);
/* The writes of a primary cut off from the set (testMemberFault "isolate"): a transaction
 * that sees the store as of now plus its own writes, which nobody else sees and which
 * never reach the store. It neither conflicts with nor blocks anyone (the other side of
 * the partition writes on), never expires and survives stepdowns; its oplog entries are
 * the writes a rollback undoes (md_txn_abort discards them). */
md_txn_t *md_txn_begin_branch(md_txns_t *txns);
/* Aborts an open transaction: nothing it did remains. */
void md_txn_abort(md_txns_t *txns, md_txn_t *txn);
/* Commits: applies the writes at once and logs them under one cluster time. On a unique
 * key taken meanwhile, aborts and fails with WriteConflict. */
bool md_txn_commit(md_txns_t *txns, md_txn_t *txn, md_store_t *store, md_oplog_t *log,
                   bson_error_t *error);
/* Aborts the transaction if still open, then frees it. NULL-safe. */
void md_txn_free(md_txns_t *txns, md_txn_t *txn);

/* Aborts the transactions past their lifetime. */
void md_txns_reap(md_txns_t *txns);
/* Aborts every open transaction but branches (a primary stepping down, as 6.0 aborts its
 * unprepared transactions); their sessions then answer 251 NoSuchTransaction. */
void md_txns_abort_all(md_txns_t *txns);

/* The collection `db.name` as the transaction sees it, for a statement of it. Reading: its
 * copy, or the store's collection, or NULL if absent. Writing: its own copy, made now (or
 * a new collection if `create`; *created, may be NULL, says so); NULL if absent and
 * !create. Fails with WriteConflict when the namespace changed since the snapshot, with
 * LockTimeout (24) when a DDL waits for it. */
bool md_txn_coll(md_txns_t *txns, md_txn_t *txn, md_store_t *store, const char *db,
                 const char *name, bool write, bool create, md_coll_t **coll, bool *created,
                 bson_error_t *error);

/* Checks that the document with `id` of `coll` may be written now: in a transaction's copy,
 * claims it for the transaction or fails with WriteConflict; in the store, fails with
 * MD_CODE_BLOCKED while an open transaction holds it. */
bool md_txns_claim(md_txns_t *txns, md_coll_t *coll, const bson_value_t *id, bson_error_t *error);
/* The oplog entry of a write in a transaction's copy: kept until commit. */
void md_txn_log(md_txn_view_t *view, md_oplog_entry_t *entry);

/* Waits (releasing `lock`) until a transaction ends or `deadline_ms` (monotonic) passes;
 * aborts transactions whose lifetime runs out meanwhile. False once the deadline passed. */
bool md_txns_wait(md_txns_t *txns, pthread_mutex_t *lock, int64_t deadline_ms);
/* True while an open transaction uses `db.coll` (coll NULL: any collection of `db`). */
bool md_txns_using(const md_txns_t *txns, const char *db, const char *coll);
/* Marks (pending) or unmarks a DDL waiting for `db.coll`: new users get LockTimeout. */
bool md_txns_ddl_pending(md_txns_t *txns, const char *db, const char *coll, bool pending);

#endif

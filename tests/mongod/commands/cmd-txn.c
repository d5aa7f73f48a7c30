/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Transactions at the command level: the session fields (lsid, txnNumber, autocommit,
 * startTransaction) and what mongod allows with them, running a statement inside its
 * transaction, commitTransaction and abortTransaction, and the waits of writes and DDL for
 * open transactions (writeconcern.c answers a commit's unsatisfiable w). Rules and messages follow
 * mongod 6.0 (initialize_operation_session_info, transaction_validation, TransactionParticipant).
 * Runs with the server lock held.
 */
#include <openssl/evp.h>
#include <string.h>

#include "commands/commands.h"

/* mongod's allowlist (allowedInTransactions), less what test-mongod does not implement. */
static const char *const txn_commands[] = {"abortTransaction", "aggregate",     "commitTransaction",
                                           "create",           "createIndexes", "delete",
                                           "distinct",         "find",          "findAndModify",
                                           "findandmodify",    "getMore",       "insert",
                                           "killCursors",      "update",        NULL};
/* Commands mongod runs without authentication: they take no transaction fields. */
static const char *const no_auth_commands[] = {
   "hello",     "isMaster",     "ismaster",     "ping",   "buildInfo", "buildinfo",
   "saslStart", "saslContinue", "authenticate", "logout", NULL};
static const char *const retryable_writes[] = {"insert",        "update",        "delete",
                                               "findAndModify", "findandmodify", NULL};

static bool
listed(const char *const *names, const char *name)
{
   for (int i = 0; names[i]; i++) {
      if (strcmp(names[i], name) == 0) {
         return true;
      }
   }
   return false;
}

static bool
is_commit_or_abort(const char *name)
{
   return strcmp(name, "commitTransaction") == 0 || strcmp(name, "abortTransaction") == 0;
}

/* canUseTransactions: what may run inside a transaction at all. */
static bool
check_allowed(const md_cmd_t *c, bool start, bson_error_t *error)
{
   if (strcmp(c->name, "count") == 0) {
      return tm_error_set(error, 263,
                          "Cannot run 'count' in a multi-document transaction. "
                          "Please see http://dochub.mongodb.org/core/"
                          "transaction-count for a recommended alternative.");
   }
   if (!listed(txn_commands, c->name)) {
      return tm_error_set(error, 263, "Cannot run '%s' in a multi-document transaction.", c->name);
   }
   if (strcmp(c->db, "local") == 0 || strcmp(c->db, "config") == 0 ||
       (strcmp(c->db, "admin") == 0 && !is_commit_or_abort(c->name))) {
      return tm_error_set(error, 263,
                          "Cannot run command against the '%s' database in a "
                          "transaction.",
                          c->db);
   }
   if (start && strcmp(c->name, "killCursors") == 0) {
      return tm_error_set(error, 263,
                          "Cannot run killCursors as the first operation in a "
                          "multi-document transaction.");
   }
   if (start && is_commit_or_abort(c->name)) {
      return tm_error_set(error, 263, "Cannot start a transaction with a %s",
                          c->name[0] == 'c' ? "commit" : "abort");
   }
   return true;
}

/* readConcern and writeConcern in a transaction: the first statement sets the first, only
 * commit and abort take the second. */
static bool
check_concerns(const md_cmd_t *c, bool start, bson_error_t *error)
{
   bson_iter_t it, rc;
   if (bson_iter_init_find(&it, c->cmd, "writeConcern") && !is_commit_or_abort(c->name)) {
      return tm_error_set(error, 72,
                          "writeConcern is not allowed within a multi-statement "
                          "transaction");
   }
   if (!bson_iter_init_find(&it, c->cmd, "readConcern")) {
      return true;
   }
   if (!start) {
      return tm_error_set(error, 72,
                          "Only the first command in a transaction may specify a "
                          "readConcern");
   }
   if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &rc) &&
       bson_iter_find(&rc, "atClusterTime")) {
      /* A snapshot is taken now: an older one is not kept. */
      md_ts_t at = {0, 0}, now = c->srv->data.oplog.last;
      if (BSON_ITER_HOLDS_TIMESTAMP(&rc)) {
         bson_iter_timestamp(&rc, &at.t, &at.i);
      }
      if (md_ts_cmp(at, now) > 0) {
         return tm_error_set(error, 72,
                             "readConcern atClusterTime value must not be greater "
                             "than the current clusterTime");
      }
      if (md_ts_cmp(at, now) < 0) {
         return tm_error_set(error, 2,
                             "readConcern atClusterTime before the current cluster "
                             "time is not supported by test-mongod (its transactions "
                             "read the data as of their first statement)");
      }
   }
   if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &rc) &&
       bson_iter_find(&rc, "level")) {
      const char *level = BSON_ITER_HOLDS_UTF8(&rc) ? bson_iter_utf8(&rc, NULL) : "";
      if (strcmp(level, "local") != 0 && strcmp(level, "majority") != 0 &&
          strcmp(level, "snapshot") != 0) {
         return tm_error_set(error, 72,
                             "The readConcern level must be either 'local' "
                             "(default), 'majority' or 'snapshot' in order to run "
                             "in a transaction");
      }
   }
   return true;
}

typedef struct {
   bool number, autocommit, autocommit_value, start, start_value, lsid;
   int64_t txn_number, max_time_ms;
} fields_t;

/* The session fields and maxTimeMS, in one pass over the command (every command comes here). */
static void
read_fields(const bson_t *cmd, fields_t *f)
{
   bson_iter_t it;
   memset(f, 0, sizeof *f);
   bson_iter_init(&it, cmd);
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      if (strcmp(k, "txnNumber") == 0) {
         f->number = true;
         f->txn_number = BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
      } else if (strcmp(k, "autocommit") == 0) {
         f->autocommit = true;
         f->autocommit_value = bson_iter_as_bool(&it);
      } else if (strcmp(k, "startTransaction") == 0) {
         f->start = true;
         f->start_value = bson_iter_as_bool(&it);
      } else if (strcmp(k, "lsid") == 0) {
         f->lsid = BSON_ITER_HOLDS_DOCUMENT(&it);
      } else if (strcmp(k, "maxTimeMS") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
         f->max_time_ms = bson_iter_as_int64(&it);
      }
   }
}

/* initializeOperationSessionInfo: how the session fields may combine. */
static bool
check_fields(const md_cmd_t *c, const fields_t *f, bson_error_t *error)
{
   if (listed(no_auth_commands, c->name)) {
      return f->autocommit ? tm_error_set(error, 263,
                                          "This command is not supported in "
                                          "transactions")
                           : tm_error_set(error, 50889,
                                          "It is illegal to provide a txnNumber "
                                          "for this command");
   }
   if (f->number && !f->lsid) {
      return tm_error_set(error, 72,
                          "Transaction number requires a session ID to also be "
                          "specified");
   }
   if (f->number && f->txn_number < 0) {
      return tm_error_set(error, 72, "Transaction number cannot be negative");
   }
   if (f->autocommit && !f->number) {
      return tm_error_set(error, 72,
                          "'autocommit' field requires a transaction number to "
                          "also be specified");
   }
   if (f->autocommit && f->autocommit_value) {
      return tm_error_set(error, 72, "Specifying autocommit=true is not allowed.");
   }
   if (f->start && !f->autocommit) {
      return tm_error_set(error, 72,
                          "'startTransaction' field requires 'autocommit' field to "
                          "also be specified");
   }
   if (f->start && !f->start_value) {
      return tm_error_set(error, 72, "Specifying startTransaction=false is not allowed.");
   }
   if (!f->autocommit && !listed(retryable_writes, c->name)) {
      return tm_error_set(error, 50768,
                          "txnNumber may only be provided for multi-document "
                          "transactions and retryable write commands. autocommit:"
                          "false was not provided, and %s is not a retryable "
                          "write command.",
                          c->name);
   }
   return true;
}

bool
md_txn_gate(md_cmd_t *c, bson_error_t *error)
{
   fields_t f;
   md_txns_reap(&c->srv->data.txns);
   read_fields(c->cmd, &f);
   c->deadline_ms = f.max_time_ms > 0 ? md_now_ms() + f.max_time_ms : INT64_MAX;
   if (!f.number && !f.autocommit && !f.start) {
      return true;
   }
   if (!check_fields(c, &f, error)) {
      return false;
   }
   if (!f.autocommit) {
      return true; /* a retryable write */
   }
   if (!check_allowed(c, f.start, error) || !check_concerns(c, f.start, error)) {
      return false;
   }
   c->in_txn = true;
   c->txn_start = f.start;
   c->txn_number = f.txn_number;
   return true;
}

/* The session as change events show it: {id, uid}, where uid is mongod's user digest, the
 * SHA-256 of "user@db" when authentication is on (md_txn_begin uses that of "" without). */
static void
event_lsid(const md_cmd_t *c, const bson_t *lsid, bson_t *out)
{
   const md_auth_conn_t *auth = &c->conn->auth;
   bson_iter_t it;
   bson_init(out);
   if (bson_iter_init_find(&it, lsid, "id")) {
      bson_append_value(out, "id", 2, bson_iter_value(&it));
   }
   if (c->srv->users.enabled && auth->user_name) {
      char *name = bson_strdup_printf("%s@%s", auth->user_name, auth->user_db);
      uint8_t digest[EVP_MAX_MD_SIZE];
      unsigned int len = 0;
      EVP_Digest(name, strlen(name), digest, &len, EVP_sha256(), NULL);
      bson_append_binary(out, "uid", 3, BSON_SUBTYPE_BINARY, digest, len);
      bson_free(name);
   }
}

bool
md_txn_run(md_cmd_t *c, md_cmd_fn fn, bson_error_t *error)
{
   bson_t cmd_lsid, lsid;
   bool found;
   md_server_t *srv = c->srv;
   md_cmd_get_doc(c->cmd, "lsid", &cmd_lsid, &found, error);
   event_lsid(c, &cmd_lsid, &lsid);
   c->txn = md_sessions_txn(&srv->sessions, &srv->data.txns, &lsid, c->txn_number, c->txn_start,
                            c->name, error);
   bson_destroy(&lsid);
   if (!c->txn) {
      return false;
   }
   bool ok = fn(c, error);
   /* mongod aborts a transaction whose statement failed (before anything else runs in it). */
   if ((!ok || c->txn_failed) && c->txn->state == MD_TXN_IN_PROGRESS) {
      md_txn_abort(&srv->data.txns, c->txn);
   }
   return ok;
}

static bool
check_txn_command(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"recoveryToken", NULL};
   if (strcmp(c->db, "admin") != 0) {
      return tm_error_set(error, 13, "%s may only be run against the admin database.", c->name);
   }
   if (!md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!c->txn) {
      return tm_error_set(error, 72, "%s must be run within a transaction", c->name);
   }
   return true;
}

bool
md_cmd_commit_transaction(md_cmd_t *c, bson_error_t *error)
{
   if (!check_txn_command(c, error)) {
      return false;
   }
   if (c->txn->state == MD_TXN_IN_PROGRESS &&
       !md_txn_commit(&c->srv->data.txns, c->txn, c->srv->data.store, &c->srv->data.oplog, error)) {
      return false;
   }
   c->has_op_time = true;
   c->op_time = c->txn->commit_ts;
   return true;
}

bool
md_cmd_abort_transaction(md_cmd_t *c, bson_error_t *error)
{
   if (!check_txn_command(c, error)) {
      return false;
   }
   md_txn_abort(&c->srv->data.txns, c->txn);
   return true;
}

bool
md_cmd_coll(md_cmd_t *c, const char *name, unsigned flags, md_coll_t **coll, bool *created,
            bson_error_t *error)
{
   bool write = flags & MD_COLL_WRITE, create = flags & MD_COLL_CREATE;
   md_txn_t *branch = c->txn ? NULL : md_cmd_branch(c);
   if (branch) {
      return md_txn_coll(&c->srv->data.txns, branch, c->srv->data.store, c->db, name, write, create,
                         coll, created, error);
   }
   if (!c->txn) {
      *coll = md_store_coll(c->srv->data.store, c->db, name, create, created);
      return true;
   }
   if (write && strncmp(name, "system.", 7) == 0) {
      return tm_error_set(error, flags & MD_COLL_FAM ? 50781 : 50791,
                          "Cannot write to system "
                          "collection %s.%s within a transaction.",
                          c->db, name);
   }
   return md_txn_coll(&c->srv->data.txns, c->txn, c->srv->data.store, c->db, name, write, create,
                      coll, created, error);
}

static bool
wait_failed(md_cmd_t *c, bson_error_t *error)
{
   if (atomic_load(&c->srv->stopping)) {
      return tm_error_set(error, 11600, "interrupted at shutdown");
   }
   return tm_error_set(error, 50, "operation exceeded time limit");
}

/* A write that waited while its member stepped down is killed, as 6.0's stepdown kills
 * operations holding write locks (OperationContext::checkForInterrupt's message). */
static bool
still_primary(md_cmd_t *c, bson_error_t *error)
{
   return c->srv->topo.members[c->conn->member].state == MD_MEMBER_PRIMARY ||
          tm_error_set(error, 11602, "operation was interrupted");
}

bool
md_cmd_wait_blocked(md_cmd_t *c, bson_error_t *error)
{
   if (atomic_load(&c->srv->stopping) ||
       !md_txns_wait(&c->srv->data.txns, &c->srv->data.lock, c->deadline_ms)) {
      return wait_failed(c, error);
   }
   return still_primary(c, error);
}

bool
md_cmd_wait_ddl(md_cmd_t *c, const char *db, const char *coll, bson_error_t *error)
{
   md_txns_t *txns = &c->srv->data.txns;
   if (!md_txns_using(txns, db, coll)) {
      return true;
   }
   bool ok = true;
   md_txns_ddl_pending(txns, db, coll, true);
   while (ok && md_txns_using(txns, db, coll)) {
      ok =
         !atomic_load(&c->srv->stopping) && md_txns_wait(txns, &c->srv->data.lock, c->deadline_ms);
   }
   md_txns_ddl_pending(txns, db, coll, false);
   return (ok || wait_failed(c, error)) && still_primary(c, error);
}

/* A view's collections as the command sees them (through its transaction, if any). */
static md_coll_t *
resolve(void *ctx, const char *db, const char *name)
{
   md_cmd_t *c = ctx;
   md_coll_t *coll = NULL;
   bson_error_t ignored;
   md_txn_t *txn = c->txn ? c->txn : md_cmd_branch(c);
   if (!txn) {
      return md_store_coll(c->srv->data.store, db, name, false, NULL);
   }
   md_txn_coll(&c->srv->data.txns, txn, c->srv->data.store, db, name, false, false, &coll, NULL,
               &ignored);
   return coll;
}

bool
md_read_coll(md_cmd_t *c, const char *name, md_coll_t **coll, md_coll_t **snapshot,
             bson_error_t *error)
{
   *snapshot = NULL;
   /* An isolated primary reads its branch, except "majority": its committed snapshot (the
    * shared data at the commit point it knew at the cut), which none of the branch's
    * writes can be in (topology/replication.c). */
   bool isolated = !c->txn && md_cmd_branch(c);
   bool committed = isolated && md_cmd_reads_majority(c);
   if (committed) {
      *coll = md_store_coll(c->srv->data.store, c->db, name, false, NULL);
   } else if (!md_cmd_coll(c, name, 0, coll, NULL, error)) {
      return false;
   }
   bool in_view = c->txn || (isolated && !committed); /* a transaction's or the branch's */
   uint64_t position = in_view ? UINT64_MAX : md_cmd_read_position(c);
   /* The catalog as of the position too: a collection created, dropped or re-indexed since
    * is seen as it was (data/versions.h). */
   *coll = md_versions_catalog_at(&c->srv->data.versions, c->db, name, position, *coll);
   if (*coll && !(*coll)->view_on && position < c->srv->data.oplog.next_seq &&
       md_versions_changed_since(&c->srv->data.versions, *coll, position)) {
      *snapshot = md_versions_snapshot(&c->srv->data.versions, *coll, position);
      *coll = *snapshot; /* a secondary's or a majority read: the data as of `position` */
      return true;
   }
   if (!*coll || !(*coll)->view_on) {
      return true;
   }
   *snapshot = md_view_snapshot(resolve, c, *coll, error);
   *coll = *snapshot;
   return *snapshot != NULL;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Command dispatch: the table from command names to handlers, the checks every command
 * passes first (authorization, session and transaction fields, write concern, failCommand),
 * and the reply envelope (ok, errmsg, code, codeName, errorLabels, $clusterTime,
 * operationTime, topologyVersion on NotPrimary errors). Runs in the connection's thread with
 * the server lock held for the whole command.
 */
#include "commands/commands.h"

#include "auth/auth-cmd.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
   const char *name;
   md_cmd_fn fn;
   bool is_write; /* retryable write: gets RetryableWriteError labels */
} cmd_entry_t;

/* Commands that exist only with --enable-test-commands (mongod's enableTestCommands). */
static const char *const test_only[] = {"testMemberFault", "testRollbackLog", NULL};

static const cmd_entry_t commands[] = {
   {"hello", md_cmd_hello, false},
   {"isMaster", md_cmd_hello, false},
   {"ismaster", md_cmd_hello, false},
   {"ping", md_cmd_ping, false},
   {"buildInfo", md_cmd_build_info, false},
   {"buildinfo", md_cmd_build_info, false},
   {"getParameter", md_cmd_get_parameter, false},
   {"endSessions", md_cmd_end_sessions, false},
   {"killAllSessions", md_cmd_kill_all_sessions, false},
   {"killSessions", md_cmd_end_sessions, false},
   {"refreshSessions", md_cmd_ping, false},
   {"startSession", md_cmd_ping, false},
   {"configureFailPoint", md_cmd_configure_fail_point, false},
   {"serverStatus", md_cmd_server_status, false},
   {"replSetGetStatus", md_cmd_repl_set_get_status, false},
   {"replSetGetConfig", md_cmd_repl_set_get_config, false},
   {"replSetStepDown", md_cmd_repl_set_step_down, false},
   {"replSetStepUp", md_cmd_repl_set_step_up, false},
   {"replSetFreeze", md_cmd_repl_set_freeze, false},
   {"testMemberFault", md_cmd_test_member_fault, false},
   {"testRollbackLog", md_cmd_test_rollback_log, false},
   {"listDatabases", md_cmd_list_databases, false},
   {"connectionStatus", md_cmd_connection_status, false},
   {"whatsmyuri", md_cmd_whatsmyuri, false},
   {"hostInfo", md_cmd_host_info, false},
   {"getCmdLineOpts", md_cmd_get_cmd_line_opts, false},
   {"insert", md_cmd_insert, true},
   {"update", md_cmd_update, true},
   {"delete", md_cmd_delete, true},
   {"findAndModify", md_cmd_find_and_modify, true},
   {"findandmodify", md_cmd_find_and_modify, true},
   {"find", md_cmd_find, false},
   {"getMore", md_cmd_get_more, false},
   {"killCursors", md_cmd_kill_cursors, false},
   {"aggregate", md_cmd_aggregate, false},
   {"count", md_cmd_count, false},
   {"distinct", md_cmd_distinct, false},
   {"create", md_cmd_create, false},
   {"drop", md_cmd_drop, false},
   {"dropDatabase", md_cmd_drop_database, false},
   {"createIndexes", md_cmd_create_indexes, false},
   {"dropIndexes", md_cmd_drop_indexes, false},
   {"deleteIndexes", md_cmd_drop_indexes, false},
   {"listIndexes", md_cmd_list_indexes, false},
   {"listCollections", md_cmd_list_collections, false},
   {"renameCollection", md_cmd_rename_collection, false},
   {"collMod", md_cmd_coll_mod, false},
   {"commitTransaction", md_cmd_commit_transaction, false},
   {"abortTransaction", md_cmd_abort_transaction, false},
   {"saslStart", md_cmd_sasl_start, false},
   {"saslContinue", md_cmd_sasl_continue, false},
   {"authenticate", md_cmd_authenticate, false},
   {"logout", md_cmd_logout, false},
   {"createUser", md_cmd_create_user, false},
   {"updateUser", md_cmd_update_user, false},
   {"dropUser", md_cmd_drop_user, false},
   {"usersInfo", md_cmd_users_info, false},
   {NULL, NULL, false},
};

const char *
md_code_name(int32_t code)
{
   return tm_code_name(code);
}

static bool
is_retryable_code(int32_t code)
{
   static const int32_t codes[] = {6,     7,     89,    91, 189, 262,   9001, 10107, 11600,
                                   11602, 13435, 13436, 63, 150, 13388, 134,  0};
   for (int i = 0; codes[i]; i++) {
      if (codes[i] == code) {
         return true;
      }
   }
   return false;
}

bool
md_is_transient_txn_error(int32_t code, bool has_write_concern_error, bool commit_or_abort)
{
   /* WriteConflict, LockTimeout, PreparedTransactionInProgress, StaleDbVersion, and the
    * snapshot errors (SnapshotTooOld, SnapshotUnavailable, StaleChunkHistory,
    * MigrationConflict). */
   static const int32_t codes[] = {112, 24, 267, 249, 239, 246, 287, 327, 0};
   for (int i = 0; codes[i]; i++) {
      if (codes[i] == code) {
         return true;
      }
   }
   if (commit_or_abort) {
      return code == 251 && !has_write_concern_error;
   }
   return is_retryable_code(code) || code == 251;
}

/* mongod's ErrorLabelBuilder: TransientTransactionError for a transaction's statements,
 * else RetryableWriteError for retryable writes and commit/abort on retryable codes. */
static void
add_labels(md_cmd_t *c, int32_t code, int32_t wc_code)
{
   bool has_number = bson_has_field(c->cmd, "txnNumber");
   bool in_txn = has_number && bson_has_field(c->cmd, "autocommit");
   bool commit_or_abort =
      strcmp(c->name, "commitTransaction") == 0 || strcmp(c->name, "abortTransaction") == 0;
   if (c->labels_fixed) {
      return;
   }
   if (code && in_txn && md_is_transient_txn_error(code, wc_code != 0, commit_or_abort)) {
      md_cmd_add_label(c, "TransientTransactionError");
   } else if (((has_number && !in_txn) || (in_txn && commit_or_abort)) &&
              (is_retryable_code(code) || is_retryable_code(wc_code))) {
      md_cmd_add_label(c, "RetryableWriteError");
   }
}

/* mongod's appendErrorLabelsAndTopologyVersion: a NotPrimaryError (as error or write concern
 * error) carries the server's topologyVersion, by which drivers tell a failCommand-made error
 * (the version they know: stale, ignored) from a real change of the primary. Shutdown errors
 * carry it only when the server really shuts down, which a failpoint's never does. */
static void
append_topology_version(const md_member_t *me, int32_t code, int32_t wc_code, bson_t *out)
{
   static const int32_t not_primary[] = {10107, 13435, 13436, 11602, 189, 0};
   bool hit = false;
   for (int i = 0; not_primary[i]; i++) {
      hit = hit || code == not_primary[i] || wc_code == not_primary[i];
   }
   if (hit) {
      bson_t tv;
      BSON_APPEND_DOCUMENT_BEGIN(out, "topologyVersion", &tv);
      BSON_APPEND_OID(&tv, "processId", &me->process_id);
      BSON_APPEND_INT64(&tv, "counter", me->counter);
      bson_append_document_end(out, &tv);
   }
}

static void
append_times(md_server_t *srv, int member, bson_t *reply, const md_ts_t *op_time)
{
   if (srv->opts.standalone) {
      return; /* a standalone keeps no cluster time (r6.0 vector_clock: disabled) */
   }
   md_ts_t now = member >= 0 ? md_isolation_cluster_time(srv, member) : srv->data.oplog.last;
   bson_t ct, sig;
   static const uint8_t zero_hash[20];
   bson_append_document_begin(reply, "$clusterTime", -1, &ct);
   bson_append_timestamp(&ct, "clusterTime", -1, now.t, now.i);
   bson_append_document_begin(&ct, "signature", -1, &sig);
   bson_append_binary(&sig, "hash", -1, BSON_SUBTYPE_BINARY, zero_hash, sizeof zero_hash);
   bson_append_int64(&sig, "keyId", -1, 0);
   bson_append_document_end(&ct, &sig);
   bson_append_document_end(reply, &ct);
   const md_ts_t *ot = op_time ? op_time : &now;
   bson_append_timestamp(reply, "operationTime", -1, ot->t, ot->i);
}

void
md_error_reply(md_server_t *srv, const bson_error_t *error, const bson_t *labels, bson_t *reply)
{
   md_error_reply_with(srv, error, labels, NULL, reply);
}

void
md_error_reply_with(md_server_t *srv, const bson_error_t *error, const bson_t *labels,
                    const bson_t *extra, bson_t *reply)
{
   int32_t code = error->code ? (int32_t)error->code : 1; /* code 0 aborts libmongoc */
   bson_init(reply);
   BSON_APPEND_DOUBLE(reply, "ok", 0.0);
   BSON_APPEND_UTF8(reply, "errmsg", error->message);
   BSON_APPEND_INT32(reply, "code", code);
   const char *name = md_code_name(code);
   char location[32];
   if (!name) {
      /* mongod names codes without a symbolic name after their assertion location. */
      snprintf(location, sizeof location, "Location%d", (int)code);
      name = location;
   }
   BSON_APPEND_UTF8(reply, "codeName", name);
   if (extra) {
      bson_concat(reply, extra);
   }
   if (labels && !bson_empty(labels)) {
      BSON_APPEND_ARRAY(reply, "errorLabels", labels);
   }
   pthread_mutex_lock(&srv->data.lock);
   append_times(srv, -1, reply, NULL);
   pthread_mutex_unlock(&srv->data.lock);
}

void
md_cmd_add_label(md_cmd_t *c, const char *label)
{
   char key[16];
   const char *k;
   bson_uint32_to_string(c->n_labels++, &k, key, sizeof key);
   bson_append_utf8(&c->labels, k, -1, label, -1);
}

static const char *const generic_args[] = {"$db",
                                           "lsid",
                                           "txnNumber",
                                           "$clusterTime",
                                           "$readPreference",
                                           "readConcern",
                                           "writeConcern",
                                           "apiVersion",
                                           "apiStrict",
                                           "apiDeprecationErrors",
                                           "comment",
                                           "autocommit",
                                           "startTransaction",
                                           "maxTimeMS",
                                           "$client",
                                           "$audit",
                                           "mayBypassWriteBlocking",
                                           "$configServerState",
                                           "$queryOptions",
                                           "$replData",
                                           "$gleStats",
                                           "$oplogQueryData",
                                           NULL};

bool
md_cmd_check_fields(const md_cmd_t *c, const char *const *allowed, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it); /* the command name */
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      bool ok = false;
      for (int i = 0; !ok && allowed[i]; i++) {
         ok = strcmp(k, allowed[i]) == 0;
      }
      for (int i = 0; !ok && generic_args[i]; i++) {
         ok = strcmp(k, generic_args[i]) == 0;
      }
      if (!ok) {
         return tm_error_set(error, 40415, "BSON field '%s.%s' is an unknown field.", c->name, k);
      }
   }
   return true;
}

const char *
md_cmd_coll_name(const md_cmd_t *c, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   if (!BSON_ITER_HOLDS_UTF8(&it)) {
      tm_error_set(error, 73, "collection name has invalid type %s",
                   BSON_ITER_HOLDS_NUMBER(&it) ? "int" : "non-string");
      return NULL;
   }
   const char *name = bson_iter_utf8(&it, NULL);
   if (!*name || strchr(name, '\0') != name + strlen(name) || name[0] == '$') {
      tm_error_set(error, 73, "Invalid namespace specified '%s.%s'", c->db, name);
      return NULL;
   }
   return name;
}

bool
md_cmd_get_doc(const bson_t *cmd, const char *field, bson_t *out, bool *found, bson_error_t *error)
{
   bson_iter_t it;
   *found = false;
   bson_init(out);
   if (!bson_iter_init_find(&it, cmd, field) || BSON_ITER_HOLDS_NULL(&it)) {
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return tm_error_set(error, 14, "BSON field '%s' is the wrong type, expected type 'object'",
                          field);
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   bson_destroy(out);
   bson_init_static(out, data, len);
   *found = true;
   return true;
}

bool
md_cmd_get_int64(const bson_t *cmd, const char *field, int64_t *out, bson_error_t *error)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, cmd, field) || BSON_ITER_HOLDS_NULL(&it)) {
      return true;
   }
   if (!BSON_ITER_HOLDS_NUMBER(&it)) {
      return tm_error_set(error, 14, "BSON field '%s' is the wrong type, expected a number", field);
   }
   *out = bson_iter_as_int64(&it);
   return true;
}

static const cmd_entry_t *
lookup(const md_server_t *srv, const char *name)
{
   for (int i = 0; !srv->opts.test_commands && test_only[i]; i++) {
      if (strcmp(test_only[i], name) == 0) {
         return NULL;
      }
   }
   for (int i = 0; commands[i].name; i++) {
      if (strcmp(commands[i].name, name) == 0) {
         return &commands[i];
      }
   }
   return NULL;
}

static void
sleep_ms(md_server_t *srv, int64_t ms)
{
   while (ms > 0 && !atomic_load(&srv->stopping)) {
      int64_t step = ms > 50 ? 50 : ms;
      struct timespec ts = {.tv_sec = 0, .tv_nsec = step * 1000000};
      nanosleep(&ts, NULL);
      ms -= step;
   }
}

/* Applies failCommand. Returns true if the command must not run (error set or closing). */
static bool
apply_failpoint(md_cmd_t *c, const cmd_entry_t *entry, md_fp_action_t *fp, bson_error_t *error)
{
   if (strcmp(c->name, "configureFailPoint") == 0) {
      return false;
   }
   md_failpoint_check(&c->srv->failpoints, c->name, c->conn->app_name, fp);
   if (!fp->hit) {
      return false;
   }
   if (fp->has_labels) {
      /* The fail point's errorLabels replace every label mongod would add. */
      bson_iter_t arr;
      bson_iter_recurse(&fp->labels, &arr);
      while (bson_iter_next(&arr)) {
         if (BSON_ITER_HOLDS_UTF8(&arr)) {
            md_cmd_add_label(c, bson_iter_utf8(&arr, NULL));
         }
      }
      c->labels_fixed = true;
   }
   if (fp->block_ms > 0) {
      pthread_mutex_unlock(&c->srv->data.lock);
      sleep_ms(c->srv, fp->block_ms);
      pthread_mutex_lock(&c->srv->data.lock);
   }
   if (fp->close_connection) {
      c->close_connection = true;
      return true;
   }
   if (fp->code == 0) {
      return false;
   }
   tm_error_set(error, fp->code, "Failing command %s via 'failCommand' failpoint", c->name);
   (void)entry;
   /* No ResumableChangeStreamError here: failCommand fires before the cursor is checked
    * out, so mongod cannot know the getMore belongs to a change stream (SERVER-46091). */
   return true;
}

/* For a router (shard/): failCommand alone, before the router sends the command on. A
 * writeConcernError fail point lets the command run; its reply then carries the error and
 * the fail point's errorLabels, as 6.0's mongos adds them after running a command that takes
 * a write concern (src/mongo/s/commands/strategy.cpp, ExecCommandClient::_epilogue). */
bool
md_command_failpoint(md_conn_t *conn, const bson_t *cmd, bson_t *reply, bool *close,
                     bson_t *epilogue)
{
   md_server_t *srv = conn->srv;
   bson_error_t error = {0};
   bson_iter_t it;
   md_cmd_t c = {.srv = srv, .conn = conn, .cmd = cmd, .reply = reply};
   md_fp_action_t fp = {0};
   *close = false;
   if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it)) {
      return false;
   }
   c.name = bson_iter_key(&it);
   c.db = bson_iter_init_find(&it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&it)
             ? bson_iter_utf8(&it, NULL)
             : "";
   bson_init(&c.labels);
   pthread_mutex_lock(&srv->data.lock);
   bool stop = apply_failpoint(&c, NULL, &fp, &error);
   if (stop && !c.close_connection) {
      add_labels(&c, (int32_t)error.code, 0);
   }
   bson_init(epilogue);
   if (!stop && fp.wce_doc) {
      BSON_APPEND_DOCUMENT(epilogue, "writeConcernError", fp.wce_doc);
      if (!bson_empty(&c.labels)) {
         BSON_APPEND_ARRAY(epilogue, "errorLabels", &c.labels);
      }
   }
   pthread_mutex_unlock(&srv->data.lock);
   if (stop && !c.close_connection) {
      md_error_reply_with(srv, &error, &c.labels, NULL, reply);
   }
   *close = c.close_connection;
   bson_destroy(&c.labels);
   return stop;
}

/* A retryable write (lsid + txnNumber) runs at most once per txnNumber: a retry gets the
 * first reply back. onPrimaryTransactionalWrite can fail it before or after it commits. */
static bool
run_retryable_write(md_cmd_t *c, const cmd_entry_t *entry, bson_error_t *error)
{
   const bson_t *replay;
   md_fp_action_t fp;
   if (!md_sessions_begin(&c->srv->sessions, &c->srv->data.txns, c->cmd, &replay, error)) {
      return false;
   }
   if (replay) {
      bson_concat(c->reply, replay);
      return true;
   }
   md_failpoint_check_txn_write(&c->srv->failpoints, &fp);
   if (fp.code) {
      return tm_error_set(error, fp.code,
                          "Failing write via 'onPrimaryTransactionalWrite' "
                          "failpoint");
   }
   if (!entry->fn(c, error)) {
      return false;
   }
   if (!md_cmd_branch(c)) {
      /* An isolated primary's record of a retryable write would be rolled back with the
       * write (config.transactions is replicated data): a retry elsewhere runs again. */
      md_sessions_record(&c->srv->sessions, c->cmd, c->reply);
   }
   c->close_connection = fp.close_connection;
   return true;
}

/* As mongod: session fields are checked before failCommand fires, and a transaction
 * statement runs in its transaction (which checks its state first). */
static bool
run_locked(md_cmd_t *c, const cmd_entry_t *entry, bson_error_t *error, md_fp_action_t *fp)
{
   if (!entry) {
      return !apply_failpoint(c, entry, fp, error) &&
             tm_error_set(error, 59, "no such command: '%s'", c->name);
   }
   /* mongod checks authorization and the session fields before failCommand fires, and
    * whether this member may run the command after it (service_entry_point_common.cpp, r6.0:
    * evaluateFailCommandFailPoint, then the canRunHere checks), so a command blocked by
    * failCommand on a primary that steps down meanwhile then fails with 10107. */
   if (!md_auth_check(c, error) || !md_txn_gate(c, error) || apply_failpoint(c, entry, fp, error) ||
       !md_cmd_check_member(c, error) || !md_cmd_wait_read_concern(c, error)) {
      return false;
   }
   if (!md_write_concern_parse(c->name, c->cmd, error)) {
      return false;
   }
   if (c->in_txn) {
      return md_txn_run(c, entry->fn, error);
   }
   if (entry->is_write && bson_has_field(c->cmd, "txnNumber")) {
      return run_retryable_write(c, entry, error);
   }
   return entry->fn(c, error);
}

/* $$NOW and $$CLUSTER_TIME hold still for the whole command, as in mongod: the wall clock and
 * the cluster time when it starts. */
static void
set_command_clock(const md_server_t *srv, int64_t offset_ms)
{
   struct timespec now;
   tm_command_clock_t clock = {.cluster_time_t = srv->data.oplog.last.t,
                               .cluster_time_i = srv->data.oplog.last.i,
                               .has_cluster_time = true};

   clock_gettime(CLOCK_REALTIME, &now);
   clock.now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + offset_ms;
   tm_command_clock_set(&clock);
}

bool
md_command_run(md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   if (conn->srv->route) {
      return conn->srv->route(conn, cmd, reply);
   }
   return md_command_run_local(conn, cmd, reply);
}

bool
md_command_run_local(md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   md_server_t *srv = conn->srv;
   bson_error_t error = {0};
   bson_iter_t it;
   md_cmd_t c = {.srv = srv, .conn = conn, .cmd = cmd, .reply = reply};
   bson_init(&c.labels);
   bson_init(&c.error_extra);
   bson_init(reply);
   bson_iter_init(&it, cmd);
   bool ok = bson_iter_next(&it);
   c.name = ok ? bson_iter_key(&it) : "";
   ok = ok && bson_iter_init_find(&it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&it);
   c.db = ok ? bson_iter_utf8(&it, NULL) : "";
   md_fp_action_t fp = {0};
   if (!ok) {
      tm_error_set(&error, 40571, "command has no name or no $db");
   } else {
      pthread_mutex_lock(&srv->data.lock);
      md_cmd_gossip_in(srv, cmd);
      /* The member's clock (testMemberFault "clock") moves $$NOW and what its writes stamp. */
      int64_t offset = srv->topo.members[conn->member].clock_offset_ms;
      srv->data.oplog.wall_offset_ms = offset;
      set_command_clock(srv, offset);
      srv->data.bypass_validation =
         bson_iter_init_find(&it, cmd, "bypassDocumentValidation") && bson_iter_as_bool(&it);
      md_txn_t *branch = md_cmd_branch(&c);
      size_t branch_ops = branch ? branch->n_ops : 0;
      ok = run_locked(&c, lookup(srv, c.name), &error, &fp);
      if (ok && branch == md_cmd_branch(&c)) {
         md_isolation_tick(&c, branch_ops);
      }
      srv->data.bypass_validation = false;
      srv->data.oplog.wall_offset_ms = 0;
      tm_command_clock_set(NULL);
      if (ok) {
         BSON_APPEND_DOUBLE(reply, "ok", 1.0);
         if (fp.wce_doc) {
            BSON_APPEND_DOCUMENT(reply, "writeConcernError", fp.wce_doc);
         } else {
            md_write_concern_check(c.name, c.cmd, srv->topo.n, reply);
            md_cmd_wait_write_concern(&c);
         }
         if (bson_iter_init_find(&it, reply, "writeConcernError")) {
            bson_iter_t code;
            c.wc_code = bson_iter_recurse(&it, &code) && bson_iter_find(&code, "code")
                           ? (int32_t)bson_iter_as_int64(&code)
                           : 0;
            add_labels(&c, 0, c.wc_code);
            if (!bson_empty(&c.labels)) {
               BSON_APPEND_ARRAY(reply, "errorLabels", &c.labels);
            }
            append_topology_version(&srv->topo.members[conn->member], 0, c.wc_code, reply);
         }
         append_times(srv, conn->member, reply, c.has_op_time ? &c.op_time : NULL);
      } else {
         add_labels(&c, (int32_t)error.code, 0);
         append_topology_version(&srv->topo.members[conn->member], (int32_t)error.code, 0,
                                 &c.error_extra);
      }
      pthread_mutex_unlock(&srv->data.lock);
   }
   if (!ok && !c.close_connection) {
      /* mongod's error label builder: 280 and 286 from any command (aggregate included) are
       * NonResumableChangeStreamError, unless a failpoint's errorLabels replaced the labels. */
      if (!fp.has_labels && (error.code == 280 || error.code == 286)) {
         md_cmd_add_label(&c, "NonResumableChangeStreamError");
      }
      md_log(srv, "conn%d: %s failed: %d %s", (int)conn->id, c.name, (int)error.code,
             error.message);
      bson_destroy(reply);
      md_error_reply_with(srv, &error, &c.labels, &c.error_extra, reply);
   }
   bson_destroy(&c.labels);
   bson_destroy(&c.error_extra);
   return !c.close_connection;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Write concerns as the primary of a one-member replica set sees them. mongod applies the
 * write first and then waits for the write concern; before waiting it checks that the
 * replica set configuration can satisfy it at all (ReplicationCoordinatorImpl::
 * _checkIfWriteConcernCanBeSatisfied_inlock), and answers at once when it cannot, so
 * `wtimeout` never delays these answers:
 *   - w: N > 1 data-bearing members: writeConcernError 100 UnsatisfiableWriteConcern
 *     "Not enough data-bearing nodes";
 *   - w: "<mode>" other than "majority": 79 UnknownReplWriteConcern "No write concern mode
 *     named '<mode>' found in replica set configuration" (the set defines no modes);
 *   - w: 0, 1, "majority": satisfied by the one member.
 * The error rides on a successful reply, with errInfo.writeConcern echoing what was asked.
 * Called with the server lock held, from the command dispatcher only.
 */
#include <string.h>

#include "engine/engine.h"
#include "txn/writeconcern.h"

/* Commands that accept a writeConcern (the ones test-mongod implements). */
static const char *const wc_commands[] = {"insert",
                                          "update",
                                          "delete",
                                          "findAndModify",
                                          "findandmodify",
                                          "create",
                                          "drop",
                                          "dropDatabase",
                                          "createIndexes",
                                          "dropIndexes",
                                          "deleteIndexes",
                                          "renameCollection",
                                          "collMod",
                                          "commitTransaction",
                                          "abortTransaction",
                                          NULL};

static bool
takes_write_concern(const char *name)
{
   for (int i = 0; wc_commands[i]; i++) {
      if (strcmp(wc_commands[i], name) == 0) {
         return true;
      }
   }
   return false;
}

bool
md_write_concern_parse(const char *name, const bson_t *cmd, bson_error_t *error)
{
   bson_iter_t it, wc;
   if (!bson_iter_init_find(&it, cmd, "writeConcern") || !takes_write_concern(name)) {
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &wc)) {
      return tm_error_set(error, 14,
                          "BSON field 'writeConcern' is the wrong type, expected "
                          "type 'object'");
   }
   if (!bson_iter_find(&wc, "w")) {
      return true;
   }
   if (BSON_ITER_HOLDS_NUMBER(&wc)) {
      int64_t w = bson_iter_as_int64(&wc);
      if (w < 0 || w > 50) {
         return tm_error_set(error, 9,
                             "w has to be a non-negative number and not greater "
                             "than 50; or a string");
      }
      return true;
   }
   if (!BSON_ITER_HOLDS_UTF8(&wc)) {
      return tm_error_set(error, 9, "w has to be a number or a string");
   }
   return true;
}

/* {w, j?, wtimeout, provenance} as mongod echoes the write concern in errInfo. */
static void
append_err_info(bson_t *wce, const bson_t *wc, bool timed_out)
{
   bson_iter_t it;
   bson_t info, echo;
   BSON_APPEND_DOCUMENT_BEGIN(wce, "errInfo", &info);
   if (timed_out) {
      BSON_APPEND_BOOL(&info, "wtimeout", true);
   }
   BSON_APPEND_DOCUMENT_BEGIN(&info, "writeConcern", &echo);
   if (bson_iter_init_find(&it, wc, "w")) {
      bson_append_value(&echo, "w", 1, bson_iter_value(&it));
   }
   if (bson_iter_init_find(&it, wc, "j")) {
      BSON_APPEND_BOOL(&echo, "j", bson_iter_as_bool(&it));
   }
   int32_t wtimeout = 0;
   if (bson_iter_init_find(&it, wc, "wtimeout") && BSON_ITER_HOLDS_NUMBER(&it)) {
      wtimeout = (int32_t)bson_iter_as_int64(&it);
   }
   BSON_APPEND_INT32(&echo, "wtimeout", wtimeout);
   BSON_APPEND_UTF8(&echo, "provenance", "clientSupplied");
   bson_append_document_end(&info, &echo);
   bson_append_document_end(wce, &info);
}

int
md_write_concern_members(const char *name, const bson_t *cmd, int n_members, int64_t *wtimeout_ms)
{
   bson_iter_t it, wc;
   *wtimeout_ms = 0;
   if (!takes_write_concern(name) || !bson_iter_init_find(&it, cmd, "writeConcern") ||
       !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &wc)) {
      return 1;
   }
   bson_iter_t w = wc;
   if (bson_iter_find(&wc, "wtimeout") && BSON_ITER_HOLDS_NUMBER(&wc)) {
      *wtimeout_ms = bson_iter_as_int64(&wc);
   }
   if (!bson_iter_find(&w, "w")) {
      return 1;
   }
   if (BSON_ITER_HOLDS_NUMBER(&w)) {
      int64_t n = bson_iter_as_int64(&w);
      return n <= n_members ? (int)n : 1; /* more: unsatisfiable, md_write_concern_check */
   }
   return BSON_ITER_HOLDS_UTF8(&w) && strcmp(bson_iter_utf8(&w, NULL), "majority") == 0
             ? n_members / 2 + 1
             : 1;
}

static void
append_wce(const bson_t *cmd, bson_t *reply, int32_t code, const char *name, const char *msg,
           bool timed_out)
{
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   bson_t wc, wce;
   bson_iter_init_find(&it, cmd, "writeConcern");
   bson_iter_document(&it, &len, &data);
   bson_init_static(&wc, data, len);
   BSON_APPEND_DOCUMENT_BEGIN(reply, "writeConcernError", &wce);
   BSON_APPEND_INT32(&wce, "code", code);
   BSON_APPEND_UTF8(&wce, "codeName", name);
   BSON_APPEND_UTF8(&wce, "errmsg", msg);
   append_err_info(&wce, &wc, timed_out);
   bson_append_document_end(reply, &wce);
}

void
md_write_concern_timed_out(const bson_t *cmd, bson_t *reply)
{
   append_wce(cmd, reply, 64, tm_code_name(64), "waiting for replication timed out", true);
}

void
md_write_concern_stepped_down(const bson_t *cmd, bson_t *reply)
{
   append_wce(cmd, reply, 189, tm_code_name(189),
              "Primary stepped down while waiting for replication", false);
}

void
md_write_concern_check(const char *name, const bson_t *cmd, int n_members, bson_t *reply)
{
   bson_iter_t it, w;
   uint32_t len;
   const uint8_t *data;
   bson_t wc, wce;
   if (!takes_write_concern(name) || !bson_iter_init_find(&it, cmd, "writeConcern") ||
       !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return;
   }
   bson_iter_document(&it, &len, &data);
   bson_init_static(&wc, data, len);
   if (!bson_iter_init_find(&w, &wc, "w")) {
      return;
   }
   bool too_many = BSON_ITER_HOLDS_NUMBER(&w) && bson_iter_as_int64(&w) > n_members;
   bool unknown_mode =
      BSON_ITER_HOLDS_UTF8(&w) && strcmp(bson_iter_utf8(&w, NULL), "majority") != 0;
   if (!too_many && !unknown_mode) {
      return;
   }
   BSON_APPEND_DOCUMENT_BEGIN(reply, "writeConcernError", &wce);
   BSON_APPEND_INT32(&wce, "code", too_many ? 100 : 79);
   BSON_APPEND_UTF8(&wce, "codeName", tm_code_name(too_many ? 100 : 79));
   if (too_many) {
      BSON_APPEND_UTF8(&wce, "errmsg", "Not enough data-bearing nodes");
   } else {
      char *msg = bson_strdup_printf("No write concern mode named '%s' found in replica set "
                                     "configuration",
                                     bson_iter_utf8(&w, NULL));
      BSON_APPEND_UTF8(&wce, "errmsg", msg);
      bson_free(msg);
   }
   append_err_info(&wce, &wc, false);
   bson_append_document_end(reply, &wce);
}

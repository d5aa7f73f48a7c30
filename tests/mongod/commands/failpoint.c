/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The fail point table behind configureFailPoint: failCommand (errors, closed connections,
 * blocking, write concern errors) and failGetMoreAfterCursorCheckout, with their `times`
 * and `skip` counters, filtered by command names and appName. The table lives in
 * md_server_t; callers hold the server lock.
 */
#include "commands/failpoint.h"

#include <string.h>

#include "engine/engine.h"

void
md_failpoints_destroy(md_failpoints_t *fps)
{
   bson_destroy(fps->fail_command.data);
   bson_destroy(fps->fail_getmore.data);
   bson_destroy(fps->txn_write.data);
   memset(fps, 0, sizeof *fps);
}

static bool
parse_mode(const bson_iter_t *mode_it, md_failpoint_t *fp, bson_error_t *error)
{
   bson_iter_t it;
   if (BSON_ITER_HOLDS_UTF8(mode_it)) {
      const char *m = bson_iter_utf8(mode_it, NULL);
      if (strcmp(m, "alwaysOn") == 0) {
         fp->mode = 1;
      } else if (strcmp(m, "off") == 0) {
         fp->mode = 0;
      } else {
         return tm_error_set(error, 2, "unknown fail point mode '%s'", m);
      }
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(mode_it) || !bson_iter_recurse(mode_it, &it) ||
       !bson_iter_next(&it) || !BSON_ITER_HOLDS_NUMBER(&it)) {
      return tm_error_set(error, 2, "fail point mode must be a string or {times|skip: n}");
   }
   if (strcmp(bson_iter_key(&it), "times") == 0) {
      fp->mode = 2;
   } else if (strcmp(bson_iter_key(&it), "skip") == 0) {
      fp->mode = 3;
   } else {
      return tm_error_set(error, 2, "unsupported fail point mode '%s'", bson_iter_key(&it));
   }
   fp->n = bson_iter_as_int64(&it);
   if (fp->n < 0) {
      return tm_error_set(error, 2, "fail point count must not be negative");
   }
   if (fp->mode == 2 && fp->n == 0) {
      fp->mode = 0;
   }
   return true;
}

bool
md_failpoint_configure(md_failpoints_t *fps, const bson_t *cmd, bson_t *reply, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, cmd);
   bson_iter_next(&it);
   if (!BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 2, "configureFailPoint takes a fail point name");
   }
   const char *name = bson_iter_utf8(&it, NULL);
   md_failpoint_t *fp;
   if (strcmp(name, "failCommand") == 0) {
      fp = &fps->fail_command;
   } else if (strcmp(name, "failGetMoreAfterCursorCheckout") == 0) {
      fp = &fps->fail_getmore;
   } else if (strcmp(name, "onPrimaryTransactionalWrite") == 0) {
      fp = &fps->txn_write;
   } else {
      return tm_error_set(error, 2, "Cannot find failpoint: %s", name);
   }
   md_failpoint_t next = {0};
   if (!bson_iter_init_find(&it, cmd, "mode") || !parse_mode(&it, &next, error)) {
      return error->code ? false : tm_error_set(error, 2, "configureFailPoint needs a mode");
   }
   if (bson_iter_init_find(&it, cmd, "data")) {
      uint32_t len;
      const uint8_t *data;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         return tm_error_set(error, 14, "fail point data must be a document");
      }
      bson_iter_document(&it, &len, &data);
      next.data = bson_new_from_data(data, len);
   }
   if (fp == &fps->fail_command && next.mode != 0 &&
       (!next.data || !bson_iter_init_find(&it, next.data, "failCommands") ||
        !BSON_ITER_HOLDS_ARRAY(&it))) {
      bson_destroy(next.data);
      return tm_error_set(error, 9, "failCommand fail point requires data.failCommands");
   }
   BSON_APPEND_INT32(reply, "count", (int32_t)fp->entered);
   bson_destroy(fp->data);
   *fp = next;
   return true;
}

/* Consumes one activation according to the mode; true if the fail point fires now. */
static bool
fire(md_failpoint_t *fp)
{
   switch (fp->mode) {
   case 1:
      break;
   case 2:
      if (--fp->n == 0) {
         fp->mode = 0;
      }
      break;
   case 3:
      if (fp->n > 0) {
         fp->n--;
         return false;
      }
      break;
   default:
      return false;
   }
   fp->entered++;
   return true;
}

static void
fill_action(const md_failpoint_t *fp, md_fp_action_t *a)
{
   bson_iter_t it;
   a->hit = true;
   if (bson_iter_init_find(&it, fp->data, "errorCode") && BSON_ITER_HOLDS_NUMBER(&it)) {
      a->code = (int32_t)bson_iter_as_int64(&it);
   }
   if (bson_iter_init_find(&it, fp->data, "closeConnection")) {
      a->close_connection = bson_iter_as_bool(&it);
   }
   if (bson_iter_init_find(&it, fp->data, "blockConnection") && bson_iter_as_bool(&it) &&
       bson_iter_init_find(&it, fp->data, "blockTimeMS")) {
      a->block_ms = bson_iter_as_int64(&it);
   }
   if (bson_iter_init_find(&it, fp->data, "errorLabels") && BSON_ITER_HOLDS_ARRAY(&it)) {
      a->has_labels = true;
      a->labels = it;
   }
   if (bson_iter_init_find(&it, fp->data, "writeConcernError") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      bson_init_static(&a->wce, data, len);
      a->wce_doc = &a->wce;
   }
}

static bool
names_command(const bson_t *data, const char *name)
{
   bson_iter_t it, arr;
   if (!bson_iter_init_find(&it, data, "failCommands") || !bson_iter_recurse(&it, &arr)) {
      return false;
   }
   while (bson_iter_next(&arr)) {
      if (BSON_ITER_HOLDS_UTF8(&arr) && strcmp(bson_iter_utf8(&arr, NULL), name) == 0) {
         return true;
      }
   }
   return false;
}

void
md_failpoint_check(md_failpoints_t *fps, const char *name, const char *app_name,
                   md_fp_action_t *action)
{
   md_failpoint_t *fp = &fps->fail_command;
   bson_iter_t it;
   memset(action, 0, sizeof *action);
   if (fp->mode == 0 || !names_command(fp->data, name)) {
      return;
   }
   if (bson_iter_init_find(&it, fp->data, "appName") && BSON_ITER_HOLDS_UTF8(&it) &&
       (!app_name || strcmp(app_name, bson_iter_utf8(&it, NULL)) != 0)) {
      return;
   }
   if (fire(fp)) {
      fill_action(fp, action);
   }
}

void
md_failpoint_check_getmore(md_failpoints_t *fps, md_fp_action_t *action)
{
   memset(action, 0, sizeof *action);
   md_failpoint_t *fp = &fps->fail_getmore;
   if (fp->mode != 0 && fire(fp)) {
      if (fp->data) {
         fill_action(fp, action);
      } else {
         action->hit = true;
      }
   }
}

void
md_failpoint_check_txn_write(md_failpoints_t *fps, md_fp_action_t *action)
{
   bson_iter_t it;
   memset(action, 0, sizeof *action);
   md_failpoint_t *fp = &fps->txn_write;
   if (fp->mode == 0 || !fire(fp)) {
      return;
   }
   action->hit = true;
   action->close_connection = true; /* mongod's default for this fail point */
   if (fp->data && bson_iter_init_find(&it, fp->data, "closeConnection")) {
      action->close_connection = bson_iter_as_bool(&it);
   }
   if (fp->data && bson_iter_init_find(&it, fp->data, "failBeforeCommitExceptionCode") &&
       BSON_ITER_HOLDS_NUMBER(&it)) {
      action->code = (int32_t)bson_iter_as_int64(&it);
      action->close_connection = false;
   }
}

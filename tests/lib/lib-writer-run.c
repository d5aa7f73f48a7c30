/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "lib-writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
is(const bson_error_t *error, outbox_error_code_t code)
{
   return error->domain == OUTBOX_ERROR_DOMAIN && error->code == (uint32_t)code;
}

/* One commit, retried until it is in. */
static bool
commit_one(outbox_collection_t *coll, const bson_value_t *id, int writer, int c,
           bson_error_t *error)
{
   outbox_event_t *evs[2];
   int n = LW_EVENTS_OF(c);
   bson_t *inc = BCON_NEW("$inc", "{", "counter", BCON_INT32(1), "}");
   bool ok = false;

   for (int k = 0; k < n; k++) {
      bson_t *data = BCON_NEW("w", BCON_INT32(writer), "c", BCON_INT32(c), "k", BCON_INT32(k));

      evs[k] = outbox_event_new("test.committed", data);
      bson_destroy(data);
   }
   for (int attempt = 0; attempt < 10000 && !ok; attempt++) {
      int64_t version;

      if (c % 2 == 0) {
         ok = outbox_collection_append(coll, id, evs, (size_t)n, NULL, error);
         if (!ok && !is(error, OUTBOX_ERROR_RETRIES_EXHAUSTED)) {
            break;
         }
      } else {
         if (!outbox_collection_read(coll, id, NULL, &version, error)) {
            break;
         }
         ok = outbox_collection_update(coll, id, version, inc, evs, (size_t)n, NULL, error);
         if (!ok && !is(error, OUTBOX_ERROR_CONFLICT)) {
            break;
         }
      }
   }
   for (int k = 0; k < n; k++) {
      outbox_event_destroy(evs[k]);
   }
   bson_destroy(inc);
   return ok;
}

bool
lw_run(outbox_collection_t *coll, const bson_value_t *id, int writer, int commits,
       bson_error_t *error)
{
   for (int c = 0; c < commits; c++) {
      if (!commit_one(coll, id, writer, c, error)) {
         return false;
      }
   }
   return true;
}

static int64_t
get_int(const bson_t *doc, const char *key)
{
   bson_iter_t it;

   return bson_iter_init_find(&it, doc, key) ? bson_iter_as_int64(&it) : -1;
}

/* Walks the events; state per writer: last commit seen and its next expected k. */
static bool
check_events(const bson_t *doc, int writers, int64_t total, char *why, size_t size)
{
   int *last_c = calloc((size_t)writers, sizeof *last_c);
   int *next_k = calloc((size_t)writers, sizeof *next_k);
   bson_iter_t it, arr;
   int64_t expect = 1;
   bool ok = false;

   for (int w = 0; w < writers; w++) {
      last_c[w] = -1;
   }
   if (!bson_iter_init_find(&it, doc, "events") || !bson_iter_recurse(&it, &arr)) {
      snprintf(why, size, "no events array");
      goto done;
   }
   while (bson_iter_next(&arr)) {
      bson_iter_t ev, f;
      int64_t seq;
      int w, c, k;

      bson_iter_recurse(&arr, &ev);
      seq = bson_iter_find(&ev, "seq") ? bson_iter_as_int64(&ev) : -1;
      bson_iter_recurse(&arr, &ev);
      if (!bson_iter_find_descendant(&ev, "data.w", &f)) {
         snprintf(why, size, "event seq %" PRId64 " has no data.w", seq);
         goto done;
      }
      w = bson_iter_int32(&f);
      bson_iter_recurse(&arr, &ev);
      c = bson_iter_find_descendant(&ev, "data.c", &f) ? bson_iter_int32(&f) : -1;
      bson_iter_recurse(&arr, &ev);
      k = bson_iter_find_descendant(&ev, "data.k", &f) ? bson_iter_int32(&f) : -1;
      if (seq != expect++) {
         snprintf(why, size, "seq %" PRId64 " where %" PRId64 " was expected", seq, expect - 1);
         goto done;
      }
      if (w < 0 || w >= writers) {
         snprintf(why, size, "unknown writer %d", w);
         goto done;
      }
      if (k == 0 ? (c != last_c[w] + 1 || next_k[w] != 0) : (c != last_c[w] || k != next_k[w])) {
         snprintf(why, size, "seq %" PRId64 ": writer %d commit %d event %d out of order", seq, w,
                  c, k);
         goto done;
      }
      last_c[w] = c;
      next_k[w] = k + 1 == LW_EVENTS_OF(c) ? 0 : k + 1;
   }
   if (expect - 1 != total) {
      snprintf(why, size, "%" PRId64 " events, expected %" PRId64, expect - 1, total);
      goto done;
   }
   ok = true;
done:
   free(last_c);
   free(next_k);
   return ok;
}

bool
lw_check(const bson_t *doc, int writers, int commits, char *why, size_t why_size)
{
   int64_t total = 0, odd = 0;

   for (int c = 0; c < commits; c++) {
      total += LW_EVENTS_OF(c);
      odd += c % 2;
   }
   total *= writers;
   odd *= writers;
   if (get_int(doc, "version") != 1 + (int64_t)writers * commits) {
      snprintf(why, why_size, "version %" PRId64 ", expected %" PRId64, get_int(doc, "version"),
               1 + (int64_t)writers * commits);
      return false;
   }
   if (get_int(doc, "eventSeq") != total) {
      snprintf(why, why_size, "eventSeq %" PRId64 ", expected %" PRId64, get_int(doc, "eventSeq"),
               total);
      return false;
   }
   if (get_int(doc, "counter") != odd) {
      snprintf(why, why_size, "counter %" PRId64 ", expected %" PRId64, get_int(doc, "counter"),
               odd);
      return false;
   }
   return check_events(doc, writers, total, why, why_size);
}

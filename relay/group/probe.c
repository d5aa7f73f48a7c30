/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The start-up probe (probe.h): the server's $toHashedIndexKey of a few values of every
 * checked _id type (partition.h), compared with the relay's own hash. Main thread; no state.
 */
#include "group/probe.h"

#include "group/hash.h"
#include "util/log.h"

int
relay_group_probe(mongoc_collection_t *coll)
{
   static const char *const values[] = {
      "{\"$numberInt\": \"5\"}",
      "{\"$numberLong\": \"1099511627776\"}",
      "{\"$numberDouble\": \"-2.7\"}",
      "\"string to hash\"",
      "{\"a\": \"abc\", \"b\": [1, {\"c\": true}]}",
      "{\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}",
      "{\"$binary\": {\"base64\": \"AAECAwQG\", \"subType\": \"00\"}}",
      "{\"$oid\": \"5b2be413c06d924ab26ff9ca\"}",
      "true",
      "{\"$date\": {\"$numberLong\": \"1700000000000\"}}"};
   bson_string_t *json =
      bson_string_new("{\"pipeline\": [{\"$limit\": 1}, {\"$project\": {\"_id\": 0");
   bson_t *pipeline;
   bson_error_t error;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   int result = 1;
   size_t n = sizeof values / sizeof values[0];

   for (size_t i = 0; i < n; i++) {
      bson_string_append_printf(json, ", \"v%zu\": {\"$toHashedIndexKey\": {\"$literal\": %s}}", i,
                                values[i]);
   }
   bson_string_append(json, "}}]}");
   pipeline = bson_new_from_json((const uint8_t *)json->str, -1, &error);
   BSON_ASSERT(pipeline);
   cursor = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
   if (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t got, want;
      bson_iter_init(&got, doc);
      bson_iter_init(&want, pipeline);
      for (size_t i = 0; i < n && result == 1; i++) {
         char path[64];
         bson_snprintf(path, sizeof path, "pipeline.1.$project.v%zu.$toHashedIndexKey.$literal", i);
         if (!bson_iter_init(&want, pipeline) || !bson_iter_find_descendant(&want, path, &want) ||
             !bson_iter_next(&got) || !BSON_ITER_HOLDS_INT64(&got) ||
             bson_iter_int64(&got) != relay_hash_iter(&want)) {
            relay_log(RELAY_LOG_WARNING, "group",
                      "the server's $toHashedIndexKey differs from the relay's for %s: partitions "
                      "are filtered in the relay",
                      values[i]);
            result = -1;
         }
      }
   } else if (mongoc_cursor_error(cursor, &error)) {
      bool network =
         error.domain == MONGOC_ERROR_STREAM || error.domain == MONGOC_ERROR_SERVER_SELECTION;
      if (network) {
         result = 0;
      } else {
         relay_log(RELAY_LOG_INFO, "group",
                   "the server cannot compute $toHashedIndexKey (%s): partitions are filtered in "
                   "the relay",
                   error.message);
         result = -1;
      }
   } else {
      result = 0; /* nothing to run it on yet */
   }
   if (result == 1) {
      relay_log(RELAY_LOG_INFO, "group", "the server filters partitions ($toHashedIndexKey)");
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(pipeline);
   bson_string_free(json, true);
   return result;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's MongoDB round-trips (store.h): the pending index, the cluster time, the sweep
 * cursor and reading one entity. No state of its own; main thread only.
 */
#include "store/store.h"

#include <string.h>

#include "store/concerns.h"

mongoc_client_t *
relay_store_client_new(const relay_config_t *cfg, const char *appname, bson_error_t *error)
{
   return relay_store_client_new_for(cfg, appname, RELAY_CONCERNS_DATA, error);
}

/* A client with the concerns of @role; a socket timeout of @socket_timeout_ms unless the URI
 * sets one (0: mongoc's). */
static mongoc_client_t *
client_new(const relay_config_t *cfg, const char *appname, relay_concerns_role_t role,
           int32_t socket_timeout_ms, bson_error_t *error)
{
   mongoc_uri_t *uri = mongoc_uri_new_with_error(cfg->mongodb_uri, error);
   mongoc_client_t *client;

   if (!uri) {
      return NULL;
   }
   if (!mongoc_uri_has_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS)) {
      mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 5000);
   }
   if (socket_timeout_ms > 0 && !mongoc_uri_has_option(uri, MONGOC_URI_SOCKETTIMEOUTMS)) {
      mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, socket_timeout_ms);
   }
   relay_concerns_apply(uri, cfg, role);
   client = mongoc_client_new_from_uri_with_error(uri, error);
   mongoc_uri_destroy(uri);
   if (client) {
      mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
      mongoc_client_set_appname(client, appname);
   }
   return client;
}

mongoc_client_t *
relay_store_client_new_for(const relay_config_t *cfg, const char *appname,
                           relay_concerns_role_t role, bson_error_t *error)
{
   return client_new(cfg, appname, role, 0, error);
}

mongoc_client_t *
relay_store_stream_client_new(const relay_config_t *cfg, const char *appname, bson_error_t *error)
{
   return client_new(cfg, appname, RELAY_CONCERNS_DATA, RELAY_STREAM_SOCKET_TIMEOUT_MS, error);
}

mongoc_client_pool_t *
relay_store_pool_new(const relay_config_t *cfg, const char *appname, relay_concerns_role_t role,
                     bson_error_t *error)
{
   mongoc_uri_t *uri = mongoc_uri_new_with_error(cfg->mongodb_uri, error);
   mongoc_client_pool_t *pool;

   if (!uri) {
      return NULL;
   }
   if (!mongoc_uri_has_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS)) {
      mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 5000);
   }
   mongoc_uri_set_appname(uri, appname);
   relay_concerns_apply(uri, cfg, role);
   pool = mongoc_client_pool_new_with_error(uri, error);
   mongoc_uri_destroy(uri);
   if (pool) {
      mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   }
   return pool;
}

bool
relay_store_ensure_index(mongoc_collection_t *coll, const relay_config_t *cfg, bson_error_t *error)
{
   bson_t cmd = BSON_INITIALIZER, indexes, index, key, pfe, cond;
   char *first = bson_strdup_printf("%s.0", cfg->events_field);
   char *first_letter = bson_strdup_printf("%s.0", cfg->dead_letters_field);
   bool ok;

   BSON_APPEND_UTF8(&cmd, "createIndexes", mongoc_collection_get_name(coll));
   BSON_APPEND_ARRAY_BEGIN(&cmd, "indexes", &indexes);
   BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
   BSON_APPEND_UTF8(&index, "name", "outbox_pending");
   BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
   BSON_APPEND_INT32(&key, cfg->event_seq_field, 1);
   bson_append_document_end(&index, &key);
   BSON_APPEND_DOCUMENT_BEGIN(&index, "partialFilterExpression", &pfe);
   BSON_APPEND_DOCUMENT_BEGIN(&pfe, first, &cond);
   BSON_APPEND_BOOL(&cond, "$exists", true);
   bson_append_document_end(&pfe, &cond);
   bson_append_document_end(&index, &pfe);
   bson_append_document_end(&indexes, &index);
   /* The same over the dead letters: outbox-admin lists and counts them through it. */
   BSON_APPEND_DOCUMENT_BEGIN(&indexes, "1", &index);
   BSON_APPEND_UTF8(&index, "name", "outbox_dead_letters");
   BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
   BSON_APPEND_INT32(&key, cfg->event_seq_field, 1);
   bson_append_document_end(&index, &key);
   BSON_APPEND_DOCUMENT_BEGIN(&index, "partialFilterExpression", &pfe);
   BSON_APPEND_DOCUMENT_BEGIN(&pfe, first_letter, &cond);
   BSON_APPEND_BOOL(&cond, "$exists", true);
   bson_append_document_end(&pfe, &cond);
   bson_append_document_end(&index, &pfe);
   bson_append_document_end(&indexes, &index);
   bson_append_array_end(&cmd, &indexes);
   ok = mongoc_collection_write_command_with_opts(coll, &cmd, NULL, NULL, error);
   bson_destroy(&cmd);
   bson_free(first);
   bson_free(first_letter);
   return ok;
}

/* A reply's operationTime into @ts, or (@or_cluster_time) its $clusterTime's when it has
 * none; false (and @ts untouched) when it has neither. */
static bool
reply_time(const bson_t *reply, bool or_cluster_time, relay_ts_t *ts)
{
   bson_iter_t it, found;
   if ((bson_iter_init_find(&found, reply, "operationTime") ||
        (or_cluster_time && bson_iter_init(&it, reply) &&
         bson_iter_find_descendant(&it, "$clusterTime.clusterTime", &found))) &&
       BSON_ITER_HOLDS_TIMESTAMP(&found)) {
      bson_iter_timestamp(&found, &ts->t, &ts->i);
      return true;
   }
   return false;
}

bool
relay_store_operation_time(mongoc_client_t *client, relay_ts_t *ts, bson_error_t *error)
{
   bson_t cmd = BSON_INITIALIZER, reply;
   bool ok;

   BSON_APPEND_INT32(&cmd, "ping", 1);
   ok = mongoc_client_command_simple(client, "admin", &cmd, NULL, &reply, error);
   /* operationTime is the newest write the server had applied; $clusterTime is as good when
    * a server leaves operationTime out of a ping. */
   if (ok && !reply_time(&reply, true, ts)) {
      bson_set_error(error, MONGOC_ERROR_PROTOCOL, MONGOC_ERROR_PROTOCOL_INVALID_REPLY,
                     "the server reports no operationTime: is it a replica set?");
      ok = false;
   }
   bson_destroy(&reply);
   bson_destroy(&cmd);
   return ok;
}

/* The one document of a find reply's first batch into @doc, and its operationTime into
 * @seen ({0, 0} without one); @doc is initialised either way. False with error->code 0 when
 * the batch is empty. */
static bool
take_found(const bson_t *reply, bson_t *doc, relay_ts_t *seen, bson_error_t *error)
{
   bson_iter_t it, batch;

   *seen = (relay_ts_t){0, 0};
   reply_time(reply, false, seen);
   if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "cursor.firstBatch", &it) &&
       BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &batch) && bson_iter_next(&batch) &&
       BSON_ITER_HOLDS_DOCUMENT(&batch)) {
      const uint8_t *data;
      uint32_t len;
      bson_t found;
      bson_iter_document(&batch, &len, &data);
      if (bson_init_static(&found, data, len)) {
         bson_copy_to(&found, doc);
         return true;
      }
   }
   bson_init(doc);
   memset(error, 0, sizeof *error);
   return false;
}

bool
relay_store_read_entity(mongoc_collection_t *coll, const relay_config_t *cfg,
                        const bson_value_t *id, const relay_ts_t *after, bson_t *doc,
                        relay_ts_t *seen, bson_error_t *error)
{
   bson_t cmd = BSON_INITIALIZER, opts = BSON_INITIALIZER, filter, proj, reply;
   bool ok;

   /* A find command, not a cursor: its reply's operationTime is the time of the snapshot
    * read, which says when the stream has delivered every change the copy shows (a read
    * hold, documents.c). */
   BSON_APPEND_UTF8(&cmd, "find", mongoc_collection_get_name(coll));
   BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &filter);
   bson_append_value(&filter, "_id", 3, id);
   bson_append_document_end(&cmd, &filter);
   BSON_APPEND_DOCUMENT_BEGIN(&cmd, "projection", &proj);
   BSON_APPEND_INT32(&proj, cfg->events_field, 1);
   BSON_APPEND_INT32(&proj, cfg->event_seq_field, 1);
   bson_append_document_end(&cmd, &proj);
   BSON_APPEND_INT64(&cmd, "limit", 1);
   BSON_APPEND_BOOL(&cmd, "singleBatch", true);
   /* Not local: a cut-off primary's own writes may be rolled back (FINDINGS.md F8). */
   relay_concerns_append_document_read(&opts, after ? after->t : 0, after ? after->i : 0,
                                       relay_concerns_read_wait_ms(cfg));
   ok = mongoc_collection_read_command_with_opts(coll, &cmd, mongoc_collection_get_read_prefs(coll),
                                                 &opts, &reply, error);
   if (ok) {
      ok = take_found(&reply, doc, seen, error);
   } else {
      bson_init(doc);
      *seen = (relay_ts_t){0, 0};
   }
   bson_destroy(&reply);
   bson_destroy(&cmd);
   bson_destroy(&opts);
   return ok;
}

mongoc_cursor_t *
relay_store_sweep_cursor(mongoc_collection_t *coll, const relay_config_t *cfg, bool hint)
{
   return relay_store_sweep_cursor_in(coll, cfg, hint, NULL, NULL, 0);
}

bool
relay_store_wait_majority(mongoc_collection_t *coll, const relay_config_t *cfg,
                          const relay_ts_t *after, bson_error_t *error)
{
   /* The cheapest read there is: no document matches, the server only waits. */
   bson_t *filter = BCON_NEW("_id", "{", "$in", "[", "]", "}");
   bson_t opts = BSON_INITIALIZER;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool ok;

   BSON_APPEND_INT64(&opts, "limit", 1);
   relay_concerns_append_document_read(&opts, after ? after->t : 0, after ? after->i : 0,
                                       relay_concerns_read_wait_ms(cfg));
   cursor = mongoc_collection_find_with_opts(coll, filter, &opts, NULL);
   ok = !mongoc_cursor_next(cursor, &doc) ? !mongoc_cursor_error(cursor, error) : true;
   mongoc_cursor_destroy(cursor);
   bson_destroy(&opts);
   bson_destroy(filter);
   return ok;
}

mongoc_cursor_t *
relay_store_sweep_cursor_in(mongoc_collection_t *coll, const relay_config_t *cfg, bool hint,
                            const relay_ts_t *after, const relay_partset_t *parts, int n)
{
   bson_t filter = BSON_INITIALIZER, cond, opts = BSON_INITIALIZER, proj;
   char *first = bson_strdup_printf("%s.0", cfg->events_field);
   mongoc_cursor_t *cursor;

   BSON_APPEND_DOCUMENT_BEGIN(&filter, first, &cond);
   BSON_APPEND_BOOL(&cond, "$exists", true);
   bson_append_document_end(&filter, &cond);
   if (parts) {
      relay_partition_append_sweep_filter(parts, n, &filter);
   }
   if (hint) {
      BSON_APPEND_UTF8(&opts, "hint", "outbox_pending");
   }
   /* Int64: mongoc_cursor_set_batch_size() silently keeps an int32 batchSize. */
   BSON_APPEND_INT64(&opts, "batchSize", RELAY_SWEEP_FIRST_BATCH);
   BSON_APPEND_DOCUMENT_BEGIN(&opts, "projection", &proj);
   BSON_APPEND_INT32(&proj, cfg->events_field, 1);
   BSON_APPEND_INT32(&proj, cfg->event_seq_field, 1);
   bson_append_document_end(&opts, &proj);
   /* Majority, as the stream: a cut-off primary's own writes may be rolled back (F8). */
   relay_concerns_append_document_read(&opts, after ? after->t : 0, after ? after->i : 0, 0);
   cursor = mongoc_collection_find_with_opts(coll, &filter, &opts, NULL);
   bson_destroy(&filter);
   bson_destroy(&opts);
   bson_free(first);
   return cursor;
}

void
relay_store_sweep_pace(mongoc_cursor_t *cursor, const bson_t *doc)
{
   uint32_t n = RELAY_SWEEP_REPLY_BYTES / (doc->len ? doc->len : 1);
   if (n < 1) {
      n = 1;
   } else if (n > RELAY_READ_BATCH_SIZE) {
      n = RELAY_READ_BATCH_SIZE;
   }
   mongoc_cursor_set_batch_size(cursor, n);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "lib-test.h"

#include "deployment.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

const char *
lt_db(void)
{
   static char name[64];

   if (!name[0]) {
      deployment_db_name("outbox_lib_tests", name, sizeof name);
   }
   return name;
}

void
lt_init(lt_t *t, const char *prefix, mongoc_apm_callbacks_t *apm, void *apm_ctx)
{
   lt_init_uri(t, prefix, NULL, apm, apm_ctx);
}

void
lt_init_uri(lt_t *t, const char *prefix, void (*adjust)(mongoc_uri_t *uri),
            mongoc_apm_callbacks_t *apm, void *apm_ctx)
{
   const char *uri_string = getenv("OUTBOX_TEST_MONGODB_URI");
   bson_error_t error;
   mongoc_uri_t *uri;
   uint32_t r = 0;

   memset(t, 0, sizeof *t);
   cr_assert_not_null(uri_string, "OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)");
   mongoc_init();
   uri = mongoc_uri_new_with_error(uri_string, &error);
   cr_assert_not_null(uri, "%s", error.message);
   if (adjust) {
      adjust(uri);
   }
   t->pool = mongoc_client_pool_new(uri);
   mongoc_uri_destroy(uri);
   mongoc_client_pool_set_error_api(t->pool, MONGOC_ERROR_API_VERSION_2);
   if (apm) {
      mongoc_client_pool_set_apm_callbacks(t->pool, apm, apm_ctx);
   }
   cr_assert_eq(getrandom(&r, sizeof r, 0), (ssize_t)sizeof r);
   snprintf(t->coll_name, sizeof t->coll_name, "%.30s_%d_%08x", prefix, (int)getpid(), r);
}

/* Whether the deployment meets @need, and if not why (@why, @why_size). */
static bool
meets(lt_t *t, const char *need, char *why, size_t why_size)
{
   mongoc_client_t *client = mongoc_client_pool_pop(t->pool);
   bool met = deployment_meets(client, need, why, why_size);

   mongoc_client_pool_push(t->pool, client);
   return met;
}

void
lt_requires(lt_t *t, const char *need)
{
   char why[256];

   if (!meets(t, need, why, sizeof why)) {
      lt_skip(why);
   }
}

bool
lt_meets(lt_t *t, const char *need)
{
   char why[256];

   return meets(t, need, why, sizeof why);
}

void
lt_skip(const char *why)
{
   fprintf(stderr, "skip %s::%s: %s\n", criterion_current_test->category,
           criterion_current_test->name, why);
   cr_skip_test("%s", why);
}

void
lt_open(lt_t *t, const bson_t *opts)
{
   bson_error_t error;

   t->coll = outbox_collection_new(t->pool, LT_DB, t->coll_name, opts, &error);
   cr_assert_not_null(t->coll, "%s", error.message);
}

void
lt_cleanup(lt_t *t)
{
   mongoc_client_t *client;
   mongoc_collection_t *c;

   outbox_collection_destroy(t->coll);
   if (t->pool) {
      client = mongoc_client_pool_pop(t->pool);
      c = mongoc_client_get_collection(client, LT_DB, t->coll_name);
      mongoc_collection_drop(c, NULL); /* best effort: a missing collection is fine */
      mongoc_collection_destroy(c);
      mongoc_client_pool_push(t->pool, client);
      mongoc_client_pool_destroy(t->pool);
   }
   mongoc_cleanup();
   memset(t, 0, sizeof *t);
}

static mongoc_collection_t *
raw_coll(lt_t *t, mongoc_client_t **client)
{
   *client = mongoc_client_pool_pop(t->pool);
   return mongoc_client_get_collection(*client, LT_DB, t->coll_name);
}

static void
raw_done(lt_t *t, mongoc_client_t *client, mongoc_collection_t *c)
{
   mongoc_collection_destroy(c);
   mongoc_client_pool_push(t->pool, client);
}

bson_t *
lt_raw_get(lt_t *t, const bson_value_t *id)
{
   mongoc_client_t *client;
   mongoc_collection_t *c = raw_coll(t, &client);
   bson_t filter = BSON_INITIALIZER;
   const bson_t *doc;
   bson_t *copy = NULL;
   bson_error_t error;
   mongoc_cursor_t *cursor;

   BSON_APPEND_VALUE(&filter, "_id", id);
   cursor = mongoc_collection_find_with_opts(c, &filter, NULL, NULL);
   if (mongoc_cursor_next(cursor, &doc)) {
      copy = bson_copy(doc);
   }
   cr_assert_not(mongoc_cursor_error(cursor, &error), "%s", error.message);
   mongoc_cursor_destroy(cursor);
   bson_destroy(&filter);
   raw_done(t, client, c);
   return copy;
}

void
lt_raw_update(lt_t *t, const bson_t *filter, const bson_t *update)
{
   mongoc_client_t *client;
   mongoc_collection_t *c = raw_coll(t, &client);
   bson_error_t error;
   bool ok = mongoc_collection_update_one(c, filter, update, NULL, NULL, &error);

   raw_done(t, client, c);
   cr_assert(ok, "%s", error.message);
}

void
lt_raw_insert(lt_t *t, const bson_t *doc)
{
   mongoc_client_t *client;
   mongoc_collection_t *c = raw_coll(t, &client);
   bson_error_t error;
   bool ok = mongoc_collection_insert_one(c, doc, NULL, NULL, &error);

   raw_done(t, client, c);
   cr_assert(ok, "%s", error.message);
}

void
lt_publish_all(lt_t *t, const bson_value_t *id)
{
   bson_t filter = BSON_INITIALIZER;
   bson_t *update =
      BCON_NEW("$pull", "{", "events", "{", "seq", "{", "$gte", BCON_INT64(1), "}", "}", "}");

   BSON_APPEND_VALUE(&filter, "_id", id);
   lt_raw_update(t, &filter, update);
   bson_destroy(update);
   bson_destroy(&filter);
}

void
lt_assert_unchanged(lt_t *t, const bson_value_t *id, const bson_t *before)
{
   bson_t *now = lt_raw_get(t, id);

   if (!before) {
      cr_assert_null(now, "a document appeared");
      return;
   }
   cr_assert_not_null(now, "the document disappeared");
   cr_assert(bson_equal(now, before), "document changed:\n%s\n%s",
             bson_as_relaxed_extended_json(before, NULL), bson_as_relaxed_extended_json(now, NULL));
   bson_destroy(now);
}

int64_t
lt_int64(const bson_t *doc, const char *path)
{
   bson_iter_t it, found;

   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found), "no %s",
             path);
   cr_assert(BSON_ITER_HOLDS_INT64(&found), "%s is not an Int64", path);
   return bson_iter_int64(&found);
}

int
lt_array_len(const bson_t *doc, const char *key)
{
   bson_iter_t it, child;
   int n = 0;

   if (!bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_ARRAY(&it)) {
      return 0;
   }
   bson_iter_recurse(&it, &child);
   while (bson_iter_next(&child)) {
      n++;
   }
   return n;
}

bson_value_t
lt_str_id(const char *s)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};

   v.value.v_utf8.str = (char *)s;
   v.value.v_utf8.len = (uint32_t)strlen(s);
   return v;
}

bson_value_t
lt_int_id(int64_t n)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT64};

   v.value.v_int64 = n;
   return v;
}

outbox_collection_t *
lt_second_handle(lt_t *t, const bson_t *opts)
{
   bson_error_t e;
   outbox_collection_t *c = outbox_collection_new(t->pool, LT_DB, t->coll_name, opts, &e);

   cr_assert_not_null(c, "%s", e.message);
   return c;
}

void
lt_events_new(outbox_event_t **evs, int n, const char *type)
{
   for (int i = 0; i < n; i++) {
      evs[i] = outbox_event_new(type, NULL);
   }
}

void
lt_events_destroy(outbox_event_t **evs, int n)
{
   for (int i = 0; i < n; i++) {
      outbox_event_destroy(evs[i]);
   }
}

int64_t
lt_now_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

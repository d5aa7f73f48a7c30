/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The concerns of the relay's own operations (store/concerns.h), as set on the clients it
 * makes: whatever the URI asks for, w: majority with the role's wtimeout, primary reads and
 * majority lease reads; outbox-admin keeps the URI's read preference. No server: a client
 * contacts nobody until used.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "store/store.h"

static void
setup(void)
{
   mongoc_init();
}

static void
teardown(void)
{
   mongoc_cleanup();
}

TestSuite(concerns, .init = setup, .fini = teardown);

static const char *weak_uri =
   "mongodb://127.0.0.1:1/?w=1&wtimeoutMS=50&readPreference=secondary&readConcernLevel=local";

static mongoc_client_t *
client_for(relay_config_t *cfg, relay_concerns_role_t role)
{
   bson_error_t error;
   mongoc_client_t *client;
   cfg->mongodb_uri = bson_strdup(weak_uri);
   client = relay_store_client_new_for(cfg, "test", role, &error);
   cr_assert(client, "%s", error.message);
   return client;
}

Test(concerns, a_weak_uri_does_not_weaken_the_relay)
{
   relay_config_t cfg;
   relay_config_init_defaults(&cfg);
   cfg.lease_renew_ms = 1500;
   cfg.lease_ttl_ms = 12000;
   for (int role = RELAY_CONCERNS_DATA; role <= RELAY_CONCERNS_LEASES; role++) {
      mongoc_client_t *client = client_for(&cfg, (relay_concerns_role_t)role);
      const mongoc_write_concern_t *wc = mongoc_client_get_write_concern(client);
      const mongoc_read_concern_t *rc = mongoc_client_get_read_concern(client);
      cr_assert(mongoc_write_concern_get_wmajority(wc));
      cr_assert_eq(mongoc_write_concern_get_wtimeout_int64(wc),
                   role == RELAY_CONCERNS_LEASES ? 1500 : 12000);
      cr_assert_eq(mongoc_read_prefs_get_mode(mongoc_client_get_read_prefs(client)),
                   MONGOC_READ_PRIMARY);
      if (role == RELAY_CONCERNS_LEASES) {
         cr_assert_str_eq(mongoc_read_concern_get_level(rc), MONGOC_READ_CONCERN_LEVEL_MAJORITY);
      } else {
         cr_assert_null(mongoc_read_concern_get_level(rc), "the URI's level was kept");
      }
      mongoc_client_destroy(client);
      bson_free(cfg.mongodb_uri);
      cfg.mongodb_uri = NULL;
   }
   relay_config_destroy(&cfg);
}

Test(concerns, data_wtimeout_at_least_five_seconds)
{
   relay_config_t cfg;
   relay_config_init_defaults(&cfg);
   cfg.lease_ttl_ms = 1000;
   cr_assert_eq(relay_concerns_wtimeout_ms(&cfg, RELAY_CONCERNS_DATA), 5000);
   relay_config_destroy(&cfg);
}

Test(concerns, admin_keeps_the_uri_read_preference)
{
   relay_config_t cfg;
   bson_error_t error;
   mongoc_client_pool_t *pool;
   mongoc_client_t *client;

   relay_config_init_defaults(&cfg);
   cfg.mongodb_uri = bson_strdup(weak_uri);
   pool = relay_store_pool_new(&cfg, "test", RELAY_CONCERNS_ADMIN, &error);
   cr_assert(pool, "%s", error.message);
   client = mongoc_client_pool_pop(pool);
   cr_assert(mongoc_write_concern_get_wmajority(mongoc_client_get_write_concern(client)));
   cr_assert_eq(mongoc_read_prefs_get_mode(mongoc_client_get_read_prefs(client)),
                MONGOC_READ_SECONDARY);
   mongoc_client_pool_push(pool, client);
   mongoc_client_pool_destroy(pool);
   relay_config_destroy(&cfg);
}

Test(concerns, start_up_names_what_it_ignores)
{
   relay_config_t cfg;
   bson_string_t *out = bson_string_new(NULL);

   relay_config_init_defaults(&cfg);
   cfg.mongodb_uri = bson_strdup(weak_uri);
   relay_concerns_overridden(&cfg, out);
   cr_assert(strstr(out->str, "its w ("), "%s", out->str);
   cr_assert(strstr(out->str, "its wtimeoutMS"), "%s", out->str);
   cr_assert(strstr(out->str, "its readPreference"), "%s", out->str);
   cr_assert(strstr(out->str, "its readConcernLevel"), "%s", out->str);
   bson_string_truncate(out, 0);
   bson_free(cfg.mongodb_uri);
   cfg.mongodb_uri = bson_strdup("mongodb://127.0.0.1:1/?w=majority");
   relay_concerns_overridden(&cfg, out);
   cr_assert_eq(out->len, 0, "%s", out->str);
   bson_string_free(out, true);
   relay_config_destroy(&cfg);
}

/* A document read: majority, after the time it must cover, and bounded (F8): not the URI's
 * local, which shows a cut-off primary's writes that a rollback undoes. */
Test(concerns, document_reads_are_majority_after_their_time)
{
   bson_t opts = BSON_INITIALIZER;
   bson_iter_t it;
   uint32_t t = 0, i = 0;

   relay_concerns_append_document_read(&opts, 1700000000, 7, 2000);
   cr_assert(bson_iter_init(&it, &opts) &&
             bson_iter_find_descendant(&it, "readConcern.level", &it) &&
             !strcmp(bson_iter_utf8(&it, NULL), "majority"));
   cr_assert(bson_iter_init(&it, &opts) &&
             bson_iter_find_descendant(&it, "readConcern.afterClusterTime", &it) &&
             BSON_ITER_HOLDS_TIMESTAMP(&it));
   bson_iter_timestamp(&it, &t, &i);
   cr_assert(t == 1700000000 && i == 7);
   cr_assert(bson_iter_init_find(&it, &opts, "maxTimeMS") && bson_iter_as_int64(&it) == 2000);
   bson_reinit(&opts);
   /* No time (a sweep opened without one): the snapshot as it is, without a limit. */
   relay_concerns_append_document_read(&opts, 0, 0, 0);
   cr_assert(bson_iter_init(&it, &opts) &&
             !bson_iter_find_descendant(&it, "readConcern.afterClusterTime", &it));
   cr_assert(!bson_iter_init_find(&it, &opts, "maxTimeMS"));
   bson_destroy(&opts);
}

Test(concerns, a_majority_wait_past_max_time_is_retried)
{
   bson_error_t error;
   bson_set_error(&error, MONGOC_ERROR_SERVER, 50, "operation exceeded time limit");
   cr_assert(relay_concerns_read_timed_out(&error));
   bson_set_error(&error, MONGOC_ERROR_SERVER, 13, "not authorized");
   cr_assert(!relay_concerns_read_timed_out(&error));
}

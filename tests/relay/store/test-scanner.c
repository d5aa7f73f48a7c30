/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The pending-events scanner (store/scanner.c) against a real server (integration: test-mongod
 * from tests/fixtures/with-servers, or OUTBOX_TEST_MONGODB_URI): its thread counts what is
 * stored (pending events, dead letters, malformed documents) per collection into the stored
 * gauges, and counts again at the next scan when the collection changes.
 */
#include <criterion/criterion.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deployment.h" /* tests/fixtures: the run's database prefix */
#include "http/metrics.h"
#include "config/namespace.h"
#include "store/scanner.h"

static relay_config_t cfg;
static relay_metrics_t *metrics;
static relay_namespaces_t *ns;
static mongoc_client_t *client;
static mongoc_collection_t *coll;

static void
setup(void)
{
   const char *uri = getenv("OUTBOX_TEST_MONGODB_URI");
   char name[64], db[96];
   bson_error_t error;

   mongoc_init();
   if (!uri) {
      cr_skip_test("OUTBOX_TEST_MONGODB_URI is not set (run through tests/fixtures/with-servers)");
   }
   bson_snprintf(name, sizeof name, "scanner_%ld", (long)getpid());
   relay_config_init_defaults(&cfg);
   cfg.mongodb_uri = bson_strdup(uri);
   deployment_db_name("outbox_test_scanner", db, sizeof db);
   cfg.database = bson_strdup(db);
   cfg.collections = bson_malloc0(2 * sizeof(char *));
   cfg.collections[0] = bson_strdup(name);
   cfg.n_collections = 1;
   cr_assert(relay_config_resolve_namespaces(&cfg, &error), "%s", error.message);
   ns = relay_namespaces_new(&cfg, &error);
   cr_assert(ns, "%s", error.message);
   cfg.pending_scan_interval_ms = 50;
   metrics = relay_metrics_new();
   relay_metrics_set_collections(metrics, cfg.collections, cfg.n_collections);
   client = mongoc_client_new(uri);
   cr_assert_not_null(client);
   coll = mongoc_client_get_collection(client, cfg.database, name);
   mongoc_collection_drop(coll, &error);
}

static void
teardown(void)
{
   bson_error_t error;
   if (coll) {
      mongoc_collection_drop(coll, &error);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   relay_metrics_destroy(metrics);
   relay_namespaces_destroy(ns);
   ns = NULL;
   relay_config_destroy(&cfg);
   mongoc_cleanup();
}

TestSuite(scanner, .init = setup, .fini = teardown);

static void
insert_json(const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(doc, "%s", error.message);
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
}

/* The value of @gauge for the scanned collection, as rendered; -1 when not rendered. */
static double
gauge(const char *gauge_name)
{
   bson_string_t *out = bson_string_new(NULL);
   double v = -1;
   relay_series_render(relay_metrics_series(metrics), out);
   for (char *line = strstr(out->str, gauge_name); line; line = strstr(line + 1, gauge_name)) {
      char *eol = strchr(line, '\n');
      if (line[strlen(gauge_name)] == '{' && eol && strstr(line, cfg.collections[0]) &&
          strstr(line, cfg.collections[0]) < eol) {
         char *space = eol;
         while (space > line && space[-1] != ' ') {
            space--;
         }
         v = strtod(space, NULL);
         break;
      }
   }
   bson_string_free(out, true);
   return v;
}

/* Polls until @gauge_name reads @want (the scanner runs every 50 ms), at most 10 s. */
static bool
reaches(const char *gauge_name, double want)
{
   for (int i = 0; i < 1000; i++) {
      if (gauge(gauge_name) == want) {
         return true;
      }
      usleep(10000);
   }
   return false;
}

#define EVENT(id, seq)                                                                             \
   "{\"id\": \"" id "\", \"seq\": " #seq ", \"type\": \"T\", \"time\": {\"$date\": "               \
   "\"2026-01-01T00:00:00Z\"}, \"data\": {}}"

Test(scanner, counts_what_is_stored_and_counts_again_after_a_change)
{
   bson_error_t error;
   relay_scanner_t *s;

   insert_json("{\"_id\": \"a\", \"version\": 2, \"eventSeq\": 2, \"events\": [" EVENT(
      "a1", 1) ", " EVENT("a2", 2) "]}");
   insert_json("{\"_id\": \"b\", \"version\": 1, \"eventSeq\": 1, \"events\": [], "
               "\"deadLetters\": [{\"event\": " EVENT(
                  "b1", 1) ", \"reason\": \"r\", "
                           "\"at\": {\"$date\": \"2026-01-01T00:00:01Z\"}}]}");
   /* Written without liboutbox: a document where the events array should be (what the
    * pending index matches, "events.0" exists), which counts apart. */
   insert_json("{\"_id\": \"c\", \"version\": 1, \"eventSeq\": 1, \"events\": {\"0\": 1}}");
   s = relay_scanner_new(&cfg, ns, metrics, &error);
   cr_assert_not_null(s, "%s", error.message);
   cr_expect(reaches("outbox_relay_stored_pending_events", 2), "pending events: %g",
             gauge("outbox_relay_stored_pending_events"));
   cr_expect(reaches("outbox_relay_stored_dead_letters", 1), "dead letters: %g",
             gauge("outbox_relay_stored_dead_letters"));
   cr_expect(reaches("outbox_relay_stored_malformed_documents", 1), "malformed: %g",
             gauge("outbox_relay_stored_malformed_documents"));
   /* The events of a are cleared: the next scan says so. */
   bson_t *filter = BCON_NEW("_id", "a");
   bson_t *update = BCON_NEW("$set", "{", "events", "[", "]", "}");
   cr_assert(mongoc_collection_update_one(coll, filter, update, NULL, NULL, &error), "%s",
             error.message);
   bson_destroy(filter);
   bson_destroy(update);
   cr_expect(reaches("outbox_relay_stored_pending_events", 0), "pending events after the clear: %g",
             gauge("outbox_relay_stored_pending_events"));
   relay_scanner_destroy(s);
}

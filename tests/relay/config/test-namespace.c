/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Namespace patterns (relay/config/namespace.c): globs, parsing, what is never watched, the
 * state database, the server-side filter, and --namespace through the configuration.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/namespace.h"
#include "test-util.h"

static relay_config_t cfg;
static bson_error_t error;

static void
setup(void)
{
   test_clear_env();
   relay_config_init_defaults(&cfg);
}

static void
teardown(void)
{
   relay_config_destroy(&cfg);
}

TestSuite(namespace, .init = setup, .fini = teardown);

Test(namespace, glob)
{
   cr_assert(relay_glob_match("*", ""));
   cr_assert(relay_glob_match("*", "abc"));
   cr_assert(relay_glob_match("tenant_*", "tenant_"));
   cr_assert(relay_glob_match("tenant_*", "tenant_42"));
   cr_assert_not(relay_glob_match("tenant_*", "tenant"));
   cr_assert_not(relay_glob_match("tenant_*", "xtenant_1"));
   cr_assert(relay_glob_match("*_orders", "a_b_orders"));
   cr_assert(relay_glob_match("a*b*c", "aXbYbZc"));
   cr_assert_not(relay_glob_match("a*b*c", "aXbYbZ"));
   cr_assert(relay_glob_match("a**c", "ac"));
   cr_assert_not(relay_glob_match("abc", "ab"));
   cr_assert_not(relay_glob_match("ab", "abc"));
   /* Only `*` is special: ? and [ are themselves. */
   cr_assert(relay_glob_match("a?[b]", "a?[b]"));
   cr_assert_not(relay_glob_match("a?", "ab"));
}

Test(namespace, regex)
{
   char *re = relay_glob_regex("tenant_*.v1(x)");
   cr_assert_str_eq(re, "^tenant_.*\\.v1\\(x\\)$");
   bson_free(re);
}

Test(namespace, parse)
{
   relay_nspat_t p;
   cr_assert(relay_nspat_parse("tenant_*.contacts", "--namespace", &p, &error), "%s",
             error.message);
   cr_assert_str_eq(p.db, "tenant_*");
   cr_assert_str_eq(p.coll, "contacts");
   cr_assert(p.db_glob);
   cr_assert_not(p.coll_glob);
   relay_nspat_clear(&p);
   /* The database part ends at the first dot: collections may hold dots. */
   cr_assert(relay_nspat_parse("shop.orders.v2", "--namespace", &p, &error));
   cr_assert_str_eq(p.db, "shop");
   cr_assert_str_eq(p.coll, "orders.v2");
   relay_nspat_clear(&p);
}

Test(namespace, parse_refusals)
{
   const char *bad[][2] = {
      {"shop", "expected DB.COLL"},
      {".orders", "expected DB.COLL"},
      {"shop.", "expected DB.COLL"},
      {"sh op.orders", "database name cannot contain"},
      {"shop.or$ders", "collection name cannot contain $"},
      {"admin.*", "never watched"},
      {"local.oplog.rs", "never watched"},
      {"config.chunks", "never watched"},
      {"shop.system.views", "never watched"},
   };
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      relay_nspat_t p;
      cr_assert_not(relay_nspat_parse(bad[i][0], "--namespace", &p, &error), "%s", bad[i][0]);
      cr_assert(strstr(error.message, bad[i][1]), "%s: %s", bad[i][0], error.message);
      cr_assert(strstr(error.message, bad[i][0]), "%s", error.message);
   }
}

static relay_config_action_t
load(const char *const *args)
{
   return test_load(&cfg, &error, args);
}

Test(namespace, database_and_collection_are_patterns)
{
   const char *args[] = {TEST_REQUIRED, "--collection", "c2", NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_watch, 2);
   cr_assert_str_eq(cfg.watch[0], "app.c1");
   cr_assert_str_eq(cfg.watch[1], "app.c2");
   cr_assert_str_eq(cfg.state_database, "app");
}

Test(namespace, patterns_span_databases)
{
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--mqtt-uri",
                         "tcp://localhost:1883",
                         "--namespace",
                         "tenant_*.contacts",
                         "--namespace",
                         "shop.*",
                         NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_INVALID);
   cr_assert(strstr(error.message, "--state-database"), "%s", error.message);
   relay_config_destroy(&cfg);
   relay_config_init_defaults(&cfg);
   setenv("OUTBOX_STATE_DATABASE", "relay", 1);
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_watch, 2);
   cr_assert_str_eq(cfg.state_database, "relay");

   relay_nsset_t *set = relay_nsset_new(&cfg, &error);
   cr_assert(set);
   cr_assert_null(relay_nsset_single_db(set));
   cr_assert(relay_nsset_match(set, "tenant_7", "contacts"));
   cr_assert_not(relay_nsset_match(set, "tenant_7", "orders"));
   cr_assert(relay_nsset_match(set, "shop", "orders"));
   cr_assert_not(relay_nsset_match(set, "shop", "system.profile"));
   cr_assert(relay_nsset_match_db(set, "tenant_1"));
   cr_assert_not(relay_nsset_match_db(set, "other"));
   relay_nsset_destroy(set);
}

Test(namespace, one_database_is_the_state_database)
{
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--mqtt-uri",
                         "tcp://localhost:1883",
                         "--namespace",
                         "shop.*",
                         NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.state_database, "shop");
   relay_nsset_t *set = relay_nsset_new(&cfg, &error);
   cr_assert_str_eq(relay_nsset_single_db(set), "shop");
   /* A glob never takes the relay's own collections. */
   cr_assert_not(relay_nsset_match(set, "shop", "outbox_relay_state"));
   cr_assert(relay_nsset_match(set, "shop", "orders"));
   relay_nsset_destroy(set);
}

Test(namespace, globs_skip_what_is_never_watched)
{
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--mqtt-uri",
                         "tcp://localhost:1883",
                         "--namespace",
                         "*.*",
                         "--state-database",
                         "relay",
                         NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   relay_nsset_t *set = relay_nsset_new(&cfg, &error);
   cr_assert(relay_nsset_match(set, "anything", "at_all"));
   cr_assert_not(relay_nsset_match(set, "admin", "users"));
   cr_assert_not(relay_nsset_match(set, "config", "chunks"));
   cr_assert_not(relay_nsset_match(set, "local", "oplog.rs"));
   cr_assert_not(relay_nsset_match(set, "app", "system.views"));
   cr_assert_not(relay_nsset_match(set, "relay", "outbox_relay_state"));
   cr_assert(relay_nsset_match(set, "app", "outbox_relay_state")); /* not the state database */
   cr_assert_not(relay_nsset_match_db(set, "local"));
   relay_nsset_destroy(set);
}

Test(namespace, own_collection_named_is_refused)
{
   const char *args[] = {TEST_REQUIRED, "--namespace", "app.outbox_relay_state", NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_INVALID);
   cr_assert(strstr(error.message, "'app.outbox_relay_state' is the relay's own"), "%s",
             error.message);
}

Test(namespace, reserved_flag_is_a_usage_error)
{
   const char *args[] = {TEST_REQUIRED, "--namespace", "local.*", NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_USAGE_ERROR);
   cr_assert(strstr(error.message, "never watched"), "%s", error.message);
}

Test(namespace, repeated_and_listed)
{
   setenv("OUTBOX_NAMESPACES", "a.x, b.y", 1);
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--mqtt-uri",
                         "tcp://localhost:1883",
                         "--state-database",
                         "s",
                         NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_namespaces, 2);
   cr_assert_str_eq(cfg.namespaces[1], "b.y");
   relay_config_destroy(&cfg);
   relay_config_init_defaults(&cfg);
   /* Flags replace the environment's list and add up among themselves. */
   const char *args2[] = {"--mongodb-uri",
                          "mongodb://localhost/",
                          "--mqtt-uri",
                          "tcp://localhost:1883",
                          "--namespace",
                          "c.z",
                          "--namespace",
                          "c.w",
                          NULL};
   cr_assert_eq(load(args2), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_namespaces, 2);
   cr_assert_str_eq(cfg.namespaces[0], "c.z");
   cr_assert_str_eq(cfg.state_database, "c");
}

Test(namespace, duplicate_of_database_collection)
{
   const char *args[] = {TEST_REQUIRED, "--namespace", "app.c1", NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_INVALID);
   cr_assert(strstr(error.message, "already watched"), "%s", error.message);
}

Test(namespace, filter)
{
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--mqtt-uri",
                         "tcp://localhost:1883",
                         "--namespace",
                         "t_*.c",
                         "--namespace",
                         "shop.*",
                         "--state-database",
                         "s",
                         NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   relay_nsset_t *set = relay_nsset_new(&cfg, &error);
   bson_t doc = BSON_INITIALIZER;
   relay_nsset_append_filter(set, &doc);
   char *json = bson_as_relaxed_extended_json(&doc, NULL);
   cr_assert_str_eq(json, "{ \"$or\" : [ { \"ns.db\" : { \"$regex\" : \"^t_.*$\" }, \"ns.coll\" : "
                          "\"c\" }, { \"ns.db\" : \"shop\", \"ns.coll\" : { \"$exists\" : true } "
                          "} ] }");
   bson_free(json);
   bson_destroy(&doc);
   relay_nsset_destroy(set);
}

Test(namespace, config_file_array)
{
   char *path = test_write_temp("{\"mongodb-uri\": \"mongodb://h/\", \"mqtt-uri\": "
                                "\"tcp://h:1883\", \"namespace\": [\"t_*.orders\", \"shop.*\"], "
                                "\"state-database\": \"relay\"}");
   const char *args[] = {"--config", path, NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_watch, 2);
   cr_assert_str_eq(cfg.watch[0], "t_*.orders");
   cr_assert_str_eq(cfg.watch[1], "shop.*");
   cr_assert_str_eq(cfg.state_database, "relay");
   unlink(path);
   bson_free(path);
}

Test(namespace, config_file_refusal_is_78)
{
   char *path = test_write_temp("{\"mongodb-uri\": \"mongodb://h/\", \"mqtt-uri\": "
                                "\"tcp://h:1883\", \"namespace\": \"config.*\"}");
   const char *args[] = {"--config", path, NULL};
   cr_assert_eq(load(args), RELAY_CONFIG_INVALID);
   cr_assert(strstr(error.message, "never watched"), "%s", error.message);
   unlink(path);
   bson_free(path);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The archive options (relay/config/archive.c): off by default, --archive-ttl durations, and
 * archive collections that would collide with what the relay already writes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
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

TestSuite(config_archive, .init = setup, .fini = teardown);

Test(config_archive, off_by_default)
{
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_null(cfg.archive_collection);
   cr_assert_eq(cfg.archive_ttl_s, 0);
   const char *off[] = {TEST_REQUIRED, "--archive-collection", "off", NULL};
   cr_assert_eq(test_load(&cfg, &error, off), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_null(cfg.archive_collection);
}

Test(config_archive, ttl_durations)
{
   static const struct {
      const char *text;
      int64_t seconds;
   } good[] = {{"30d", 30 * 86400}, {"12h", 12 * 3600}, {"90m", 5400},
               {"3600s", 3600},     {"2w", 14 * 86400}, {"600", 600},
               {"none", 0},         {"1.5d", 129600},   {"2000ms", 2}};
   /* One grammar with outbox-admin's (relay/base/duration.c), in whole seconds here. */
   static const char *const bad[] = {"soon", "-1d", "5y", "1500ms", "101000d", ""};
   for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
      const char *args[] = {TEST_REQUIRED,   "--archive-collection", "arch",
                            "--archive-ttl", good[i].text,           NULL};
      cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s: %s", good[i].text,
                   error.message);
      cr_assert_eq(cfg.archive_ttl_s, good[i].seconds, "%s", good[i].text);
      cr_assert_str_eq(cfg.archive_collection, "arch");
   }
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      const char *args[] = {TEST_REQUIRED, "--archive-ttl", bad[i], NULL};
      cr_assert_neq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s accepted", bad[i]);
   }
}

Test(config_archive, refuses_the_relays_own_collections)
{
   const char *outbox[] = {TEST_REQUIRED, "--archive-collection", "c1", NULL};
   cr_assert_neq(test_load(&cfg, &error, outbox), RELAY_CONFIG_RUN);
   cr_assert(strstr(error.message, "also an outbox collection"), "%s", error.message);
   const char *state[] = {TEST_REQUIRED, "--archive-collection", "outbox_relay_state", NULL};
   cr_assert_neq(test_load(&cfg, &error, state), RELAY_CONFIG_RUN);
   cr_assert(strstr(error.message, "state or lease"), "%s", error.message);
}

/* outbox-admin -c relay.json --collection things --archive-collection orders ensure-schema:
 * the flag narrows the config's list, yet `orders` stays one of the config's outbox
 * collections, and installing the archive contract over it would refuse its writes (121). */
Test(config_archive, refuses_a_collection_the_command_line_left_out)
{
   char *path = test_write_temp("{\"mongodb-uri\": \"mongodb://h/\", \"database\": \"d\","
                                " \"collection\": [\"things\", \"orders\"],"
                                " \"mqtt-uri\": \"tcp://b\"}");
   const char *narrowed[] = {"-c",     path, "--collection", "things", "--archive-collection",
                             "orders", NULL};
   cr_assert_neq(test_load(&cfg, &error, narrowed), RELAY_CONFIG_RUN, "orders accepted");
   cr_assert(strstr(error.message, "also an outbox collection"), "%s", error.message);
   const char *lease[] = {"-c",     path, "--lease-collection", "leases", "--archive-collection",
                          "leases", NULL};
   cr_assert_neq(test_load(&cfg, &error, lease), RELAY_CONFIG_RUN, "the lease collection accepted");
   cr_assert(strstr(error.message, "state or lease"), "%s", error.message);
   const char *fine[] = {"-c",   path, "--collection", "things", "--archive-collection",
                         "arch", NULL};
   cr_assert_eq(test_load(&cfg, &error, fine), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_collections, 1);
   bson_free(path);
}

/* MongoDB 6.0 refuses a TTL index whose expireAfterSeconds is above INT32_MAX (see
 * relay/config/archive.c): such a --archive-ttl would never be in force. */
Test(config_archive, ttl_above_what_mongodb_accepts)
{
   const char *max[] = {TEST_REQUIRED,   "--archive-collection", "arch",
                        "--archive-ttl", "2147483647",           NULL};
   cr_assert_eq(test_load(&cfg, &error, max), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.archive_ttl_s, 2147483647);
   static const char *const over[] = {"2147483648", "24856d", "3551w", "35791395m"};
   for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
      const char *args[] = {TEST_REQUIRED, "--archive-collection", "arch", "--archive-ttl", over[i],
                            NULL};
      cr_assert_neq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s accepted", over[i]);
      cr_assert(strstr(error.message, "2147483647"), "%s", error.message);
   }
}

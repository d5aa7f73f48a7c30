/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The group options: defaults, every source (flag, environment, config file), the checks
 * that involve several of them, --help and --check-config.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "group/tick.h"
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

TestSuite(group_config, .init = setup, .fini = teardown);

Test(group_config, defaults)
{
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.partitions, 32);
   cr_assert_eq(cfg.lease_ttl_ms, 10000);
   cr_assert_eq(cfg.lease_renew_ms, 2000);
   cr_assert_eq(cfg.lease_margin_ms, 2000);
   cr_assert_str_eq(cfg.lease_collection, "outbox_relay_state");
   /* The client id follows the name; each process adds its own suffix (group.c). */
   cr_assert(cfg.client_id_from_name);
}

Test(group_config, every_source)
{
   const char *args[] = {TEST_REQUIRED, "--lease-ttl-ms", "6000", NULL};
   char *path = test_write_temp("{\"partitions\": 64, \"lease-collection\": \"leases\", "
                                "\"lease-margin-ms\": 1500}");
   setenv("OUTBOX_CONFIG", path, 1);
   setenv("OUTBOX_LEASE_RENEW_MS", "700", 1);
   setenv("OUTBOX_CLIENT_ID", "me-1", 1);
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.partitions, 64);
   cr_assert_str_eq(cfg.lease_collection, "leases");
   cr_assert_eq(cfg.lease_margin_ms, 1500);
   cr_assert_eq(cfg.lease_renew_ms, 700);
   cr_assert_eq(cfg.lease_ttl_ms, 6000);
   cr_assert(!cfg.client_id_from_name);
   remove(path);
   bson_free(path);
}

static void
assert_invalid(const char *const *args, const char *message)
{
   relay_config_action_t a = test_load(&cfg, &error, args);
   cr_assert(a == RELAY_CONFIG_INVALID || a == RELAY_CONFIG_USAGE_ERROR, "accepted");
   cr_assert_not_null(strstr(error.message, message), "'%s' lacks '%s'", error.message, message);
}

Test(group_config, refused)
{
   const char *zero[] = {TEST_REQUIRED, "--partitions", "0", NULL};
   const char *huge[] = {TEST_REQUIRED, "--partitions", "4097", NULL};
   const char *margin[] = {TEST_REQUIRED,       "--lease-ttl-ms", "3000",
                           "--lease-margin-ms", "3000",           NULL};
   const char *renew[] = {TEST_REQUIRED, "--lease-ttl-ms",   "3000", "--lease-margin-ms",
                          "1000",        "--lease-renew-ms", "1000", NULL};
   const char *name[] = {TEST_REQUIRED, "--lease-collection", "a$b", NULL};
   assert_invalid(zero, "--partitions: expected an integer from 1 to 4096, got '0'");
   assert_invalid(huge, "--partitions: expected an integer from 1 to 4096, got '4097'");
   assert_invalid(margin, "lease-margin-ms (3000) must be less than lease-ttl-ms (3000)");
   assert_invalid(renew, "lease-renew-ms (1000) must be less than half of lease-ttl-ms - "
                         "lease-margin-ms (3000 - 1000)");
   assert_invalid(name, "a collection name cannot contain $");
}

Test(group_config, shown)
{
   const char *args[] = {TEST_REQUIRED, "--partitions", "16", NULL};
   bson_string_t *dump = bson_string_new(NULL);
   char *help = NULL;
   size_t help_len = 0;
   FILE *f = open_memstream(&help, &help_len);

   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   relay_config_dump(&cfg, dump);
   cr_assert_not_null(strstr(dump->str, "partitions              = 16\n"), "%s", dump->str);
   cr_assert_not_null(strstr(dump->str, "lease-ttl-ms            = 10000\n"), "%s", dump->str);
   cr_assert_not_null(strstr(dump->str, "lease-collection        = outbox_relay_state\n"), "%s",
                      dump->str);
   relay_config_usage(f);
   fclose(f);
   for (const char *o = "--partitions\0--lease-ttl-ms\0--lease-renew-ms\0--lease-margin-ms\0"
                        "--lease-collection\0OUTBOX_PARTITIONS\0";
        *o; o += strlen(o) + 1) {
      cr_assert_not_null(strstr(help, o), "--help lacks %s", o);
   }
   free(help);
   bson_string_free(dump, true);
}

/* What members compare (tick-checks.c): every setting that changes what a partition's events
 * become is in the settings, and differs as "output" (flagged during a rolling change), while
 * the group's own settings differ as "group" (refused). */
Test(group_config, settings_members_compare)
{
   static const struct {
      const char *flag, *value;
   } output[] = {{"--archive-collection", "arch"}, {"--topic", "t/{partition}/{id}"},
                 {"--source", "/s/{collection}"},  {"--payload-mode", "binary"},
                 {"--user-properties", "none"},    {"--qos", "0"},
                 {"--mqtt-version", "4"}};
   const char *base_args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, base_args), RELAY_CONFIG_RUN, "%s", error.message);
   char *base = relay_tick_settings(&cfg);
   cr_assert_eq(relay_tick_settings_diff(base, base), RELAY_SETTINGS_SAME);
   for (size_t i = 0; i < sizeof output / sizeof output[0]; i++) {
      const char *args[] = {TEST_REQUIRED, output[i].flag, output[i].value, NULL};
      /* binary needs MQTT 5 (the default); --mqtt-version 4 needs structured (the default). */
      cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s: %s", output[i].flag,
                   error.message);
      char *other = relay_tick_settings(&cfg);
      cr_assert_eq(relay_tick_settings_diff(base, other), RELAY_SETTINGS_OUTPUT_DIFFERS,
                   "%s %s: %s vs %s", output[i].flag, output[i].value, base, other);
      cr_assert_eq(relay_tick_settings_diff(other, base), RELAY_SETTINGS_OUTPUT_DIFFERS);
      bson_free(other);
   }
   const char *group_args[] = {TEST_REQUIRED,          "--lease-ttl-ms", "20000",
                               "--archive-collection", "arch",           NULL};
   cr_assert_eq(test_load(&cfg, &error, group_args), RELAY_CONFIG_RUN, "%s", error.message);
   char *other = relay_tick_settings(&cfg);
   cr_assert_eq(relay_tick_settings_diff(base, other), RELAY_SETTINGS_GROUP_DIFFERS);
   /* An older member writes the group's part only: nothing to compare the output with. */
   char *old = bson_strndup(base, (size_t)(strstr(base, RELAY_LEASE_OUTPUT_MARK) - base));
   cr_assert_eq(relay_tick_settings_diff(base, old), RELAY_SETTINGS_SAME);
   cr_assert_eq(relay_tick_settings_diff(other, old), RELAY_SETTINGS_GROUP_DIFFERS);
   bson_free(old);
   bson_free(other);
   bson_free(base);
}

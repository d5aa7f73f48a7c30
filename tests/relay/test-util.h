/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers shared by the relay shell tests.
 */
#ifndef RELAY_TEST_UTIL_H
#define RELAY_TEST_UTIL_H

#include <bson/bson.h>

#include "config/config.h"

/* Unsets every variable the relay reads, so the caller's environment cannot leak in. */
void test_clear_env(void);

/* Writes @content to a new temporary file; returns its path (bson_free it; the file is
 * removed by the test's own cleanup or left in /tmp on failure). */
char *test_write_temp(const char *content);

/* The whole file as a string (bson_free it), or NULL if it cannot be read. */
char *test_read_file(const char *path);

/* relay_config_load() with a NULL-terminated list of arguments after argv[0]. */
relay_config_action_t test_load(relay_config_t *cfg, bson_error_t *error, const char *const *args);

/* Arguments for the four required options, to append to. */
#define TEST_REQUIRED                                                                              \
   "--mongodb-uri", "mongodb://localhost/", "--database", "app", "--collection", "c1",             \
      "--mqtt-uri", "tcp://localhost:1883"

/* Defines the parameters of ParameterizedTest(size_t *idx, suite, test): the indexes of the
 * array `cases`. Criterion passes parameters to a re-executed worker, where pointers into this
 * binary's data may differ (ASLR), so the test gets an index and looks its case up. */
#define TEST_CASE_INDEXES(suite, test, cases)                                                      \
   ParameterizedTestParameters(suite, test)                                                        \
   {                                                                                               \
      static size_t idx[sizeof cases / sizeof cases[0]];                                           \
      for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {                                    \
         idx[i] = i;                                                                               \
      }                                                                                            \
      return cr_make_param_array(size_t, idx, sizeof idx / sizeof idx[0]);                         \
   }

#endif /* RELAY_TEST_UTIL_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * libFuzzer target: the input is a JSON config file, loaded the way the relay loads it
 * (relay_config_load() with --config FILE; the file is a memfd, named /proc/self/fd/N).
 * The load must end in a valid configuration or a clear error, never a crash or a leak
 * (LeakSanitizer checks every input). Build and run: see README.md in this directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "config/config-private.h"
#include "mqtt/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
   do {                                                                                            \
      if (!(cond)) {                                                                               \
         fprintf(stderr, "fuzz-config: invariant failed: %s (line %d)\n", #cond, __LINE__);        \
         abort();                                                                                  \
      }                                                                                            \
   } while (0)

static int fd = -1;
static char path[64];

static void
setup(void)
{
   /* Only the file may configure the relay: no OUTBOX_* variable of the caller. */
   unsetenv("OUTBOX_CONFIG");
   for (size_t i = 0; i < relay_n_opts; i++) {
      if (relay_opts[i].env) {
         unsetenv(relay_opts[i].env);
      }
   }
   /* mongoc logs every URI it rejects; the error it returns is what is checked. */
   mongoc_log_set_handler(NULL, NULL);
   fd = memfd_create("fuzz-config.json", 0);
   if (fd < 0) {
      perror("memfd_create");
      abort();
   }
   snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   relay_config_t cfg;
   bson_error_t error;
   char *argv[] = {"outbox-relay", "--config", path, NULL};

   if (fd < 0) {
      setup();
   }
   if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
      abort();
   }
   memset(&error, 0, sizeof error);
   memset(&cfg, 0, sizeof cfg);
   relay_config_init_defaults(&cfg);
   relay_config_action_t action = relay_config_load(&cfg, 3, argv, &error);
   CHECK(action == RELAY_CONFIG_RUN || action == RELAY_CONFIG_INVALID);
   if (action == RELAY_CONFIG_RUN) {
      bson_error_t terr;
      CHECK(cfg.mongodb_uri && cfg.database && cfg.mqtt_uri && cfg.n_collections >= 1);
      CHECK(relay_template_check(cfg.topic_template, "topic", true, &terr));
      bson_string_t *dump = bson_string_new(NULL);
      relay_config_dump(&cfg, dump);
      relay_config_dump_line(&cfg, dump);
      CHECK(strlen(dump->str) == dump->len);
      bson_string_free(dump, true);
   } else {
      /* A clear error: a message, which names the file. */
      CHECK(error.message[0] != '\0' && strlen(error.message) < sizeof error.message);
   }
   relay_config_destroy(&cfg);
   relay_config_destroy(&cfg); /* documented as safe twice */
   return 0;
}

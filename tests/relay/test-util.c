/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "test-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config/config-private.h"

void
test_clear_env(void)
{
   for (size_t i = 0; i < relay_n_opts; i++) {
      if (relay_opts[i].env) {
         unsetenv(relay_opts[i].env);
      }
   }
   unsetenv("OUTBOX_CONFIG");
}

char *
test_write_temp(const char *content)
{
   char *path = bson_strdup("/tmp/relay-shell-test-XXXXXX");
   int fd = mkstemp(path);
   if (fd < 0) {
      bson_free(path);
      return NULL;
   }
   size_t len = strlen(content);
   if (write(fd, content, len) != (ssize_t)len) {
      close(fd);
      bson_free(path);
      return NULL;
   }
   close(fd);
   return path;
}

char *
test_read_file(const char *path)
{
   FILE *f = fopen(path, "rb");
   if (!f) {
      return NULL;
   }
   bson_string_t *s = bson_string_new(NULL);
   char buf[4096];
   size_t n;
   while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
      buf[n] = '\0';
      bson_string_append(s, buf);
   }
   fclose(f);
   return bson_string_free(s, false);
}

relay_config_action_t
test_load(relay_config_t *cfg, bson_error_t *error, const char *const *args)
{
   char *argv[128] = {"outbox-relay"};
   int argc = 1;
   for (; args[argc - 1] && argc < 127; argc++) {
      argv[argc] = (char *)args[argc - 1];
   }
   memset(error, 0, sizeof *error);
   return relay_config_load(cfg, argc, argv, error);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * SIGHUP: reload the configuration, apply the log options, report the rest.
 *
 * Runs on the signal thread (main.c): it loads a fresh configuration of its own, only reads the
 * running one and changes the running relay only through the logger (which is thread-safe).
 */
#include "config/reload.h"

#include <string.h>

#include "config/config-private.h"
#include "util/log.h"

static bool
is_log_option(const char *name)
{
   return !strcmp(name, "log-level") || !strcmp(name, "log-format") || !strcmp(name, "log-file");
}

void
relay_config_diff(const relay_config_t *a, const relay_config_t *b, bool with_log,
                  bson_string_t *out)
{
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      if (opt->name && (with_log || !is_log_option(opt->name)) && !_relay_opt_equal(a, b, opt)) {
         bson_string_append_printf(out, "%s%s", out->len ? ", " : "", opt->name);
      }
   }
}

static void
reopen_log_only(void)
{
   if (relay_log_reopen()) {
      relay_log(RELAY_LOG_INFO, "main", "SIGHUP: log file reopened (if logging to one)");
   } else {
      relay_log(RELAY_LOG_WARNING, "main",
                "SIGHUP: cannot reopen the log file, keeping the old one");
   }
}

static void
apply(const relay_config_t *running, const relay_config_t *fresh)
{
   bson_error_t error;
   /* Opens the (possibly new) file before dropping the old one: on failure nothing changes. */
   if (!relay_log_init(fresh->log_level, fresh->log_format, fresh->log_file, &error)) {
      relay_log(RELAY_LOG_WARNING, "main", "SIGHUP: %s; logging as before", error.message);
      return;
   }
   relay_log(RELAY_LOG_INFO, "main",
             "SIGHUP: configuration reloaded from %s: log-level=%s log-format=%s log-file=%s",
             fresh->config_file, relay_log_level_name(fresh->log_level),
             relay_log_format_name(fresh->log_format),
             fresh->log_file ? fresh->log_file : "stderr");
   bson_string_t *pending = bson_string_new(NULL);
   relay_config_diff(running, fresh, false, pending);
   if (pending->len) {
      relay_log(RELAY_LOG_WARNING, "main",
                "SIGHUP: changed options keep their running values until a restart: %s",
                pending->str);
   }
   bson_string_free(pending, true);
}

void
relay_reload(const relay_config_t *running, int argc, char **argv)
{
   if (!running->config_file) {
      reopen_log_only();
      return;
   }
   relay_config_t fresh;
   bson_error_t error = {0};
   relay_config_init_defaults(&fresh);
   relay_config_action_t action = relay_config_load(&fresh, argc, argv, &error);
   if (action == RELAY_CONFIG_RUN) {
      apply(running, &fresh);
   } else {
      relay_log(RELAY_LOG_WARNING, "main",
                "SIGHUP: configuration not reloaded, running as before: %s", error.message);
      reopen_log_only();
   }
   relay_config_destroy(&fresh);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Showing the configuration: --help, --check-config and the start-up log line. Secrets
 * never leave this file in clear text.
 *
 * It only reads the relay_config_t it is given; any thread may call it.
 */
#include "config/config-private.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "util/redact.h"

char *
relay_config_redact_uri(const char *uri)
{
   return relay_redact_uri(uri);
}

/* The option's value as dumps show it. A client id made from --name gets a random suffix
 * per process (relay_group_new()), which does not exist yet: say so rather than show a
 * client id the relay never connects as (the "mqtt" start-up line names the real one). */
static char *
value_text(const relay_config_t *cfg, const relay_opt_t *opt)
{
   if (cfg->client_id_from_name && !strcmp(opt->name, "client-id")) {
      return bson_strdup_printf("%s-<8 random hex digits per process>", cfg->client_id);
   }
   return _relay_opt_value_text(cfg, opt);
}

void
relay_config_dump(const relay_config_t *cfg, bson_string_t *out)
{
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      if (!opt->name) {
         continue;
      }
      char *v = value_text(cfg, opt);
      bson_string_append_printf(out, "%-23s = %s\n", opt->name, v ? v : "(unset)");
      bson_free(v);
   }
   bson_string_append_printf(out, "%-23s = %s\n", "config",
                             cfg->config_file ? cfg->config_file : "(none)");
}

static bool
needs_quotes(const char *v)
{
   for (const char *p = v; *p; p++) {
      if (isspace((unsigned char)*p) || *p == '"' || *p == '=') {
         return true;
      }
   }
   return !*v;
}

void
relay_config_dump_line(const relay_config_t *cfg, bson_string_t *out)
{
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      char *v = opt->name ? value_text(cfg, opt) : NULL;
      if (!v) {
         continue; /* unset options are left out to keep the line short */
      }
      bson_string_append_printf(out, "%s%s=", out->len ? " " : "", opt->name);
      if (needs_quotes(v)) {
         bson_string_append_c(out, '"');
         for (const char *p = v; *p; p++) {
            if (*p == '"' || *p == '\\') {
               bson_string_append_c(out, '\\');
            }
            bson_string_append_c(out, *p);
         }
         bson_string_append_c(out, '"');
      } else {
         bson_string_append(out, v);
      }
      bson_free(v);
   }
}

void
relay_config_usage(FILE *out)
{
   fprintf(out,
           "Usage: outbox-relay --mongodb-uri URI --database DB --collection NAME...\n"
           "                    --mqtt-uri URI [OPTIONS]\n"
           "Publishes the pending events of MongoDB outbox documents to MQTT, then clears them.\n"
           "\n"
           "Every option can also be set in the environment (shown under each option) or as a\n"
           "key of a JSON config file ({\"mongodb-uri\": \"...\", \"qos\": 1, ...}); flags win\n"
           "over the environment, the environment over the file.\n"
           "\n"
           "  -h, --help            show this help and exit\n"
           "  -V, --version         show the versions and exit\n"
           "  --check-config        print the effective configuration and exit\n"
           "  -c, --config FILE     read options from a JSON file (env OUTBOX_CONFIG)\n");
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      if (!opt->name) {
         fprintf(out, "\n%s:\n", opt->help);
         continue;
      }
      fprintf(out, "  --%s%s%s\n      %s\n      env %s", opt->name, opt->arg ? " " : "",
              opt->arg ? opt->arg : "", opt->help, opt->env);
      if (opt->def) {
         fprintf(out, ", default %s", opt->def);
      }
      fputc('\n', out);
   }
   fprintf(out, "\nExit status: 0 ok or stopped by SIGTERM/SIGINT, 64 bad command line, 78 bad\n"
                "configuration (or a server refuses it), 69 metrics address unusable, 73 log file\n"
                "cannot be opened, 70 internal error. See outbox-relay(1).\n");
}

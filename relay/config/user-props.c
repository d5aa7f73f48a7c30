/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * --user-properties: which of the relay's own MQTT 5 user properties every message carries.
 * They cost the most of anything paho does per message (each is copied twice and freed twice
 * through paho's tracked heap), so consumers that read the payload can turn them off.
 *
 * Runs on the thread that loads the configuration (main at start-up, the signal thread on
 * SIGHUP); it touches only the relay_config_t it is given, never a running one.
 */
#include <string.h>

#include "config/config-private.h"
#include "util/error.h"

static const struct {
   const char *name;
   unsigned bit;
} props[] = {
   {"event-id", RELAY_PROP_EVENT_ID},
   {"event-type", RELAY_PROP_EVENT_TYPE},
   {"entity-id", RELAY_PROP_ENTITY_ID},
   {"seq", RELAY_PROP_SEQ},
};

#define N_PROPS (sizeof props / sizeof props[0])

static unsigned
bit_of(const char *name, size_t len)
{
   for (size_t i = 0; i < N_PROPS; i++) {
      if (strlen(props[i].name) == len && !strncmp(props[i].name, name, len)) {
         return props[i].bit;
      }
   }
   return 0;
}

bool
_relay_user_props_parse(const char *text, unsigned *bits, const char *what, bson_error_t *error)
{
   unsigned out = 0;

   if (!strcmp(text, "all")) {
      *bits = RELAY_PROP_ALL;
      return true;
   }
   if (!strcmp(text, "none")) {
      *bits = 0;
      return true;
   }
   for (const char *p = text;;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      unsigned bit = bit_of(p, len);
      if (!bit) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: expected all, none or a comma-separated list of event-id, "
                        "event-type, entity-id, seq; got '%.*s'",
                        what, (int)len, p);
         return false;
      }
      out |= bit;
      if (!comma) {
         break;
      }
      p = comma + 1;
   }
   *bits = out;
   return true;
}

char *
_relay_user_props_text(unsigned bits)
{
   bson_string_t *s;

   if (bits == RELAY_PROP_ALL) {
      return bson_strdup("all");
   }
   if (bits == 0) {
      return bson_strdup("none");
   }
   s = bson_string_new(NULL);
   for (size_t i = 0; i < N_PROPS; i++) {
      if (bits & props[i].bit) {
         bson_string_append_printf(s, "%s%s", s->len ? "," : "", props[i].name);
      }
   }
   return bson_string_free(s, false);
}

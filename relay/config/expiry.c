/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Checking the message expiry options once everything is loaded: --message-expiry as a
 * duration (the MQTT 5 Message Expiry Interval is four bytes of seconds) and --expired-events
 * as one of its three actions. Called by _relay_config_finish(); no state.
 */
#include "config/config-private.h"
#include "util/error.h"

#include <string.h>

/* The Message Expiry Interval is a Four Byte Integer (MQTT 5, 3.3.2.3.3). */
#define EXPIRY_MAX_S 4294967295LL

bool
_relay_config_check_expiry(relay_config_t *cfg, bson_error_t *error)
{
   static const char *const actions[] = {[RELAY_EXPIRED_DROP] = "drop",
                                         [RELAY_EXPIRED_DEAD_LETTER] = "dead-letter",
                                         [RELAY_EXPIRED_PUBLISH] = "publish"};

   cfg->message_expiry_s = 0;
   if (cfg->message_expiry &&
       (!_relay_parse_duration(cfg->message_expiry, &cfg->message_expiry_s) ||
        cfg->message_expiry_s > EXPIRY_MAX_S)) {
      bson_set_error(
         error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
         "message-expiry: expected a duration like 90s, 15m, 1.5h or 7d, in whole seconds (at most "
         "%lld seconds, MQTT's limit), or none; got '%s'",
         EXPIRY_MAX_S, cfg->message_expiry);
      return false;
   }
   cfg->expired_mode = RELAY_EXPIRED_DROP;
   if (!cfg->expired_events) {
      return true;
   }
   for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
      if (!strcmp(cfg->expired_events, actions[i])) {
         cfg->expired_mode = (relay_expired_t)i;
         return true;
      }
   }
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                  "expired-events: expected drop, dead-letter or publish, got '%s'",
                  cfg->expired_events);
   return false;
}

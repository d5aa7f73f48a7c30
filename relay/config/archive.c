/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Checking the archive options once everything is loaded: --archive-ttl as a duration, and
 * an --archive-collection that cannot be mistaken for a collection the relay already writes
 * (an outbox collection would get archive entries as entities; the state collection holds
 * checkpoints and leases). Called by _relay_config_finish(); no state.
 */
#include "config/config-private.h"
#include "base/duration.h"
#include "util/error.h"

#include <string.h>

/* MongoDB refuses a TTL index whose expireAfterSeconds is above INT32_MAX (r6.0
 * src/mongo/db/catalog/index_key_validate.cpp, validateExpireAfterSeconds(): "defined as
 * safeInt (int32_t) in the IDL for listIndexes and collMod"); about 68 years. */
#define TTL_MAX_S 2147483647LL
/* Any duration option: a century, well past any limit the options have. */
#define DURATION_MAX_S (100LL * 365 * 86400)

bool
_relay_parse_duration(const char *text, int64_t *seconds)
{
   int64_t ms;
   if (!strcmp(text, "none")) {
      *seconds = 0;
      return true;
   }
   if (!relay_duration_parse(text, DURATION_MAX_S * 1000, &ms) || ms % 1000 != 0) {
      return false;
   }
   *seconds = ms / 1000;
   return true;
}

bool
_relay_config_check_archive(relay_config_t *cfg, bson_error_t *error)
{
   const char *name = cfg->archive_collection;

   cfg->archive_ttl_s = 0;
   if (cfg->archive_ttl && (!_relay_parse_duration(cfg->archive_ttl, &cfg->archive_ttl_s) ||
                            cfg->archive_ttl_s > TTL_MAX_S)) {
      bson_set_error(
         error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
         "archive-ttl: expected a duration like 30d, 1.5h, 90m or 3600s, in whole seconds (at most "
         "%lld seconds, about 68 years: MongoDB's limit for expireAfterSeconds), "
         "or none; got '%s'",
         TTL_MAX_S, cfg->archive_ttl);
      cfg->archive_ttl_s = 0;
      return false;
   }
   if (name && (!strcmp(name, "off") || !*name)) {
      bson_free(cfg->archive_collection);
      cfg->archive_collection = NULL;
      return true;
   }
   if (!name) {
      return true;
   }
   /* The whole list: a --collection flag that narrows the config file's list (as
    * outbox-admin ensure-schema is run) must not let the archive's validator land on one of
    * the collections it left out. */
   for (size_t i = 0; i < cfg->n_collections + cfg->n_replaced_collections; i++) {
      const char *coll = i < cfg->n_collections ? cfg->collections[i]
                                                : cfg->replaced_collections[i - cfg->n_collections];
      if (!strcmp(name, coll)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "archive-collection '%s' is also an outbox collection%s", name,
                        i < cfg->n_collections ? "" : " (of the config, left out by --collection)");
         return false;
      }
   }
   if (!strcmp(name, cfg->state_collection) ||
       (cfg->lease_collection && !strcmp(name, cfg->lease_collection))) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "archive-collection '%s' is the relay's state or lease collection", name);
      return false;
   }
   return true;
}

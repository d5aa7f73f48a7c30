/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See concerns.h: the concerns of the relay's own operations, set on every URI it makes a
 * client from. No state; any thread.
 */
#include "store/concerns.h"

int64_t
relay_concerns_wtimeout_ms(const relay_config_t *cfg, relay_concerns_role_t role)
{
   if (role == RELAY_CONCERNS_LEASES) {
      return cfg->lease_renew_ms;
   }
   return cfg->lease_ttl_ms > 5000 ? cfg->lease_ttl_ms : 5000;
}

void
relay_concerns_apply(mongoc_uri_t *uri, const relay_config_t *cfg, relay_concerns_role_t role)
{
   mongoc_write_concern_t *wc = mongoc_write_concern_new();
   mongoc_read_concern_t *rc = mongoc_read_concern_new();
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);

   /* Every write: acknowledged only once a majority holds it, so never rolled back. */
   mongoc_write_concern_set_w(wc, MONGOC_WRITE_CONCERN_W_MAJORITY);
   mongoc_write_concern_set_wtimeout_int64(wc, relay_concerns_wtimeout_ms(cfg, role));
   mongoc_uri_set_write_concern(uri, wc);
   if (role == RELAY_CONCERNS_LEASES) {
      /* Who owns what, at which epoch, with which checkpoint: only what a majority holds. */
      mongoc_read_concern_set_level(rc, MONGOC_READ_CONCERN_LEVEL_MAJORITY);
   }
   if (role != RELAY_CONCERNS_ADMIN) {
      /* An empty read concern: the server's default (local), whatever the URI asked. */
      mongoc_uri_set_read_concern(uri, rc);
      mongoc_uri_set_read_prefs_t(uri, prefs);
   }
   mongoc_read_prefs_destroy(prefs);
   mongoc_read_concern_destroy(rc);
   mongoc_write_concern_destroy(wc);
}

int64_t
relay_concerns_read_wait_ms(const relay_config_t *cfg)
{
   return cfg->lease_renew_ms;
}

void
relay_concerns_append_document_read(bson_t *opts, uint32_t after_t, uint32_t after_i,
                                    int64_t max_time_ms)
{
   bson_t rc;

   BSON_APPEND_DOCUMENT_BEGIN(opts, "readConcern", &rc);
   BSON_APPEND_UTF8(&rc, "level", "majority");
   if (after_t || after_i) {
      BSON_APPEND_TIMESTAMP(&rc, "afterClusterTime", after_t, after_i);
   }
   bson_append_document_end(opts, &rc);
   if (max_time_ms > 0) {
      BSON_APPEND_INT64(opts, "maxTimeMS", max_time_ms);
   }
}

static void
append_sep(bson_string_t *out, const char *what)
{
   bson_string_append_printf(out, "%s%s", out->len ? "; " : "", what);
}

void
relay_concerns_overridden(const relay_config_t *cfg, bson_string_t *out)
{
   mongoc_uri_t *uri = mongoc_uri_new_with_error(cfg->mongodb_uri, NULL);
   const mongoc_write_concern_t *wc;
   const mongoc_read_prefs_t *prefs;
   const mongoc_read_concern_t *rc;

   if (!uri) {
      return;
   }
   wc = mongoc_uri_get_write_concern(uri);
   prefs = mongoc_uri_get_read_prefs_t(uri);
   rc = mongoc_uri_get_read_concern(uri);
   if (mongoc_write_concern_get_w(wc) != MONGOC_WRITE_CONCERN_W_DEFAULT &&
       !mongoc_write_concern_get_wmajority(wc)) {
      append_sep(out, "its w (the relay writes with w: \"majority\")");
   }
   if (mongoc_write_concern_get_wtimeout_int64(wc) > 0) {
      append_sep(out, "its wtimeoutMS (the relay's wtimeouts follow the lease times)");
   }
   if (prefs && mongoc_read_prefs_get_mode(prefs) != MONGOC_READ_PRIMARY) {
      append_sep(out, "its readPreference (the relay reads from the primary; outbox-admin "
                      "follows the URI)");
   }
   if (mongoc_read_concern_get_level(rc)) {
      append_sep(out, "its readConcernLevel (the relay reads leases and documents at "
                      "\"majority\", the rest at the server's default)");
   }
   mongoc_uri_destroy(uri);
}

void
relay_concerns_describe(const relay_config_t *cfg, bson_string_t *out)
{
   int64_t lease_wt = relay_concerns_wtimeout_ms(cfg, RELAY_CONCERNS_LEASES);
   int64_t data_wt = relay_concerns_wtimeout_ms(cfg, RELAY_CONCERNS_DATA);

   bson_string_append_printf(out,
                             "%-23s = w: majority, wtimeout %" PRId64
                             " ms (lease-renew-ms); reads: primary, readConcern majority\n",
                             "concerns.leases", lease_wt);
   bson_string_append_printf(out,
                             "%-23s = w: majority, wtimeout %" PRId64
                             " ms (lease-ttl-ms, at least 5 s); reads: primary, readConcern "
                             "server default\n",
                             "concerns.clears", data_wt);
   bson_string_append(
      out,
      "concerns.dead-letters   = as clears (a dead-letter move is one update of the entity)\n");
   bson_string_append_printf(out,
                             "%-23s = w: majority, wtimeout %" PRId64
                             " ms; cleared only once a majority holds the entry\n",
                             "concerns.archive", data_wt);
   bson_string_append(out, "concerns.stream         = primary; majority-committed changes only "
                           "(as every change stream)\n");
   bson_string_append_printf(out,
                             "%-23s = sweeps and entity reads: primary, readConcern majority "
                             "after the sweep's start or the change's clusterTime; waits at "
                             "most %" PRId64 " ms (lease-renew-ms), then retried\n",
                             "concerns.documents", relay_concerns_read_wait_ms(cfg));
   bson_string_append(out, "concerns.pending-scan   = primary, readConcern server default (the "
                           "gauges only)\n");
   bson_string_append_printf(out,
                             "%-23s = the largest clock skew between members must stay below "
                             "lease-margin-ms (%d ms)\n",
                             "concerns.clock-rule", cfg->lease_margin_ms);
}

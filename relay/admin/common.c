/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What outbox-admin's commands share: collection handles with the relay's field names,
 * mapping MongoDB errors to exit codes, the server's clock, and output helpers.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"
#include "mqtt/render.h"
#include "util/util.h"

outbox_collection_t *
admin_collection(admin_t *a, const char *name)
{
   bson_error_t error;
   /* The field names are the relay's, so both see the same documents. The cache would only
    * cost memory in a short-lived tool. */
   bson_t *opts =
      BCON_NEW("versionField", BCON_UTF8(a->cfg.version_field), "eventSeqField",
               BCON_UTF8(a->cfg.event_seq_field), "eventsField", BCON_UTF8(a->cfg.events_field),
               "deadLettersField", BCON_UTF8(a->cfg.dead_letters_field), "requeuesField",
               BCON_UTF8(a->cfg.requeues_field), "cacheSize", BCON_INT32(0));
   const admin_target_t *t = admin_target(a, name);
   outbox_collection_t *c = outbox_collection_new(a->pool, t ? t->db : a->cfg.state_database,
                                                  t ? t->coll : name, opts, &error);
   if (!c) {
      fprintf(stderr, "outbox-admin: collection %s: %s\n", name, error.message);
   }
   bson_destroy(opts);
   return c;
}

const char *
admin_lease_collection(const admin_t *a)
{
   return a->cfg.lease_collection;
}

int
admin_fail(const char *what, const bson_error_t *error)
{
   int rc = EX_SOFTWARE;
   if ((error->domain == MONGOC_ERROR_SERVER && (error->code == 13 || error->code == 18)) ||
       (error->domain == MONGOC_ERROR_CLIENT && error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE)) {
      rc = EX_NOPERM;
   } else if (error->domain == MONGOC_ERROR_SERVER_SELECTION ||
              error->domain == MONGOC_ERROR_STREAM) {
      rc = EX_UNAVAILABLE;
   } else if (error->domain == OUTBOX_ERROR_DOMAIN &&
              error->code == OUTBOX_ERROR_MALFORMED_DOCUMENT) {
      rc = EX_DATAERR;
   }
   fprintf(stderr, "outbox-admin: %s: %s\n", what, error->message);
   return rc;
}

bool
admin_server_now(admin_t *a, int64_t *now_ms, bson_error_t *error)
{
   mongoc_client_t *client = mongoc_client_pool_pop(a->pool);
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   bson_t reply;
   bson_iter_t it;
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, error);

   *now_ms = ok && bson_iter_init_find(&it, &reply, "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it)
                ? bson_iter_date_time(&it)
                : relay_wall_ms();
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_pool_push(a->pool, client);
   return ok;
}

void
admin_print_text(FILE *out, const char *s, size_t len)
{
   const unsigned char *u = (const unsigned char *)s;
   if (!s) {
      fputs("-", out);
      return;
   }
   for (size_t i = 0; i < len; i++) {
      bool c1 = u[i] == 0xC2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9F;
      if (u[i] == '\t' || u[i] == '\r' || u[i] == '\n') {
         fputc('\\', out);
         fputc(u[i] == '\t' ? 't' : u[i] == '\r' ? 'r' : 'n', out);
      } else if (u[i] < 0x20 || u[i] == 0x7F) {
         fprintf(out, "\\x%02x", u[i]);
      } else if (c1) { /* U+0080..U+009F: CSI (U+009B) moves a cursor as ESC [ does */
         fprintf(out, "\\x%02x\\x%02x", u[i], u[i + 1]);
         i++;
      } else {
         fputc(u[i], out);
      }
   }
}

void
admin_print_str(FILE *out, const char *s)
{
   admin_print_text(out, s, s ? strlen(s) : 0);
}

void
admin_print_id(FILE *out, const bson_value_t *id)
{
   size_t len = 0;
   char *s = relay_render_id(id, &len);
   admin_print_text(out, s, len);
   bson_free(s);
}

void
admin_print_time(FILE *out, int64_t ms)
{
   char buf[40];
   if (ms == 0) {
      fputs("-", out);
      return;
   }
   relay_format_time(ms, buf, sizeof buf);
   fputs(buf, out);
}

void
admin_print_age(FILE *out, int64_t ms)
{
   int64_t s = ms / 1000;
   if (ms < 0) {
      fputs("-", out);
   } else if (ms < 1000) {
      fprintf(out, "%" PRId64 "ms", ms);
   } else if (s < 60) {
      fprintf(out, "%.1fs", (double)ms / 1000.0);
   } else if (s < 3600) {
      fprintf(out, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
   } else if (s < 86400) {
      fprintf(out, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
   } else {
      fprintf(out, "%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
   }
}

void
admin_print_json(FILE *out, const bson_t *doc)
{
   char *json = bson_as_relaxed_extended_json(doc, NULL);
   fprintf(out, "%s\n", json ? json : "{}");
   bson_free(json);
}

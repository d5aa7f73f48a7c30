/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `requeue` and `discard`: first every matching dead letter is collected (so the writes do
 * not disturb the cursor that finds them), then each is moved by liboutbox in one update of
 * its own document, guarded on the exact element (see outbox/dead-letters.h). --dry-run
 * prints what would change and writes nothing. A dead letter without an event id cannot be
 * addressed and is reported as skipped.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <pwd.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "admin/admin.h"

typedef struct {
   const char *coll; /* borrowed from the configuration */
   bson_value_t entity;
   char *event_id;
} target_t;

typedef struct {
   target_t *items;
   size_t n, cap;
   size_t skipped;
   const char *verb; /* "requeue", "discard" */
} targets_t;

static int
collect(admin_t *a, const char *coll, outbox_collection_t *c, const outbox_stored_event_t *ev,
        int64_t now, void *ctx)
{
   targets_t *t = ctx;
   if (a->dry_run || !ev->event_id) {
      bson_t doc = BSON_INITIALIZER;
      const char *what = !ev->event_id ? "skipped (no event id)" : "would";
      if (a->json) {
         BSON_APPEND_UTF8(&doc, "action", t->verb);
         BSON_APPEND_BOOL(&doc, "dryRun", a->dry_run);
         BSON_APPEND_BOOL(&doc, "skipped", !ev->event_id);
         admin_event_json(&doc, coll, ev);
         admin_print_json(a->out, &doc);
      } else {
         fprintf(a->out, "%s %s\t", what, ev->event_id ? t->verb : "");
         admin_event_line(a->out, coll, ev, now);
      }
      bson_destroy(&doc);
      t->skipped += !ev->event_id;
      if (a->dry_run || !ev->event_id) {
         return EX_OK;
      }
   }
   if (t->n == t->cap) {
      t->cap = t->cap ? 2 * t->cap : 16;
      t->items = bson_realloc(t->items, t->cap * sizeof *t->items);
   }
   target_t *it = &t->items[t->n++];
   it->coll = coll;
   bson_value_copy(ev->entity_id, &it->entity);
   it->event_id = bson_strdup(ev->event_id);
   return EX_OK;
}

static void
targets_free(targets_t *t)
{
   for (size_t i = 0; i < t->n; i++) {
      bson_value_destroy(&t->items[i].entity);
      bson_free(t->items[i].event_id);
   }
   bson_free(t->items);
}

/* "user@host" of whoever runs the tool, when --by is not given. */
static char *
default_by(void)
{
   char host[256] = "localhost";
   struct passwd *pw = getpwuid(getuid());
   gethostname(host, sizeof host - 1);
   host[sizeof host - 1] = '\0';
   return bson_strdup_printf("%s@%s", pw && pw->pw_name ? pw->pw_name : "uid", host);
}

typedef bool (*op_fn)(outbox_collection_t *c, const target_t *t, const char *by, const char *reason,
                      bson_error_t *error);

static void
report(admin_t *a, const targets_t *t, const target_t *it, bool ok, const bson_error_t *error)
{
   if (a->json) {
      bson_t doc = BSON_INITIALIZER;
      BSON_APPEND_UTF8(&doc, "action", t->verb);
      BSON_APPEND_UTF8(&doc, "collection", it->coll);
      BSON_APPEND_VALUE(&doc, "entity", &it->entity);
      BSON_APPEND_UTF8(&doc, "eventId", it->event_id);
      BSON_APPEND_BOOL(&doc, "ok", ok);
      if (!ok) {
         BSON_APPEND_UTF8(&doc, "error", error->message);
      }
      admin_print_json(a->out, &doc);
      bson_destroy(&doc);
      return;
   }
   fprintf(a->out, "%s%s\t%s\t", ok ? "" : "failed to ", t->verb, it->coll);
   admin_print_id(a->out, &it->entity);
   fputc('\t', a->out);
   admin_print_str(a->out, it->event_id);
   if (!ok) {
      fputs(": ", a->out); /* messages quote stored values */
      admin_print_str(a->out, error->message);
   }
   fputc('\n', a->out);
}

/* Applies @op to every collected target; the exit status is that of the first failure
 * other than "gone meanwhile" (another operator or relay was faster: nothing to do). */
static int
apply(admin_t *a, targets_t *t, op_fn op)
{
   char *by = a->by ? bson_strdup(a->by) : default_by();
   size_t done = 0;
   int rc = EX_OK;

   for (size_t i = 0; i < t->n; i++) {
      target_t *it = &t->items[i];
      outbox_collection_t *c = admin_collection(a, it->coll);
      bson_error_t error;
      bool ok = c && op(c, it, by, a->reason, &error);
      if (c) {
         report(a, t, it, ok, &error);
      }
      if (ok) {
         done++;
      } else if (!c) {
         rc = EX_CONFIG;
      } else if (rc == EX_OK &&
                 !(error.domain == OUTBOX_ERROR_DOMAIN && error.code == OUTBOX_ERROR_NOT_FOUND)) {
         rc = admin_fail(it->event_id, &error);
      }
      outbox_collection_destroy(c);
   }
   if (!a->json) {
      fprintf(stderr, "outbox-admin: %s: %zu done, %zu failed, %zu skipped (no event id)\n",
              t->verb, done, t->n - done, t->skipped);
   }
   bson_free(by);
   return rc;
}

static int
run(admin_t *a, const char *verb, op_fn op)
{
   targets_t t = {.verb = verb};
   int rc = admin_each(a, OUTBOX_PLACE_DEAD_LETTER, collect, &t);
   if (rc == EX_OK && !a->dry_run) {
      rc = apply(a, &t, op);
   } else if (rc == EX_OK && !a->json) {
      fprintf(stderr, "outbox-admin: dry run: nothing changed\n");
   }
   targets_free(&t);
   return rc;
}

static bool
discard_one(outbox_collection_t *c, const target_t *t, const char *by, const char *reason,
            bson_error_t *error)
{
   return outbox_collection_discard_dead_letter(c, &t->entity, t->event_id, by, reason, error);
}

static bool
requeue_one(outbox_collection_t *c, const target_t *t, const char *by, const char *reason,
            bson_error_t *error)
{
   return outbox_collection_requeue_dead_letter(c, &t->entity, t->event_id, by, error);
}

int
admin_discard(admin_t *a)
{
   return run(a, "discard", discard_one);
}

int
admin_requeue(admin_t *a)
{
   return run(a, "requeue", requeue_one);
}

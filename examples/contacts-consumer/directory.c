/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The contact directory read model, updated through liboutbox's idempotent inbox.
 */
#include "directory.h"

#include <string.h>

#include <outbox/inbox.h>

#define COLLECTION "directory"

struct _directory_t {
   mongoc_client_pool_t *pool;
   char *db;
   outbox_inbox_t *inbox;
   FILE *out;
};

directory_t *
directory_new(mongoc_client_pool_t *pool, const char *db, FILE *out, bson_error_t *error)
{
   directory_t *dir = bson_malloc0(sizeof *dir);

   dir->pool = pool;
   dir->db = bson_strdup(db);
   dir->out = out;
   /* Defaults: a window of 128 event ids per entry and a 7-day ledger ("directory_inbox"). */
   dir->inbox = outbox_inbox_new(pool, db, COLLECTION, NULL, error);
   if (!dir->inbox) {
      directory_destroy(dir);
      return NULL;
   }
   return dir;
}

void
directory_destroy(directory_t *dir)
{
   if (!dir)
      return;
   outbox_inbox_destroy(dir->inbox);
   bson_free(dir->db);
   bson_free(dir);
}

bool
directory_prepare(directory_t *dir, bson_error_t *error)
{
   return outbox_inbox_ensure_indexes(dir->inbox, error);
}

static void
copy_field(const bson_t *data, const char *key, bson_t *set)
{
   bson_iter_t it;

   if (bson_iter_init_find(&it, data, key))
      bson_append_iter(set, key, -1, &it);
}

/* The state change an event makes to its directory entry; false for unknown types. */
static bool
build_update(const cloudevent_t *ev, bson_t *update)
{
   const bson_t *d = &ev->data;
   bson_t set;

   BSON_APPEND_DOCUMENT_BEGIN(update, "$set", &set);
   if (!strcmp(ev->type, "ContactCreated")) {
      copy_field(d, "name", &set);
      copy_field(d, "email", &set);
      copy_field(d, "company", &set);
      BSON_APPEND_BOOL(&set, "deleted", false);
   } else if (!strcmp(ev->type, "ContactNameUpdated")) {
      copy_field(d, "name", &set);
   } else if (!strcmp(ev->type, "ContactEmailUpdated")) {
      copy_field(d, "email", &set);
   } else if (!strcmp(ev->type, "ContactCompanyUpdated")) {
      copy_field(d, "company", &set);
   } else if (!strcmp(ev->type, "ContactDeleted")) {
      BSON_APPEND_BOOL(&set, "deleted", true);
   } else {
      bson_append_document_end(update, &set);
      return false;
   }
   bson_append_document_end(update, &set);
   return true;
}

static const char *
str_at(const bson_t *doc, const char *path)
{
   bson_iter_t it;

   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
       BSON_ITER_HOLDS_UTF8(&it))
      return bson_iter_utf8(&it, NULL);
   return NULL;
}

static void
describe(FILE *out, const bson_t *doc)
{
   bson_iter_t it;
   const char *company = str_at(doc, "company.companyName");

   fprintf(out, "%s %s <%s>", str_at(doc, "name.firstName") ? str_at(doc, "name.firstName") : "?",
           str_at(doc, "name.lastName") ? str_at(doc, "name.lastName") : "?",
           str_at(doc, "email") ? str_at(doc, "email") : "");
   if (company)
      fprintf(out, " at %s", company);
   if (bson_iter_init_find(&it, doc, "deleted") && bson_iter_as_bool(&it))
      fprintf(out, " (deleted)");
}

/* Prints the entry as it is now, after an event was applied to it. */
static void
print_entry(directory_t *dir, mongoc_client_t *client, const char *id)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, dir->db, COLLECTION);
   bson_t *filter = BCON_NEW("_id", BCON_UTF8(id));
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
   const bson_t *doc;

   if (mongoc_cursor_next(cursor, &doc)) {
      fprintf(dir->out, " -> ");
      describe(dir->out, doc);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);
   mongoc_collection_destroy(coll);
}

static void
print_result(directory_t *dir, const cloudevent_t *ev, const outbox_inbox_result_t *res, bool known)
{
   mongoc_client_t *client;

   if (res->status == OUTBOX_INBOX_SKIPPED_LATE) {
      /* Only with the inbox's skipLate option, which this directory does not use. */
      fprintf(dir->out,
              "consumer: skipped late %s contact=%s seq=%lld (seq %lld applied already)\n",
              ev->type, ev->subject, (long long)ev->seq, (long long)res->previous_seq);
      fflush(dir->out);
      return;
   }
   if (res->status == OUTBOX_INBOX_DUPLICATE) {
      fprintf(dir->out,
              "consumer: duplicate %s contact=%s seq=%lld event=%s: already processed, "
              "skipped\n",
              ev->type, ev->subject, (long long)ev->seq, ev->id);
      fflush(dir->out);
      return;
   }
   fprintf(dir->out, "consumer: applied %s contact=%s seq=%lld %s", ev->type, ev->subject,
           (long long)ev->seq, outbox_seq_order_name(res->order));
   if (ev->trace_id[0])
      fprintf(dir->out, " trace=%s", ev->trace_id);
   if (res->order == OUTBOX_SEQ_GAP)
      fprintf(dir->out, " (gap detected: seq %lld..%lld not seen yet)",
              (long long)res->previous_seq + 1, (long long)ev->seq - 1);
   else if (res->order == OUTBOX_SEQ_LATE)
      fprintf(dir->out, " (reordered: arrived after seq %lld)", (long long)res->previous_seq);
   if (!known)
      fprintf(dir->out, " (unknown type: recorded, nothing to change)");
   client = mongoc_client_pool_pop(dir->pool);
   print_entry(dir, client, ev->subject);
   mongoc_client_pool_push(dir->pool, client);
   fputc('\n', dir->out);
   fflush(dir->out);
}

bool
directory_apply(directory_t *dir, const cloudevent_t *ev, bson_error_t *error)
{
   bson_t update = BSON_INITIALIZER;
   outbox_inbox_result_t res;
   bson_value_t id = {.value_type = BSON_TYPE_UTF8};
   bool known, ok;

   id.value.v_utf8.str = ev->subject;
   id.value.v_utf8.len = (uint32_t)strlen(ev->subject);
   known = build_update(ev, &update);
   ok = outbox_inbox_apply(dir->inbox, &id, ev->id, ev->seq, known ? &update : NULL, &res, error);
   bson_destroy(&update);
   if (ok)
      print_result(dir, ev, &res, known);
   return ok;
}

bool
directory_print(directory_t *dir, bson_error_t *error)
{
   mongoc_client_t *client = mongoc_client_pool_pop(dir->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, dir->db, COLLECTION);
   bson_t *filter = BCON_NEW("deleted", "{", "$ne", BCON_BOOL(true), "}");
   bson_t *opts = BCON_NEW("sort", "{", "company.companyName", BCON_INT32(1), "name.lastName",
                           BCON_INT32(1), "}");
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
   const bson_t *doc;
   bool failed;
   int n = 0;

   fprintf(dir->out, "consumer: directory by company:\n");
   while (mongoc_cursor_next(cursor, &doc)) {
      const char *company = str_at(doc, "company.companyName");

      fprintf(dir->out, "consumer:   %-24s ", company ? company : "(no company)");
      describe(dir->out, doc);
      fputc('\n', dir->out);
      n++;
   }
   failed = mongoc_cursor_error(cursor, error);
   fprintf(dir->out, "consumer: %d live contact%s\n", n, n == 1 ? "" : "s");
   fflush(dir->out);
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);
   bson_destroy(opts);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(dir->pool, client);
   return !failed;
}

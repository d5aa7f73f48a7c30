/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See archive.h: why the archive is written before the clear, and with inserts.
 */
#include "store/archive.h"
#include "util/error.h"

#include <string.h>

#include <outbox/outbox.h>

#include "contract-private.h" /* liboutbox: the header rules, as the message applies them */

/* The headers the relay published (the contract's HEADER rules, as mqtt/headers.c applies
 * them, and the first of a repeated name): a document of strings, which the archive's
 * validator requires. */
static void
append_published_headers(const bson_iter_t *field, bson_t *entry)
{
   bson_iter_t it;
   bson_t out;
   size_t n = 0, used = 0;
   const char *kept[OUTBOX_CONTRACT_HEADERS_MAX];

   if (!BSON_ITER_HOLDS_DOCUMENT(field) || !bson_iter_recurse(field, &it)) {
      return; /* all left out, as in the message */
   }
   bson_append_document_begin(entry, "headers", 7, &out);
   while (bson_iter_next(&it)) {
      const bson_value_t *v = bson_iter_value(&it);
      bool again = false;
      for (size_t k = 0; k < n && !again; k++) {
         again = !strcmp(kept[k], bson_iter_key(&it));
      }
      /* The check refuses a 17th header, so kept[] never overflows. */
      if (again || _outbox_contract_header_check(bson_iter_key(&it), bson_iter_key_len(&it), v, n,
                                                 used, false)) {
         continue;
      }
      kept[n] = bson_iter_key(&it);
      bson_append_value(&out, bson_iter_key(&it), -1, v);
      used += bson_iter_key_len(&it) + v->value.v_utf8.len;
      n++;
   }
   bson_append_document_end(entry, &out);
}

/* The archive entry of one stored event @raw of statement @s (archive.h's contract). The
 * relay checked the event against the contract's accepted form before publishing; the entry
 * holds every field of the contract's EVENT rows, normalised to the written form, as the
 * archive's validator (made from the same table) requires: the id as _id, seq as Int64
 * (another writer may store an int32), only the headers that were published, the others
 * (time, type, data ...) as stored when present. A new EVENT row is archived with no change
 * here. The first of two fields of one name counts, as for publishing. */
static void
build_entry(const relay_config_t *cfg, const char *member, const char *coll,
            const relay_clear_stmt_t *s, const bson_t *raw, int64_t now_ms, bson_t *entry)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bson_iter_t it;

   bson_init(entry);
   if (bson_iter_init_find(&it, raw, "id")) {
      bson_append_value(entry, "_id", 3, bson_iter_value(&it));
   }
   BSON_APPEND_UTF8(entry, "collection", coll);
   bson_append_value(entry, "entityId", 8, &s->id);
   for (size_t i = 0; i < n; i++) {
      const char *name = rules[i].name;
      if (rules[i].scope != OUTBOX_CONTRACT_EVENT || !strcmp(name, "id") ||
          !bson_iter_init_find(&it, raw, name)) {
         continue;
      }
      if (!strcmp(name, "headers")) {
         append_published_headers(&it, entry);
      } else if (BSON_ITER_HOLDS_INT32(&it) &&
                 outbox_contract_type_allowed(&rules[i].written, BSON_TYPE_INT64)) {
         BSON_APPEND_INT64(entry, name, bson_iter_as_int64(&it)); /* seq */
      } else {
         bson_append_value(entry, name, -1, bson_iter_value(&it));
      }
   }
   if (s->part >= 0) {
      BSON_APPEND_INT32(entry, "partition", s->part);
   }
   BSON_APPEND_DATE_TIME(entry, "publishedAt", now_ms);
   BSON_APPEND_UTF8(entry, "relay", cfg->name);
   if (member) {
      BSON_APPEND_UTF8(entry, "member", member);
   }
}

/* One archive write: per insert, the statement it belongs to, the event's index in it and
 * the entry (kept to tell a duplicate of the same event from another event's). */
typedef struct {
   relay_clear_stmt_t **owner;
   uint32_t *index;
   bson_t **entries;
   size_t n, cap;
} batch_t;

static void
batch_free(batch_t *b)
{
   for (size_t i = 0; i < b->n; i++) {
      bson_destroy(b->entries[i]);
   }
   bson_free(b->owner);
   bson_free(b->index);
   bson_free(b->entries);
}

/* Adds the inserts of @s's events to @bulk and @b. Returns false if one could not be built. */
static bool
add_inserts(const relay_config_t *cfg, const char *member, const char *coll,
            mongoc_bulk_operation_t *bulk, relay_clear_stmt_t *s, int64_t now_ms, batch_t *b)
{
   bson_iter_t it;
   uint32_t k = 0;

   if (!s->events || !bson_iter_init(&it, s->events)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      const uint8_t *buf;
      uint32_t len;
      bson_t raw, *entry = bson_new();
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_destroy(entry);
         return false;
      }
      bson_iter_document(&it, &len, &buf);
      if (!bson_init_static(&raw, buf, len)) {
         bson_destroy(entry);
         return false;
      }
      build_entry(cfg, member, coll, s, &raw, now_ms, entry);
      if (b->n == b->cap) {
         b->cap = b->cap ? b->cap * 2 : 64;
         b->owner = bson_realloc(b->owner, b->cap * sizeof *b->owner);
         b->index = bson_realloc(b->index, b->cap * sizeof *b->index);
         b->entries = bson_realloc(b->entries, b->cap * sizeof *b->entries);
      }
      b->owner[b->n] = s;
      b->index[b->n] = k++;
      b->entries[b->n++] = entry;
      if (!mongoc_bulk_operation_insert_with_opts(bulk, entry, NULL, NULL)) {
         return false;
      }
   }
   return true;
}

/* True if @a and @b hold the same BSON value (type and bytes) at @field, or both none. */
static bool
same_field(const bson_t *a, const bson_t *b, const char *field)
{
   bson_iter_t x, y;
   bool hx = bson_iter_init_find(&x, a, field), hy = bson_iter_init_find(&y, b, field);
   bson_t vx = BSON_INITIALIZER, vy = BSON_INITIALIZER;
   bool same;

   if (!hx || !hy) {
      return hx == hy;
   }
   bson_append_value(&vx, "v", 1, bson_iter_value(&x));
   bson_append_value(&vy, "v", 1, bson_iter_value(&y));
   same = bson_equal(&vx, &vy);
   bson_destroy(&vx);
   bson_destroy(&vy);
   return same;
}

/* After a duplicate key (11000) on @entry: true when the archived entry with its _id is the
 * same event (same collection, entity and seq: a second archive of one event after a
 * restart), false when it is another entity's event with the same id (event ids must be
 * unique across entities) or it cannot be read (then *@unknown). */
static bool
archived_as_same_event(mongoc_collection_t *archive, const bson_t *entry, bool *unknown)
{
   bson_t filter = BSON_INITIALIZER;
   bson_iter_t id;
   const bson_t *found;
   bool same = false;

   *unknown = true;
   if (!bson_iter_init_find(&id, entry, "_id")) {
      return false;
   }
   bson_append_value(&filter, "_id", 3, bson_iter_value(&id));
   mongoc_cursor_t *c = mongoc_collection_find_with_opts(archive, &filter, NULL, NULL);
   if (mongoc_cursor_next(c, &found)) {
      *unknown = false;
      same = same_field(found, entry, "collection") && same_field(found, entry, "entityId") &&
             same_field(found, entry, "seq");
   }
   mongoc_cursor_destroy(c);
   bson_destroy(&filter);
   return same;
}

/* Marks event @i of the batch as one the archive can never take, with @why. */
static void
refuse(batch_t *b, size_t i, const char *why)
{
   relay_clear_stmt_t *s = b->owner[i];
   if (!s->refused) {
      s->refused = bson_malloc0(((size_t)s->n_ids + 1) * sizeof *s->refused);
   }
   if (b->index[i] < s->n_ids + 1u) {
      s->refused[b->index[i]] = why;
   }
   s->failed = true;
}

/* Write error @code on insert @i: true when the event counts as archived. Otherwise its
 * statement is failed, and when the archive will refuse this event every time, the event is
 * marked refused with the reason (refuse()), so the writer dead-letters it rather than hold
 * its entity for good. */
static bool
judge(mongoc_collection_t *archive, batch_t *b, size_t i, int64_t code)
{
   bool unknown;

   if (code == 11000) {
      if (archived_as_same_event(archive, b->entries[i], &unknown)) {
         return true; /* archived before (the relay restarted between archive and clear) */
      }
      if (!unknown) {
         refuse(b, i,
                "the archive holds another entity's event with this event id (event ids "
                "must be unique across entities)");
         return false;
      }
   } else if (code == 10334 || code == 17419 || code == 2) {
      /* BSONObjectTooLarge and kin: an event near 16 MiB whose entry does not fit. */
      refuse(b, i, "the event's archive entry is larger than MongoDB allows");
      return false;
   }
   if (code == 121) {
      /* Every entry the relay builds follows the archive contract, so a validator someone
       * else installed refuses it: the archive's to fix while it refuses everything (the
       * events stay pending), the event's when it persists while others are archived (the
       * writer decides, with this reason). */
      refuse(b, i, relay_clear_refused_by_validator);
      return false;
   }
   /* Anything else is a failure of the write: the event stays pending and is retried. */
   b->owner[i]->failed = true;
   return false;
}

/* After a failed execute: true when the reply accounts for every insert (nInserted plus the
 * write errors) and so says which failed; then marks the statements of inserts that are not
 * archived, and *all_archived says whether every failure was in fact an earlier copy. */
static bool
blame(mongoc_collection_t *archive, const bson_t *reply, batch_t *b, bool *all_archived)
{
   bson_iter_t it, errs;
   int64_t inserted = 0, n_errors = 0;

   *all_archived = true;
   if (bson_iter_init_find(&it, reply, "writeConcernErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &errs) && bson_iter_next(&errs)) {
      return false;
   }
   if (bson_iter_init_find(&it, reply, "nInserted")) {
      inserted = bson_iter_as_int64(&it);
   }
   if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &errs)) {
      return false;
   }
   while (bson_iter_next(&errs)) {
      bson_iter_t e;
      int64_t code = -1, index = -1;
      n_errors++;
      if (bson_iter_recurse(&errs, &e) && bson_iter_find(&e, "code")) {
         code = bson_iter_as_int64(&e);
      }
      if (bson_iter_recurse(&errs, &e) && bson_iter_find(&e, "index")) {
         index = bson_iter_as_int64(&e);
      }
      if (index < 0 || (size_t)index >= b->n) {
         return false;
      }
      if (!judge(archive, b, (size_t)index, code)) {
         *all_archived = false;
      }
   }
   return n_errors > 0 && inserted + n_errors == (int64_t)b->n;
}

static int64_t
now_ms(void)
{
   struct timeval tv;
   bson_gettimeofday(&tv);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

bool
relay_archive_write(mongoc_collection_t *archive, const relay_config_t *cfg, const char *member,
                    const char *coll, relay_clear_stmt_t **stmts, size_t n, int64_t *inserted,
                    bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER, reply = BSON_INITIALIZER;
   mongoc_bulk_operation_t *bulk;
   batch_t b = {0};
   int64_t now = now_ms();
   bool ok = true, all_archived = false;
   bson_iter_t it;

   *inserted = 0;
   BSON_APPEND_BOOL(&opts, "ordered", false);
   bulk = mongoc_collection_create_bulk_operation_with_opts(archive, &opts);
   for (size_t i = 0; i < n && ok; i++) {
      ok = add_inserts(cfg, member, coll, bulk, stmts[i], now, &b);
   }
   if (!ok) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_ARCHIVE,
                     "an archive entry could not be built");
   } else {
      bson_destroy(&reply);
      ok = mongoc_bulk_operation_execute(bulk, &reply, error) != 0;
      if (bson_iter_init_find(&it, &reply, "nInserted")) {
         *inserted = bson_iter_as_int64(&it);
      }
      if (!ok && blame(archive, &reply, &b, &all_archived)) {
         /* Failures that were all earlier copies of the same events succeeded: the first
          * copy stays. Otherwise blame() marked exactly the statements with an event not
          * archived (and the events the archive can never take). */
         ok = all_archived;
         goto done;
      }
   }
   if (!ok) {
      /* No reply that says which inserts ran: none of the batch is cleared. */
      for (size_t i = 0; i < n; i++) {
         stmts[i]->failed = true;
      }
   }
done:
   bson_destroy(&reply);
   bson_destroy(&opts);
   batch_free(&b);
   mongoc_bulk_operation_destroy(bulk);
   return ok;
}

bool
relay_archive_ensure(mongoc_collection_t *archive, const relay_config_t *cfg, bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER;
   bool ok;

   if (cfg->archive_ttl_s > 0) {
      BSON_APPEND_INT64(&opts, "ttlSeconds", cfg->archive_ttl_s);
   }
   ok = outbox_archive_ensure_schema(archive, &opts, error);
   bson_destroy(&opts);
   return ok;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading the archive (outbox/archive.h): the cursor of outbox_archive_find(). The server does
 * all the filtering and sorts by entity and seq (through "outbox_archive_entity"); the cursor
 * holds one entity's entries at a time, so that the lives of an entity deleted and created
 * again (its seqs restart at 1) come out one after the other, oldest first, instead of
 * interleaved by seq; it reads each entry into outbox_archived_event_t. A cursor belongs to
 * one thread.
 */
#include <stdlib.h>
#include <string.h>

#include "error-private.h"
#include "outbox/archive.h"
#include "outbox/outbox.h"

struct _outbox_archive_cursor_t {
   mongoc_collection_t *archive; /* borrowed */
   bson_t filter;
   int64_t limit;
   int64_t returned;
   mongoc_cursor_t *mcursor;
   bson_t **entries; /* one entity's entries (copies), in the order they are returned */
   size_t n_entries, cap_entries, pos;
   bson_t *next;           /* the first entry of the next entity, read ahead */
   bool drained;           /* mcursor gave its last entry (mongoc refuses another next) */
   bson_value_t entity_id; /* a copy: the view would point into the reply */
   bson_t data, headers;   /* static views into the current entry */
   outbox_archived_event_t current;
   bson_error_t error;
   bool failed;
};

static bool
bad(bson_error_t *error, const char *key, const char *what)
{
   _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "archive option %s: %s", key, what);
   return false;
}

/* One option into the find filter ({time: {$gte, $lt}} is built by the caller). */
static bool
parse_opt(outbox_archive_cursor_t *cur, bson_iter_t *it, bson_t *range, bson_error_t *error)
{
   static const struct {
      const char *opt, *field;
   } strings[] = {{"collection", "collection"}, {"eventId", "_id"}, {"type", "type"}};
   const char *key = bson_iter_key(it);

   for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
      if (!strcmp(key, strings[i].opt)) {
         if (!BSON_ITER_HOLDS_UTF8(it)) {
            return bad(error, key, "must be a string");
         }
         BSON_APPEND_UTF8(&cur->filter, strings[i].field, bson_iter_utf8(it, NULL));
         return true;
      }
   }
   if (!strcmp(key, "entityId")) {
      bson_append_value(&cur->filter, "entityId", 8, bson_iter_value(it));
   } else if (!strcmp(key, "since") || !strcmp(key, "until")) {
      if (!BSON_ITER_HOLDS_DATE_TIME(it)) {
         return bad(error, key, "must be a Date");
      }
      BSON_APPEND_DATE_TIME(range, key[0] == 's' ? "$gte" : "$lt", bson_iter_date_time(it));
   } else if (!strcmp(key, "limit")) {
      if (!BSON_ITER_HOLDS_NUMBER(it) || bson_iter_as_int64(it) < 0) {
         return bad(error, key, "must be a number >= 0");
      }
      cur->limit = bson_iter_as_int64(it);
   } else {
      return bad(error, key, "unknown option");
   }
   return true;
}

outbox_archive_cursor_t *
outbox_archive_find(mongoc_collection_t *archive, const bson_t *opts, bson_error_t *error)
{
   outbox_archive_cursor_t *cur;
   bson_t range = BSON_INITIALIZER;
   bson_iter_t it;
   bool ok = true;

   if (!archive) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "archive is NULL");
      return NULL;
   }
   cur = bson_malloc0(sizeof *cur);
   cur->archive = archive;
   bson_init(&cur->filter);
   if (opts && bson_iter_init(&it, opts)) {
      while (ok && bson_iter_next(&it)) {
         ok = parse_opt(cur, &it, &range, error);
      }
   }
   if (ok && !bson_empty(&range)) {
      BSON_APPEND_DOCUMENT(&cur->filter, "time", &range);
   }
   bson_destroy(&range);
   if (!ok) {
      outbox_archive_cursor_destroy(cur);
      return NULL;
   }
   return cur;
}

static void
open_cursor(outbox_archive_cursor_t *cur)
{
   bson_t *opts = BCON_NEW("sort", "{", "collection", BCON_INT32(1), "entityId", BCON_INT32(1),
                           "seq", BCON_INT32(1), "}");
   cur->mcursor = mongoc_collection_find_with_opts(cur->archive, &cur->filter, opts, NULL);
   bson_destroy(opts);
}

/* A view of the document or array at @it into @view (empty if it is not one). */
static const bson_t *
view(const bson_iter_t *it, bson_t *out)
{
   const uint8_t *buf;
   uint32_t len;
   if (BSON_ITER_HOLDS_DOCUMENT(it)) {
      bson_iter_document(it, &len, &buf);
      if (bson_init_static(out, buf, len)) {
         return out;
      }
   }
   bson_init(out);
   return out;
}

static void
read_entry(outbox_archive_cursor_t *cur, const bson_t *doc)
{
   outbox_archived_event_t *e = &cur->current;
   bson_iter_t it;

   memset(e, 0, sizeof *e);
   bson_value_destroy(&cur->entity_id);
   memset(&cur->entity_id, 0, sizeof cur->entity_id);
   bson_init(&cur->data);
   bson_init(&cur->headers);
   e->partition = -1;
   e->entry = doc;
   e->entity_id = &cur->entity_id;
   e->data = &cur->data;
   e->headers = &cur->headers;
   if (!bson_iter_init(&it, doc)) {
      return;
   }
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      if (!strcmp(k, "_id") && BSON_ITER_HOLDS_UTF8(&it)) {
         e->event_id = bson_iter_utf8(&it, NULL);
      } else if (!strcmp(k, "collection") && BSON_ITER_HOLDS_UTF8(&it)) {
         e->collection = bson_iter_utf8(&it, NULL);
      } else if (!strcmp(k, "entityId")) {
         bson_value_copy(bson_iter_value(&it), &cur->entity_id);
      } else if (!strcmp(k, "seq") && BSON_ITER_HOLDS_INT(&it)) {
         e->seq = bson_iter_as_int64(&it);
      } else if (!strcmp(k, "type") && BSON_ITER_HOLDS_UTF8(&it)) {
         e->type = bson_iter_utf8(&it, NULL);
      } else if (!strcmp(k, "time") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
         e->time_ms = bson_iter_date_time(&it);
      } else if (!strcmp(k, "data")) {
         e->data = view(&it, &cur->data);
      } else if (!strcmp(k, "headers")) {
         e->headers = view(&it, &cur->headers);
      } else if (!strcmp(k, "partition") && BSON_ITER_HOLDS_INT32(&it)) {
         e->partition = bson_iter_int32(&it);
      } else if (!strcmp(k, "publishedAt") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
         e->published_at_ms = bson_iter_date_time(&it);
      }
   }
}

/* @doc's @key as a one-field document, for comparing values of any type. */
static void
field_of(const bson_t *doc, const char *key, bson_t *out)
{
   bson_iter_t it;
   bson_init(out);
   if (bson_iter_init_find(&it, doc, key)) {
      bson_append_value(out, "", 0, bson_iter_value(&it));
   }
}

static bool
same_entity(const bson_t *a, const bson_t *b)
{
   bool same = true;
   static const char *const keys[] = {"collection", "entityId"};
   for (size_t i = 0; i < 2 && same; i++) {
      bson_t x, y;
      field_of(a, keys[i], &x);
      field_of(b, keys[i], &y);
      same = x.len == y.len && !memcmp(bson_get_data(&x), bson_get_data(&y), x.len);
      bson_destroy(&x);
      bson_destroy(&y);
   }
   return same;
}

static int64_t
int_field(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, key)) {
      return 0;
   }
   return BSON_ITER_HOLDS_DATE_TIME(&it) ? bson_iter_date_time(&it)
          : BSON_ITER_HOLDS_NUMBER(&it)  ? bson_iter_as_int64(&it)
                                         : 0;
}

typedef struct {
   bson_t *doc;
   int64_t published, seq;
   size_t idx;
} life_key_t;

static int
by_life(const void *pa, const void *pb)
{
   const life_key_t *a = pa, *b = pb;
   if (a->published != b->published) {
      return a->published < b->published ? -1 : 1;
   }
   if (a->seq != b->seq) {
      return a->seq < b->seq ? -1 : 1;
   }
   return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The entries arrive by seq: a seq seen twice means two lives (the entity was deleted and
 * created again, its seqs restarted at 1). Then the entries go by publishedAt, seq: a life's
 * events were all archived before the document was deleted, the next life's after it was
 * created again. With one life, seq order stays as it is (publishedAt of different group
 * members may disagree by their clocks' skew; it decides only between lives). */
static void
order_lives(outbox_archive_cursor_t *cur)
{
   bool lives = false;
   for (size_t i = 1; i < cur->n_entries && !lives; i++) {
      lives = int_field(cur->entries[i], "seq") == int_field(cur->entries[i - 1], "seq");
   }
   if (!lives) {
      return;
   }
   life_key_t *keys = bson_malloc(cur->n_entries * sizeof *keys);
   for (size_t i = 0; i < cur->n_entries; i++) {
      keys[i] = (life_key_t){cur->entries[i], int_field(cur->entries[i], "publishedAt"),
                             int_field(cur->entries[i], "seq"), i};
   }
   qsort(keys, cur->n_entries, sizeof *keys, by_life);
   for (size_t i = 0; i < cur->n_entries; i++) {
      cur->entries[i] = keys[i].doc;
   }
   bson_free(keys);
}

static void
drop_entries(outbox_archive_cursor_t *cur)
{
   for (size_t i = 0; i < cur->n_entries; i++) {
      bson_destroy(cur->entries[i]);
   }
   cur->n_entries = cur->pos = 0;
}

static void
keep(outbox_archive_cursor_t *cur, bson_t *doc)
{
   if (cur->n_entries == cur->cap_entries) {
      cur->cap_entries = cur->cap_entries ? cur->cap_entries * 2 : 16;
      cur->entries = bson_realloc(cur->entries, cur->cap_entries * sizeof *cur->entries);
   }
   cur->entries[cur->n_entries++] = doc;
}

/* Reads the next entity's entries; false at the end or on an error. */
static bool
fill(outbox_archive_cursor_t *cur)
{
   const bson_t *doc;
   drop_entries(cur);
   if (!cur->next && !cur->drained && mongoc_cursor_next(cur->mcursor, &doc)) {
      cur->next = bson_copy(doc);
   }
   if (!cur->next) {
      cur->failed = !cur->drained && mongoc_cursor_error(cur->mcursor, &cur->error);
      cur->drained = true;
      return false;
   }
   keep(cur, cur->next);
   cur->next = NULL;
   while (mongoc_cursor_next(cur->mcursor, &doc)) {
      if (!same_entity(cur->entries[0], doc)) {
         cur->next = bson_copy(doc);
         break;
      }
      keep(cur, bson_copy(doc));
   }
   if (!cur->next) {
      cur->drained = true;
      if (mongoc_cursor_error(cur->mcursor, &cur->error)) {
         cur->failed = true;
         return false;
      }
   }
   order_lives(cur);
   return true;
}

bool
outbox_archive_cursor_next(outbox_archive_cursor_t *cursor, const outbox_archived_event_t **event)
{
   const bson_t *doc;

   if (!cursor || cursor->failed) {
      return false;
   }
   if (!cursor->mcursor) {
      open_cursor(cursor);
   }
   if (cursor->limit > 0 && cursor->returned >= cursor->limit) {
      return false;
   }
   if (cursor->pos == cursor->n_entries && !fill(cursor)) {
      return false;
   }
   doc = cursor->entries[cursor->pos++];
   cursor->returned++;
   read_entry(cursor, doc);
   if (event) {
      *event = &cursor->current;
   }
   return true;
}

bool
outbox_archive_cursor_error(const outbox_archive_cursor_t *cursor, bson_error_t *error)
{
   if (cursor && cursor->failed && error) {
      memcpy(error, &cursor->error, sizeof *error);
   }
   return cursor && cursor->failed;
}

void
outbox_archive_cursor_destroy(outbox_archive_cursor_t *cursor)
{
   if (!cursor) {
      return;
   }
   mongoc_cursor_destroy(cursor->mcursor);
   drop_entries(cursor);
   bson_free(cursor->entries);
   bson_destroy(cursor->next);
   bson_value_destroy(&cursor->entity_id);
   bson_destroy(&cursor->filter);
   bson_free(cursor);
}

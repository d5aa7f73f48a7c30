/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The cursor table: ids, batches of a query's materialised results, change-stream cursors,
 * killing and the 10-minute idle reaper. Callers hold the server lock; a getMore waiting on
 * a cursor marks it in_use so that a kill only marks it and the getMore frees it.
 */
#include "data/cursor.h"

#include <stdlib.h>
#include <time.h>

#include "changestream/changestream.h"
#include "net/wire.h"

#define IDLE_TIMEOUT_MS (10 * 60 * 1000)

int64_t
md_now_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
md_docs_free(bson_t **docs, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      bson_destroy(docs[i]);
   }
   free(docs);
}

static void
cursor_destroy(md_cursor_t *c)
{
   md_docs_free(c->docs, c->n_docs);
   md_changestream_destroy(c->cs);
   free(c->ns);
   free(c);
}

static void
destroy_cb(void *value, void *ctx)
{
   (void)ctx;
   cursor_destroy(value);
}

void
md_cursors_init(md_cursors_t *cursors)
{
   cursors->map = md_hmap_new();
   /* Ids that differ between server runs catch clients that reuse stale cursor ids. */
   cursors->next_id = ((int64_t)(time(NULL) & 0xffff) << 32) + 1000;
}

void
md_cursors_destroy(md_cursors_t *cursors)
{
   md_hmap_foreach(cursors->map, destroy_cb, NULL);
   md_hmap_destroy(cursors->map);
}

typedef struct {
   md_cursor_t **stale;
   size_t n;
   int64_t now;
} reap_t;

static void
find_stale(void *value, void *ctx)
{
   md_cursor_t *c = value;
   reap_t *r = ctx;
   if (!c->in_use && r->now - c->last_used_ms > IDLE_TIMEOUT_MS && r->n < 64) {
      r->stale[r->n++] = c;
   }
}

md_cursor_t *
md_cursor_new(md_cursors_t *cursors, const char *ns, bson_t **docs, size_t n, size_t pos,
              md_changestream_t *cs)
{
   md_cursor_t *stale[64];
   reap_t r = {stale, 0, md_now_ms()};
   md_hmap_foreach(cursors->map, find_stale, &r);
   for (size_t i = 0; i < r.n; i++) {
      md_cursor_free(cursors, stale[i]);
   }
   md_cursor_t *c = calloc(1, sizeof *c);
   c->id = cursors->next_id++;
   c->ns = strdup(ns);
   c->docs = docs;
   c->n_docs = n;
   c->pos = pos;
   c->cs = cs;
   c->last_used_ms = r.now;
   md_hmap_put(cursors->map, &c->id, sizeof c->id, c);
   return c;
}

md_cursor_t *
md_cursor_get(md_cursors_t *cursors, int64_t id)
{
   md_cursor_t *c = md_hmap_get(cursors->map, &id, sizeof id);
   return c && !c->killed ? c : NULL;
}

void
md_cursor_free(md_cursors_t *cursors, md_cursor_t *c)
{
   if (md_hmap_get(cursors->map, &c->id, sizeof c->id) == c) {
      md_hmap_remove(cursors->map, &c->id, sizeof c->id);
   }
   cursor_destroy(c);
}

typedef struct {
   const void *owner;
   md_cursor_t **found;
   size_t n, cap;
} owned_t;

static void
find_owned(void *value, void *ctx)
{
   md_cursor_t *c = value;
   owned_t *o = ctx;
   if (c->owner == o->owner) {
      if (o->n == o->cap) {
         o->cap = o->cap ? o->cap * 2 : 8;
         o->found = realloc(o->found, o->cap * sizeof *o->found);
      }
      o->found[o->n++] = c;
   }
}

void
md_cursors_kill_owned(md_cursors_t *cursors, const void *owner)
{
   owned_t o = {.owner = owner};
   md_hmap_foreach(cursors->map, find_owned, &o);
   for (size_t i = 0; i < o.n; i++) {
      if (o.found[i]->in_use) {
         o.found[i]->killed = true;
      } else {
         md_cursor_free(cursors, o.found[i]);
      }
   }
   free(o.found);
}

static void
mark_rolled_back(void *value, void *ctx)
{
   md_cursor_t *c = value;
   if (c->cs && c->member == *(const int *)ctx) {
      c->rolled_back = true;
      c->killed = c->killed || c->in_use;
   }
}

void
md_cursors_roll_back(md_cursors_t *cursors, int member)
{
   md_hmap_foreach(cursors->map, mark_rolled_back, &member);
}

bool
md_cursor_reply(bson_t *reply, const char *batch_name, const char *ns, bson_t **docs, size_t n,
                size_t *pos, int64_t batch_size, int64_t id)
{
   bson_t cursor, batch;
   size_t bytes = 0;
   uint32_t count = 0;
   bson_append_document_begin(reply, "cursor", 6, &cursor);
   bson_append_array_begin(&cursor, batch_name, -1, &batch);
   while (*pos < n && (batch_size < 0 || count < (uint64_t)batch_size)) {
      /* Like mongod, always return at least one document, then stop before 16 MiB. */
      if (count > 0 && bytes + docs[*pos]->len > MD_MAX_BSON_SIZE - 64 * 1024) {
         break;
      }
      char key[16];
      const char *k;
      bson_uint32_to_string(count, &k, key, sizeof key);
      bson_append_document(&batch, k, -1, docs[*pos]);
      bytes += docs[*pos]->len;
      (*pos)++;
      count++;
   }
   bson_append_array_end(&cursor, &batch);
   bool done = *pos >= n;
   BSON_APPEND_INT64(&cursor, "id", done ? 0 : id);
   BSON_APPEND_UTF8(&cursor, "ns", ns);
   bson_append_document_end(reply, &cursor);
   return done;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "sessions.h"

#include <stdlib.h>

#include "engine.h"
#include "keyenc.h"

typedef struct {
   int64_t txn;
   bson_t *reply; /* NULL while the write for `txn` has not completed */
} session_t;

static void
free_session(void *value, void *ctx)
{
   session_t *s = value;
   (void) ctx;
   bson_destroy(s->reply);
   free(s);
}

void
md_sessions_init(md_sessions_t *sessions)
{
   sessions->map = md_hmap_new();
}

void
md_sessions_destroy(md_sessions_t *sessions)
{
   md_hmap_foreach(sessions->map, free_session, NULL);
   md_hmap_destroy(sessions->map);
}

/* Encodes the lsid's id; false if the command has no lsid/txnNumber. */
static bool
session_key(const bson_t *cmd, bson_string_t *key, int64_t *txn)
{
   bson_iter_t it, id;
   if (!bson_iter_init_find(&it, cmd, "txnNumber") || !BSON_ITER_HOLDS_NUMBER(&it)) {
      return false;
   }
   *txn = bson_iter_as_int64(&it);
   if (!bson_iter_init_find(&it, cmd, "lsid") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
       !bson_iter_recurse(&it, &id) || !bson_iter_find(&id, "id")) {
      return false;
   }
   md_keyenc_append(key, bson_iter_value(&id));
   return true;
}

bool
md_sessions_begin(md_sessions_t *sessions, const bson_t *cmd, const bson_t **replay,
                  bson_error_t *error)
{
   bson_string_t *key = bson_string_new(NULL);
   int64_t txn;
   bool ok = true;
   *replay = NULL;
   if (session_key(cmd, key, &txn)) {
      session_t *s = md_hmap_get(sessions->map, key->str, key->len);
      if (s && txn < s->txn) {
         ok = tm_error_set(error, 225, "Retryable write with txnNumber %lld is prohibited on "
                                       "session because a newer retryable write with txnNumber "
                                       "%lld has already started on this session.",
                           (long long) txn, (long long) s->txn);
      } else if (s && txn == s->txn && s->reply) {
         *replay = s->reply;
      }
   }
   bson_string_free(key, true);
   return ok;
}

void
md_sessions_record(md_sessions_t *sessions, const bson_t *cmd, const bson_t *reply)
{
   bson_string_t *key = bson_string_new(NULL);
   int64_t txn;
   if (session_key(cmd, key, &txn)) {
      session_t *s = md_hmap_get(sessions->map, key->str, key->len);
      if (!s) {
         s = calloc(1, sizeof *s);
         md_hmap_put(sessions->map, key->str, key->len, s);
      }
      bson_destroy(s->reply);
      s->txn = txn;
      s->reply = bson_copy(reply);
   }
   bson_string_free(key, true);
}

void
md_sessions_end(md_sessions_t *sessions, const bson_t *cmd)
{
   bson_iter_t it, arr, id;
   bson_iter_init(&it, cmd);
   if (!bson_iter_next(&it) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &id) ||
          !bson_iter_find(&id, "id")) {
         continue;
      }
      bson_string_t *key = bson_string_new(NULL);
      md_keyenc_append(key, bson_iter_value(&id));
      session_t *s = md_hmap_remove(sessions->map, key->str, key->len);
      if (s) {
         free_session(s, NULL);
      }
      bson_string_free(key, true);
   }
}

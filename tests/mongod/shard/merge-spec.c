/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What each shard is asked when a merged change stream opens (merge-stream.c): its
 * $changeStream spec (the resume point as the shard can check it), the start of a new
 * stream, and the aggregate it runs. Pure but for reading the router's cluster time.
 */
#include <stdlib.h>
#include <string.h>

#include "shard/router-private.h"

/* The _data of a document field {_data: "..."} (`path` such as "cursor.postBatchResumeToken"). */
const char *
md_token_at(const bson_t *doc, const char *path)
{
   bson_iter_t it, data;
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
       bson_iter_recurse(&it, &data) && bson_iter_find(&data, "_data") &&
       BSON_ITER_HOLDS_UTF8(&data)) {
      return bson_iter_utf8(&data, NULL);
   }
   return NULL;
}

/* The $changeStream spec shard `s` gets. A merged resumeAfter/startAfter token names the
 * shard whose event it was: that shard resumes from its own token, so that it checks, as
 * 6.0's shards do, that the token is one of this stream's events (280) and not an
 * invalidate given to resumeAfter (260), and starts after an invalidate for startAfter
 * (r6.0 src/mongo/db/pipeline/document_source_change_stream.cpp); the others start at the
 * token's cluster time, and `skip` drops what sorts at or before the token. A high-water
 * mark names no event: every shard starts at its time. False with an error reply. */
bool
md_mstream_shard_spec(md_router_t *r, const bson_t *spec, int s, bson_t *out, char *skip,
                      bson_t *reply)
{
   bson_iter_t it;
   bson_init(out);
   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (strcmp(key, "resumeAfter") != 0 && strcmp(key, "startAfter") != 0) {
         bson_append_iter(out, NULL, 0, &it);
         continue;
      }
      bson_t token_doc = BSON_INITIALIZER;
      bson_append_iter(&token_doc, "t", 1, &it);
      const char *token = md_token_at(&token_doc, "t");
      char head[MD_TOKEN_LEN + 1];
      md_ts_t ts;
      uint32_t index;
      unsigned kind;
      bool ok = token && strlen(token) == MTOKEN_LEN;
      if (ok) {
         memcpy(head, token, MD_TOKEN_LEN);
         head[MD_TOKEN_LEN] = '\0';
         ok = md_token_parse(head, &ts, &index, &kind);
      }
      if (ok) {
         strcpy(skip, token);
         if (kind != MD_TOKEN_HWM && (int)strtol(token + MD_TOKEN_LEN, NULL, 16) == s) {
            bson_t own;
            BSON_APPEND_DOCUMENT_BEGIN(out, key, &own);
            BSON_APPEND_UTF8(&own, "_data", head);
            bson_append_document_end(out, &own);
         } else {
            BSON_APPEND_TIMESTAMP(out, "startAtOperationTime", ts.t, ts.i);
         }
      }
      bson_destroy(&token_doc);
      if (!ok) {
         bson_destroy(out);
         md_router_error(r, reply, 280,
                         "cannot resume stream; the resume token was not "
                         "found. (not a token of this mongos)");
         return false;
      }
   }
   return true;
}

bool
md_mstream_has_start(const bson_t *spec)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, spec, "resumeAfter") ||
          bson_iter_init_find(&it, spec, "startAfter") ||
          bson_iter_init_find(&it, spec, "startAtOperationTime");
}

/* A stream opened without a resume point starts one tick after mongos's cluster time, on
 * every shard alike, so that it never returns the operation written just before it opened
 * (DocumentSourceChangeStream::getStartTimeForNewStream, r6.0
 * src/mongo/db/pipeline/document_source_change_stream.cpp). Its first token is a high-water
 * mark at the cluster time: everything up to it has been seen. */
md_ts_t
md_mstream_start_new(md_router_t *r, char pbrt[MTOKEN_LEN + 1])
{
   md_ts_t now = md_router_cluster_time(r);
   char head[MD_TOKEN_LEN + 1];
   md_token_format(head, now, MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
   snprintf(pbrt, MTOKEN_LEN + 1, "%sFF", head);
   now.i++;
   return now;
}

/* The command each shard runs: the client's aggregate with the shard spec in front. */
void
md_mstream_shard_command(const bson_t *cmd, const bson_t *spec, bson_t *out)
{
   static const char *const drop[] = {"pipeline",        "cursor", "$clusterTime", "readConcern",
                                      "$readPreference", "lsid",   "txnNumber",    NULL};
   bson_iter_t it, stages;
   bson_t pipeline, stage, cursor;
   md_router_rewrite(cmd, NULL, NULL, drop, out);
   BSON_APPEND_ARRAY_BEGIN(out, "pipeline", &pipeline);
   BSON_APPEND_DOCUMENT_BEGIN(&pipeline, "0", &stage);
   BSON_APPEND_DOCUMENT(&stage, "$changeStream", spec);
   bson_append_document_end(&pipeline, &stage);
   uint32_t i = 1;
   bson_iter_init_find(&it, cmd, "pipeline");
   bson_iter_recurse(&it, &stages);
   bson_iter_next(&stages);
   while (bson_iter_next(&stages)) {
      char key[16];
      const char *k;
      bson_uint32_to_string(i++, &k, key, sizeof key);
      bson_append_iter(&pipeline, k, -1, &stages);
   }
   bson_append_array_end(out, &pipeline);
   BSON_APPEND_DOCUMENT_BEGIN(out, "cursor", &cursor);
   bson_append_document_end(out, &cursor);
}

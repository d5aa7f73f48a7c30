/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams over the oplog: a stream remembers its position (a sequence number),
 * turns oplog entries into events with MongoDB 6.0's shapes, runs the user's pipeline on
 * each, and synthesises `invalidate` events. Callers hold the server lock.
 */
#ifndef MD_CHANGESTREAM_H
#define MD_CHANGESTREAM_H

#include "data/oplog.h"
#include "data/store.h"

typedef struct _md_changestream_t md_changestream_t;

/* Opens a stream on db.coll (coll NULL: the whole database; cluster: every database) from
 * the $changeStream stage `spec` followed by the stages in `rest` (an array, may be empty).
 * *start receives the stream's start time (reported as the aggregate's operationTime). */
md_changestream_t *md_changestream_open(md_oplog_t *log, const char *db, const char *coll,
                                        bool cluster, const bson_t *spec, const bson_t *rest,
                                        md_ts_t *start, bson_error_t *error);

void md_changestream_destroy(md_changestream_t *cs);

/* The part of the history a stream may show: entries below `seq` (the majority commit
 * point), `ts` its cluster time. */
typedef struct {
   uint64_t seq;
   md_ts_t ts;
} md_cs_visible_t;

/* Collects up to `batch_size` (<= 0: until 16 MiB) events available now, none past
 * `visible`. `*docs` is a new array of *n documents (free with md_docs_free); `pbrt`
 * receives the postBatchResumeToken's _data. `store` is used for fullDocument lookups. */
bool md_changestream_poll(md_changestream_t *cs, md_oplog_t *log, md_store_t *store,
                          md_cs_visible_t visible, int64_t batch_size, bson_t ***docs, size_t *n,
                          char pbrt[MD_TOKEN_LEN + 1], bson_error_t *error);

/* True once the stream delivered an invalidate event: the cursor must close. */
bool md_changestream_finished(const md_changestream_t *cs);

/* Error codes after which a driver may resume a stream (getMore errors get the
 * ResumableChangeStreamError label). */
bool md_changestream_is_resumable_code(int32_t code);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A change stream's state, shared by changestream.c (positions, batches) and
 * changestream-event.c (events). Callers hold the server lock.
 */
#ifndef MD_CHANGESTREAM_PRIVATE_H
#define MD_CHANGESTREAM_PRIVATE_H

#include "changestream/changestream.h"

enum { FD_DEFAULT, FD_UPDATE_LOOKUP, FD_WHEN_AVAILABLE, FD_REQUIRED, FD_OFF };

struct _md_changestream_t {
   char *db;
   char *coll; /* NULL for database and cluster streams */
   bool cluster;
   int full_document;
   int before_change;
   bson_t *pipeline;      /* stages after $changeStream, NULL if none */
   tm_pipeline_t *stages; /* the same, parsed once at open: every event runs through them
                           * (parsing them per event was a third of the server's CPU on a
                           * busy stream) */
   uint64_t next_seq;
   bool pending_invalidate; /* an invalidate is due (batch ended between the two events) */
   md_ts_t invalidate_ts;
   uint32_t invalidate_index;
   bool finished;
};

/* Whether `e` concerns the stream, and whether it invalidates it. */
bool md_cs_relevant(const md_changestream_t *cs, const md_oplog_entry_t *e, bool *invalidates);
/* The event for `e` (NULL with *error set, e.g. 47 for a missing 'required' image). */
bson_t *md_cs_make_event(const md_changestream_t *cs, const md_oplog_entry_t *e, md_store_t *store,
                         bson_error_t *error);
bson_t *md_cs_make_invalidate(md_ts_t ts, uint32_t index, int64_t wall_ms);
/* Runs the user's stages on one event (taken over). Returns false on error; *out is NULL if
 * the stages filtered the event out. */
bool md_cs_transform(const md_changestream_t *cs, bson_t *ev, bson_t **out, bson_error_t *error);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The change stream reader: a thread with its own mongoc client that reads the database's
 * change stream and hands the change events to the main thread through a bounded queue.
 * It runs on its own thread because mongoc_change_stream_next() blocks for up to
 * maxAwaitTimeMS when there is nothing new: on the main thread that wait would delay every
 * acknowledgement and clear behind it. The bounded queue is the backpressure: when the main
 * thread stops taking changes (too many events buffered), the reader stops reading.
 *
 * The reader resumes by itself after transient errors (from the newest token it read). When
 * the stream's history is gone (286, 280, 260) or the stream is invalidated it reports LOST
 * and waits for a new relay_reader_start().
 *
 * Thread safety: all functions are for the main thread; the reader calls @wake from its own
 * thread whenever it queues something.
 */
#ifndef RELAY_READER_H
#define RELAY_READER_H

#include <stdbool.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "config/config.h"
#include "config/namespace.h"
#include "base/partition.h"
#include "base/ts.h"

/* Change events per stream reply. Replies are bounded: without a batch size one may be up to
 * 16 MiB, and mongoc holds a reply twice while a cursor iterates it (two thirds of the
 * relay's peak memory were cursor buffers). The sweep's replies (store/store.h) are at most
 * this many documents too. */
#define RELAY_READ_BATCH_SIZE 128

typedef enum {
   RELAY_CHANGE_EVENT = 0, /* @doc: one change event */
   RELAY_CHANGE_IDLE,      /* nothing new; @token: the stream's high-water mark, @ts: its
                            * cluster time ({0, 0} when the token does not show it) */
   RELAY_CHANGE_OPENED,    /* the stream is open; @ts: the server's time just before; @code
                            * 0 new, 1 resumed after an error, 2 reopened as asked */
   RELAY_CHANGE_LOST,      /* the resume point is gone (@code): sweep, then start again */
   RELAY_CHANGE_DOWN,      /* the stream failed (@code); the reader retries by itself */
} relay_change_kind_t;

typedef struct relay_change_t {
   relay_change_kind_t kind;
   bson_t *doc;   /* owned */
   bson_t *token; /* owned */
   relay_ts_t ts;
   int code;
   uint64_t gen; /* the relay_reader_start() that produced it */
   struct relay_change_t *next;
} relay_change_t;

typedef struct relay_reader_t relay_reader_t;

/* The server's current operation time through @client (store/store.h's
 * relay_store_operation_time(): the reader is handed it, so stream/ does not reach up into
 * store/). */
typedef bool (*relay_reader_time_fn)(mongoc_client_t *client, relay_ts_t *ts, bson_error_t *error);

/* Creates the reader and its thread (idle until relay_reader_start()). @cfg and the
 * namespace patterns @set (a database stream when they name one database, else a cluster
 * stream) are borrowed; @client (made by the caller for the stream alone) is owned from now
 * on, also on failure; @time_fn reads the server's time before each stream opens;
 * @wake(@wake_ctx) is called after each queued change. Returns NULL and fills @error when
 * the thread cannot start. */
relay_reader_t *relay_reader_new(const relay_config_t *cfg, const relay_nsset_t *set,
                                 mongoc_client_t *client, relay_reader_time_fn time_fn,
                                 void (*wake)(void *), void *wake_ctx, bson_error_t *error);

/* (Re)starts reading: after @resume_after if not NULL, else at @start_at if not NULL (or
 * just after the invalidate that ended the last stream, when @start_at is not past it), else
 * from now. Any stream open before is closed; changes already queued stay queued. Returns the
 * new generation: changes it produces carry it (and no earlier one). */
uint64_t relay_reader_start(relay_reader_t *rd, const bson_t *resume_after,
                            const relay_ts_t *start_at);

/* Keeps only changes of entities in partitions @parts of @n (server-side, by their hashed
 * _id: partition.h), or every change when @parts is NULL. Takes effect at the next open. */
void relay_reader_set_partitions(relay_reader_t *rd, const relay_partset_t *parts, int n);

/* Opens the stream again (with the partitions set last), resuming after the newest change it
 * read, so nothing is skipped; without one, as the last start did. Changes already queued
 * stay queued and stay valid. */
void relay_reader_reopen(relay_reader_t *rd);

/* Closes the stream and goes idle until the next start (a standby reads nothing). */
void relay_reader_stop(relay_reader_t *rd);

/* Takes the oldest queued change (caller frees with relay_change_free()), or NULL. */
relay_change_t *relay_reader_pop(relay_reader_t *rd);

void relay_change_free(relay_change_t *c);

/* Stops and joins the thread, frees everything; NULL-safe. */
void relay_reader_destroy(relay_reader_t *rd);

/* The $match stage that keeps only appends of the namespaces @set names: inserts whose
 * document has events and updates that set eventSeq (a clear never does); plus drops,
 * renames, dropDatabase and invalidate. Appended to @pipeline (an array being built). */
void relay_reader_append_match(const relay_config_t *cfg, const relay_nsset_t *set,
                               bson_t *pipeline);

#endif /* RELAY_READER_H */

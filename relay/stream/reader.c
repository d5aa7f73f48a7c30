/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The change stream reader (reader.h): its thread owns the change stream and the mongoc
 * client; the queue between it and the main thread is under its lock.
 */
#include "stream/reader.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "util/log.h"
#include "util/error.h"
#include "util/util.h"

/* Changes queued at most, and their bytes (one maximal 16 MiB change still gets in: the
 * bound is checked before each); with the main thread's own bounds on buffered events this
 * bounds the relay's memory. */
#define QUEUE_MAX 256
#define QUEUE_MAX_BYTES (16u * 1024 * 1024)
/* How long one getMore waits for new changes; also how fast the reader notices a stop. */
#define MAX_AWAIT_MS 500

struct relay_reader_t {
   const relay_config_t *cfg;
   const relay_nsset_t *set; /* the namespace patterns: the stream's filter */
   mongoc_client_t *client;
   relay_reader_time_fn time_fn;
   mongoc_database_t *db; /* the one database all patterns name, else NULL: a cluster stream */
   bool told_refusal;     /* the reader thread's: a 13 on opening was explained */
   pthread_t thread;
   bool started;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   relay_change_t *head, *tail;
   size_t qlen;
   size_t qbytes;
   bool stop;
   /* The current command: bumped by every relay_reader_start(). */
   uint64_t gen;
   bool active;
   bson_t *resume_after;
   bool has_start;
   relay_ts_t start_at;
   bson_t *last_token;  /* the newest position read, for relay_reader_reopen() */
   bson_t *start_after; /* the next start is after this invalidate (see ended_by) */
   bson_t *ended_by;    /* the invalidate that ended the last stream, or NULL */
   bool reopened;       /* the next open is a relay_reader_reopen() */
   bool filtered;       /* partition stages in the pipeline */
   relay_partset_t parts;
   int n_parts;
   void (*wake)(void *);
   void *wake_ctx;
};

static bool
is_lost(int code)
{
   return code == 286 || code == 280 || code == 260;
}

/* Appends to @or, under @key, the branch matching inserts and replacements whose @path
 * satisfies @cond (a document such as {$exists: true}). */
static void
append_insert_branch(bson_t * or, const char *key, const char *path, const bson_t *cond)
{
   bson_t branch, ops, in;

   BSON_APPEND_DOCUMENT_BEGIN(or, key, &branch);
   BSON_APPEND_DOCUMENT_BEGIN(&branch, "operationType", &ops);
   BSON_APPEND_ARRAY_BEGIN(&ops, "$in", &in);
   BSON_APPEND_UTF8(&in, "0", "insert");
   BSON_APPEND_UTF8(&in, "1", "replace");
   bson_append_array_end(&ops, &in);
   bson_append_document_end(&branch, &ops);
   BSON_APPEND_DOCUMENT(&branch, path, cond);
   bson_append_document_end(or, &branch);
}

/* The branches of what the relay needs of a watched namespace, into the array @or. */
static void
append_shapes(const relay_config_t *cfg, bson_t * or)
{
   bson_t b, ops;
   char *first = bson_strdup_printf("fullDocument.%s.0", cfg->events_field);
   char *events = bson_strdup_printf("fullDocument.%s", cfg->events_field);
   char *seq = bson_strdup_printf("updateDescription.updatedFields.%s", cfg->event_seq_field);
   char *requeues = bson_strdup_printf("updateDescription.updatedFields.%s", cfg->requeues_field);
   bson_t *exists = BCON_NEW("$exists", BCON_BOOL(true));
   bson_t *not_array =
      BCON_NEW("$exists", BCON_BOOL(true), "$not", "{", "$type", BCON_INT32(4), "}");

   /* Inserts (and replacements) of documents that have events. */
   append_insert_branch(or, "0", first, exists);
   /* Updates that set eventSeq: appends (clears never do). */
   BSON_APPEND_DOCUMENT_BEGIN(or, "1", &b);
   BSON_APPEND_UTF8(&b, "operationType", "update");
   BSON_APPEND_DOCUMENT(&b, seq, exists);
   bson_append_document_end(or, &b);
   /* Inserts (and replacements) whose events field is not an array: nothing to publish,
    * but the relay says so (once per document) instead of never hearing of them. */
   append_insert_branch(or, "2", events, not_array);
   /* Updates that count a requeue: a dead letter moved back into events without a new seq
    * (eventSeq unchanged), so the branch above would not pass it. */
   BSON_APPEND_DOCUMENT_BEGIN(or, "3", &b);
   BSON_APPEND_UTF8(&b, "operationType", "update");
   BSON_APPEND_DOCUMENT(&b, requeues, exists);
   bson_append_document_end(or, &b);
   /* A watched collection dropped or renamed away: forgotten (namespaces.h). */
   BSON_APPEND_DOCUMENT_BEGIN(or, "4", &b);
   BSON_APPEND_DOCUMENT_BEGIN(&b, "operationType", &ops);
   bson_t in;
   BSON_APPEND_ARRAY_BEGIN(&ops, "$in", &in);
   BSON_APPEND_UTF8(&in, "0", "drop");
   BSON_APPEND_UTF8(&in, "1", "rename");
   bson_append_array_end(&ops, &in);
   bson_append_document_end(&b, &ops);
   bson_append_document_end(or, &b);
   bson_destroy(exists);
   bson_destroy(not_array);
   bson_free(first);
   bson_free(events);
   bson_free(seq);
   bson_free(requeues);
}

void
relay_reader_append_match(const relay_config_t *cfg, const relay_nsset_t *set, bson_t *pipeline)
{
   bson_t stage, match, or, watched, and, ns, shapes, b;

   BSON_APPEND_DOCUMENT_BEGIN(pipeline, "0", &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&stage, "$match", &match);
   BSON_APPEND_ARRAY_BEGIN(&match, "$or", & or);
   /* What the relay needs, of the namespaces the patterns name (server-side: a cluster
    * stream then carries only the watched namespaces' changes to the relay). */
   BSON_APPEND_DOCUMENT_BEGIN(& or, "0", &watched);
   BSON_APPEND_ARRAY_BEGIN(&watched, "$and", &and);
   BSON_APPEND_DOCUMENT_BEGIN(&and, "0", &ns);
   relay_nsset_append_filter(set, &ns);
   bson_append_document_end(&and, &ns);
   BSON_APPEND_DOCUMENT_BEGIN(&and, "1", &b);
   BSON_APPEND_ARRAY_BEGIN(&b, "$or", &shapes);
   append_shapes(cfg, &shapes);
   bson_append_array_end(&b, &shapes);
   bson_append_document_end(&and, &b);
   bson_append_array_end(&watched, &and);
   bson_append_document_end(& or, &watched);
   /* A rename into a watched namespace, from anywhere (an aggregation's $out renames its
    * temporary collection): its documents never showed as inserts, so the relay sweeps. */
   BSON_APPEND_DOCUMENT_BEGIN(& or, "3", &b);
   BSON_APPEND_UTF8(&b, "operationType", "rename");
   relay_nsset_append_filter_at(set, "to", &b);
   bson_append_document_end(& or, &b);
   /* A dropDatabase has no ns.coll (the relay checks the database itself); an invalidate
    * (a database stream's database dropped) has no ns and ends the stream. */
   BSON_APPEND_DOCUMENT_BEGIN(& or, "1", &b);
   BSON_APPEND_UTF8(&b, "operationType", "dropDatabase");
   bson_append_document_end(& or, &b);
   BSON_APPEND_DOCUMENT_BEGIN(& or, "2", &b);
   BSON_APPEND_UTF8(&b, "operationType", "invalidate");
   bson_append_document_end(& or, &b);
   bson_append_array_end(&match, & or);
   bson_append_document_end(&stage, &match);
   bson_append_document_end(pipeline, &stage);
}

void
relay_change_free(relay_change_t *c)
{
   if (c) {
      bson_destroy(c->doc);
      bson_destroy(c->token);
      bson_free(c);
   }
}

static size_t
change_bytes(const relay_change_t *c)
{
   return c->doc ? c->doc->len : 0;
}

static void
push(relay_reader_t *rd, relay_change_t *c)
{
   pthread_mutex_lock(&rd->lock);
   c->gen = rd->gen;
   if (rd->tail) {
      rd->tail->next = c;
   } else {
      rd->head = c;
   }
   rd->tail = c;
   rd->qlen++;
   rd->qbytes += change_bytes(c);
   pthread_mutex_unlock(&rd->lock);
   rd->wake(rd->wake_ctx);
}

static relay_change_t *
change_new(relay_change_kind_t kind)
{
   relay_change_t *c = bson_malloc0(sizeof *c);
   c->kind = kind;
   return c;
}

/* True when the reader must drop what it is doing: stopping, or a newer command. */
static bool
superseded(relay_reader_t *rd, uint64_t gen)
{
   bool r;
   pthread_mutex_lock(&rd->lock);
   r = rd->stop || rd->gen != gen;
   pthread_mutex_unlock(&rd->lock);
   return r;
}

/* Sleeps @ms unless stopped or superseded first. */
static void
nap(relay_reader_t *rd, uint64_t gen, int ms)
{
   struct timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   ts.tv_sec += ms / 1000;
   ts.tv_nsec += (long)(ms % 1000) * 1000000L;
   if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
   }
   pthread_mutex_lock(&rd->lock);
   while (!rd->stop && rd->gen == gen) {
      if (pthread_cond_timedwait(&rd->cond, &rd->lock, &ts) == ETIMEDOUT) {
         break;
      }
   }
   pthread_mutex_unlock(&rd->lock);
}

/* Waits while the queue is full. Returns false if stopped or superseded. */
static bool
wait_room(relay_reader_t *rd, uint64_t gen)
{
   bool ok;
   pthread_mutex_lock(&rd->lock);
   while ((rd->qlen >= QUEUE_MAX || rd->qbytes >= QUEUE_MAX_BYTES) && !rd->stop && rd->gen == gen) {
      pthread_cond_wait(&rd->cond, &rd->lock);
   }
   ok = !rd->stop && rd->gen == gen;
   pthread_mutex_unlock(&rd->lock);
   return ok;
}

static void
report_down(relay_reader_t *rd, int code)
{
   relay_change_t *c = change_new(RELAY_CHANGE_DOWN);
   c->code = code;
   push(rd, c);
}

/* The stream's history is gone: report it and go idle until the next start. */
static void
report_lost(relay_reader_t *rd, uint64_t gen, int code)
{
   relay_change_t *c = change_new(RELAY_CHANGE_LOST);
   c->code = code;
   pthread_mutex_lock(&rd->lock);
   if (rd->gen == gen) {
      rd->active = false;
   }
   pthread_mutex_unlock(&rd->lock);
   push(rd, c);
}

/* Remembers the newest position read (under the lock: relay_reader_reopen() reads it). */
static void
remember(relay_reader_t *rd, const bson_t *token)
{
   pthread_mutex_lock(&rd->lock);
   bson_destroy(rd->last_token);
   rd->last_token = bson_copy(token);
   pthread_mutex_unlock(&rd->lock);
}

static mongoc_change_stream_t *
open_stream(relay_reader_t *rd, const bson_t *token, const bson_t *start_after,
            const relay_ts_t *start_at)
{
   bson_t pipeline = BSON_INITIALIZER, opts = BSON_INITIALIZER;
   mongoc_change_stream_t *stream;
   uint32_t index = 1;

   relay_reader_append_match(rd->cfg, rd->set, &pipeline);
   pthread_mutex_lock(&rd->lock);
   if (rd->filtered) {
      relay_partition_append_stream_stages(&rd->parts, rd->n_parts, &pipeline, &index);
   }
   pthread_mutex_unlock(&rd->lock);
   BSON_APPEND_UTF8(&opts, "fullDocument", "default");
   BSON_APPEND_INT64(&opts, "maxAwaitTimeMS", MAX_AWAIT_MS);
   BSON_APPEND_INT32(&opts, "batchSize", RELAY_READ_BATCH_SIZE);
   if (token) {
      BSON_APPEND_DOCUMENT(&opts, "resumeAfter", token);
   } else if (start_after) {
      BSON_APPEND_DOCUMENT(&opts, "startAfter", start_after);
   } else if (start_at) {
      BSON_APPEND_TIMESTAMP(&opts, "startAtOperationTime", start_at->t, start_at->i);
   }
   /* One stream whatever the number of namespaces: a database stream when the patterns name
    * one database, else a cluster stream (allChangesForCluster, on admin). */
   stream = rd->db ? mongoc_database_watch(rd->db, &pipeline, &opts)
                   : mongoc_client_watch(rd->client, &pipeline, &opts);
   bson_destroy(&pipeline);
   bson_destroy(&opts);
   return stream;
}

/* The cluster time a resume token @token begins with; false (and {0, 0}) if it shows none. */
static bool
token_time(const bson_t *token, relay_ts_t *ts)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, token, "_data") && BSON_ITER_HOLDS_UTF8(&it) &&
       relay_ts_from_token_data(bson_iter_utf8(&it, NULL), ts)) {
      return true;
   }
   *ts = (relay_ts_t){0, 0};
   return false;
}

/* Reads an open stream until it fails or the command changes. Updates *@token to the newest
 * position read. Returns the error code when the stream failed (0 when superseded). */
static int
drain(relay_reader_t *rd, uint64_t gen, mongoc_change_stream_t *stream, bson_t **token)
{
   const bson_t *doc, *err_doc;
   bson_error_t error;
   bson_iter_t it;

   while (wait_room(rd, gen)) {
      if (mongoc_change_stream_next(stream, &doc)) {
         relay_change_t *c = change_new(RELAY_CHANGE_EVENT);
         c->doc = bson_copy(doc);
         push(rd, c);
         if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
            const uint8_t *buf;
            uint32_t len;
            bson_iter_document(&it, &len, &buf);
            bson_destroy(*token);
            *token = bson_new_from_data(buf, len);
            remember(rd, *token);
         }
         if (bson_iter_init_find(&it, doc, "operationType") && BSON_ITER_HOLDS_UTF8(&it) &&
             !strcmp(bson_iter_utf8(&it, NULL), "invalidate")) {
            pthread_mutex_lock(&rd->lock);
            bson_destroy(rd->ended_by);
            rd->ended_by = *token ? bson_copy(*token) : NULL;
            pthread_mutex_unlock(&rd->lock);
            return -1;
         }
      } else if (mongoc_change_stream_error_document(stream, &error, &err_doc)) {
         relay_log(RELAY_LOG_WARNING, "stream", "change stream failed: %s (code %u)", error.message,
                   error.code);
         return error.code ? (int)error.code : 1;
      } else {
         const bson_t *t = mongoc_change_stream_get_resume_token(stream);
         if (t && (!*token || !bson_equal(t, *token))) {
            relay_change_t *c = change_new(RELAY_CHANGE_IDLE);
            c->token = bson_copy(t);
            token_time(t, &c->ts);
            bson_destroy(*token);
            *token = bson_copy(t);
            remember(rd, t);
            push(rd, c);
         }
      }
   }
   return 0;
}

/* 13 Unauthorized on opening: say once (per refusal run) which privileges the stream needs,
 * since the server's message names only the action. A cluster stream runs on admin with
 * allChangesForCluster (MongoDB 6.0 src/mongo/db/pipeline/document_source_change_stream.h,
 * LiteParsed::requiredPrivileges: changeStream and find on every non-system collection, i.e.
 * resource {db: "", collection: ""}); a database stream needs them on its database. */
static void
explain_refusal(relay_reader_t *rd, const bson_error_t *error)
{
   if (error->code != 13) {
      rd->told_refusal = false;
      return;
   }
   if (rd->told_refusal) {
      return;
   }
   rd->told_refusal = true;
   if (rd->db) {
      relay_log(RELAY_LOG_ERROR, "stream",
                "MongoDB refuses the change stream on database %s: the relay's user needs the "
                "changeStream and find actions there (the read or readWrite role of %s); "
                "retrying",
                relay_nsset_single_db(rd->set), relay_nsset_single_db(rd->set));
   } else {
      relay_log(RELAY_LOG_ERROR, "stream",
                "MongoDB refuses the cluster change stream the --namespace patterns need (they "
                "span databases): the relay's user needs the changeStream and find actions on "
                "every database (readAnyDatabase, or a role with those actions on "
                "{db: \"\", collection: \"\"}) and listDatabases; retrying");
   }
}

/* Serves one command until it is superseded or the history is lost. */
static void
serve(relay_reader_t *rd, uint64_t gen, bson_t *token, bson_t *start_after, bool has_start,
      relay_ts_t start_at, bool reopened)
{
   int backoff = 0;

   while (!superseded(rd, gen)) {
      bson_error_t error;
      const bson_t *err_doc;
      relay_ts_t now;
      mongoc_change_stream_t *stream;
      int code;

      if (!rd->time_fn(rd->client, &now, &error)) {
         relay_log(RELAY_LOG_WARNING, "stream", "MongoDB: %s", error.message);
         report_down(rd, (int)error.code);
         nap(rd, gen,
             relay_backoff_next(rd->cfg->reconnect_min_ms, rd->cfg->reconnect_max_ms, &backoff));
         continue;
      }
      stream = open_stream(rd, token, start_after, has_start ? &start_at : NULL);
      if (mongoc_change_stream_error_document(stream, &error, &err_doc)) {
         mongoc_change_stream_destroy(stream);
         if (is_lost((int)error.code)) {
            report_lost(rd, gen, (int)error.code);
            break;
         }
         relay_log(RELAY_LOG_WARNING, "stream", "cannot open the change stream: %s", error.message);
         explain_refusal(rd, &error);
         report_down(rd, (int)error.code);
         nap(rd, gen,
             relay_backoff_next(rd->cfg->reconnect_min_ms, rd->cfg->reconnect_max_ms, &backoff));
         continue;
      }
      {
         relay_change_t *c = change_new(RELAY_CHANGE_OPENED);
         c->ts = now;
         c->code = reopened ? 2 : token ? 1 : 0; /* asked for, resumed, new */
         reopened = false;
         push(rd, c);
      }
      backoff = 0;
      code = drain(rd, gen, stream, &token);
      mongoc_change_stream_destroy(stream);
      if (code == -1 || is_lost(code)) {
         report_lost(rd, gen, code);
         break;
      }
      if (code != 0) {
         report_down(rd, code);
         nap(rd, gen,
             relay_backoff_next(rd->cfg->reconnect_min_ms, rd->cfg->reconnect_max_ms, &backoff));
      }
   }
   bson_destroy(token);
   bson_destroy(start_after);
}

static void *
run(void *arg)
{
   relay_reader_t *rd = arg;

   pthread_mutex_lock(&rd->lock);
   while (!rd->stop) {
      uint64_t gen;
      bson_t *token, *start_after;
      bool has_start, reopened;
      relay_ts_t start_at;

      if (!rd->active) {
         pthread_cond_wait(&rd->cond, &rd->lock);
         continue;
      }
      gen = rd->gen;
      token = rd->resume_after ? bson_copy(rd->resume_after) : NULL;
      start_after = rd->start_after ? bson_copy(rd->start_after) : NULL;
      has_start = rd->has_start;
      start_at = rd->start_at;
      reopened = rd->reopened;
      rd->reopened = false;
      pthread_mutex_unlock(&rd->lock);
      serve(rd, gen, token, start_after, has_start, start_at, reopened);
      pthread_mutex_lock(&rd->lock);
      if (rd->gen == gen) {
         rd->active = false;
      }
   }
   pthread_mutex_unlock(&rd->lock);
   return NULL;
}

relay_reader_t *
relay_reader_new(const relay_config_t *cfg, const relay_nsset_t *set, mongoc_client_t *client,
                 relay_reader_time_fn time_fn, void (*wake)(void *), void *wake_ctx,
                 bson_error_t *error)
{
   relay_reader_t *rd;

   if (!client) {
      return NULL;
   }
   rd = bson_malloc0(sizeof *rd);
   rd->cfg = cfg;
   rd->client = client;
   rd->time_fn = time_fn;
   rd->set = set;
   rd->db = relay_nsset_single_db(set)
               ? mongoc_client_get_database(client, relay_nsset_single_db(set))
               : NULL;
   rd->wake = wake;
   rd->wake_ctx = wake_ctx;
   pthread_mutex_init(&rd->lock, NULL);
   pthread_cond_init(&rd->cond, NULL);
   if (pthread_create(&rd->thread, NULL, run, rd) != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_THREAD,
                     "cannot start the change stream thread");
      relay_reader_destroy(rd);
      return NULL;
   }
   rd->started = true;
   return rd;
}

/* A start at a time no later than the invalidate that ended the last stream (a sweep after a
 * dropDatabase: its time comes from the newest write, often the drop itself, and
 * startAtOperationTime is inclusive) would meet that drop again, and sweep and start again,
 * until some write moved the clock. Such a start begins after the invalidate instead (6.0's
 * startAfter, made for this: r6.0 src/mongo/db/pipeline/document_source_change_stream.cpp),
 * which skips nothing: the ended stream delivered everything up to its invalidate. Under the
 * lock; takes rd->ended_by. */
static bson_t *
after_own_end(relay_reader_t *rd, const bson_t *resume_after, const relay_ts_t *start_at)
{
   bson_t *end = rd->ended_by;
   relay_ts_t end_ts;
   rd->ended_by = NULL;
   if (end && !resume_after && start_at && token_time(end, &end_ts) &&
       relay_ts_cmp(*start_at, end_ts) <= 0) {
      return end;
   }
   bson_destroy(end);
   return NULL;
}

uint64_t
relay_reader_start(relay_reader_t *rd, const bson_t *resume_after, const relay_ts_t *start_at)
{
   uint64_t gen;
   pthread_mutex_lock(&rd->lock);
   gen = ++rd->gen;
   rd->active = true;
   bson_destroy(rd->resume_after);
   rd->resume_after = resume_after ? bson_copy(resume_after) : NULL;
   bson_destroy(rd->last_token);
   rd->last_token = NULL;
   rd->has_start = start_at != NULL;
   if (start_at) {
      rd->start_at = *start_at;
   }
   bson_destroy(rd->start_after);
   rd->start_after = after_own_end(rd, resume_after, start_at);
   pthread_cond_broadcast(&rd->cond);
   pthread_mutex_unlock(&rd->lock);
   return gen;
}

void
relay_reader_set_partitions(relay_reader_t *rd, const relay_partset_t *parts, int n)
{
   pthread_mutex_lock(&rd->lock);
   rd->filtered = parts != NULL;
   if (parts) {
      rd->parts = *parts;
      rd->n_parts = n;
   }
   pthread_mutex_unlock(&rd->lock);
}

void
relay_reader_reopen(relay_reader_t *rd)
{
   pthread_mutex_lock(&rd->lock);
   if (rd->active) {
      rd->gen++;
      rd->reopened = true;
      if (rd->last_token) {
         bson_destroy(rd->resume_after);
         rd->resume_after = bson_copy(rd->last_token);
      }
      pthread_cond_broadcast(&rd->cond);
   }
   pthread_mutex_unlock(&rd->lock);
}

void
relay_reader_stop(relay_reader_t *rd)
{
   pthread_mutex_lock(&rd->lock);
   rd->gen++;
   rd->active = false;
   pthread_cond_broadcast(&rd->cond);
   pthread_mutex_unlock(&rd->lock);
}

relay_change_t *
relay_reader_pop(relay_reader_t *rd)
{
   relay_change_t *c;
   pthread_mutex_lock(&rd->lock);
   c = rd->head;
   if (c) {
      rd->head = c->next;
      if (!rd->head) {
         rd->tail = NULL;
      }
      rd->qlen--;
      rd->qbytes -= change_bytes(c);
      c->next = NULL;
      pthread_cond_broadcast(&rd->cond);
   }
   pthread_mutex_unlock(&rd->lock);
   return c;
}

void
relay_reader_destroy(relay_reader_t *rd)
{
   if (!rd) {
      return;
   }
   if (rd->started) {
      relay_thread_stop(&rd->lock, &rd->cond, &rd->stop, rd->thread);
   }
   while (rd->head) {
      relay_change_t *c = rd->head;
      rd->head = c->next;
      relay_change_free(c);
   }
   bson_destroy(rd->resume_after);
   bson_destroy(rd->last_token);
   bson_destroy(rd->start_after);
   bson_destroy(rd->ended_by);
   mongoc_database_destroy(rd->db);
   mongoc_client_destroy(rd->client);
   pthread_cond_destroy(&rd->cond);
   pthread_mutex_destroy(&rd->lock);
   bson_free(rd);
}

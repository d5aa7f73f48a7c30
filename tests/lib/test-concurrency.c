/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests: several threads and several processes commit to one entity; one change
 * is one update command; a change stream shows appended events as "events.N".
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lib-test.h"
#include "lib-writer.h"

extern char **environ;

typedef struct {
   pthread_mutex_t lock;
   int inserts, updates, finds, others;
   bson_t last_update; /* the last update command seen */
} counts_t;

static lt_t t;
static counts_t counts;

static void
started(const mongoc_apm_command_started_t *event)
{
   counts_t *c = mongoc_apm_command_started_get_context(event);
   const char *name = mongoc_apm_command_started_get_command_name(event);

   pthread_mutex_lock(&c->lock);
   if (strcmp(name, "insert") == 0) {
      c->inserts++;
   } else if (strcmp(name, "update") == 0) {
      c->updates++;
      bson_reinit(&c->last_update);
      bson_copy_to_excluding_noinit(mongoc_apm_command_started_get_command(event), &c->last_update,
                                    "lsid", "$clusterTime", NULL);
   } else if (strcmp(name, "find") == 0) {
      c->finds++;
   } else {
      c->others++;
   }
   pthread_mutex_unlock(&c->lock);
}

static void
setup(void)
{
   mongoc_apm_callbacks_t *apm = mongoc_apm_callbacks_new();

   memset(&counts, 0, sizeof counts);
   pthread_mutex_init(&counts.lock, NULL);
   bson_init(&counts.last_update);
   mongoc_apm_set_command_started_cb(apm, started);
   lt_init(&t, "concurrency", apm, &counts);
   mongoc_apm_callbacks_destroy(apm);
   lt_open(&t, NULL);
}

static void
teardown(void)
{
   lt_cleanup(&t);
   bson_destroy(&counts.last_update);
}

TestSuite(concurrency, .init = setup, .fini = teardown, .timeout = 180);

static void
create_entity(const bson_value_t *id)
{
   bson_t *fields = BCON_NEW("counter", BCON_INT32(0));
   bson_error_t e;

   cr_assert(outbox_collection_create(t.coll, id, fields, NULL, 0, NULL, &e), "%s", e.message);
   bson_destroy(fields);
}

static void
check_entity(const bson_value_t *id, int writers, int commits)
{
   bson_t *doc = lt_raw_get(&t, id);
   char why[512];

   cr_assert_not_null(doc);
   cr_assert(lw_check(doc, writers, commits, why, sizeof why), "%s", why);
   bson_destroy(doc);
}

typedef struct {
   outbox_collection_t *coll;
   const bson_value_t *id;
   int writer, commits;
   bool ok;
   bson_error_t error;
} job_t;

static void *
job_main(void *arg)
{
   job_t *job = arg;

   job->ok = lw_run(job->coll, job->id, job->writer, job->commits, &job->error);
   return NULL;
}

/* Runs `n` writer threads numbered from 0; odd-numbered ones use a handle of their own, so
 * both shared and separate caches are exercised. */
static void
run_threads(const bson_value_t *id, int n, int commits, job_t *jobs, pthread_t *threads)
{
   for (int i = 0; i < n; i++) {
      jobs[i] = (job_t){.coll = t.coll, .id = id, .writer = i, .commits = commits};
      if (i % 2) {
         jobs[i].coll = outbox_collection_new(t.pool, LT_DB, t.coll_name, NULL, NULL);
      }
      cr_assert_eq(pthread_create(&threads[i], NULL, job_main, &jobs[i]), 0);
   }
}

static void
join_threads(int n, job_t *jobs, pthread_t *threads)
{
   for (int i = 0; i < n; i++) {
      pthread_join(threads[i], NULL);
      cr_assert(jobs[i].ok, "writer %d: %s", i, jobs[i].error.message);
      if (i % 2) {
         outbox_collection_destroy(jobs[i].coll);
      }
   }
}

Test(concurrency, threads)
{
   bson_value_t id = lt_str_id("threads");
   job_t jobs[4];
   pthread_t threads[4];

   create_entity(&id);
   run_threads(&id, 4, 20, jobs, threads);
   join_threads(4, jobs, threads);
   check_entity(&id, 4, 20);
}

static pid_t
spawn_writer(const char *path, const char *id, int writer, int commits)
{
   char w[16], c[16];
   char *argv[] = {
      (char *)path, getenv("OUTBOX_TEST_MONGODB_URI"), (char *)LT_DB, t.coll_name, (char *)id, w, c,
      NULL};
   pid_t pid;

   snprintf(w, sizeof w, "%d", writer);
   snprintf(c, sizeof c, "%d", commits);
   cr_assert_eq(posix_spawn(&pid, path, NULL, NULL, argv, environ), 0, "cannot run %s", path);
   return pid;
}

Test(concurrency, processes_and_threads)
{
   const char *writer = getenv("OUTBOX_TEST_LIB_WRITER");
   bson_value_t id = lt_str_id("processes");
   pid_t pids[3];
   job_t jobs[2];
   pthread_t threads[2];
   int status;

   cr_assert_not_null(writer, "OUTBOX_TEST_LIB_WRITER (the lib-writer program) is not set");
   create_entity(&id);
   for (int i = 0; i < 3; i++) {
      pids[i] = spawn_writer(writer, "processes", 2 + i, 15);
   }
   run_threads(&id, 2, 15, jobs, threads);
   join_threads(2, jobs, threads);
   for (int i = 0; i < 3; i++) {
      cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
      cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer process %d failed", 2 + i);
   }
   check_entity(&id, 5, 15);
}

static int
count_of(int *field)
{
   int n;

   pthread_mutex_lock(&counts.lock);
   n = *field;
   *field = 0;
   pthread_mutex_unlock(&counts.lock);
   return n;
}

static void
reset_counts(void)
{
   count_of(&counts.inserts);
   count_of(&counts.updates);
   count_of(&counts.finds);
   count_of(&counts.others);
}

/* The update command holds one statement whose filter pins the version and eventSeq and whose
 * update carries our $set and $push next to the caller's operators. */
static void
assert_one_update_statement(int64_t version, int64_t event_seq)
{
   bson_iter_t it, stmts;
   bson_t stmt;
   uint32_t len;
   const uint8_t *data;
   int n = 0;

   cr_assert(bson_iter_init_find(&it, &counts.last_update, "updates") &&
             bson_iter_recurse(&it, &stmts));
   while (bson_iter_next(&stmts)) {
      n++;
      bson_iter_document(&stmts, &len, &data);
   }
   cr_assert_eq(n, 1, "one statement in the update command");
   bson_init_static(&stmt, data, len);
   cr_assert(bson_iter_init(&it, &stmt) && bson_iter_find_descendant(&it, "q.version", &it));
   cr_assert_eq(bson_iter_int64(&it), version);
   cr_assert(bson_iter_init(&it, &stmt) && bson_iter_find_descendant(&it, "q.eventSeq", &it));
   cr_assert_eq(bson_iter_int64(&it), event_seq);
   cr_assert(bson_iter_init(&it, &stmt) && bson_iter_find_descendant(&it, "u.$set.name", &it));
   cr_assert(bson_iter_init(&it, &stmt) && bson_iter_find_descendant(&it, "u.$set.version", &it));
   cr_assert(bson_iter_init(&it, &stmt) &&
             bson_iter_find_descendant(&it, "u.$push.events.$each", &it));
}

Test(concurrency, one_update_command)
{
   bson_value_t id = lt_str_id("apm");
   bson_t *update = BCON_NEW("$set", "{", "name", BCON_UTF8("x"), "}");
   outbox_event_t *evs[3] = {outbox_event_new("a", NULL), outbox_event_new("b", NULL),
                             outbox_event_new("c", NULL)};
   outbox_collection_t *cold;
   bson_error_t e;

   create_entity(&id);
   reset_counts();
   cr_assert(outbox_collection_update(t.coll, &id, 1, update, evs, 2, NULL, &e), "%s", e.message);
   cr_assert_eq(count_of(&counts.updates), 1);
   cr_assert_eq(count_of(&counts.finds), 0, "the handle knew eventSeq: no read");
   cr_assert_eq(count_of(&counts.inserts), 0);
   assert_one_update_statement(1, 0);
   /* A handle that has not seen the entity reads it once, then sends one update. */
   cold = lt_second_handle(&t, NULL);
   cr_assert(outbox_collection_update(cold, &id, 2, update, evs + 2, 1, NULL, &e), "%s", e.message);
   cr_assert_eq(count_of(&counts.updates), 1);
   cr_assert_eq(count_of(&counts.finds), 1);
   assert_one_update_statement(2, 2);
   outbox_collection_destroy(cold);
   lt_events_destroy(evs, 3);
   bson_destroy(update);
}

/* A cache holding as many entries as there are entities in use keeps them all: every commit
 * with the right expected version is exactly one update command and no read. (A direct-mapped
 * cache made ids that shared a slot evict each other, so ~14% of the bench's commits read.) */
static void
warm_commits(const char *prefix, size_t cache_size, size_t k)
{
   bson_t *opts = BCON_NEW("cacheSize", BCON_INT32((int32_t)cache_size));
   outbox_collection_t *h = lt_second_handle(&t, opts);
   outbox_event_t *ev[1];
   char(*ids)[48] = calloc(k, sizeof *ids);
   bson_error_t e;

   for (size_t i = 0; i < k; i++) {
      bson_value_t id;

      snprintf(ids[i], sizeof ids[i], "%s-%06zu", prefix, i);
      id = lt_str_id(ids[i]);
      cr_assert(outbox_collection_create(h, &id, NULL, NULL, 0, NULL, &e), "%s", e.message);
   }
   reset_counts();
   for (size_t n = 0; n < 3 * k; n++) {
      bson_value_t id = lt_str_id(ids[n % k]);

      lt_events_new(ev, 1, "warm");
      cr_assert(outbox_collection_update(h, &id, 1 + (int64_t)(n / k), NULL, ev, 1, NULL, &e),
                "commit %zu: %s", n, e.message);
      lt_events_destroy(ev, 1);
   }
   cr_assert_eq(count_of(&counts.finds), 0, "a warm cache needs no read (cacheSize %zu)",
                cache_size);
   cr_assert_eq(count_of(&counts.updates), (int)(3 * k));
   free(ids);
   outbox_collection_destroy(h);
   bson_destroy(opts);
}

Test(concurrency, warm_cache_never_reads)
{
   warm_commits("full", 64, 64);    /* exactly full */
   warm_commits("ent", 4096, 1000); /* the default size and the bench's entity count */
}

/* Waits up to 10 s for the next "update" change; returns it (caller destroys). */
static bson_t *
next_update_change(mongoc_change_stream_t *stream)
{
   const bson_t *change, *err_doc;
   bson_error_t e;
   int64_t deadline = bson_get_monotonic_time() + 10 * 1000 * 1000;

   while (bson_get_monotonic_time() < deadline) {
      if (mongoc_change_stream_next(stream, &change)) {
         bson_iter_t it;

         if (bson_iter_init_find(&it, change, "operationType") &&
             strcmp(bson_iter_utf8(&it, NULL), "update") == 0) {
            return bson_copy(change);
         }
      }
      cr_assert_not(mongoc_change_stream_error_document(stream, &e, &err_doc), "%s", e.message);
   }
   cr_assert_fail("no update change within 10 s");
   return NULL;
}

Test(concurrency, change_stream_shows_appends)
{
   bson_value_t id = lt_str_id("stream");
   outbox_event_t *evs[3] = {outbox_event_new("a", NULL), outbox_event_new("b", NULL),
                             outbox_event_new("c", NULL)};
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(200));
   mongoc_client_t *client = mongoc_client_pool_pop(t.pool);
   mongoc_collection_t *c = mongoc_client_get_collection(client, LT_DB, t.coll_name);
   mongoc_change_stream_t *stream;
   bson_t pipeline = BSON_INITIALIZER, *change;
   const bson_t *err_doc;
   bson_iter_t it, fields;
   bson_error_t e;

   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, NULL, &e), "%s", e.message);
   stream = mongoc_collection_watch(c, &pipeline, opts);
   cr_assert_not(mongoc_change_stream_error_document(stream, &e, &err_doc), "%s", e.message);
   cr_assert(outbox_collection_append(t.coll, &id, evs + 1, 2, NULL, &e), "%s", e.message);
   change = next_update_change(stream);
   cr_assert(bson_iter_init(&it, change) &&
             bson_iter_find_descendant(&it, "updateDescription.updatedFields", &it) &&
             bson_iter_recurse(&it, &fields));
   cr_assert(bson_iter_find(&fields, "version"), "updatedFields lacks version");
   cr_assert_eq(bson_iter_int64(&fields), 2);
   bson_iter_recurse(&it, &fields);
   cr_assert(bson_iter_find(&fields, "events.1"), "updatedFields lacks events.1");
   bson_iter_recurse(&it, &fields);
   cr_assert(bson_iter_find(&fields, "events.2"), "updatedFields lacks events.2");
   bson_iter_recurse(&it, &fields);
   cr_assert_not(bson_iter_find(&fields, "events"), "the whole array was reported");
   bson_iter_recurse(&it, &fields);
   cr_assert(bson_iter_find(&fields, "eventSeq"));
   cr_assert_eq(bson_iter_int64(&fields), 3);
   bson_destroy(change);
   mongoc_change_stream_destroy(stream);
   mongoc_collection_destroy(c);
   mongoc_client_pool_push(t.pool, client);
   bson_destroy(opts);
   bson_destroy(&pipeline);
   lt_events_destroy(evs, 3);
}

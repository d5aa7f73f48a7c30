/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * mongod-bench: throughput of the MongoDB server at OUTBOX_TEST_MONGODB_URI (test-mongod
 * under with-servers, or a real one): single-document updates/s from 1 and from 4 clients,
 * and change events/s delivered to a watcher while they run.
 *   usage: mongod-bench [SECONDS per phase, default 3]
 */
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_DOCS 1000

/* CPU seconds used so far by the server, if with-servers started it (else -1): the machine
 * running the tests is often loaded, so updates/s per server CPU second says more about
 * whether the server could be a bottleneck than wall-clock rates do. */
static double
server_cpu(void)
{
   const char *pid = getenv("OUTBOX_TEST_MONGOD_PID");
   char path[64], buf[1024];
   if (!pid) {
      return -1;
   }
   snprintf(path, sizeof path, "/proc/%s/stat", pid);
   FILE *f = fopen(path, "r");
   if (!f) {
      return -1;
   }
   size_t n = fread(buf, 1, sizeof buf - 1, f);
   fclose(f);
   buf[n] = '\0';
   const char *p = strrchr(buf, ')');
   unsigned long utime = 0, stime = 0;
   if (!p ||
       sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
      return -1;
   }
   return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static mongoc_client_pool_t *pool;
static atomic_bool stop_writers, stop_watcher;
static atomic_long events;

static void *
writer_main(void *arg)
{
   long *count = arg;
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "bench", "docs");
   bson_error_t error;
   for (long i = 0; !atomic_load(&stop_writers); i++) {
      bson_t *f = BCON_NEW("_id", BCON_INT32((int32_t)(i % N_DOCS)));
      bson_t *u = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
      if (!mongoc_collection_update_one(coll, f, u, NULL, NULL, &error)) {
         fprintf(stderr, "mongod-bench: update: %s\n", error.message);
         atomic_store(&stop_writers, true);
      }
      bson_destroy(f);
      bson_destroy(u);
      (*count)++;
   }
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(pool, client);
   return NULL;
}

static void *
watcher_main(void *arg)
{
   (void)arg;
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "bench", "docs");
   bson_t *pipeline = bson_new();
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(100), "batchSize", BCON_INT32(1000));
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, pipeline, opts);
   const bson_t *doc;
   bson_error_t error;
   while (!atomic_load(&stop_watcher)) {
      if (mongoc_change_stream_next(cs, &doc)) {
         atomic_fetch_add(&events, 1);
      } else if (mongoc_change_stream_error_document(cs, &error, NULL)) {
         fprintf(stderr, "mongod-bench: watch: %s\n", error.message);
         break;
      }
   }
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
   bson_destroy(pipeline);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(pool, client);
   return NULL;
}

static void
seed(void)
{
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "bench", "docs");
   bson_error_t error;
   mongoc_collection_drop(coll, &error);
   for (int i = 0; i < N_DOCS; i++) {
      bson_t *doc = BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT32(0), "payload",
                             BCON_UTF8("0123456789012345678901234567890123456789"));
      mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
      bson_destroy(doc);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(pool, client);
}

static double
phase(int n_writers, int seconds)
{
   double cpu0 = server_cpu();
   pthread_t threads[16];
   long counts[16] = {0};
   atomic_store(&stop_writers, false);
   int64_t start = bson_get_monotonic_time();
   for (int i = 0; i < n_writers; i++) {
      pthread_create(&threads[i], NULL, writer_main, &counts[i]);
   }
   struct timespec ts = {.tv_sec = seconds};
   nanosleep(&ts, NULL);
   atomic_store(&stop_writers, true);
   long total = 0;
   for (int i = 0; i < n_writers; i++) {
      pthread_join(threads[i], NULL);
      total += counts[i];
   }
   double secs = (double)(bson_get_monotonic_time() - start) / 1e6;
   double cpu = server_cpu() - cpu0;
   if (cpu0 >= 0 && cpu > 0) {
      printf("  (%d client(s): %ld updates, server CPU %.2f s = %.1f us/update, "
             "%.0f updates per server CPU second)\n",
             n_writers, total, cpu, cpu * 1e6 / (double)total, (double)total / cpu);
   }
   return (double)total / secs;
}

int
main(int argc, char **argv)
{
   int seconds = argc > 1 ? atoi(argv[1]) : 3;
   const char *uri_str = getenv("OUTBOX_TEST_MONGODB_URI");
   if (!uri_str || seconds <= 0) {
      fprintf(stderr, "usage: OUTBOX_TEST_MONGODB_URI=... mongod-bench [SECONDS]\n");
      return 64;
   }
   mongoc_init();
   mongoc_uri_t *uri = mongoc_uri_new(uri_str);
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, 2);
   seed();
   printf("single-document updates/s, 1 client:  %.0f\n", phase(1, seconds));
   printf("single-document updates/s, 4 clients: %.0f\n", phase(4, seconds));
   pthread_t watcher;
   pthread_create(&watcher, NULL, watcher_main, NULL);
   struct timespec settle = {.tv_nsec = 300 * 1000 * 1000};
   nanosleep(&settle, NULL);
   atomic_store(&events, 0);
   int64_t start = bson_get_monotonic_time();
   double rate = phase(4, seconds);
   /* Let the watcher drain what was written, then count. */
   long written = (long)(rate * seconds);
   while (atomic_load(&events) < written &&
          bson_get_monotonic_time() - start < (int64_t)(seconds + 5) * 1000000) {
      nanosleep(&settle, NULL);
   }
   double secs = (double)(bson_get_monotonic_time() - start) / 1e6;
   printf("updates/s with a watcher, 4 clients:   %.0f\n", rate);
   printf("change events/s delivered to watcher:  %.0f (%ld events)\n",
          (double)atomic_load(&events) / secs, atomic_load(&events));
   atomic_store(&stop_watcher, true);
   pthread_join(watcher, NULL);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return 0;
}

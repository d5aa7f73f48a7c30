/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Many clients at once: writers on their own threads and connections, a watcher that must
 * see every insert, and a stuck client that must not hold anyone up.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/test-util.h"

#define N_THREADS 24
#define N_DOCS 40

typedef struct {
   mongoc_client_pool_t *pool;
   const char *name;
   int index;
   bool ok;
} worker_t;

static void *
worker_main(void *arg)
{
   worker_t *w = arg;
   mongoc_client_t *client = mongoc_client_pool_pop(w->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", w->name);
   bson_error_t error;
   w->ok = true;
   for (int i = 0; i < N_DOCS && w->ok; i++) {
      int id = w->index * 1000 + i;
      bson_t *doc = BCON_NEW("_id", BCON_INT32(id), "n", BCON_INT32(0));
      bson_t *f = BCON_NEW("_id", BCON_INT32(id));
      bson_t *u = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
      w->ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error) &&
              mongoc_collection_update_one(coll, f, u, NULL, NULL, &error);
      bson_destroy(doc);
      bson_destroy(f);
      bson_destroy(u);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(w->pool, client);
   return NULL;
}

static mongoc_client_pool_t *
new_pool(void)
{
   mongoc_init();
   mongoc_uri_t *uri = mongoc_uri_new(getenv("OUTBOX_TEST_MONGODB_URI"));
   cr_assert_not_null(uri);
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_MAXPOOLSIZE, N_THREADS + 2);
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, 2);
   mongoc_uri_destroy(uri);
   return pool;
}

/* Opens a raw connection and sends half a message header, then leaves it hanging. */
static int
stuck_client(void)
{
   mongoc_uri_t *uri = mongoc_uri_new(getenv("OUTBOX_TEST_MONGODB_URI"));
   const mongoc_host_list_t *host = mongoc_uri_get_hosts(uri);
   struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(host->port)};
   inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
   const char half[8] = {100, 0, 0, 0, 1, 0, 0, 0};
   cr_assert_eq(send(fd, half, sizeof half, 0), (ssize_t)sizeof half);
   mongoc_uri_destroy(uri);
   return fd;
}

Test(concurrency, many_writers_and_a_watcher, .timeout = 60)
{
   mongoc_client_pool_t *pool = new_pool();
   char *name = md_test_name("conc");
   int stuck = stuck_client();
   mongoc_client_t *watcher = md_test_client(NULL, false);
   mongoc_collection_t *wcoll = mongoc_client_get_collection(watcher, "mdtest", name);
   bson_t *pipeline = BCON_NEW("pipeline", "[", "{", "$match", "{", "operationType",
                               BCON_UTF8("insert"), "}", "}", "]");
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(200));
   mongoc_change_stream_t *cs = mongoc_collection_watch(wcoll, pipeline, opts);
   bson_error_t error;
   cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);

   pthread_t threads[N_THREADS];
   worker_t workers[N_THREADS];
   for (int i = 0; i < N_THREADS; i++) {
      workers[i] = (worker_t){pool, name, i, false};
      pthread_create(&threads[i], NULL, worker_main, &workers[i]);
   }
   int events = 0;
   const bson_t *doc;
   int64_t deadline = bson_get_monotonic_time() + 30 * 1000 * 1000;
   while (events < N_THREADS * N_DOCS && bson_get_monotonic_time() < deadline) {
      if (mongoc_change_stream_next(cs, &doc)) {
         events++;
      }
      cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
   }
   for (int i = 0; i < N_THREADS; i++) {
      pthread_join(threads[i], NULL);
      cr_assert(workers[i].ok, "worker %d failed", i);
   }
   cr_assert_eq(events, N_THREADS * N_DOCS);
   bson_t *all = BCON_NEW("n", BCON_INT32(1));
   int64_t n = mongoc_collection_count_documents(wcoll, all, NULL, NULL, NULL, &error);
   cr_assert_eq(n, N_THREADS * N_DOCS, "count: %s", error.message);
   bson_destroy(all);
   close(stuck);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
   bson_destroy(pipeline);
   mongoc_collection_destroy(wcoll);
   mongoc_client_destroy(watcher);
   mongoc_client_pool_destroy(pool);
   bson_free(name);
}

/* Hundreds of connections open at once (each single-threaded client has its own). */
Test(concurrency, hundreds_of_connections, .timeout = 60)
{
   enum { N = 300 };
   mongoc_client_t *clients[N];
   bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
   bson_error_t error;
   for (int i = 0; i < N; i++) {
      clients[i] = md_test_client(NULL, false);
      cr_assert(mongoc_client_command_simple(clients[i], "admin", ping, NULL, NULL, &error),
                "client %d: %s", i, error.message);
   }
   /* All still usable while the others stay connected. */
   for (int i = 0; i < N; i += 37) {
      cr_assert(mongoc_client_command_simple(clients[i], "admin", ping, NULL, NULL, &error),
                "client %d again: %s", i, error.message);
   }
   for (int i = 0; i < N; i++) {
      mongoc_client_destroy(clients[i]);
   }
   bson_destroy(ping);
}

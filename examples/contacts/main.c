/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * contacts-service: a REST service for contacts whose every change records its domain events
 * atomically through liboutbox. Arguments, set-up and signals only.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <mongoc/mongoc.h>
#include <outbox/outbox.h>

#include "example-common.h"
#include "http.h"
#include "repository.h"

#define PROG "contacts-service"

typedef struct {
   const char *uri;
   const char *db;
   const char *listen;
} options_t;

static void
usage(FILE *out)
{
   fprintf(out, "Usage: contacts-service [OPTIONS]\n"
                "A REST service for contacts; each change stores its events with liboutbox.\n\n"
                "  --mongodb-uri URI    MongoDB to use (env OUTBOX_MONGODB_URI; default\n"
                "                       mongodb://127.0.0.1:27017/?directConnection=true)\n"
                "  --database DB        database (default contacts); collection is 'contacts'\n"
                "  --listen HOST:PORT   address to serve on (default 127.0.0.1:8080; port 0 picks\n"
                "                       a free one)\n"
                "  -h, --help           show this help\n"
                "  -V, --version        show the version\n");
}

/* Returns -1 to go on, or the exit code. */
static int
parse_args(int argc, char **argv, options_t *o)
{
   int rc;

   o->uri =
      example_env_or("OUTBOX_MONGODB_URI", "mongodb://127.0.0.1:27017/?directConnection=true");
   o->db = "contacts";
   o->listen = "127.0.0.1:8080";
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char **dst = !strcmp(a, "--mongodb-uri") ? &o->uri
                         : !strcmp(a, "--database")  ? &o->db
                         : !strcmp(a, "--listen")    ? &o->listen
                                                     : NULL;
      if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
         usage(stdout);
         return EX_OK;
      }
      if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
         printf("contacts-service (outbox %s)\n", outbox_get_version());
         return EX_OK;
      }
      if ((rc = example_option_value(PROG, argc, argv, &i, dst)) >= 0)
         return rc;
   }
   return -1;
}

static int
serve(const options_t *o, mongoc_client_pool_t *pool, const sigset_t *stop)
{
   bson_error_t error;
   repository_t *repo = repository_new(pool, o->db, &error);
   http_server_t *server;
   char err[256];
   uint16_t port;
   int sig;

   if (!repo) {
      fprintf(stderr, "contacts-service: %s\n", error.message);
      return EX_USAGE;
   }
   if (!repository_ensure_indexes(repo, &error)) {
      fprintf(stderr, "contacts-service: cannot prepare MongoDB: %s\n", error.message);
      repository_destroy(repo);
      return EX_UNAVAILABLE;
   }
   if (!(server = http_server_start(repo, o->listen, &port, err, sizeof err))) {
      fprintf(stderr, "contacts-service: %s\n", err);
      repository_destroy(repo);
      return EX_UNAVAILABLE;
   }
   fprintf(stderr, "contacts-service: listening on port %u (database %s)\n", (unsigned)port, o->db);
   sigwait(stop, &sig);
   fprintf(stderr, "contacts-service: %s received, stopping\n", strsignal(sig));
   http_server_stop(server);
   repository_destroy(repo);
   return EX_OK;
}

int
main(int argc, char **argv)
{
   options_t o;
   sigset_t stop;
   mongoc_client_pool_t *pool;
   int rc = parse_args(argc, argv, &o);

   if (rc >= 0)
      return rc;
   /* Block the stop signals before any thread exists, so only sigwait() sees them. */
   sigemptyset(&stop);
   sigaddset(&stop, SIGINT);
   sigaddset(&stop, SIGTERM);
   pthread_sigmask(SIG_BLOCK, &stop, NULL);
   signal(SIGPIPE, SIG_IGN);
   mongoc_init();
   if (!(pool = example_open_pool(PROG, o.uri))) {
      mongoc_cleanup();
      return EX_USAGE;
   }
   rc = serve(&o, pool, &stop);
   mongoc_client_pool_destroy(pool);
   mongoc_cleanup();
   return rc;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * contacts-consumer: subscribes to the contact events outbox-relay publishes and keeps a
 * contact directory in its own MongoDB database, applying each event exactly once through
 * liboutbox's idempotent inbox. Prints one line per event: applied (in order, after a gap, or
 * reordered) or duplicate (skipped).
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <mongoc/mongoc.h>
#include <outbox/outbox.h>

#include "cloudevent.h"
#include "bootstrap.h"
#include "directory.h"
#include "example-common.h"
#include "mqtt.h"
#include "topics.h"

#define PROG "contacts-consumer"

typedef struct {
   const char *mqtt_uri;
   const char *mongodb_uri;
   const char *db;
   const char *topic;
   const char *partitions; /* NULL: the topic filter as it is */
   const char *client_id;
   int qos;
   bootstrap_opts_t boot; /* boot.archive NULL: no catching up */
} options_t;

static volatile sig_atomic_t stop_requested;

static void
on_signal(int sig)
{
   stop_requested = sig;
}

static void
usage(FILE *out)
{
   fprintf(out,
           "Usage: contacts-consumer [OPTIONS]\n"
           "Applies contact events from MQTT to a directory in MongoDB, exactly once.\n\n"
           "  --mqtt-uri URI       broker (env OUTBOX_MQTT_URI; default tcp://127.0.0.1:1883)\n"
           "  --mongodb-uri URI    MongoDB (env OUTBOX_MONGODB_URI; default\n"
           "                       mongodb://127.0.0.1:27017/?directConnection=true)\n"
           "  --database DB        the consumer's own database (default contacts_directory)\n"
           "  --topic FILTER       topic filter (default outbox/contacts/#)\n"
           "  --partitions SET     subscribe only to these partitions (e.g. 0-15 or 0,2,4-7):\n"
           "                       one filter per partition, with {partition} in FILTER\n"
           "                       replaced (relay --topic outbox/{collection}/{partition}/{id})\n"
           "  --client-id ID       MQTT client id, also the session (default contacts-consumer)\n"
           "  --qos N              subscription QoS 0, 1 or 2 (default 1)\n"
           "  --archive NAME       a new consumer: first catch up from the relay's archive\n"
           "                       collection NAME (its --archive-collection), then go live\n"
           "  --outbox-database DB the relay's --database, for --archive (default contacts)\n"
           "  -h, --help           show this help\n");
}

static int
parse_args(int argc, char **argv, options_t *o)
{
   int rc;

   o->mqtt_uri = example_env_or("OUTBOX_MQTT_URI", "tcp://127.0.0.1:1883");
   o->mongodb_uri =
      example_env_or("OUTBOX_MONGODB_URI", "mongodb://127.0.0.1:27017/?directConnection=true");
   o->db = "contacts_directory";
   o->topic = "outbox/contacts/#";
   o->partitions = NULL;
   o->client_id = "contacts-consumer";
   o->qos = 1;
   o->boot = (bootstrap_opts_t){NULL, "contacts", "contacts"};
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i], *qos = NULL;
      const char **dst = !strcmp(a, "--mqtt-uri")          ? &o->mqtt_uri
                         : !strcmp(a, "--mongodb-uri")     ? &o->mongodb_uri
                         : !strcmp(a, "--database")        ? &o->db
                         : !strcmp(a, "--topic")           ? &o->topic
                         : !strcmp(a, "--partitions")      ? &o->partitions
                         : !strcmp(a, "--client-id")       ? &o->client_id
                         : !strcmp(a, "--qos")             ? &qos
                         : !strcmp(a, "--archive")         ? &o->boot.archive
                         : !strcmp(a, "--outbox-database") ? &o->boot.outbox_db
                                                           : NULL;
      if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
         usage(stdout);
         return EX_OK;
      }
      if ((rc = example_option_value(PROG, argc, argv, &i, dst)) >= 0)
         return rc;
      if (qos) {
         if (strlen(qos) != 1 || qos[0] < '0' || qos[0] > '2') {
            fprintf(stderr, "contacts-consumer: --qos must be 0, 1 or 2\n");
            return EX_USAGE;
         }
         o->qos = qos[0] - '0';
      }
   }
   return -1;
}

/* Decodes and applies one message. False means "deliver it again" (MongoDB trouble). */
static bool
process(directory_t *dir, const mqtt_msg_t *m)
{
   cloudevent_props_t props = {m->event_id, m->event_type,  m->entity_id,
                               m->seq,      m->traceparent, m->bytes};
   cloudevent_t ev;
   bson_error_t error;
   char why[200];
   bool ok;

   if (!cloudevent_decode(m->payload, m->len, &props, &ev, why, sizeof why)) {
      /* Redelivering a message that cannot be read would not help: report and drop it. */
      printf("consumer: skipped unreadable message on %s: %s\n", m->topic, why);
      fflush(stdout);
      return true;
   }
   ok = directory_apply(dir, &ev, &error);
   if (!ok)
      fprintf(stderr, "consumer: cannot apply %s %s (will retry): %s\n", ev.type, ev.id,
              error.message);
   cloudevent_clear(&ev);
   return ok;
}

/* The wall clock in ms: the subscription time must not be rounded down (an event committed in
 * the rounded-off part could have been published before the subscription and missed). */
static int64_t
now_ms(void)
{
   struct timeval tv;
   bson_gettimeofday(&tv);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* With --archive: what was published before the subscription, from the archive (bootstrap.h),
 * while the live messages wait. */
static bool
catch_up(const options_t *o, directory_t *dir, mongoc_client_pool_t *pool, int64_t subscribed_ms)
{
   bson_error_t error;
   int64_t applied = 0;

   if (!o->boot.archive)
      return true;
   if (!bootstrap_from_archive(dir, pool, &o->boot, subscribed_ms, &stop_requested, &applied,
                               &error)) {
      fprintf(stderr, "contacts-consumer: cannot catch up from archive %s: %s\n", o->boot.archive,
              error.message);
      return false;
   }
   printf("consumer: caught up with %" PRId64 " archived events, going live\n", applied);
   fflush(stdout);
   return true;
}

static int
run(const options_t *o, directory_t *dir, mongoc_client_pool_t *pool)
{
   char err[256];
   mqtt_msg_t *m;
   size_t n;
   char **topics = topics_expand(o->topic, o->partitions, &n, err, sizeof err);
   mqtt_sub_t *sub =
      topics ? mqtt_sub_start(o->mqtt_uri, o->client_id, topics, n, o->qos, err, sizeof err) : NULL;

   topics_free(topics);
   if (!sub) {
      fprintf(stderr, "contacts-consumer: %s\n", err);
      return EX_USAGE;
   }
   if (o->boot.archive && !mqtt_sub_wait_subscribed(sub, 30000)) {
      fprintf(stderr, "contacts-consumer: not subscribed within 30 s: cannot catch up\n");
      mqtt_sub_stop(sub);
      return EX_UNAVAILABLE;
   }
   if (!catch_up(o, dir, pool, now_ms())) {
      mqtt_sub_stop(sub);
      return EX_UNAVAILABLE;
   }
   while (!stop_requested) {
      if (mqtt_sub_next(sub, 200, &m))
         mqtt_sub_done(sub, process(dir, m));
   }
   fprintf(stderr, "contacts-consumer: %s received, stopping\n", strsignal(stop_requested));
   mqtt_sub_stop(sub);
   return EX_OK;
}

int
main(int argc, char **argv)
{
   struct sigaction sa = {.sa_handler = on_signal};
   mongoc_client_pool_t *pool;
   directory_t *dir = NULL;
   bson_error_t error;
   options_t o;
   int rc = parse_args(argc, argv, &o);

   if (rc >= 0)
      return rc;
   sigaction(SIGINT, &sa, NULL);
   sigaction(SIGTERM, &sa, NULL);
   signal(SIGPIPE, SIG_IGN); /* paho may write to a closed socket while reconnecting */
   mongoc_init();
   if (!(pool = example_open_pool(PROG, o.mongodb_uri))) {
      rc = EX_USAGE;
   } else if (!(dir = directory_new(pool, o.db, stdout, &error))) {
      fprintf(stderr, "contacts-consumer: %s\n", error.message);
      rc = EX_SOFTWARE;
   } else if (!directory_prepare(dir, &error)) {
      fprintf(stderr, "contacts-consumer: cannot prepare MongoDB: %s\n", error.message);
      rc = EX_UNAVAILABLE;
   } else {
      rc = run(&o, dir, pool);
      if (!directory_print(dir, &error))
         fprintf(stderr, "contacts-consumer: cannot list the directory: %s\n", error.message);
   }
   directory_destroy(dir);
   mongoc_client_pool_destroy(pool);
   mongoc_cleanup();
   return rc;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-admin entry point: splits the command line into the relay's options (connection,
 * database, collections, field names, --config; loaded by relay/config exactly as the relay
 * loads them, environment and config file included) and the tool's own, opens one client
 * pool and runs the command. Exit codes follow sysexits.h.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"
#include "admin/args.h"
#include "store/store.h"
#include "util/log.h"
#include "util/version.h"

static const char usage[] =
   "usage: outbox-admin [OPTIONS] COMMAND [OPTIONS]\n"
   "\n"
   "Commands:\n"
   "  status          pending events, dead letters and their ages per collection; each\n"
   "                  relay's checkpoint age, partitions, owners, epochs, leases, members\n"
   "  pending         list pending events\n"
   "  dead-letters    list dead letters (--discarded: the discarded ones, with who and why)\n"
   "  requeue         send dead letters again (moves them back into the events)\n"
   "  discard         discard dead letters, keeping an audit record (--reason required)\n"
   "  ensure-schema   install the stored contract as the collections' $jsonSchema validator\n"
   "                  (and the archive's, with --archive-collection)\n"
   "  replay          publish archived events again (--archive-collection), with a marker\n"
   "\n"
   "The relay's options choose the connection and the fields, with the same names,\n"
   "environment variables and config file (see outbox-relay --help): --mongodb-uri,\n"
   "--database, --collection, --namespace DB.COLL (globs; default: the relay's),\n"
   "--state-database, --state-collection,\n"
   "--lease-collection, --events-field, --dead-letters-field, --config FILE ...\n"
   "\n"
   "Options:\n"
   "  --json                 JSON output (read commands and --dry-run)\n"
   "  --id ID                only entity ID (a string); --id-json JSON for other types,\n"
   "                         e.g. --id-json '{\"$oid\": \"...\"}' or --id-json 42\n"
   "  --event-id ID          only this event\n"
   "  --type TYPE            only events of this type\n"
   "  --reason-contains TEXT only dead letters whose reason contains TEXT\n"
   "  --older-than AGE       pending: events older than AGE; dead letters: dead-lettered\n"
   "                         before AGE ago (AGE: 500ms, 30s, 5m, 2h, 1d; a number: seconds)\n"
   "  --limit N              at most N events\n"
   "  --all                  requeue/discard: every dead letter (no filter needed)\n"
   "  --dry-run              requeue/discard: show what would change, change nothing\n"
   "  --by WHO               requeue/discard: who does it (default: user@host)\n"
   "  --reason TEXT          discard: why (required)\n"
   "  --max-age AGE          status: exit 1 if a pending event is older than AGE\n"
   "  --top N                status: the N namespaces with the most pending (default 20)\n"
   "  --print                ensure-schema: print the validator, change nothing\n"
   "  --validation-action A  ensure-schema: error (default) or warn\n"
   "  --validation-level L   ensure-schema: moderate (default) or strict\n"
   "  --combine              ensure-schema: keep a validator someone else installed, in a\n"
   "                         $and with ours (otherwise it is left alone and the command fails)\n"
   "  --since T, --until T   replay: events whose time is in [T, T) (RFC 3339 UTC like\n"
   "                         2026-11-20T10:00:00Z, or an age like 2h); replay keeps at most\n"
   "                         --inflight-window messages in flight (and the broker's Receive\n"
   "                         Maximum), as the relay does\n"
   "  --rate N               replay: N events per second at most\n"
   "  --help, --version\n"
   "\n"
   "Exit status: 0 ok, 1 status found something older than --max-age, 64 usage, 65 bad\n"
   "input, 69 MongoDB unavailable, 70 internal error, 77 not authorized, 78 configuration.\n";

static int
run(admin_t *a, const char *command)
{
   if (!strcmp(command, "status")) {
      return admin_status(a);
   } else if (!strcmp(command, "pending")) {
      return admin_list(a, OUTBOX_PLACE_PENDING);
   } else if (!strcmp(command, "dead-letters")) {
      return admin_list(a, a->discarded ? OUTBOX_PLACE_DISCARDED : OUTBOX_PLACE_DEAD_LETTER);
   } else if (!strcmp(command, "requeue")) {
      return admin_requeue(a);
   } else if (!strcmp(command, "discard")) {
      return admin_discard(a);
   } else if (!strcmp(command, "replay")) {
      return admin_replay(a);
   }
   return admin_ensure_schema(a);
}

/* Loads the relay's part of the command line; returns an exit status, or -1 to go on. */
static int
load_config(admin_t *a, const admin_args_t *args)
{
   bson_error_t error;
   relay_config_init_defaults(&a->cfg);
   switch (relay_config_load_mongodb(&a->cfg, args->relay_argc, args->relay_argv, &error)) {
   case RELAY_CONFIG_RUN:
      return -1;
   case RELAY_CONFIG_USAGE_ERROR:
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_USAGE;
   default:
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_CONFIG;
   }
}

int
main(int argc, char **argv)
{
   admin_t a = {.out = stdout};
   admin_args_t args;
   bson_error_t error;
   int rc = admin_args_parse(&a, &args, argc, argv, &error);

   if (rc == ADMIN_ARGS_HELP) {
      fputs(usage, stdout);
      rc = EX_OK;
   } else if (rc == ADMIN_ARGS_VERSION) {
      /* Runtime versions: a bug report needs what actually ran. */
      printf("outbox-admin %s\nliboutbox %s\nlibmongoc %s\nlibbson %s\n", relay_version(),
             outbox_get_version(), mongoc_get_version(), bson_get_version());
      rc = EX_OK;
   } else if (rc != ADMIN_ARGS_RUN) {
      fprintf(stderr, "outbox-admin: %s (see --help)\n", error.message);
      rc = EX_USAGE;
   } else if ((rc = load_config(&a, &args)) < 0 &&
              (strcmp(args.command, "replay") != 0 || (rc = admin_replay_check(&a)) == EX_OK)) {
      /* mongoc's own log (server monitoring's debug lines ...) at the relay's default level:
       * warnings and errors reach stderr, the rest not. Before mongoc_init(), which reads it. */
      relay_log_route_dependencies();
      mongoc_init();
      /* Fail fast when MongoDB is down (5 s unless the URI says otherwise): someone waits. */
      a.pool = relay_store_pool_new(&a.cfg, "outbox-admin", RELAY_CONCERNS_ADMIN, &error);
      if (!a.pool) {
         fprintf(stderr, "outbox-admin: mongodb-uri: %s\n", error.message);
         rc = EX_CONFIG;
      } else {
         rc = admin_targets_resolve(&a);
         rc = rc == EX_OK ? run(&a, args.command) : rc;
         admin_targets_cleanup(&a);
         mongoc_client_pool_destroy(a.pool);
      }
      mongoc_cleanup();
   }
   relay_config_destroy(&a.cfg);
   admin_args_cleanup(&a, &args);
   return rc;
}

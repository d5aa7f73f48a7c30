/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-admin: what the commands share. main.c parses the command line into an admin_t
 * (the relay's configuration for the connection and field names, plus the tool's own
 * options), opens one client pool and calls the command; status.c, list.c, ops.c and
 * schema.c each implement commands. Single-threaded: nothing here is shared between threads.
 */
#ifndef RELAY_ADMIN_H
#define RELAY_ADMIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <outbox/outbox.h>

#include "config/config.h"

/* Exit status when `status` finds something older than --max-age (sysexits has none). */
#define ADMIN_EXIT_THRESHOLD 1

/* One namespace a command works on (targets.c). */
typedef struct {
   char *db, *coll;
   char *label; /* what outbox-admin prints: coll in the state database, else "db.coll" */
} admin_target_t;

typedef struct {
   relay_config_t cfg;      /* connection, database, collections, patterns, field names */
   admin_target_t *targets; /* the namespaces the patterns match, resolved at the start */
   size_t n_targets;
   mongoc_client_pool_t *pool;
   bool json;
   /* Filters of pending, dead-letters, requeue, discard (unset: NULL / false / 0). */
   bson_value_t entity;
   bool has_entity;
   const char *event_id, *type, *reason_filter;
   int64_t older_than_ms; /* 0: no bound */
   int64_t limit;         /* 0: none */
   bool all;              /* requeue/discard: no filter needed */
   bool discarded;        /* dead-letters --discarded: the audit trail */
   /* Writes. */
   bool dry_run;
   const char *by;     /* who; default user@host */
   const char *reason; /* discard: why */
   /* status. */
   int64_t max_age_ms; /* with max_age_given; 0: any pending event is too old */
   bool max_age_given;
   int64_t top; /* namespaces listed, the most pending first (0: the default, 20) */
   /* ensure-schema. */
   bool print;
   bool combine; /* keep a foreign validator beside ours */
   const char *validation_action, *validation_level;
   /* replay. */
   const char *since, *until; /* RFC 3339 or an age; NULL: no bound */
   int64_t rate;              /* events per second at most, 0: no limit */
   FILE *out;
} admin_t;

/* The commands. Each returns an exit status (sysexits.h, or ADMIN_EXIT_THRESHOLD). */
int admin_status(admin_t *a);
int admin_list(admin_t *a, outbox_place_t place);
int admin_discard(admin_t *a);
int admin_requeue(admin_t *a);
int admin_ensure_schema(admin_t *a);
int admin_replay(admin_t *a);
/* What replay needs that the command line and config must give (archive, broker, a topic
 * the relay would accept): checked before anything connects. EX_OK or an exit status. */
int admin_replay_check(const admin_t *a);
int admin_ensure_archive(admin_t *a); /* ensure-schema with --archive-collection (archive.c) */

/* The archive in `status` (archive.c): entries, and the times of the oldest and newest. */
typedef struct {
   int64_t entries, oldest_ms, newest_ms;
   int64_t ttl_s; /* the TTL in force (outbox_archive_ttl_seconds()), 0: none */
} admin_archive_stats_t;
/* --archive-ttl is given but not in force. */
bool admin_archive_ttl_missing(const admin_t *a, const admin_archive_stats_t *st);
int admin_archive_stats(admin_t *a, admin_archive_stats_t *st);
void admin_archive_print(const admin_t *a, const admin_archive_stats_t *st, int64_t now);
void admin_archive_json(const admin_t *a, const admin_archive_stats_t *st, bson_t *doc);

/* Called for each matching event by admin_each(); @now is the server's clock. Returns an
 * exit status: anything but EX_OK stops the walk. */
typedef int (*admin_visit_fn)(admin_t *a, const char *coll, outbox_collection_t *c,
                              const outbox_stored_event_t *ev, int64_t now, void *ctx);

/* Walks the events of @place matching the filters in every configured collection, at most
 * --limit in all. Returns an exit status. */
int admin_each(admin_t *a, outbox_place_t place, admin_visit_fn fn, void *ctx);

/* Appends @ev's fields (collection, entity, eventId, seq, type, time, reason ...) to @doc. */
void admin_event_json(bson_t *doc, const char *coll, const outbox_stored_event_t *ev);

/* Writes @ev as one tab-separated line, as `pending` and `dead-letters` list it. */
void admin_event_line(FILE *out, const char *coll, const outbox_stored_event_t *ev, int64_t now);

/* A handle on the namespace labelled @name (a target; else collection @name of the state
 * database) with the configured field names; NULL after printing why. */
outbox_collection_t *admin_collection(admin_t *a, const char *name);

/* Resolves the patterns into a->targets (listing the server once). Returns an exit status. */
int admin_targets_resolve(admin_t *a);
/* The target labelled @label, or NULL. */
const admin_target_t *admin_target(const admin_t *a, const char *label);
void admin_targets_cleanup(admin_t *a);

/* The relays' lease collection (--lease-collection; the state collection by default), or
 * NULL when the relay has none. */
const char *admin_lease_collection(const admin_t *a);

/* The exit status for a MongoDB error: EX_NOPERM for authentication and authorization
 * failures, EX_UNAVAILABLE when no server could be reached, EX_SOFTWARE otherwise. Prints
 * "outbox-admin: @what: message" on stderr. */
int admin_fail(const char *what, const bson_error_t *error);

/* The server's clock (hello's localTime), so that ages and lease expiry are judged as the
 * relays judge them; the local clock if the server does not say. */
bool admin_server_now(admin_t *a, int64_t *now_ms, bson_error_t *error);

/* Writes an entity id as the relay renders it in topics ("subject"), escaped as by
 * admin_print_text(). */
void admin_print_id(FILE *out, const bson_value_t *id);

/* Writes @len bytes of @s (NULL: "-") for a terminal: tab, CR, LF as \t \r \n, other ASCII
 * and C1 controls and DEL as \xNN, as the relay's text log does, so a value written by
 * anyone (an event type, a reason, an id) can neither move the cursor nor add a column or
 * a row. Other UTF-8 passes through. */
void admin_print_text(FILE *out, const char *s, size_t len);

/* admin_print_text() of a NUL-terminated string, "-" for NULL. */
void admin_print_str(FILE *out, const char *s);

/* Writes @ms as RFC 3339 UTC with milliseconds, or "-" for 0. */
void admin_print_time(FILE *out, int64_t ms);

/* Writes @ms as a short duration ("850ms", "12.3s", "5m02s", "3h04m", "2d03h"). */
void admin_print_age(FILE *out, int64_t ms);

/* Writes @doc as one line of relaxed extended JSON. */
void admin_print_json(FILE *out, const bson_t *doc);

#endif /* RELAY_ADMIN_H */

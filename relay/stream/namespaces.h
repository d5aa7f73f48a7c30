/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The watched set: every namespace (database, collection) the relay has met that matches the
 * patterns (config/namespace.h), each with a small index that never changes and is never
 * given to another namespace. An entity is (namespace index, _id), so two tenants' documents
 * with the same _id are two entities (stream/table.h keys on both).
 *
 * Namespaces come in three ways: the literal patterns at creation (indexes 0..n-1 in the
 * order given, so --database + --collection keep the indexes they always had), a change of
 * a namespace not met before (a tenant created while the relay runs), and listing the
 * server (relay_namespaces_list(), before a full sweep). A dropped or renamed namespace (or
 * its database) is marked gone: sweeps, scans and index checks skip it and components free
 * what they hold for it; its entry (two names) stays, so a later change of the same name
 * gets the same index back. Memory is one small entry per namespace ever met.
 *
 * Thread safety: every function takes the registry's lock; names returned stay valid until
 * relay_namespaces_destroy(). The main thread adds and drops; the scanner and clearer
 * threads read.
 */
#ifndef RELAY_STREAM_NAMESPACES_H
#define RELAY_STREAM_NAMESPACES_H

#include <stdbool.h>
#include <stddef.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "config/config.h"
#include "config/namespace.h"

typedef struct relay_namespaces_t relay_namespaces_t;

/* One namespace; the strings live as long as the registry. */
typedef struct {
   const char *db;
   const char *coll;
   /* How logs, the archive's "collection" and outbox-admin name it: the collection's name
    * when it is in the state database (as with --collection), "db.coll" elsewhere. */
   const char *name;
   int label; /* the first pattern it matches: the metrics' series (bounded cardinality) */
   bool gone; /* dropped or renamed away (until it appears again) */
} relay_ns_t;

/* Builds the patterns of @cfg (cfg->watch) and seeds the literal ones. NULL with @error on a
 * bad pattern (the configuration checked them already). */
relay_namespaces_t *relay_namespaces_new(const relay_config_t *cfg, bson_error_t *error);
void relay_namespaces_destroy(relay_namespaces_t *ns);

const relay_nsset_t *relay_namespaces_patterns(const relay_namespaces_t *ns);

/* The index of @db.@coll, added (or revived) when it matches the patterns; -1 when it does
 * not match. */
int relay_namespaces_take(relay_namespaces_t *ns, const char *db, const char *coll);
/* The index of @db.@coll if met before, else -1; never adds. */
int relay_namespaces_find(relay_namespaces_t *ns, const char *db, const char *coll);
/* How many indexes exist (0..count-1, gone ones included). */
int relay_namespaces_count(relay_namespaces_t *ns);
/* Fills @out for index @i; false if there is none (or @ns is NULL). */
bool relay_namespaces_get(relay_namespaces_t *ns, int i, relay_ns_t *out);
/* The collection, database and name (relay_ns_t.name) of @i, "?" if none. */
const char *relay_namespaces_coll(relay_namespaces_t *ns, int i);
const char *relay_namespaces_db(relay_namespaces_t *ns, int i);
const char *relay_namespaces_name(relay_namespaces_t *ns, int i);

/* Marks @db.@coll gone, or every namespace of @db when @coll is NULL (dropDatabase). Returns
 * how many were marked. */
int relay_namespaces_drop(relay_namespaces_t *ns, const char *db, const char *coll);

/* How many times the set changed (added, revived or gone): components that keep something
 * per namespace compare it to know when to look again. */
uint64_t relay_namespaces_version(relay_namespaces_t *ns);

/* Takes every namespace back that a drop made gone (with only literal patterns, before a
 * full sweep: relay_namespaces_list()). */
void relay_namespaces_revive(relay_namespaces_t *ns);

/* Lists the server's matching namespaces through @client and takes each (drops are learnt
 * from the stream, not from a listing, which may race with a create). With only literal
 * patterns nothing is listed (their namespaces are all known) and each is taken back.
 * Databases are listed with nameOnly and authorizedDatabases, collections with nameOnly and a
 * filter of type "collection", one database at a time, so memory is the names only. False
 * with @error when a listing failed (13 Unauthorized: the user lacks
 * listDatabases/listCollections). */
bool relay_namespaces_list(relay_namespaces_t *ns, mongoc_client_t *client, bson_error_t *error);

/* Collection handles by namespace index for one thread (relay.c's main thread, the clearer
 * thread): made on first use through that thread's client, freed when their namespace is
 * gone (checked when the set changed) or at the end. */
typedef struct {
   mongoc_collection_t **h;
   int n;
   uint64_t version; /* of the set when gone namespaces' handles were last freed */
} relay_ns_handles_t;

/* The handle of namespace @i (NULL if there is no such index). */
mongoc_collection_t *relay_ns_handle(relay_ns_handles_t *c, relay_namespaces_t *ns,
                                     mongoc_client_t *client, int i);
void relay_ns_handles_clear(relay_ns_handles_t *c);

#endif /* RELAY_STREAM_NAMESPACES_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Namespace patterns (--namespace DB.COLL, `*` globs in either part): which databases and
 * collections the relay watches. Pure rules, no I/O: parsing one pattern, matching a
 * namespace against a set, and the server-side filter a change stream uses. The same set is
 * applied by the reader's $match (a superset, for the server), by the relay when a change or
 * a listed collection names a namespace (exact), and by outbox-admin.
 *
 * The rule for what is never watched, whatever the patterns say: the databases admin, config
 * and local, collections named system.*, and the relay's own state, lease and archive
 * collections in the state database. A pattern that names one of them literally is refused
 * (the configuration is wrong); a glob that would match one simply does not (so `*.*` means
 * "every collection of the applications").
 *
 * A relay_nsset_t is immutable once built: safe to read from any thread.
 */
#ifndef RELAY_CONFIG_NAMESPACE_H
#define RELAY_CONFIG_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>

#include <bson/bson.h>

typedef struct relay_config_t relay_config_t;

/* One pattern: a database part and a collection part, each literal or a glob. */
typedef struct {
   char *db;
   char *coll;
   bool db_glob;
   bool coll_glob;
} relay_nspat_t;

typedef struct relay_nsset_t relay_nsset_t;

/* Whether @s matches @glob, where `*` matches any run of characters (also none) and every
 * other character only itself. */
bool relay_glob_match(const char *glob, const char *s);

/* Parses "DB.COLL" (the database part ends at the first dot: database names have none).
 * Checks MongoDB's naming rules for the literal characters and refuses admin, config, local
 * and system.* named literally. @what names the source for the message. On success fills
 * @out (free with relay_nspat_clear()). */
bool relay_nspat_parse(const char *text, const char *what, relay_nspat_t *out, bson_error_t *error);
void relay_nspat_clear(relay_nspat_t *p);

/* Whether @db/@coll is never watched by rule (admin, config, local, system.*). */
bool relay_ns_reserved(const char *db, const char *coll);

/* Builds the set from the patterns of @cfg (cfg->namespaces, already holding --database +
 * --collection as patterns), excluding the relay's own collections in cfg->state_database.
 * Refuses a pattern that names one of those literally. Free with relay_nsset_destroy(). */
relay_nsset_t *relay_nsset_new(const relay_config_t *cfg, bson_error_t *error);
void relay_nsset_destroy(relay_nsset_t *set);

/* Whether the namespace @db.@coll is watched. */
bool relay_nsset_match(const relay_nsset_t *set, const char *db, const char *coll);
/* The index of the first pattern @db.@coll matches, -1 when it is not watched. */
int relay_nsset_which(const relay_nsset_t *set, const char *db, const char *coll);
/* Whether some collection of database @db could be watched (for listing databases). */
bool relay_nsset_match_db(const relay_nsset_t *set, const char *db);
/* The one database every pattern names literally, or NULL when they span databases (or a
 * database part is a glob): a database stream then, else a cluster stream. */
const char *relay_nsset_single_db(const relay_nsset_t *set);
/* Whether every pattern is literal in both parts (no listing needed to know them all). */
bool relay_nsset_literal(const relay_nsset_t *set);
size_t relay_nsset_count(const relay_nsset_t *set);
const relay_nspat_t *relay_nsset_at(const relay_nsset_t *set, size_t i);

/* Appends to @doc the condition a change event's `ns` must meet: {ns.db, ns.coll} equal or
 * matching the globs as anchored regular expressions, one $or branch per pattern. A
 * superset of relay_nsset_match() (the reserved names are left to the server, which never
 * shows admin/config/local or system.* in a cluster stream, and to the relay). */
void relay_nsset_append_filter(const relay_nsset_t *set, bson_t *doc);
/* The same on the document @field ("ns", or "to": a rename's target; at most 10 bytes). */
void relay_nsset_append_filter_at(const relay_nsset_t *set, const char *field, bson_t *doc);

/* The anchored regular expression (POSIX ERE, as $regex takes it) for @glob. Free with
 * bson_free(). */
char *relay_glob_regex(const char *glob);

/* Completes @cfg after loading: --database + --collection become patterns (prepended to
 * those of --namespace), every pattern is checked, and the state database is chosen
 * (--state-database, else --database, else the one database the patterns name; required
 * when they span databases). False with a message otherwise. */
bool relay_config_resolve_namespaces(relay_config_t *cfg, bson_error_t *error);

#endif /* RELAY_CONFIG_NAMESPACE_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's archive writes (--archive-collection; the contract is in outbox/archive.h),
 * run by the clearer thread just before it clears a batch: one unordered insert per
 * collection's statements, each event keyed by its id. An insert that finds the event already
 * archived (11000 duplicate key: the relay was killed between an archive and its clear and
 * published the event again) counts as archived: the first copy stays. A statement is cleared
 * only when all its events are archived; the others stay pending and are retried with the
 * clears' backoff (writer.c).
 *
 * Why inserts and not upserts with $setOnInsert: the same "first write wins" with no query
 * per event, and a failCommand fail point on "insert" can fail archive writes alone (the
 * clears are updates), which the tests use.
 *
 * Thread safety: called from the clearer thread only, on its own client.
 */
#ifndef RELAY_ARCHIVE_H
#define RELAY_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "store/clear-job.h"

/* Archives the events of the @n statements @stmts (those of one namespace, named @coll in
 * the entries: the collection's name in the state database, "db.coll" elsewhere, so one
 * name never means two tenants' collections); each entry
 * records the group (cfg->name) and the @member (this process's instance id; NULL: none)
 * that archived it. Returns true
 * when every event is archived. Otherwise false with @error set: statements whose events
 * were not all archived have ->failed set (all of them when the reply does not say which).
 * *@inserted counts the entries written now (not those already there). */
bool relay_archive_write(mongoc_collection_t *archive, const relay_config_t *cfg,
                         const char *member, const char *coll, relay_clear_stmt_t **stmts, size_t n,
                         int64_t *inserted, bson_error_t *error);

/* Installs the archive's validator and indexes (outbox_archive_ensure_schema() with
 * --archive-ttl). */
bool relay_archive_ensure(mongoc_collection_t *archive, const relay_config_t *cfg,
                          bson_error_t *error);

#endif /* RELAY_ARCHIVE_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The archive: published events kept after the relay cleared them, so that a consumer
 * deployed later, one that lost its database, or a bug fix that must reprocess last week's
 * events has something to read. outbox-relay writes it when started with
 * --archive-collection NAME (off by default); outbox-admin replay publishes from it again;
 * services read it with the cursor below.
 *
 * THE ARCHIVE CONTRACT. One document per published event, in a collection of its own (in the
 * outbox collections' database), written once and never changed:
 *
 *    { _id:         String,  the event id (so a second write of the same event is refused:
 *                            the first one stays, whatever happens in between),
 *      collection:  String,  the outbox collection the event came from,
 *      entityId:    any,     the entity's _id,
 *      seq:         Int64,   the event's per-entity seq (>= 1; an int32 stored by another
 *                            writer is archived as Int64),
 *      type:        String,  1..128 characters of [A-Za-z0-9._-],
 *      time:        Date,    the event's time (when its change was committed; optional:
 *                            an event stored without one is published and archived without),
 *      data:        Document,
 *      headers:     Document of strings (optional): the headers the relay published,
 *      partition:   Int32,   the relay group's partition of the entity (optional),
 *      publishedAt: Date,    when the relay archived it, just after the broker acknowledged
 *                            it and before it was cleared,
 *      relay:       String,  the relay's --name, which is its group's name (optional),
 *      member:      String   the group member that archived it: its instance id
 *                            "<host>/<pid>/<8 hex>", as in the group's member documents
 *                            (optional; entries written before it was recorded lack it) }
 *
 * The relay archives a batch of acknowledged events before it clears them and clears only
 * what is archived: an event is in its document's events array, or in the archive, or
 * (between the two writes) in both, never in neither. A relay killed between the two writes
 * publishes the events again after its restart and archives them again: the archive keeps
 * the first copy (the _id is the event id), so nothing is stored twice. The relay counts a
 * duplicate key as archived only when the entry is the same event (collection, entityId,
 * seq); another entity's event with the same id is dead-lettered with a reason, as is an
 * event a validator refuses three times while the archive takes others.
 *
 * The validator is made from the event contract (outbox/contract.h): each EVENT row's
 * written type with the bounds the relay accepts, so it takes every event the relay
 * publishes.
 *
 * outbox_archive_ensure_schema() enforces this contract with a $jsonSchema validator and
 * creates the indexes the cursor reads through: "outbox_archive_time" {time: 1},
 * "outbox_archive_entity" {collection: 1, entityId: 1, seq: 1}, "outbox_archive_type"
 * {type: 1, time: 1} and, with a ttlSeconds option, the TTL index "outbox_archive_ttl"
 * {publishedAt: 1} that retires entries that long after they were published. Each is created
 * alone; an index someone made on the same key under another name is used instead when it
 * indexes every entry (not partial, not sparse, simple collation) and, for the TTL, has the
 * same expireAfterSeconds.
 *
 * A live pull feed in commit order: watch the archive collection with a change stream
 * (operationType "insert"; fullDocument is the entry) and keep the resume token, as the relay
 * does for the outbox collections.
 *
 * THREADS. The functions take a mongoc_collection_t, which (like its client) must be used by
 * one thread at a time; a cursor borrows it until the cursor is destroyed.
 */
#ifndef OUTBOX_ARCHIVE_H
#define OUTBOX_ARCHIVE_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "outbox/outbox-macros.h"
#include "outbox-version.h"

OUTBOX_BEGIN_DECLS

/* One archived event, returned by outbox_archive_cursor_next(). Every pointer is owned by the
 * cursor and valid until the next call on it. A field missing from the entry (an archive
 * written without the validator) is NULL or 0. */
typedef struct {
   const char *event_id;          /* _id */
   const char *collection;        /* the outbox collection it came from */
   const bson_value_t *entity_id; /* entityId */
   int64_t seq;
   const char *type;
   int64_t time_ms;         /* time, ms since the Unix epoch (UTC) */
   const bson_t *data;      /* empty if missing */
   const bson_t *headers;   /* empty if none */
   int32_t partition;       /* -1 if not recorded */
   int64_t published_at_ms; /* publishedAt */
   const bson_t *entry;     /* the whole archived document */
   int64_t reserved[8];
} outbox_archived_event_t;

/* A cursor over archived events; not thread-safe. */
typedef struct _outbox_archive_cursor_t outbox_archive_cursor_t;

/* Lists archived events of `archive`, in seq order per entity: sorted by collection, entity
 * id and seq (through "outbox_archive_entity"), so events of one entity come together and
 * oldest first. An entity deleted and created again (its seqs restarted at 1) comes life by
 * life, oldest life first (lives told apart by publishedAt), never interleaved by seq; the
 * cursor holds one entity's matching entries in memory at a time for that. `opts` (may be NULL) is
 * read during the call; all filters must hold: collection  string: only events of this outbox
 * collection; entityId    any BSON value: only this entity; eventId     string: only this event;
 *   type        string: only events of this type;
 *   since       Date: events whose time is at or after it;
 *   until       Date: events whose time is before it;
 *   limit       int, default 0 (none): stop after this many.
 * No I/O happens until the first outbox_archive_cursor_next(). Returns NULL with
 * OUTBOX_ERROR_INVALID_ARGUMENT on a bad option. `archive` is borrowed until the cursor is
 * destroyed. Free with outbox_archive_cursor_destroy(). */
OUTBOX_API outbox_archive_cursor_t *outbox_archive_find(mongoc_collection_t *archive,
                                                        const bson_t *opts, bson_error_t *error);

/* Sets *event to the next archived event and returns true, or returns false at the end or on
 * an error (see outbox_archive_cursor_error()). *event is valid until the next call. */
OUTBOX_API bool outbox_archive_cursor_next(outbox_archive_cursor_t *cursor,
                                           const outbox_archived_event_t **event);

/* True (and fills `error`) if the cursor stopped on an error. */
OUTBOX_API bool outbox_archive_cursor_error(const outbox_archive_cursor_t *cursor,
                                            bson_error_t *error);

/* Frees the cursor. NULL is allowed. */
OUTBOX_API void outbox_archive_cursor_destroy(outbox_archive_cursor_t *cursor);

/* Installs the archive contract as `archive`'s $jsonSchema validator (titled "outbox archive
 * contract"; creating the collection, or with collMod) and creates its indexes (see above).
 * Idempotent: call it at start-up (the relay does). `opts` (may be NULL):
 *   ttlSeconds  int, default 0: with a positive value (at most 2147483647, MongoDB's limit),
 *               entries are removed that many seconds after publishedAt (TTL index
 *               "outbox_archive_ttl"; ours with another value is dropped and created again).
 *               0 leaves an existing TTL index alone.
 * Every index is tried even when one fails; the first failure is returned. An index of
 * someone else's on {publishedAt: 1} with another (or no) expireAfterSeconds is left alone:
 * OUTBOX_ERROR_ARCHIVE_INDEX, and the TTL is not in force (outbox_archive_ttl_seconds()).
 * The archive belongs to outbox: a validator someone else installed on it is replaced.
 * Errors from the server (e.g. 13 Unauthorized for a user without collMod) pass through. */
OUTBOX_API bool outbox_archive_ensure_schema(mongoc_collection_t *archive, const bson_t *opts,
                                             bson_error_t *error);

/* The expireAfterSeconds in force on `archive`: that of its TTL index on {publishedAt: 1}
 * (whatever its name; not a partial one), 0 when there is none. False on a server error. */
OUTBOX_API bool outbox_archive_ttl_seconds(mongoc_collection_t *archive, int64_t *ttl,
                                           bson_error_t *error);

/* The validator outbox_archive_ensure_schema() installs ({$jsonSchema: {...}}), e.g. for a
 * tool to print. `validator` is initialised by the callee; free it with bson_destroy(). */
OUTBOX_API void outbox_archive_schema(bson_t *validator);

OUTBOX_END_DECLS

#endif /* OUTBOX_ARCHIVE_H */

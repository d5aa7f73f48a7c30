/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox: record the events a change raises in the same single-document update as the
 * change itself, so an event is stored if and only if the change is. A relay
 * (outbox-relay) publishes the pending events later and removes them from the document.
 *
 * Example (error handling shortened):
 *
 *    mongoc_client_pool_t *pool = mongoc_client_pool_new (uri);
 *    mongoc_client_pool_set_error_api (pool, MONGOC_ERROR_API_VERSION_2);
 *    bson_error_t error;
 *    outbox_collection_t *contacts =
 *       outbox_collection_new (pool, "app", "contacts", NULL, &error);
 *    outbox_collection_ensure_indexes (contacts, &error);   // once, at start-up
 *
 *    bson_value_t id = {.value_type = BSON_TYPE_UTF8};
 *    id.value.v_utf8.str = "c-42";
 *    id.value.v_utf8.len = 4;
 *    bson_t *fields = BCON_NEW ("name", BCON_UTF8 ("Ada"));
 *
 *    outbox_event_t *created = outbox_event_new ("contact.created", fields);
 *    outbox_commit_t res;
 *    if (!outbox_collection_create (contacts, &id, fields, &created, 1, &res, &error)) ...
 *    // res.version == 1, res.first_seq == res.last_seq == 1
 *    outbox_event_destroy (created);
 *    bson_destroy (fields);
 *
 *    bson_t *upd = BCON_NEW ("$set", "{", "email", BCON_UTF8 ("a@example.org"), "}");
 *    outbox_event_t *changed = outbox_event_new ("contact.email-changed", NULL);
 *    outbox_event_set_header (changed, "traceparent", "00-...-01", &error);
 *    if (!outbox_collection_update (contacts, &id, res.version, upd, &changed, 1, &res,
 *                                   &error)) {
 *       if (error.domain == OUTBOX_ERROR_DOMAIN && error.code == OUTBOX_ERROR_CONFLICT)
 *          ... // someone else changed it: res.version is the current version (HTTP 412)
 *    }
 *    outbox_event_destroy (changed);
 *    bson_destroy (upd);
 *    outbox_collection_destroy (contacts);
 *    mongoc_client_pool_destroy (pool);
 *
 * THE HEADERS. This one includes them all, so it gives the whole API; each also compiles on its
 * own and includes only the ones below it:
 *   outbox/outbox-version.h  the version (OUTBOX_VERSION_STRING, outbox_get_version());
 *   outbox/error.h           the error domain and codes (ERRORS: how every function fails);
 *   outbox/event.h           outbox_event_t, an event to commit;
 *   outbox/collection.h      outbox_collection_t: commits, reads, deletes, indexes, and THE
 *                            STORED CONTRACT every document keeps (THREADS too);
 *   outbox/dead-letters.h    pending events and dead letters: list, count, requeue, discard;
 *   outbox/schema.h          the stored contract as a server-side validator;
 *   outbox/inbox.h           the consumer side: apply each event once (the idempotent inbox);
 *   outbox/archive.h         the archive of published events (outbox-relay --archive-collection)
 *                            and a cursor over it;
 *   outbox/trace.h           W3C trace context (traceparent, tracestate) on events;
 *   outbox/contract.h        THE EVENT CONTRACT: one table of every stored event field and
 *                            message part, its types, limits, text rules and outcomes.
 * Each header says at its top who may use what it declares from which threads. Relay
 * internals (how outbox-relay finds, publishes and clears events) are in relay/README.md.
 */
#ifndef OUTBOX_H
#define OUTBOX_H

#include "outbox-version.h"
#include "outbox/error.h"
#include "outbox/event.h"
#include "outbox/collection.h"
#include "outbox/dead-letters.h"
#include "outbox/schema.h"
#include "outbox/inbox.h"
#include "outbox/archive.h"  /* the archive of published events */
#include "outbox/trace.h"    /* W3C trace context on events */
#include "outbox/contract.h" /* the event contract: fields, rules, outcomes */

#endif /* OUTBOX_H */

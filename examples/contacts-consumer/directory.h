/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The consumer's read model: a contact directory (one entry per contact, listed by company)
 * kept in `<db>.directory`, fed by contact events through the idempotent inbox, so a
 * redelivered event never changes it twice.
 */
#ifndef CONSUMER_DIRECTORY_H
#define CONSUMER_DIRECTORY_H

#include <mongoc/mongoc.h>
#include <stdio.h>

#include "cloudevent.h"

typedef struct _directory_t directory_t;

/* `pool` is borrowed and must outlive the directory. `out` receives one line per event. */
directory_t *directory_new(mongoc_client_pool_t *pool, const char *db, FILE *out,
                           bson_error_t *error);
void directory_destroy(directory_t *dir);
/* Creates the inbox ledger's TTL index. */
bool directory_prepare(directory_t *dir, bson_error_t *error);

/* Applies one event and prints what happened: applied, duplicate (skipped), gap, late.
 * Returns false only when MongoDB failed: then nothing was applied and the event must be
 * delivered again. Events of unknown types are recorded as processed and otherwise ignored. */
bool directory_apply(directory_t *dir, const cloudevent_t *ev, bson_error_t *error);

/* Prints the live entries grouped by company. */
bool directory_print(directory_t *dir, bson_error_t *error);

#endif /* CONSUMER_DIRECTORY_H */

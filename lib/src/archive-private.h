/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What the archive's files share inside liboutbox.
 */
#ifndef OUTBOX_ARCHIVE_PRIVATE_H
#define OUTBOX_ARCHIVE_PRIVATE_H

#include <mongoc/mongoc.h>

/* The archive's indexes, one by one (archive-index.c): time, entity, type and, with a
 * positive @ttl, the TTL index. Every one is tried; false with the first failure. */
bool _outbox_archive_ensure_indexes(mongoc_collection_t *archive, int64_t ttl, bson_error_t *error);

#endif /* OUTBOX_ARCHIVE_PRIVATE_H */

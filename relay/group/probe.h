/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Whether the server hashes _id values as the relay does ($toHashedIndexKey), so that the
 * change stream and the sweeps can filter partitions on the server. Main thread; no state.
 */
#ifndef RELAY_GROUP_PROBE_H
#define RELAY_GROUP_PROBE_H

#include <mongoc/mongoc.h>

/* Asks the server through @coll (any collection of the database). 1: it hashes like the
 * relay (filter there); -1: it does not, or cannot (filter here); 0: it could not be asked
 * (ask again later). */
int relay_group_probe(mongoc_collection_t *coll);

#endif /* RELAY_GROUP_PROBE_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * TTL indexes: one pass deleting what has expired (the thread is net/ttl-thread.c).
 */
#ifndef MD_TTL_H
#define MD_TTL_H

#include "data/dataset.h"

/* Deletes expired documents now; returns how many. Caller holds the data set's lock. */
size_t md_ttl_pass(md_dataset_t *ds);

#endif

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The commit loop shared by the concurrency test's threads and its writer processes, and the
 * check of the result.
 */
#ifndef OUTBOX_LIB_WRITER_H
#define OUTBOX_LIB_WRITER_H

#include <outbox/outbox.h>

/* Events appended by commit c (0-based) of any writer. */
#define LW_EVENTS_OF(c) (1 + (c) % 2)

/* Makes `commits` commits as writer `writer` to entity `id`, retrying conflicts and
 * exhausted retries until each is in. Thread-safe (for a shared `coll`). */
bool lw_run(outbox_collection_t *coll, const bson_value_t *id, int writer, int commits,
            bson_error_t *error);

/* Checks the entity after `writers` writers made `commits` commits each on top of a creation
 * without events: version, eventSeq, counter, events numbered 1..N without gap or duplicate,
 * each commit's events adjacent and each writer's commits in order. Returns false with a
 * message in `why` (at least 256 bytes). */
bool lw_check(const bson_t *doc, int writers, int commits, char *why, size_t why_size);

#endif /* OUTBOX_LIB_WRITER_H */

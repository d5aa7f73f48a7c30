/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The topic filters a consumer instance subscribes to. With the relay's topic template
 * holding {partition} (outbox/{collection}/{partition}/{id}), instances of one consumer
 * service split the entities between them by partition: each subscribes to its own set with
 * plain filters (outbox/contacts/3/#), so every event of an entity reaches one instance, in
 * order, on any broker. No I/O: unit-tested in tests/examples/test-inbox-unit.c.
 */
#ifndef CONSUMER_TOPICS_H
#define CONSUMER_TOPICS_H

#include <stddef.h>

/* Most partitions a relay group can have (its --partitions limit). */
#define TOPICS_MAX_PARTITIONS 4096

/* Expands `filter` for the partition set `set`: a comma-separated list of numbers and
 * ranges ("0-7", "0,2,5-6") below TOPICS_MAX_PARTITIONS, each partition once. The result has
 * one filter per partition, in increasing order, with "{partition}" replaced by the number.
 * Without a set (NULL) the result is `filter` alone, which may then not hold "{partition}";
 * with a set it must. Returns a NULL-terminated array (*n filters; free with topics_free()),
 * or NULL with a message in `err`. */
char **topics_expand(const char *filter, const char *set, size_t *n, char *err, size_t errlen);

void topics_free(char **topics);

#endif /* CONSUMER_TOPICS_H */

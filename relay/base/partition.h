/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Partitions: how a group of relays splits the entities of its collections. An entity's
 * partition is a pure function of MongoDB's hashed-index key h of its _id (hash.h): the P
 * partitions are P contiguous ranges of h, partition p = floor((h - INT64_MIN) * P / 2^64),
 * so it never changes and the server can select a partition's entities with range
 * comparisons on {$toHashedIndexKey: "$_id"} (ranges, not $mod: $abs of INT64_MIN throws).
 * Neighbouring owned partitions are merged into one range, so a filter stays short.
 *
 * Server-side filters only narrow what the server was checked to hash exactly like
 * relay_hash_value() (the probe in group.c covers these _id types: RELAY_PARTITION_TYPES);
 * documents whose _id is of another type always pass, and the relay decides by its own
 * hash. So the server's filter and the relay's own check can never disagree about an entity.
 *
 * Pure functions and a plain bitset: no locks, no I/O.
 */
#ifndef RELAY_PARTITION_H
#define RELAY_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

/* Most partitions a group may have (--partitions). */
#define RELAY_PARTITIONS_MAX 4096

/* The _id types the start-up probe checks the server's $toHashedIndexKey against; server
 * filters narrow only these. */
#define RELAY_PARTITION_TYPES                                                                      \
   {                                                                                               \
      "double", "string", "object", "binData", "objectId", "bool", "date", "int", "long"           \
   }

/* The partition of hashed key @h among @n partitions (1..RELAY_PARTITIONS_MAX). */
int relay_partition_of(int64_t h, int n);

/* The smallest hashed key of partition @p of @n. Partition p covers [lo(p), lo(p + 1)),
 * the last one up to INT64_MAX inclusive. */
int64_t relay_partition_lo(int p, int n);

/* A set of partitions. */
typedef struct {
   uint64_t words[RELAY_PARTITIONS_MAX / 64];
} relay_partset_t;

void relay_partset_clear(relay_partset_t *s);
void relay_partset_add(relay_partset_t *s, int p);
void relay_partset_remove(relay_partset_t *s, int p);
bool relay_partset_has(const relay_partset_t *s, int p);
int relay_partset_count(const relay_partset_t *s, int n);
bool relay_partset_equal(const relay_partset_t *a, const relay_partset_t *b);

/* Appends the set as "0-7, 12, 30-31" ("none" when empty). */
void relay_partset_format(const relay_partset_t *s, int n, bson_string_t *out);

/* One range of hashed keys: [lo, hi), or [lo, INT64_MAX] when @to_max. */
typedef struct {
   int64_t lo, hi;
   bool to_max;
} relay_hash_range_t;

/* Fills @out (room for @n / 2 + 1 ranges at most are ever needed) with the merged ranges of
 * the partitions in @s among @n; returns how many. */
int relay_partset_ranges(const relay_partset_t *s, int n, relay_hash_range_t *out);

/* Appends to the change stream @pipeline (an array being built, next index @*index) the
 * stages that keep only changes of entities in @s: an $addFields of the hashed key of
 * documentKey._id into RELAY_PARTITION_HASH_FIELD and a $match on its ranges (changes
 * whose _id is of an unchecked type, and events without one, pass). */
#define RELAY_PARTITION_HASH_FIELD "outboxHash"
void relay_partition_append_stream_stages(const relay_partset_t *s, int n, bson_t *pipeline,
                                          uint32_t *index);

/* Appends to the query @filter a condition keeping only documents whose _id is in @s (or of
 * an unchecked type): {$or: [{_id: {$not: {$type: [...]}}}, {$expr: ranges}]}. */
void relay_partition_append_sweep_filter(const relay_partset_t *s, int n, bson_t *filter);

#endif /* RELAY_PARTITION_H */

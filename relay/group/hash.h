/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * MongoDB's hashed-index key of a BSON value: the 64-bit number that a hashed index, a hashed
 * shard key and the $toHashedIndexKey expression compute (BSONElementHasher::hash64 with the
 * default seed 0). The relay computes it itself so that its partition of an entity is the one
 * the server's stream filter and sweep filter use (partition.h), and so that it can filter in
 * the relay where the server lacks $toHashedIndexKey.
 *
 * What is hashed (read from MongoDB's src/mongo/db/hasher.cpp, implemented independently):
 * MD5 over the seed (int32, little-endian), then the element: its canonical type (int32:
 * numbers 10, strings and symbols 15, documents 20, arrays 25, binary 30, ObjectId 35, bool
 * 40, date 45, timestamp 47, ...), then for a number its value as a 64-bit integer (doubles
 * truncated and clamped, NaN is 0: int32 5, int64 5 and 5.7 hash alike), for a document or
 * array every field as (type, name with its NUL, value) and an end marker, and for anything
 * else the element's value bytes as stored in BSON. The result is the digest's first eight
 * bytes read as a little-endian int64.
 *
 * test-mongod has its own implementation (tests/mongod/engine/hash.c), kept separate on
 * purpose: a bug shared by both would hide in both. Both are tested against the same known
 * answers taken from MongoDB itself (tests/fixtures/hashed-index-keys.json: hasher_test.cpp,
 * jstests/core/hash.js, the manual; tests/relay/group/test-hash.c).
 *
 * Pure functions: thread-safe.
 */
#ifndef RELAY_HASH_H
#define RELAY_HASH_H

#include <stdint.h>

#include <bson/bson.h>

/* The hashed-index key of @value (any BSON type). */
int64_t relay_hash_value(const bson_value_t *value);

/* The hashed-index key of the element @iter points at (its value; the name is ignored). */
int64_t relay_hash_iter(const bson_iter_t *iter);

#endif /* RELAY_HASH_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The query engine of test-mongod: pure functions over libbson documents, no I/O, no
 * locking, no global state. Errors are reported in a bson_error_t whose `code` is the
 * MongoDB server error code (e.g. 2 BadValue, 9 FailedToParse, 14 TypeMismatch) and whose
 * `message` is the errmsg MongoDB would send; `domain` is TM_ERROR_DOMAIN.
 *
 * Semantics follow MongoDB 6.0 (see ../shared/docs/mongodb-test-server.md, section 5).
 * Where something is not supported, functions fail with code 2 BadValue (or 9 for an
 * unknown operator) and a message that names it; they never silently ignore it.
 */
#ifndef TM_ENGINE_H
#define TM_ENGINE_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stdint.h>

#define TM_ERROR_DOMAIN 0x544d /* "TM" */

/* Sets *error (if not NULL) to {TM_ERROR_DOMAIN, code, printf-style message}; returns false. */
bool tm_error_set(bson_error_t *error, int32_t code, const char *fmt, ...) BSON_GNUC_PRINTF(3, 4);
/* The name of error `code` in MongoDB 6.0 (error-codes.c), NULL when it has none. */
const char *tm_code_name(int32_t code);

/* ---- comparison ------------------------------------------------------------------------- */

/* Compares two BSON values in MongoDB's canonical sort order: MinKey < Null (and missing) <
 * Numbers (int32, int64, double, decimal128 compared by value) < String/Symbol < Object <
 * Array < BinData < ObjectId < Bool < Date < Timestamp < Regex < MaxKey. Returns <0, 0, >0.
 * Documents and arrays compare element by element (type, then field name, then value). */
int tm_value_compare(const bson_value_t *a, const bson_value_t *b);

/* BSON equality as MongoDB's $eq sees it: numbers by value (1 == 1.0 == 1L), documents field
 * by field in order, strings bytewise. */
bool tm_value_equal(const bson_value_t *a, const bson_value_t *b);

/* ---- matching --------------------------------------------------------------------------- */

/* A parsed filter. Parsing validates the whole filter once (unknown operator -> 2 BadValue
 * "unknown operator: $foo", malformed operand -> 2 or 14), so matching cannot fail. */
typedef struct _tm_matcher_t tm_matcher_t;

/* Returns a new matcher for `filter` (copied), or NULL with *error set. An empty filter
 * matches everything. Supports $eq $ne $gt $gte $lt $lte $in $nin $exists $type $and $or
 * $nor $not $elemMatch $size $all $mod $regex (with $options; POSIX extended syntax plus
 * \d), $expr with the aggregation expressions of tm_pipeline_run, and $jsonSchema as
 * MongoDB 6.0 supports it (draft 4 keywords without $ref, $schema, default, definitions,
 * format and id, plus bsonType; parse errors 9 / 14 / 2 worded as mongod words them);
 * $where and $text are rejected with 2. */
tm_matcher_t *tm_matcher_new(const bson_t *filter, bson_error_t *error);

void tm_matcher_destroy(tm_matcher_t *matcher);

/* True if `doc` matches. If `positional` is not NULL it receives the array index that the
 * first array-descending predicate matched (for the positional `$` update operator), or -1. */
bool tm_matcher_match(const tm_matcher_t *matcher, const bson_t *doc, int32_t *positional);

/* Equality fields of a filter for upsert seeding: top-level `{field: value}` and `$eq`
 * predicates, recursively through `$and`. Appends them to `seed` (dotted paths expanded into
 * subdocuments; `_id` first, the rest in lexicographic order as MongoDB 5.0+ builds it).
 * Returns false with *error (54) on a path matched twice or on overlapping paths. */
bool tm_filter_upsert_seed(const bson_t *filter, bson_t *seed, bson_error_t *error);

/* ---- document validation ------------------------------------------------------------- */

/* The `details` of the errInfo that MongoDB 6.0 returns with error 121
 * DocumentValidationFailure when `doc` does not match the collection validator `validator`
 * (a matcher built from the validator document): {operatorName: "$jsonSchema",
 * schemaRulesNotSatisfied: [...]}, {operatorName: "$and", clausesNotSatisfied: [...]},
 * {operatorName: "$gt", specifiedAs, reason, consideredValue} ... as
 * doc_validation_error.cpp builds them. `details` is initialised by the callee. Only
 * meaningful for a document the validator rejects. */
void tm_validation_details(const tm_matcher_t *validator, const bson_t *doc, bson_t *details);

/* ---- updates ---------------------------------------------------------------------------- */

/* What an update changed, in the shape the change stream's `updateDescription` reports
 * (see the summary, section 4: `$push` appending to a non-empty array gives one
 * "path.N" key per new element; other array operators give the whole array; a new path gives
 * its first missing component with its subtree; a `$push` with a `$slice` that drops
 * elements, `$sort` or `$position` gives the whole array; no-op changes give nothing).
 * updatedFields keys come in document order; removedFields in the order applied. Replacement
 * updates leave all three empty (their event is a "replace"). All three documents are owned
 * by the struct; initialise with tm_update_desc_init and free with tm_update_desc_destroy. */
typedef struct {
   bson_t updated_fields;   /* {"a.b": value, ...} */
   bson_t removed_fields;   /* array of dotted paths, as a BSON array {"0": "x", ...} */
   bson_t truncated_arrays; /* array of {field, newSize}; empty unless pipeline updates */
} tm_update_desc_t;

void tm_update_desc_init(tm_update_desc_t *desc);
void tm_update_desc_destroy(tm_update_desc_t *desc);

/* A parsed update: an operator document ({$set: ..., $push: ...}) or a replacement document
 * (no `$` keys). Validation happens here: unknown operator -> 9 "Unknown modifier: $foo",
 * conflicting paths -> 40, an operator whose value is not a document -> 9 ({$set: {}} is a
 * valid no-op since MongoDB 5.0), `$`-prefixed top-level fields in a replacement -> 52,
 * `_id` in a replacement is allowed only if unchanged (checked at apply time -> 66),
 * arrayFilters identifiers that the update does not use -> 9, `$[id]` without a matching
 * filter -> 2. The bytes of a BSON array of stages (keys "0", "1", ...) are taken for a
 * pipeline-style update; tm_update_new_pipeline says so explicitly. The update copies
 * `update` and `array_filters`. */
typedef struct _tm_update_t tm_update_t;

tm_update_t *tm_update_new(const bson_t *update, const bson_t *array_filters /* array or NULL */,
                           bson_error_t *error);

/* Like tm_update_new for a pipeline-style update (`pipeline` is the BSON array of stages;
 * $addFields/$set, $project, $unset, $replaceRoot/$replaceWith). Unlike tm_update_new, an
 * empty array is accepted (a no-op). arrayFilters are rejected with 72. */
tm_update_t *tm_update_new_pipeline(const bson_t *pipeline, const bson_t *array_filters,
                                    bson_error_t *error);

void tm_update_destroy(tm_update_t *update);

bool tm_update_is_replacement(const tm_update_t *update);

/* Applies the update to `doc`, writing the result to `out` (initialised by the callee with
 * bson_init; the caller destroys it, also on failure). `positional` is the index from
 * tm_matcher_match, or -1. `is_insert` is true when applying to an upsert seed ($setOnInsert
 * applies then). `*modified` is false when the result equals the input (a no-op update).
 * `desc` (may be NULL) receives the update description. Fails with 14 (e.g. $inc on a
 * string), 28 (path through a scalar), 66 (changing _id), 2 ($push onto a non-array). */
bool tm_update_apply(const tm_update_t *update, const bson_t *doc, int32_t positional,
                     bool is_insert, bson_t *out, bool *modified, tm_update_desc_t *desc,
                     bson_error_t *error);

/* ---- projection and sort ---------------------------------------------------------------- */

typedef struct _tm_projection_t tm_projection_t;

/* Inclusion ({a: 1, "b.c": 1}), exclusion ({a: 0}), `_id` default-included; mixing inclusion
 * and exclusion (except _id) -> 31254 / 2 as MongoDB does. `$slice`, `$elemMatch` and
 * positional projection may be rejected with 2 naming them. */
tm_projection_t *tm_projection_new(const bson_t *projection, bson_error_t *error);
void tm_projection_destroy(tm_projection_t *projection);
/* `out` is initialised by the callee. */
void tm_projection_apply(const tm_projection_t *projection, const bson_t *doc, bson_t *out);

typedef struct _tm_sort_t tm_sort_t;

/* {field: 1 | -1, ...}; dotted paths; arrays sort by their min (ascending) or max
 * (descending) element as MongoDB does. Bad direction -> 15974 / 2. */
tm_sort_t *tm_sort_new(const bson_t *sort, bson_error_t *error);
void tm_sort_destroy(tm_sort_t *sort);
int tm_sort_compare(const tm_sort_t *sort, const bson_t *a, const bson_t *b);

/* ---- aggregation ------------------------------------------------------------------------ */

/* Runs a pipeline of $match $project $addFields/$set $unset $sort $skip $limit $group
 * $count $unwind $replaceRoot over `in` (n documents, borrowed). On success `*out` is a new
 * array of `*n_out` documents (each allocated with bson_new; free with
 * tm_docs_free(*out, *n_out)). Unknown stage -> 40324 "Unrecognized pipeline stage name:
 * '$foo'". $group supports _id expressions and $sum $avg $min $max $first $last $push
 * $addToSet $count; expressions support field paths ("$a.b"), literals and the common
 * operators used by drivers' tests. */
bool tm_pipeline_run(const bson_t *pipeline /* array */, bson_t **in, size_t n_in, bson_t ***out,
                     size_t *n_out, bson_error_t *error);

void tm_docs_free(bson_t **docs, size_t n);

/* A parsed, validated pipeline for running many times (e.g. a change stream's stages on each
 * event): parse errors (unknown stage 40324, bad operators, ...) surface here once.
 * tm_pipeline_exec behaves like tm_pipeline_run. The pipeline copies `pipeline`; it is
 * immutable once built, so exec may run from several threads. */
typedef struct _tm_pipeline_t tm_pipeline_t;

tm_pipeline_t *tm_pipeline_new(const bson_t *pipeline /* array */, bson_error_t *error);
/* Like tm_pipeline_new with the aggregate command's `let` (a document, may be NULL): its
 * constant expressions are evaluated once and visible as $$name in every stage. */
tm_pipeline_t *tm_pipeline_new_let(const bson_t *pipeline, const bson_t *let, bson_error_t *error);
bool tm_pipeline_exec(const tm_pipeline_t *pipeline, bson_t **in, size_t n_in, bson_t ***out,
                      size_t *n_out, bson_error_t *error);
void tm_pipeline_destroy(tm_pipeline_t *pipeline);

/* ---- what expressions see besides the document ------------------------------------------ */

/* The clock of one command: $$NOW (a Date) and $$CLUSTER_TIME (a Timestamp) keep these values
 * for the whole command, as in MongoDB. The server sets it on the thread that runs a command
 * before parsing anything and clears it (NULL) afterwards; it is thread-local, so concurrent
 * commands on other threads are unaffected. With no clock set, $$NOW reads the wall clock at
 * each evaluation and $$CLUSTER_TIME fails with 51144, as on a standalone mongod. */
typedef struct {
   int64_t now_ms;          /* $$NOW, milliseconds since the epoch */
   uint32_t cluster_time_t; /* $$CLUSTER_TIME */
   uint32_t cluster_time_i;
   bool has_cluster_time;
} tm_command_clock_t;

void tm_command_clock_set(const tm_command_clock_t *clock /* copied; NULL clears */);

/* Makes the engine behave like a server that lacks the expression `name` ("$toHashedIndexKey"
 * or "toHashedIndexKey"): parsing it then fails with 168 "Unrecognized expression '$name'",
 * exactly as for an unknown expression. Returns false if the engine does not know `name` (or
 * 16 are disabled already). Process-wide: call at start-up, before any thread parses. */
bool tm_expr_disable(const char *name);

/* ---- hashing ---------------------------------------------------------------------------- */

/* MongoDB's hashed-index key of `value` with `seed` (0 for hashed indexes, shard keys and
 * $toHashedIndexKey): the same Int64 mongod computes, for every BSON type. All numeric types
 * hash by their value truncated to an int64 (NaN as 0, out-of-range values clamped), so 5,
 * 5L and 5.5 hash alike; a missing value (BSON_TYPE_EOD) hashes as null. Thread-safe. */
int64_t tm_value_hash64(const bson_value_t *value, int32_t seed);
/* Where $lookup finds another collection of the database: sets *docs to a new array
 * (bson_malloc; the engine frees it with bson_free) of *n borrowed documents that stay
 * valid until tm_pipeline_exec_env returns, or fails with *error set (e.g. 2 for a view). A
 * collection that does not exist has no documents. */
typedef bool (*tm_collection_fn)(void *ctx, const char *coll, bson_t ***docs, size_t *n,
                                 bson_error_t *error);

/* tm_pipeline_exec for pipelines that may read other collections ($lookup): `collection`
 * (with `ctx`) is called from this thread during the call only. Without it, $lookup fails
 * with 2. */
bool tm_pipeline_exec_env(const tm_pipeline_t *pipeline, tm_collection_fn collection, void *ctx,
                          bson_t **in, size_t n_in, bson_t ***out, size_t *n_out,
                          bson_error_t *error);

/* ---- paths ------------------------------------------------------------------------------ */

/* Calls `fn` for every value a dotted path reaches with query fan-out: documents inside
 * arrays on the way are searched and an array at the end yields its elements (not itself),
 * which is what `distinct` reports. `value` is borrowed for the call. Stops early when `fn`
 * returns false. */
typedef bool (*tm_path_value_fn)(const bson_value_t *value, void *ctx);
void tm_path_foreach(const bson_t *doc, const char *path, tm_path_value_fn fn, void *ctx);

/* Looks up a dotted path without array fan-out (numeric components index arrays). Returns
 * false if the path does not exist. `value` borrows from `doc`. */
bool tm_path_get(const bson_t *doc, const char *path, bson_value_t *value);

#endif /* TM_ENGINE_H */

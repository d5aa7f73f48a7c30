/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Validation of the caller's input before anything is sent (check.c): ids, business fields and
 * update operators (which may not touch _id or the bookkeeping fields), and whole documents
 * through the BSON walk below it. Stateless and thread-safe.
 */
#ifndef OUTBOX_CHECK_PRIVATE_H
#define OUTBOX_CHECK_PRIVATE_H

#include "document-private.h"

/* The layers below, for callers (the relay's event.c) that use them through this header. */
#include "bson-walk-private.h"
#include "utf8-private.h"

/* True if `path` (a field path, possibly dotted: "events.0", "version.x") lies in _id or in
 * one of the bookkeeping fields (version, eventSeq, events, recentCommits when set). The
 * deleted field is not reserved: callers may undelete. */
bool _outbox_path_is_reserved(const char *path, const _outbox_field_names_t *names);

/* True if `doc` is well-formed and every key and every string value in it, at any depth, is
 * valid UTF-8 without NUL (bson_validate()'s BSON_VALIDATE_UTF8 checks keys only in libbson
 * 1.23). With `no_dollar_keys`, keys starting with '$' are refused at any depth too. */
bool _outbox_bson_is_valid(const bson_t *doc, bool no_dollar_keys);

/* _outbox_bson_is_valid() and no empty key at any depth: everything mongoc's default
 * validation of an update (UTF-8, empty keys) would refuse, so that commits can tell mongoc
 * not to validate again. */
bool _outbox_bson_is_storable(const bson_t *doc, bool no_dollar_keys);

/* For the relay, which writes event data as JSON: well-formed, and every key and every
 * string, symbol and code value at any depth valid UTF-8 (NUL allowed in values: JSON writes
 * \u0000). Nesting deeper than 100 is not looked into. */
bool _outbox_bson_is_json_clean(const bson_t *doc);

/* Accepts ObjectId, string (valid UTF-8), int32, int64 and binary (any subtype and length);
 * anything else fails with OUTBOX_ERROR_INVALID_ARGUMENT. */
bool _outbox_id_check(const bson_value_t *id, bson_error_t *error);

/* Checks the business fields given to create: valid UTF-8, no top-level key starting with '$'
 * (OUTBOX_ERROR_INVALID_ARGUMENT), no _id or bookkeeping field (OUTBOX_ERROR_RESERVED_FIELD).
 * NULL is fine. */
bool _outbox_fields_check(const bson_t *fields, const _outbox_field_names_t *names,
                          bson_error_t *error);

/* Checks a caller's update: a document of supported update operators only, each operator at
 * most once with a document of paths as its value, no path (and no $rename target) reserved.
 * A replacement document, a pipeline or an unknown operator fails with
 * OUTBOX_ERROR_INVALID_ARGUMENT; a reserved path with OUTBOX_ERROR_RESERVED_FIELD. NULL is
 * fine. */
bool _outbox_update_check(const bson_t *update, const _outbox_field_names_t *names,
                          bson_error_t *error);

#endif /* OUTBOX_CHECK_PRIVATE_H */

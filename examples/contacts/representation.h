/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The HTTP representation of a contact: strict JSON in, JSON out.
 *
 * Input (POST and PUT bodies) is an object with exactly these fields:
 *   name         {firstName: string, lastName: string}     required
 *   email        string                                     required
 *   description  string | null                              optional
 *   company      {companyName, street, houseNumber, postalCode, city, country} | null,
 *                each a string; companyName required when company is given
 * Read-only fields (id, createdAt, deleted, version) and unknown or duplicate fields are
 * refused, as are wrong types, NUL bytes and anything that is not one JSON object.
 */
#ifndef CONTACTS_REPRESENTATION_H
#define CONTACTS_REPRESENTATION_H

#include <bson/bson.h>

#include "contact.h"

/* Parses `body` (`len` bytes, need not be NUL-terminated) into *in. The strings in *in point
 * into `holder`, which the callee initialises and the caller destroys (also on failure).
 * Returns false with *err (field "" for whole-body problems). */
bool representation_parse(const char *body, size_t len, bson_t *holder, contact_input_t *in,
                          contact_error_t *err);

/* The two halves of representation_parse(): JSON text to a document (`doc` initialised by the
 * callee, destroyed by the caller), and a document to an input (strings point into `doc`). */
bool representation_parse_json(const char *body, size_t len, bson_t *doc, contact_error_t *err);
bool representation_read(const bson_t *doc, contact_input_t *in, contact_error_t *err);

/* Applies a JSON merge patch (RFC 7396) to `target`: objects merge recursively, null removes
 * a member, anything else replaces it. `out` is initialised by the callee and destroyed by the
 * caller. Refuses patches with duplicate keys. The result is then checked with
 * representation_read() like a full representation. */
bool representation_merge_patch(const bson_t *target, const bson_t *patch, bson_t *out,
                                contact_error_t *err);

/* Appends the JSON of a contact to `out`. */
void representation_write(const contact_t *c, bson_string_t *out);

/* Appends `s` as a JSON string literal (quotes included). */
void json_append_string(bson_string_t *out, const char *s);

/* Formats milliseconds since the epoch as RFC 3339 UTC ("2026-11-22T02:05:13.123Z"). */
void json_format_time(int64_t ms, char buf[32]);

#endif /* CONTACTS_REPRESENTATION_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers for the engine's unit tests: documents from JSON written with single quotes.
 */
#ifndef TM_TEST_UTIL_H
#define TM_TEST_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "engine.h"

/* Copies `src` into `dst`, renaming keys that start with '%' to start with '$'. */
static inline void
tm_json_rename(const bson_t *src, bson_t *dst)
{
   bson_iter_t it;

   bson_iter_init(&it, src);
   while (bson_iter_next(&it)) {
      char key[256];
      bson_strncpy(key, bson_iter_key(&it), sizeof key);
      if (key[0] == '%') {
         key[0] = '$';
      }
      if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_t sub, child;
         const uint8_t *data;
         uint32_t len;
         if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_iter_document(&it, &len, &data);
            bson_append_document_begin(dst, key, -1, &child);
         } else {
            bson_iter_array(&it, &len, &data);
            bson_append_array_begin(dst, key, -1, &child);
         }
         bson_init_static(&sub, data, len);
         tm_json_rename(&sub, &child);
         if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_append_document_end(dst, &child);
         } else {
            bson_append_array_end(dst, &child);
         }
      } else if (BSON_ITER_HOLDS_UTF8(&it) && bson_iter_utf8(&it, NULL)[0] == '%') {
         /* '%a.b' and '%%ROOT' stand for the field paths '$a.b' and '$$ROOT'. */
         char *copy = bson_strdup(bson_iter_utf8(&it, NULL));
         for (char *c = copy; *c == '%'; c++) {
            *c = '$';
         }
         bson_append_utf8(dst, key, -1, copy, -1);
         bson_free(copy);
      } else {
         bson_append_value(dst, key, -1, bson_iter_value(&it));
      }
   }
}

/* Parses relaxed extended JSON in which ' stands for " (keeps C strings readable) and a
 * leading % in a key or string value for $ (so '%type' and '%regex' are not read as
 * extended JSON, and '%a' is the field path '$a'). */
static inline bson_t *
tm_json(const char *json)
{
   char *copy = bson_strdup(json);
   bson_error_t error;
   bson_t *b;

   for (char *c = copy; *c; c++) {
      if (*c == '\'') {
         *c = '"';
      }
   }
   b = bson_new_from_json((const uint8_t *)copy, -1, &error);
   cr_assert_not_null(b, "bad test JSON %s: %s", json, error.message);
   bson_free(copy);
   if (strchr(json, '%')) {
      bson_t *renamed = bson_new();
      tm_json_rename(b, renamed);
      bson_destroy(b);
      b = renamed;
   }
   return b;
}

/* Canonical JSON of a document, for comparisons in assertions; caller frees. */
static inline char *
tm_canon(const bson_t *b)
{
   return bson_as_canonical_extended_json(b, NULL);
}

/* Asserts that `actual` equals the document `expected_json` byte for byte. */
static inline void
tm_assert_doc(const bson_t *actual, const char *expected_json, const char *what)
{
   bson_t *expected = tm_json(expected_json);
   char *a = tm_canon(actual), *e = tm_canon(expected);

   cr_assert_str_eq(a, e, "%s: got %s, want %s", what, a, e);
   bson_free(a);
   bson_free(e);
   bson_destroy(expected);
}

/* Builds {'r': [docs...]} in `result` (initialised by the caller) for tm_assert_doc. */
static inline void
tm_result_docs(bson_t *result, bson_t **docs, size_t n)
{
   bson_t arr;

   bson_append_array_begin(result, "r", 1, &arr);
   for (size_t i = 0; i < n; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      bson_append_document(&arr, k, -1, docs[i]);
   }
   bson_append_array_end(result, &arr);
}

#endif /* TM_TEST_UTIL_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * libFuzzer target: liboutbox's structural BSON walk (lib/src/bson-walk.c) against a strict
 * walk through libbson's own iterator, on raw bytes, for every flag combination; and the fast
 * UTF-8 check against bson_utf8_validate(). They must agree on every input (abort() when they
 * do not, so libFuzzer keeps it), and the walk must not read outside the input (ASan).
 *
 * The reference: bson_iter_init() on the document (length >= 5, prefix equal to the length,
 * terminating NUL), bson_iter_next() over every element, and at the end no error offset (the
 * elements tiled the document exactly); keys and values as check-private.h says; every nested
 * document, array and code-with-scope scope the same way (bson_init_static() must accept it).
 *
 * Build with -Dfuzzing=true (clang) and run as tests/relay/fuzz/README.md shows, e.g.
 *   build-fuzz/tests/lib/fuzz-bson-walk -max_total_time=300 /tmp/corpus-walk \
 *       tests/lib/fuzz-seeds-walk
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define JSON _OUTBOX_WALK_JSON_STRINGS

static bool ref_doc(const uint8_t *p, size_t len, int flags, int depth);

static bool
ref_key(const char *key, int flags)
{
   if ((flags & _OUTBOX_WALK_NO_DOLLAR_KEYS) && key[0] == '$') {
      return false;
   }
   if ((flags & _OUTBOX_WALK_NO_EMPTY_KEYS) && !key[0]) {
      return false;
   }
   return bson_utf8_validate(key, strlen(key), false);
}

static bool
ref_value(bson_iter_t *it, int flags, int depth)
{
   uint32_t len = 0, scope_len = 0;
   const uint8_t *buf = NULL;
   const char *s;

   switch (bson_iter_type(it)) {
   case BSON_TYPE_UTF8:
      s = bson_iter_utf8(it, &len);
      return bson_utf8_validate(s, len, (flags & JSON) != 0);
   case BSON_TYPE_CODE:
   case BSON_TYPE_SYMBOL:
      s = BSON_ITER_HOLDS_CODE(it) ? bson_iter_code(it, &len) : bson_iter_symbol(it, &len);
      return !(flags & JSON) || bson_utf8_validate(s, len, true);
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      if (BSON_ITER_HOLDS_ARRAY(it)) {
         bson_iter_array(it, &len, &buf);
      } else {
         bson_iter_document(it, &len, &buf);
      }
      return ref_doc(buf, len, flags, depth + 1);
   case BSON_TYPE_CODEWSCOPE:
      s = bson_iter_codewscope(it, &len, &scope_len, &buf);
      /* libbson does not look for the code's NUL; the walk wants one. */
      return s[len] == '\0' && ref_doc(buf, scope_len, JSON, depth + 1);
   default:
      return true;
   }
}

static bool
ref_doc(const uint8_t *p, size_t len, int flags, int depth)
{
   bson_t doc;
   bson_iter_t it;

   if (!bson_init_static(&doc, p, len)) {
      return false;
   }
   if (depth > 100) {
      return (flags & JSON) != 0;
   }
   if (!bson_iter_init(&it, &doc)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      if (!ref_key(bson_iter_key(&it), flags) || !ref_value(&it, flags, depth)) {
         return false;
      }
   }
   return it.err_off == 0;
}

static void
check_utf8(const uint8_t *data, size_t size)
{
   for (int nul = 0; nul < 2; nul++) {
      if (_outbox_utf8_valid((const char *)data, size, nul) !=
          bson_utf8_validate((const char *)data, size, nul)) {
         fprintf(stderr, "fuzz-bson-walk: UTF-8 check disagrees (allow_nul %d)\n", nul);
         abort();
      }
   }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   static const int flag_sets[] = {0, _OUTBOX_WALK_NO_DOLLAR_KEYS, _OUTBOX_WALK_NO_EMPTY_KEYS,
                                   _OUTBOX_WALK_NO_DOLLAR_KEYS | _OUTBOX_WALK_NO_EMPTY_KEYS, JSON};
   /* A private copy of exactly @size bytes, so ASan sees any read past the end. */
   uint8_t *copy = malloc(size ? size : 1);
   memcpy(copy, data, size);
   check_utf8(copy, size);
   for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
      bool walk = _outbox_bson_walk(copy, size, flag_sets[i]);
      bool ref = ref_doc(copy, size, flag_sets[i], 0);
      if (walk != ref) {
         fprintf(stderr, "fuzz-bson-walk: walk %d, libbson %d (flags %d)\n", walk, ref,
                 flag_sets[i]);
         abort();
      }
   }
   free(copy);
   return 0;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One pass over raw BSON that checks its structure and, in the same pass, the UTF-8 and key
 * rules of bson-walk-private.h. It replaces bson_validate() + a bson_iter walk: libbson 1.23's
 * bson_validate() decodes every string byte by byte even when asked for no UTF-8 check
 * (bson_iter_visit_all validates them), which made it the largest cost of a 64 KiB event in
 * the relay, and it stops without an error at the first invalid string value, leaving the
 * rest of that document unchecked. This walk is bounds-checked on every read, never reads
 * past `len`, and accepts exactly what a strict libbson walk accepts (fuzz-bson-walk compares
 * the two on every input). No allocation, no global state: safe from any thread.
 *
 * The structure rules are libbson's (_bson_iter_next_internal): elements tile the document
 * exactly up to its terminating NUL; strings, code and symbols have a length >= 1 that ends on
 * a NUL; booleans are 0 or 1; binary subtype 2 carries its inner length; code with scope has
 * consistent lengths; only the types of the BSON spec. Unlike bson_validate(), every nested
 * document, array and scope must itself be well-formed (libbson skips one whose own length
 * prefix or terminator is wrong), and the code of a code with scope must end on a NUL.
 */
#include "bson-walk-private.h"

#include <string.h>

#include <bson/bson.h>

#include "utf8-private.h"

static uint32_t
le32(const uint8_t *p)
{
   return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of the value of the fixed-size types; -1 for the others. */
static int
fixed_size(uint8_t type)
{
   switch (type) {
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DATE_TIME:
   case BSON_TYPE_TIMESTAMP:
   case BSON_TYPE_INT64:
      return 8;
   case BSON_TYPE_OID:
      return 12;
   case BSON_TYPE_INT32:
      return 4;
   case BSON_TYPE_DECIMAL128:
      return 16;
   case BSON_TYPE_UNDEFINED:
   case BSON_TYPE_NULL:
   case BSON_TYPE_MAXKEY:
   case BSON_TYPE_MINKEY:
      return 0;
   default:
      return -1;
   }
}

typedef struct {
   const uint8_t *p;
   size_t end; /* the offset of the document's terminating NUL: values must end at or before */
   int flags;
   int depth;
} walk_t;

static bool walk_doc(const uint8_t *p, size_t len, int flags, int depth);

/* A string of length @l (NUL included) at @o; its end is stored in *@next. */
static bool
string_at(const walk_t *w, size_t o, size_t *next)
{
   uint32_t l;

   if (o + 4 > w->end) {
      return false;
   }
   l = le32(w->p + o);
   if (l < 1 || l > w->end - (o + 4) || w->p[o + 4 + l - 1] != '\0') {
      return false;
   }
   *next = o + 4 + l;
   return true;
}

/* The end of the NUL-terminated string at @o (after its NUL), or 0 if it runs past the end. */
static size_t
cstring_end(const walk_t *w, size_t o)
{
   const uint8_t *nul = o < w->end ? memchr(w->p + o, 0, w->end - o) : NULL;
   return nul ? (size_t)(nul - w->p) + 1 : 0;
}

/* A string value (UTF-8, code, symbol) at @o: structure, and its text under the flags. */
static bool
string_value(const walk_t *w, uint8_t type, size_t o, size_t *next)
{
   if (!string_at(w, o, next)) {
      return false;
   }
   if (type == BSON_TYPE_UTF8) {
      return _outbox_utf8_valid((const char *)w->p + o + 4, *next - o - 5,
                                (w->flags & _OUTBOX_WALK_JSON_STRINGS) != 0);
   }
   /* Symbols and code are checked only for JSON, which writes them as strings. */
   return !(w->flags & _OUTBOX_WALK_JSON_STRINGS) ||
          _outbox_utf8_valid((const char *)w->p + o + 4, *next - o - 5, true);
}

static bool
binary_value(const walk_t *w, size_t o, size_t *next)
{
   uint32_t l;

   if (o + 5 > w->end) {
      return false;
   }
   l = le32(w->p + o);
   if (l > w->end - (o + 5)) {
      return false;
   }
   /* Subtype 2 repeats the length inside: it must agree. */
   if (w->p[o + 4] == BSON_SUBTYPE_BINARY_DEPRECATED && (l < 4 || le32(w->p + o + 5) != l - 4)) {
      return false;
   }
   *next = o + 5 + l;
   return true;
}

/* Code with scope: total length, code string, scope document, all consistent. The scope is
 * JavaScript's business: only its structure and strings are checked, not key rules. */
static bool
codewscope_value(const walk_t *w, size_t o, size_t *next)
{
   uint32_t total, scope_len;
   size_t code_end;
   walk_t inner;

   if (o + 4 > w->end) {
      return false;
   }
   total = le32(w->p + o);
   if (total < 14 || total > w->end - o) {
      return false;
   }
   inner = (walk_t){w->p, o + total, 0, 0};
   if (!string_at(&inner, o + 4, &code_end) || code_end + 5 > o + total) {
      return false;
   }
   scope_len = le32(w->p + code_end);
   if (scope_len != o + total - code_end) {
      return false;
   }
   *next = o + total;
   return walk_doc(w->p + code_end, scope_len, _OUTBOX_WALK_JSON_STRINGS, w->depth + 1);
}

/* The value of type @type at @o; *@next is set to where it ends. */
static bool
value(const walk_t *w, uint8_t type, size_t o, size_t *next)
{
   int size = fixed_size(type);
   uint32_t l;

   if (size >= 0) {
      *next = o + (size_t)size;
      return *next <= w->end;
   }
   switch (type) {
   case BSON_TYPE_UTF8:
   case BSON_TYPE_CODE:
   case BSON_TYPE_SYMBOL:
      return string_value(w, type, o, next);
   case BSON_TYPE_BOOL:
      *next = o + 1;
      return o < w->end && w->p[o] <= 1;
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      if (o + 4 > w->end || (l = le32(w->p + o)) > w->end - o) {
         return false;
      }
      *next = o + l;
      return walk_doc(w->p + o, l, w->flags, w->depth + 1);
   case BSON_TYPE_BINARY:
      return binary_value(w, o, next);
   case BSON_TYPE_REGEX: {
      size_t pattern_end = cstring_end(w, o);
      *next = pattern_end ? cstring_end(w, pattern_end) : 0;
      return *next != 0;
   }
   case BSON_TYPE_DBPOINTER:
      if (!string_at(w, o, next)) {
         return false;
      }
      *next += 12;
      return *next <= w->end;
   case BSON_TYPE_CODEWSCOPE:
      return codewscope_value(w, o, next);
   default:
      return false; /* EOD inside a document, or not a BSON type */
   }
}

static bool
key_ok(const walk_t *w, const char *key, size_t len)
{
   if ((w->flags & _OUTBOX_WALK_NO_DOLLAR_KEYS) && key[0] == '$') {
      return false;
   }
   if ((w->flags & _OUTBOX_WALK_NO_EMPTY_KEYS) && len == 0) {
      return false;
   }
   return _outbox_utf8_valid(key, len, false);
}

static bool
walk_doc(const uint8_t *p, size_t len, int flags, int depth)
{
   walk_t w = {p, len - 1, flags, depth};
   size_t off = 4;

   if (len < 5 || len > UINT32_MAX || le32(p) != len || p[len - 1] != '\0') {
      return false;
   }
   /* Deeper than the server allows (100) cannot be stored anyway; the bound keeps the
    * recursion's stack use small. For JSON the walk just stops there (its parent checked
    * where it ends): the relay's JSON writer hands anything that deep to libbson, whose
    * writer checks as it goes. */
   if (depth > 100) {
      return (flags & _OUTBOX_WALK_JSON_STRINGS) != 0;
   }
   while (off < w.end) {
      uint8_t type = p[off];
      size_t key = off + 1, key_end = cstring_end(&w, key), next;
      if (!key_end || !key_ok(&w, (const char *)p + key, key_end - key - 1) ||
          !value(&w, type, key_end, &next)) {
         return false;
      }
      off = next;
   }
   return off == w.end;
}

bool
_outbox_bson_walk(const uint8_t *data, size_t len, int flags)
{
   return data && walk_doc(data, len, flags, 0);
}

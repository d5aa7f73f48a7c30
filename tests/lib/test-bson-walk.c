/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the structural BSON walk (lib/src/bson-walk.c) and the UTF-8 check behind it:
 * every BSON type is accepted when well-formed, and malformed documents (one broken rule
 * each, written byte by byte) are refused, including those libbson's bson_validate() lets
 * through. fuzz-bson-walk compares the walk with a strict libbson walk on generated input.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "check-private.h"

#define JSON _OUTBOX_WALK_JSON_STRINGS

/* A document from its elements' bytes: length prefix and terminator added. */
typedef struct {
   uint8_t b[256];
   size_t len;
} raw_t;

static raw_t
doc(const void *body, size_t n)
{
   raw_t r;
   cr_assert_lt(n + 5, sizeof r.b);
   r.len = n + 5;
   r.b[0] = (uint8_t)r.len;
   r.b[1] = r.b[2] = r.b[3] = 0;
   memcpy(r.b + 4, body, n);
   r.b[r.len - 1] = 0;
   return r;
}

#define DOC(lit) doc(lit, sizeof lit - 1)

static bool
walk(const raw_t *r, int flags)
{
   return _outbox_bson_walk(r->b, r->len, flags);
}

/* Every type, as libbson writes it, passes with and without JSON_STRINGS. */
Test(bson_walk, every_type_accepted)
{
   bson_t *b = bson_new(), sub = BSON_INITIALIZER, arr = BSON_INITIALIZER;
   bson_oid_t oid;
   bson_decimal128_t dec = {0, 0};
   bson_oid_init(&oid, NULL);
   BSON_APPEND_UTF8(&sub, "k", "v");
   BSON_APPEND_UTF8(&arr, "0", "v");
   BSON_APPEND_DOUBLE(b, "d", 1.5);
   BSON_APPEND_UTF8(b, "s", "text \xc3\xa9");
   BSON_APPEND_DOCUMENT(b, "o", &sub);
   BSON_APPEND_ARRAY(b, "a", &arr);
   bson_append_binary(b, "b", 1, BSON_SUBTYPE_BINARY, (const uint8_t *)"xyz", 3);
   bson_append_binary(b, "b2", 2, BSON_SUBTYPE_BINARY_DEPRECATED, (const uint8_t *)"xyz", 3);
   bson_append_undefined(b, "u", 1);
   BSON_APPEND_OID(b, "i", &oid);
   BSON_APPEND_BOOL(b, "t", true);
   BSON_APPEND_DATE_TIME(b, "dt", 1);
   BSON_APPEND_NULL(b, "n");
   BSON_APPEND_REGEX(b, "r", "^a.*", "i");
   bson_append_dbpointer(b, "p", 1, "db.c", &oid);
   BSON_APPEND_CODE(b, "c", "f()");
   BSON_APPEND_SYMBOL(b, "y", "sym");
   BSON_APPEND_CODE_WITH_SCOPE(b, "cs", "g()", &sub);
   BSON_APPEND_INT32(b, "i32", 1);
   BSON_APPEND_TIMESTAMP(b, "ts", 1, 2);
   BSON_APPEND_INT64(b, "i64", 2);
   BSON_APPEND_DECIMAL128(b, "dec", &dec);
   BSON_APPEND_MAXKEY(b, "max");
   BSON_APPEND_MINKEY(b, "min");
   cr_assert(_outbox_bson_walk(bson_get_data(b), b->len, 0));
   cr_assert(_outbox_bson_walk(bson_get_data(b), b->len, JSON));
   cr_assert(_outbox_bson_is_valid(b, true));
   cr_assert(_outbox_bson_is_json_clean(b));
   /* Every proper prefix is refused (the length no longer matches). */
   for (uint32_t n = 0; n < b->len; n++) {
      cr_assert_not(_outbox_bson_walk(bson_get_data(b), n, JSON), "prefix of %u bytes", n);
   }
   bson_destroy(b);
   bson_destroy(&sub);
   bson_destroy(&arr);
}

Test(bson_walk, empty_and_framing)
{
   raw_t empty = doc("", 0), r;
   cr_assert(walk(&empty, 0));
   r = empty;
   r.b[0] = 6; /* prefix larger than the buffer */
   cr_assert_not(walk(&r, 0));
   r = empty;
   r.b[4] = 1; /* no terminating NUL */
   cr_assert_not(walk(&r, 0));
   r = DOC("\x10"
           "a\0"
           "\1\0\0\0");
   r.b[0]++; /* prefix one past the data */
   cr_assert_not(_outbox_bson_walk(r.b, r.len, 0));
   cr_assert_not(_outbox_bson_walk(NULL, 5, 0));
   cr_assert_not(_outbox_bson_walk(r.b, 4, 0));
}

/* One broken rule each; the name says which. */
Test(bson_walk, malformed_refused)
{
   static const struct {
      const char *what;
      const char *body;
      size_t len;
   } cases[] = {
#define C(what, lit) {what, lit, sizeof lit - 1}
      C("int32 cut short", "\x10"
                           "a\0"
                           "\1\0\0"),
      C("string length 0", "\x02"
                           "s\0"
                           "\0\0\0\0"),
      C("string past the end", "\x02"
                               "s\0"
                               "\x09\0\0\0"
                               "ab\0"),
      C("string without NUL", "\x02"
                              "s\0"
                              "\3\0\0\0"
                              "abc"),
      C("bool 2", "\x08"
                  "t\0"
                  "\2"),
      C("unknown type 0x14", "\x14"
                             "x\0"
                             "\0"),
      C("EOD inside", "\x10"
                      "a\0"
                      "\1\0\0\0"
                      "\0"
                      "b\0"),
      C("key without NUL", "\x0A"
                           "abc"),
      C("nested length below 5", "\x03"
                                 "o\0"
                                 "\4\0\0\0"
                                 "\x0A"
                                 "x\0"
                                 "\0"),
      C("nested length past the end", "\x03"
                                      "o\0"
                                      "\x40\0\0\0"
                                      "\0"),
      C("nested without terminator", "\x03"
                                     "o\0"
                                     "\6\0\0\0"
                                     "\x0A"
                                     "x"),
      /* {o: <5-byte doc claiming 5>, ...} where the outer elements no longer tile: */
      C("nested elements do not tile", "\x03"
                                       "o\0"
                                       "\x0B\0\0\0"
                                       "\x10"
                                       "a\0"
                                       "\1\0\0\0"
                                       "\0"),
      C("binary length past the end", "\x05"
                                      "b\0"
                                      "\x10\0\0\0"
                                      "\0"
                                      "xy"),
      C("binary subtype 2 bad inner length", "\x05"
                                             "b\0"
                                             "\7\0\0\0"
                                             "\2"
                                             "\4\0\0\0"
                                             "xyz"),
      C("binary subtype 2 too short", "\x05"
                                      "b\0"
                                      "\3\0\0\0"
                                      "\2"
                                      "xyz"),
      C("regex without options NUL", "\x0B"
                                     "r\0"
                                     "a\0"
                                     "i"),
      C("dbpointer cut short", "\x0C"
                               "p\0"
                               "\2\0\0\0"
                               "c\0"
                               "0123456789a"),
      C("code with scope, total too small", "\x0F"
                                            "c\0"
                                            "\x0D\0\0\0"
                                            "\1\0\0\0"
                                            "\0"
                                            "\5\0\0\0\0"),
      C("code with scope, scope length off", "\x0F"
                                             "c\0"
                                             "\x0E\0\0\0"
                                             "\1\0\0\0"
                                             "\0"
                                             "\6\0\0\0\0"),
      C("code with scope, code without NUL", "\x0F"
                                             "c\0"
                                             "\x0E\0\0\0"
                                             "\1\0\0\0"
                                             "x"
                                             "\5\0\0\0\0"),
      C("code with scope, broken scope", "\x0F"
                                         "c\0"
                                         "\x0E\0\0\0"
                                         "\1\0\0\0"
                                         "\0"
                                         "\5\0\0\0\1"),
      C("key not UTF-8", "\x0A"
                         "\xff\0"),
      C("int64 cut short", "\x12"
                           "a\0"
                           "1234567"),
#undef C
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      raw_t r = doc(cases[i].body, cases[i].len);
      cr_assert_not(walk(&r, 0), "%s", cases[i].what);
      cr_assert_not(walk(&r, JSON), "%s (JSON)", cases[i].what);
   }
   /* The well-formed neighbours of some of them pass. */
   raw_t ok[] = {DOC("\x10"
                     "a\0"
                     "\1\0\0\0"),
                 DOC("\x08"
                     "t\0"
                     "\1"),
                 DOC("\x0A"
                     "\0"),
                 DOC("\x0B"
                     "r\0"
                     "a\0"
                     "i\0"),
                 DOC("\x05"
                     "b\0"
                     "\7\0\0\0"
                     "\2"
                     "\3\0\0\0"
                     "xyz"),
                 DOC("\x0F"
                     "c\0"
                     "\x0E\0\0\0"
                     "\1\0\0\0"
                     "\0"
                     "\5\0\0\0\0"),
                 DOC("\x03"
                     "o\0"
                     "\x0C\0\0\0"
                     "\x10"
                     "a\0"
                     "\1\0\0\0"
                     "\0")};
   for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
      cr_assert(walk(&ok[i], 0), "well-formed case %zu", i);
   }
}

/* libbson's bson_validate() stops at an invalid string value and reports nothing: whatever
 * follows in that document went unchecked. The walk goes on. */
Test(bson_walk, corrupt_after_invalid_string)
{
   raw_t r = DOC("\x02"
                 "s\0"
                 "\2\0\0\0"
                 "\xff\0"
                 "\x10"
                 "a\0"
                 "\1\0\0");
   bson_t b;
   cr_assert(bson_init_static(&b, r.b, r.len));
   cr_assert(bson_validate(&b, BSON_VALIDATE_NONE, NULL), "libbson 1.23 accepts it");
   cr_assert_not(walk(&r, JSON));
   cr_assert_not(walk(&r, 0));
}

Test(bson_walk, key_and_string_rules)
{
   raw_t dollar = DOC("\x0A"
                      "$x\0"),
         empty_key = DOC("\x0A"
                         "\0");
   raw_t nul = DOC("\x02"
                   "s\0"
                   "\4\0\0\0"
                   "a\0b\0");
   raw_t bad_sym = DOC("\x0E"
                       "y\0"
                       "\3\0\0\0"
                       "\xc3\x28\0");
   raw_t nested_dollar = DOC("\x03"
                             "o\0"
                             "\x09\0\0\0"
                             "\x0A"
                             "$\0"
                             "\0");
   cr_assert(walk(&dollar, 0));
   cr_assert_not(walk(&dollar, _OUTBOX_WALK_NO_DOLLAR_KEYS));
   cr_assert_not(walk(&nested_dollar, _OUTBOX_WALK_NO_DOLLAR_KEYS));
   cr_assert(walk(&empty_key, 0));
   cr_assert_not(walk(&empty_key, _OUTBOX_WALK_NO_EMPTY_KEYS));
   cr_assert_not(walk(&nul, 0), "NUL inside a string");
   cr_assert(walk(&nul, JSON), "JSON writes NUL as \\u0000");
   cr_assert(walk(&bad_sym, 0), "symbols are not text outside JSON");
   cr_assert_not(walk(&bad_sym, JSON));
}

/* The fast UTF-8 check agrees with bson_utf8_validate(), also past the ASCII runs. */
Test(bson_walk, utf8_agrees_with_libbson)
{
   static const struct {
      const char *s;
      size_t len;
   } samples[] = {
#define S(lit) {lit, sizeof lit - 1}
      S("plain ascii text, long enough for several words"),
      S("caf\xc3\xa9 au lait, then more text"),
      S("\xe2\x82\xac euro and \xf0\x9f\x98\x80 smile, then ascii again after them"),
      S("overlong \xc0\xaf slash"),
      S("two-byte NUL \xc0\x80 here"),
      S("surrogate \xed\xa0\x80 x"),
      S("beyond \xf4\x90\x80\x80 max"),
      S("cut \xe2\x82"),
      S("stray \x80 continuation"),
      S("f8 \xf8\x88\x80\x80\x80"),
      S("nul\0inside the first eight"),
      S("0123456789abcdef\0tail"),
      S("\xc3\x28 bad second byte"),
      S("a run of forty plain ascii characters...\0 then a NUL and more"),
      S("a run of forty plain ascii characters...\xc3\xa9 then more plain text, \xff at last"),
#undef S
   };
   for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
      size_t len = samples[i].len;
      for (size_t start = 0; start < len; start++) {
         for (int nul = 0; nul < 2; nul++) {
            cr_assert_eq(_outbox_utf8_valid(samples[i].s + start, len - start, nul),
                         bson_utf8_validate(samples[i].s + start, len - start, nul),
                         "sample %zu from %zu, allow_nul %d", i, start, nul);
         }
      }
   }
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: ids, business fields and update operators are checked before anything is sent.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "check-private.h"

static const _outbox_field_names_t names = {"version",  "eventSeq",     "events",
                                            "deleted",  "deadLetters",  "discardedLetters",
                                            "requeues", "recentCommits"};
static const _outbox_field_names_t renamed = {"v",  "seq_", "outbox", "gone",
                                              "dl", "dd",   "rq",     "rc"};

/* Checks `update` (destroyed here) and returns the error code, 0 if accepted. */
static uint32_t
check_update(bson_t *update, const _outbox_field_names_t *n)
{
   bson_error_t error;
   uint32_t code = 0;

   if (!_outbox_update_check(update, n, &error)) {
      cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
      code = error.code;
   }
   bson_destroy(update);
   return code;
}

Test(check, reserved_paths)
{
   cr_assert(_outbox_path_is_reserved("_id", &names));
   cr_assert(_outbox_path_is_reserved("_id.x", &names));
   cr_assert(_outbox_path_is_reserved("version", &names));
   cr_assert(_outbox_path_is_reserved("eventSeq", &names));
   cr_assert(_outbox_path_is_reserved("events", &names));
   cr_assert(_outbox_path_is_reserved("events.0", &names));
   cr_assert(_outbox_path_is_reserved("events.$[].type", &names));
   cr_assert(_outbox_path_is_reserved("version.sub", &names));
   cr_assert_not(_outbox_path_is_reserved("versions", &names));
   cr_assert_not(_outbox_path_is_reserved("eventSeqX", &names));
   cr_assert_not(_outbox_path_is_reserved("my.events", &names));
   cr_assert_not(_outbox_path_is_reserved("deleted", &names));
   cr_assert_not(_outbox_path_is_reserved("_idx", &names));
   cr_assert(_outbox_path_is_reserved("outbox.1", &renamed));
   cr_assert_not(_outbox_path_is_reserved("events", &renamed));
   /* A forged recentCommits entry would fool a retry after an unknown outcome. */
   cr_assert(_outbox_path_is_reserved("recentCommits", &names));
   cr_assert(_outbox_path_is_reserved("recentCommits.0.id", &names));
   cr_assert(_outbox_path_is_reserved("rc", &renamed));
   cr_assert_not(_outbox_path_is_reserved("recentCommitsX", &names));
}

Test(check, accepted_updates)
{
   cr_assert_eq(check_update(NULL, &names), 0);
   cr_assert_eq(check_update(BCON_NEW("$set", "{", "name", BCON_UTF8("x"), "}", "$inc", "{", "n",
                                      BCON_INT32(1), "}", "$unset", "{", "old", BCON_UTF8(""), "}"),
                             &names),
                0);
   cr_assert_eq(
      check_update(BCON_NEW("$push", "{", "tags", BCON_UTF8("a"), "}", "$rename", "{", "a",
                            BCON_UTF8("b.c"), "}", "$currentDate", "{", "at", BCON_BOOL(true), "}"),
                   &names),
      0);
   cr_assert_eq(check_update(BCON_NEW("$set", "{", "deleted", BCON_BOOL(false), "}"), &names), 0);
   cr_assert_eq(check_update(BCON_NEW("$set", "{", "events", BCON_INT32(1), "}"), &renamed), 0);
}

Test(check, reserved_updates)
{
   const char *ops[] = {"$set",      "$unset", "$inc",     "$min", "$max", "$mul",        "$push",
                        "$addToSet", "$pull",  "$pullAll", "$pop", "$bit", "$currentDate"};
   const char *paths[] = {"_id",      "version",       "eventSeq",  "events",
                          "events.0", "events.0.type", "version.x", "events.$"};

   for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      for (size_t j = 0; j < sizeof paths / sizeof paths[0]; j++) {
         cr_assert_eq(check_update(BCON_NEW(ops[i], "{", paths[j], BCON_INT32(1), "}"), &names),
                      OUTBOX_ERROR_RESERVED_FIELD, "%s %s", ops[i], paths[j]);
      }
   }
   cr_assert_eq(
      check_update(BCON_NEW("$set", "{", "ok", BCON_INT32(1), "v.x", BCON_INT32(1), "}"), &renamed),
      OUTBOX_ERROR_RESERVED_FIELD);
}

Test(check, rename)
{
   cr_assert_eq(check_update(BCON_NEW("$rename", "{", "a", BCON_UTF8("version"), "}"), &names),
                OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_update(BCON_NEW("$rename", "{", "a", BCON_UTF8("events.3"), "}"), &names),
                OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_update(BCON_NEW("$rename", "{", "eventSeq", BCON_UTF8("a"), "}"), &names),
                OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_update(BCON_NEW("$rename", "{", "a", BCON_UTF8("_id"), "}"), &names),
                OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_update(BCON_NEW("$rename", "{", "a", BCON_INT32(1), "}"), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
}

Test(check, invalid_updates)
{
   /* A replacement document would drop the bookkeeping fields. */
   cr_assert_eq(check_update(BCON_NEW("name", BCON_UTF8("x")), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(
      check_update(BCON_NEW("$set", "{", "a", BCON_INT32(1), "}", "name", BCON_UTF8("x")), &names),
      OUTBOX_ERROR_INVALID_ARGUMENT);
   /* A pipeline arrives as a document with keys "0", "1", ... */
   cr_assert_eq(check_update(BCON_NEW("0", "{", "$set", "{", "a", BCON_INT32(1), "}", "}"), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(check_update(BCON_NEW("$setOnInsert", "{", "a", BCON_INT32(1), "}"), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(check_update(BCON_NEW("$where", "{", "a", BCON_INT32(1), "}"), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(check_update(BCON_NEW("$set", BCON_INT32(1)), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(check_update(BCON_NEW("$set", "{", "a", BCON_INT32(1), "}", "$set", "{", "version",
                                      BCON_INT32(1), "}"),
                             &names),
                OUTBOX_ERROR_INVALID_ARGUMENT, "a second $set could hide a reserved path");
   /* mongoc does not validate commits again (validate: false), so empty keys stop here. */
   cr_assert_eq(check_update(BCON_NEW("$set", "{", "a", "{", "", BCON_INT32(1), "}", "}"), &names),
                OUTBOX_ERROR_INVALID_ARGUMENT);
}

Test(check, update_utf8)
{
   bson_t *update = bson_new(), set;

   bson_append_document_begin(update, "$set", -1, &set);
   bson_append_utf8(&set, "a", 1, "\xff", 1);
   bson_append_document_end(update, &set);
   cr_assert_eq(check_update(update, &names), OUTBOX_ERROR_INVALID_ARGUMENT);
}

/* The ASCII fast path of the UTF-8 check agrees with libbson around its 8-byte steps. */
Test(check, utf8_fast_path)
{
   static const struct {
      const char *s;
      size_t len;
      bool ok;
   } cases[] = {
      {"abcdefghijklmnop", 16, true},    {"abcdefghij\xc3\xa9klmnopq", 19, true},
      {"abcdefgh\xc3\xa9", 10, true},    {"abcdefghijk\xff", 12, false},
      {"abcdefgh\xc3", 9, false},        {"abcdefghijklmno\xe2\x82", 17, false},
      {"abcdefghij\0klmnop", 17, false}, {"abc\0", 4, false},
   };

   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      bson_t doc = BSON_INITIALIZER;

      bson_append_utf8(&doc, "k", 1, cases[i].s, (int)cases[i].len);
      cr_assert_eq(_outbox_bson_is_valid(&doc, false), cases[i].ok, "case %zu", i);
      cr_assert_eq(bson_utf8_validate(cases[i].s, cases[i].len, false), cases[i].ok,
                   "case %zu: libbson disagrees with the expectation", i);
      cr_assert_eq(_outbox_utf8_valid(cases[i].s, cases[i].len, false), cases[i].ok, "case %zu", i);
      /* The relay allows NUL (JSON writes it as \u0000): only the NUL cases change. */
      bool nul = memchr(cases[i].s, 0, cases[i].len) != NULL;
      cr_assert_eq(_outbox_utf8_valid(cases[i].s, cases[i].len, true), cases[i].ok || nul,
                   "case %zu with NUL allowed", i);
      cr_assert_eq(bson_utf8_validate(cases[i].s, cases[i].len, true), cases[i].ok || nul,
                   "case %zu with NUL allowed: libbson disagrees", i);
      bson_destroy(&doc);
   }
}

static uint32_t
check_fields(bson_t *fields)
{
   bson_error_t error;
   uint32_t code = 0;

   if (!_outbox_fields_check(fields, &names, &error)) {
      code = error.code;
   }
   bson_destroy(fields);
   return code;
}

Test(check, fields)
{
   cr_assert_eq(check_fields(NULL), 0);
   cr_assert_eq(check_fields(BCON_NEW("name", BCON_UTF8("x"), "deleted", BCON_BOOL(false))), 0);
   cr_assert_eq(check_fields(BCON_NEW("_id", BCON_INT32(1))), OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_fields(BCON_NEW("version", BCON_INT64(5))), OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_fields(BCON_NEW("eventSeq", BCON_INT64(5))), OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_fields(BCON_NEW("events", "[", "]")), OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(check_fields(BCON_NEW("$set", "{", "}")), OUTBOX_ERROR_INVALID_ARGUMENT);
}

static bool
id_ok(const bson_value_t *id)
{
   bson_error_t error;
   bool ok = _outbox_id_check(id, &error);

   if (!ok) {
      cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
      cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   }
   return ok;
}

Test(check, id_types)
{
   uint8_t uuid[16] = {0};
   bson_value_t v = {0};

   v.value_type = BSON_TYPE_OID;
   bson_oid_init(&v.value.v_oid, NULL);
   cr_assert(id_ok(&v));
   v.value_type = BSON_TYPE_INT32;
   cr_assert(id_ok(&v));
   v.value_type = BSON_TYPE_INT64;
   cr_assert(id_ok(&v));
   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = "c-1";
   v.value.v_utf8.len = 3;
   cr_assert(id_ok(&v));
   v.value.v_utf8.str = "c\xff";
   v.value.v_utf8.len = 2;
   cr_assert_not(id_ok(&v));
   v.value_type = BSON_TYPE_BINARY;
   v.value.v_binary.subtype = BSON_SUBTYPE_UUID;
   v.value.v_binary.data = uuid;
   v.value.v_binary.data_len = 16;
   cr_assert(id_ok(&v));
   /* F1 (tests/fuzz): MongoDB takes any BinData as _id and the contract's written form allows
    * every binary, so liboutbox does too (any subtype, any length). */
   v.value.v_binary.data_len = 15;
   cr_assert(id_ok(&v));
   v.value.v_binary.data_len = 16;
   v.value.v_binary.subtype = BSON_SUBTYPE_BINARY;
   cr_assert(id_ok(&v));
   v.value.v_binary.data_len = 0;
   v.value.v_binary.subtype = BSON_SUBTYPE_USER;
   cr_assert(id_ok(&v));
   v.value_type = BSON_TYPE_DOUBLE;
   cr_assert_not(id_ok(&v));
   v.value_type = BSON_TYPE_DOCUMENT;
   cr_assert_not(id_ok(&v));
   v.value_type = BSON_TYPE_NULL;
   cr_assert_not(id_ok(&v));
   cr_assert_not(id_ok(NULL));
}

/* The relay's check of event data (written as JSON) against the library's own: NUL allowed
 * in values, symbols and code checked too, nesting past 100 not looked into. */
Test(check, json_clean)
{
   bson_t nul = BSON_INITIALIZER, symbol = BSON_INITIALIZER, code = BSON_INITIALIZER;
   bson_append_utf8(&nul, "s", 1, "a\0b", 3);
   bson_append_symbol(&symbol, "y", 1, "\xc3\x28", 2);
   bson_append_code(&code, "c", 1, "f(\xff)");
   cr_assert(_outbox_bson_is_json_clean(&nul));
   cr_assert_not(_outbox_bson_is_valid(&nul, false));
   cr_assert_not(_outbox_bson_is_json_clean(&symbol));
   cr_assert(_outbox_bson_is_valid(&symbol, false), "the library never looked at symbols");
   cr_assert_not(_outbox_bson_is_json_clean(&code));
   cr_assert(_outbox_bson_is_valid(&code, false));

   /* 102 levels: {d: {d: ... {s: "\xff"}}}, the bad string below the walk's bound. */
   bson_t *levels[103];
   levels[102] = bson_new();
   bson_append_utf8(levels[102], "s", 1, "\xff", 1);
   for (int i = 101; i >= 0; i--) {
      levels[i] = bson_new();
      BSON_APPEND_DOCUMENT(levels[i], "d", levels[i + 1]);
   }
   cr_assert(_outbox_bson_is_json_clean(levels[0]));
   cr_assert_not(_outbox_bson_is_valid(levels[0], false));
   cr_assert_not(_outbox_bson_is_json_clean(levels[90]), "a bad string within the bound");
   for (int i = 0; i <= 102; i++) {
      bson_destroy(levels[i]);
   }
   bson_destroy(&nul);
   bson_destroy(&symbol);
   bson_destroy(&code);
}

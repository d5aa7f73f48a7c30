/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: validation of stored events (what the relay uses to dead-letter) and of the
 * bookkeeping fields of stored documents.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "document-private.h"
#include "event-private.h"

#define GOOD_ID "0f8fad5b-d9cb-469f-a165-70867728950e"

/* A valid stored event with field `skip` left out and, if `extra_key` is set, an extra field
 * appended from `extra` (a one-field document). */
static bson_t *
event_without(const char *skip, const bson_t *extra)
{
   bson_t *ev = bson_new();
   bson_t *headers = BCON_NEW("h", BCON_UTF8("v"));

   if (strcmp(skip, "id") != 0) {
      BSON_APPEND_UTF8(ev, "id", GOOD_ID);
   }
   if (strcmp(skip, "seq") != 0) {
      BSON_APPEND_INT64(ev, "seq", 1);
   }
   if (strcmp(skip, "type") != 0) {
      BSON_APPEND_UTF8(ev, "type", "contact.created");
   }
   if (strcmp(skip, "time") != 0) {
      BSON_APPEND_DATE_TIME(ev, "time", 1700000000000);
   }
   if (strcmp(skip, "data") != 0) {
      bson_t empty = BSON_INITIALIZER;
      BSON_APPEND_DOCUMENT(ev, "data", &empty);
   }
   if (strcmp(skip, "headers") != 0) {
      BSON_APPEND_DOCUMENT(ev, "headers", headers);
   }
   if (extra) {
      bson_concat(ev, extra);
   }
   bson_destroy(headers);
   return ev;
}

/* Asserts that the event built with `skip` and `extra` fails with a reason containing `why`. */
static void
assert_invalid(const char *skip, bson_t *extra, const char *why)
{
   bson_t *ev = event_without(skip, extra);
   bson_error_t error;

   cr_assert_not(_outbox_stored_event_validate(ev, &error), "accepted (%s)", why);
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert(strstr(error.message, why) != NULL, "\"%s\" lacks \"%s\"", error.message, why);
   bson_destroy(ev);
   bson_destroy(extra);
}

Test(stored_event, valid)
{
   bson_t *ev = event_without("", NULL);
   bson_t *no_headers = event_without("headers", NULL);
   bson_t *extra = BCON_NEW("future", BCON_INT32(1));
   bson_t *with_extra = event_without("", extra);
   bson_error_t error;

   cr_assert(_outbox_stored_event_validate(ev, &error), "%s", error.message);
   cr_assert(_outbox_stored_event_validate(no_headers, &error), "%s", error.message);
   cr_assert(_outbox_stored_event_validate(with_extra, &error), "%s", error.message);
   bson_destroy(ev);
   bson_destroy(no_headers);
   bson_destroy(extra);
   bson_destroy(with_extra);
}

Test(stored_event, missing_fields)
{
   assert_invalid("id", NULL, "id: missing");
   assert_invalid("seq", NULL, "seq: missing");
   assert_invalid("type", NULL, "type: missing");
   assert_invalid("time", NULL, "time: missing");
   assert_invalid("data", NULL, "data: missing");
}

Test(stored_event, wrong_values)
{
   assert_invalid("id", BCON_NEW("id", BCON_INT32(1)), "id: expected string, got int32");
   assert_invalid("id", BCON_NEW("id", BCON_UTF8("not-a-uuid")), "not a lowercase");
   assert_invalid("id", BCON_NEW("id", BCON_UTF8("0F8FAD5B-D9CB-469F-A165-70867728950E")),
                  "not a lowercase");
   assert_invalid("seq", BCON_NEW("seq", BCON_INT32(1)), "seq: expected Int64, got int32");
   assert_invalid("seq", BCON_NEW("seq", BCON_INT64(0)), "seq: 0 is not >= 1");
   assert_invalid("seq", BCON_NEW("seq", BCON_INT64(-3)), "is not >= 1");
   assert_invalid("type", BCON_NEW("type", BCON_UTF8("a b")), "type: \"a b\"");
   assert_invalid("type", BCON_NEW("type", BCON_UTF8("")), "type:");
   assert_invalid("type", BCON_NEW("type", BCON_DOUBLE(1)), "type: expected string, got double");
   assert_invalid("time", BCON_NEW("time", BCON_INT64(1)), "time: expected Date, got Int64");
   assert_invalid("data", BCON_NEW("data", BCON_UTF8("x")), "data: expected document");
   assert_invalid("data", BCON_NEW("data", "[", "]"), "data: expected document, got array");
   assert_invalid("headers", BCON_NEW("headers", BCON_UTF8("x")), "headers: expected document");
   assert_invalid("headers", BCON_NEW("headers", "{", "n", BCON_INT32(1), "}"),
                  "headers.n: expected string, got int32");
}

Test(stored_event, headers_utf8)
{
   bson_t *extra = bson_new(), headers;

   bson_append_document_begin(extra, "headers", -1, &headers);
   bson_append_utf8(&headers, "k", 1, "\xc3", 1);
   bson_append_document_end(extra, &headers);
   assert_invalid("headers", extra, "headers.k: value is not valid UTF-8");
}

static const _outbox_field_names_t names = {"version",  "eventSeq",     "events",
                                            "deleted",  "deadLetters",  "discardedLetters",
                                            "requeues", "recentCommits"};

static bool
parse(bson_t *doc, _outbox_doc_state_t *st, bson_error_t *error)
{
   bool ok = _outbox_doc_state_parse(doc, &names, st, error);

   if (!ok) {
      cr_assert_eq(error->domain, OUTBOX_ERROR_DOMAIN);
      cr_assert_eq(error->code, OUTBOX_ERROR_MALFORMED_DOCUMENT);
   }
   bson_destroy(doc);
   return ok;
}

Test(document, state)
{
   _outbox_doc_state_t st;
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "version", BCON_INT64(3), "eventSeq", BCON_INT64(7),
                          "events", "[", "{", "}", "{", "}", "]");
   uint32_t len = doc->len;

   cr_assert(parse(doc, &st, &error), "%s", error.message);
   cr_assert_eq(st.version, 3);
   cr_assert_eq(st.event_seq, 7);
   cr_assert_eq(st.pending, 2);
   cr_assert_eq(st.size, (int64_t)len);
   cr_assert(parse(BCON_NEW("version", BCON_INT32(1), "eventSeq", BCON_INT32(0)), &st, &error));
   cr_assert_eq(st.pending, 0);
   cr_assert(
      parse(BCON_NEW("version", BCON_INT64(1), "eventSeq", BCON_INT64(0), "events", BCON_NULL), &st,
            &error));
   cr_assert_not(parse(BCON_NEW("eventSeq", BCON_INT64(0)), &st, &error));
   cr_assert(strstr(error.message, "no \"version\"") != NULL, "%s", error.message);
   cr_assert_not(
      parse(BCON_NEW("version", BCON_DOUBLE(1), "eventSeq", BCON_INT64(0)), &st, &error));
   cr_assert_not(parse(BCON_NEW("version", BCON_INT64(0), "eventSeq", BCON_INT64(0)), &st, &error));
   cr_assert_not(parse(BCON_NEW("version", BCON_INT64(1)), &st, &error));
   cr_assert_not(
      parse(BCON_NEW("version", BCON_INT64(1), "eventSeq", BCON_INT64(-1)), &st, &error));
   cr_assert_not(
      parse(BCON_NEW("version", BCON_INT64(1), "eventSeq", BCON_INT64(0), "events", "{", "}"), &st,
            &error));
   cr_assert(strstr(error.message, "expected array") != NULL, "%s", error.message);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The inbox without a server: seq classification, options, and the consumer's CloudEvents
 * decoding.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <outbox/inbox.h>

#include "cloudevent.h"

Test(inbox_unit, classify)
{
   cr_assert_eq(outbox_seq_classify(0, 0), OUTBOX_SEQ_UNTRACKED);
   cr_assert_eq(outbox_seq_classify(0, 1), OUTBOX_SEQ_IN_ORDER);
   cr_assert_eq(outbox_seq_classify(4, 5), OUTBOX_SEQ_IN_ORDER);
   cr_assert_eq(outbox_seq_classify(0, 3), OUTBOX_SEQ_GAP);
   cr_assert_eq(outbox_seq_classify(4, 7), OUTBOX_SEQ_GAP);
   cr_assert_eq(outbox_seq_classify(4, 4), OUTBOX_SEQ_LATE);
   cr_assert_eq(outbox_seq_classify(4, 2), OUTBOX_SEQ_LATE);
   cr_assert_str_eq(outbox_seq_order_name(OUTBOX_SEQ_GAP), "gap");
   cr_assert_str_eq(outbox_seq_order_name((outbox_seq_order_t)99), "unknown");
}

static void
expect_bad(mongoc_client_pool_t *pool, bson_t *opts)
{
   bson_error_t error;

   cr_assert_null(outbox_inbox_new(pool, "db", "c", opts, &error));
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   bson_destroy(opts);
}

Test(inbox_unit, options)
{
   mongoc_uri_t *uri;
   mongoc_client_pool_t *pool;
   bson_t *good = BCON_NEW("window", BCON_INT32(5), "ledger", BCON_UTF8(""), "inboxField",
                           BCON_UTF8("seen"), "writeConcern", "{", "w", BCON_INT32(1), "}");
   bson_error_t error;
   outbox_inbox_t *ib;

   mongoc_init();
   uri = mongoc_uri_new("mongodb://127.0.0.1:1/");
   pool = mongoc_client_pool_new(uri);
   ib = outbox_inbox_new(pool, "db", "c", good, &error);
   cr_assert_not_null(ib, "%s", error.message);
   outbox_inbox_destroy(ib);
   outbox_inbox_destroy(NULL);
   expect_bad(pool, BCON_NEW("windw", BCON_INT32(5)));
   expect_bad(pool, BCON_NEW("window", BCON_INT32(0)));
   expect_bad(pool, BCON_NEW("window", BCON_UTF8("5")));
   expect_bad(pool, BCON_NEW("skipLate", BCON_INT32(1)));
   expect_bad(pool, BCON_NEW("inboxField", BCON_UTF8("a.b")));
   expect_bad(pool, BCON_NEW("seqField", BCON_UTF8("inbox")));
   expect_bad(pool, BCON_NEW("seqField", BCON_UTF8("_id")));
   cr_assert_null(outbox_inbox_new(pool, "", "c", NULL, &error));
   bson_destroy(good);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
}

Test(cloudevent, structured)
{
   const char *json = "{\"specversion\":\"1.0\",\"id\":\"e1\",\"source\":\"/contacts/contacts\","
                      "\"type\":\"ContactEmailUpdated\",\"subject\":\"abc\",\"seq\":3,"
                      "\"data\":{\"email\":\"a@b.co\"}}";
   cloudevent_t ev;
   char err[128];
   bson_iter_t it;

   cr_assert(cloudevent_decode(json, strlen(json), NULL, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.id, "e1");
   cr_assert_str_eq(ev.type, "ContactEmailUpdated");
   cr_assert_str_eq(ev.subject, "abc");
   cr_assert_eq(ev.seq, 3);
   cr_assert(bson_iter_init_find(&it, &ev.data, "email"));
   cloudevent_clear(&ev);
   cloudevent_clear(&ev);
}

Test(cloudevent, seq_as_string_and_binary_mode)
{
   const char *json = "{\"specversion\":\"1.0\",\"id\":\"e1\",\"type\":\"T\",\"subject\":\"s\","
                      "\"seq\":\"12\"}";
   cloudevent_props_t props = {"e2", "ContactDeleted", "xyz", "4", NULL, false};
   cloudevent_t ev;
   char err[128];

   cr_assert(cloudevent_decode(json, strlen(json), NULL, &ev, err, sizeof err));
   cr_assert_eq(ev.seq, 12);
   cloudevent_clear(&ev);
   cr_assert(cloudevent_decode("{}", 2, &props, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.id, "e2");
   cr_assert_str_eq(ev.subject, "xyz");
   cr_assert_eq(ev.seq, 4);
   cloudevent_clear(&ev);
}

/* Issue 38: binary data in binary mode (payload format indicator 0): not parsed as JSON, the
 * event still read from the user properties; in structured mode data_base64 leaves data
 * empty. Before, both were "unreadable" and dropped. */
Test(cloudevent, binary_data)
{
   static const char png[] = "\x89PNG\r\n\x1a\n";
   cloudevent_props_t props = {"e3", "ImageStored", "xyz", "5", NULL, true};
   const char *structured = "{\"specversion\":\"1.0\",\"id\":\"e4\",\"type\":\"T\",\"subject\":"
                            "\"s\",\"seq\":6,\"datacontenttype\":\"image/png\",\"data_base64\":"
                            "\"iVBORw0KGgo=\"}";
   cloudevent_t ev;
   char err[128];

   cr_assert(cloudevent_decode(png, sizeof png - 1, &props, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.id, "e3");
   cr_assert_eq(ev.seq, 5);
   cr_assert(bson_empty(&ev.data));
   cloudevent_clear(&ev);
   cr_assert(cloudevent_decode(structured, strlen(structured), NULL, &ev, err, sizeof err), "%s",
             err);
   cr_assert_str_eq(ev.id, "e4");
   cr_assert(bson_empty(&ev.data));
   cloudevent_clear(&ev);
}

/* Issue 27: the trace id of the event's traceparent, from the structured payload's
 * distributed-tracing attribute or from binary mode's user property; nothing from an invalid
 * one. */
Test(cloudevent, trace_id_from_either_mode)
{
   const char *json =
      "{\"specversion\":\"1.0\",\"id\":\"e1\",\"type\":\"T\",\"subject\":\"s\","
      "\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"}";
   const char *bad = "{\"specversion\":\"1.0\",\"id\":\"e1\",\"type\":\"T\",\"subject\":\"s\","
                     "\"traceparent\":\"00-nope\"}";
   cloudevent_props_t props = {
      "e2", "T", "s", "4", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false};
   cloudevent_t ev;
   char err[128];

   cr_assert(cloudevent_decode(json, strlen(json), NULL, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
   cloudevent_clear(&ev);
   cr_assert(cloudevent_decode("{}", 2, &props, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.trace_id, "0af7651916cd43dd8448eb211c80319c");
   cloudevent_clear(&ev);
   cr_assert(cloudevent_decode(bad, strlen(bad), NULL, &ev, err, sizeof err), "%s", err);
   cr_assert_str_eq(ev.trace_id, "");
   cloudevent_clear(&ev);
}

Test(cloudevent, refuses_garbage)
{
   const char *no_id = "{\"specversion\":\"1.0\",\"type\":\"T\"}";
   cloudevent_t ev;
   char err[128];

   cr_assert_not(cloudevent_decode("not json", 8, NULL, &ev, err, sizeof err));
   cr_assert_not(cloudevent_decode("", 0, NULL, &ev, err, sizeof err));
   cr_assert_not(cloudevent_decode(no_id, strlen(no_id), NULL, &ev, err, sizeof err));
   cr_assert(strstr(err, "id") != NULL, "%s", err);
}

/* Issue 14, 2: an id "a\u0000x" was cut to "a", so "a\u0000y" became its duplicate. A string
 * attribute holding a NUL counts as missing. */
Test(cloudevent, refuses_nul_in_attributes)
{
   const char *nul_id =
      "{\"specversion\":\"1.0\",\"id\":\"a\\u0000x\",\"type\":\"T\",\"subject\":\"s\"}";
   cloudevent_t ev;
   char err[128];

   cr_assert_not(cloudevent_decode(nul_id, strlen(nul_id), NULL, &ev, err, sizeof err));
   cr_assert(strstr(err, "id") != NULL, "%s", err);
}

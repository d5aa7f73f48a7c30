/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: event ids, types, headers, data, and the stored form.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "event-private.h"
#include "uuid-private.h"

static bool
is_hex_lower(char c)
{
   return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

Test(uuid, format_is_lowercase_v4)
{
   for (int n = 0; n < 1000; n++) {
      char id[_OUTBOX_UUID_LEN + 1];

      _outbox_uuid_v4(id);
      cr_assert_eq(strlen(id), 36);
      for (int i = 0; i < 36; i++) {
         if (i == 8 || i == 13 || i == 18 || i == 23) {
            cr_assert_eq(id[i], '-', "%s", id);
         } else {
            cr_assert(is_hex_lower(id[i]), "%s", id);
         }
      }
      cr_assert_eq(id[14], '4', "version nibble in %s", id);
      cr_assert(strchr("89ab", id[19]) != NULL, "variant nibble in %s", id);
      cr_assert(_outbox_uuid_is_valid(id, 36));
   }
}

static int
cmp_ids(const void *a, const void *b)
{
   return memcmp(a, b, _OUTBOX_UUID_LEN + 1);
}

Test(uuid, unique)
{
   enum { N = 100000 };
   char(*ids)[_OUTBOX_UUID_LEN + 1] = malloc(N * sizeof *ids);

   cr_assert_not_null(ids);
   for (int i = 0; i < N; i++) {
      _outbox_uuid_v4(ids[i]);
   }
   qsort(ids, N, sizeof *ids, cmp_ids);
   for (int i = 1; i < N; i++) {
      cr_assert_str_neq(ids[i - 1], ids[i]);
   }
   free(ids);
}

/* Random bytes are buffered per thread: a forked child must not hand out the ids its parent
 * has buffered but not yet used. */
Test(uuid, fork_does_not_repeat)
{
   char parent[_OUTBOX_UUID_LEN + 1], child[_OUTBOX_UUID_LEN + 1], first[_OUTBOX_UUID_LEN + 1];
   int fds[2], status;
   pid_t pid;

   _outbox_uuid_v4(first); /* fills the buffer */
   cr_assert_eq(pipe(fds), 0);
   pid = fork();
   cr_assert_neq(pid, -1);
   if (pid == 0) {
      _outbox_uuid_v4(child);
      _exit(write(fds[1], child, sizeof child) == (ssize_t)sizeof child ? 0 : 1);
   }
   _outbox_uuid_v4(parent);
   cr_assert_eq(read(fds[0], child, sizeof child), (ssize_t)sizeof child);
   cr_assert_eq(waitpid(pid, &status, 0), pid);
   cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
   cr_assert_str_neq(parent, child, "parent and child made the same id after fork");
   close(fds[0]);
   close(fds[1]);
}

Test(uuid, validation)
{
   cr_assert(_outbox_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950e", 36));
   /* Other versions are accepted: producers in other languages may use UUIDv7. */
   cr_assert(_outbox_uuid_is_valid("01890a5d-ac96-774b-bcce-b302099a8057", 36));
   cr_assert_not(_outbox_uuid_is_valid("0F8FAD5B-D9CB-469F-A165-70867728950E", 36));
   cr_assert_not(_outbox_uuid_is_valid("0f8fad5bd9cb469fa16570867728950e", 32));
   cr_assert_not(_outbox_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950", 35));
   cr_assert_not(_outbox_uuid_is_valid("0f8fad5b-d9cb-469f-a165_70867728950e", 36));
   cr_assert_not(_outbox_uuid_is_valid("0f8fad5b-d9cb-469f-a165-70867728950g", 36));
   cr_assert_not(_outbox_uuid_is_valid(NULL, 36));
}

Test(event, new_assigns_id_and_copies)
{
   bson_t *data = BCON_NEW("a", BCON_INT32(1));
   outbox_event_t *ev = outbox_event_new("contact.created", data);
   outbox_event_t *other = outbox_event_new("contact.created", NULL);

   bson_destroy(data); /* copied */
   cr_assert(_outbox_uuid_is_valid(outbox_event_get_id(ev), 36));
   cr_assert_str_neq(outbox_event_get_id(ev), outbox_event_get_id(other));
   cr_assert_str_eq(outbox_event_get_type(ev), "contact.created");
   cr_assert_eq(outbox_event_get_seq(ev), 0);
   cr_assert_eq(outbox_event_get_time(ev), 0);
   cr_assert(bson_has_field(outbox_event_get_data(ev), "a"));
   cr_assert(bson_empty(outbox_event_get_data(other)));
   outbox_event_destroy(ev);
   outbox_event_destroy(other);
   outbox_event_destroy(NULL);
}

static bool
type_ok(const char *type)
{
   outbox_event_t *ev = outbox_event_new(type, NULL);
   bson_error_t error;
   bool ok = outbox_event_validate(ev, &error);

   if (!ok) {
      cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
      cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   }
   outbox_event_destroy(ev);
   return ok;
}

Test(event, type_validation)
{
   char longest[129], too_long[130];

   memset(longest, 'a', 128);
   longest[128] = '\0';
   memset(too_long, 'a', 129);
   too_long[129] = '\0';
   cr_assert(type_ok("contact.created"));
   cr_assert(type_ok("A-Z_a-z.0-9"));
   cr_assert(type_ok("x"));
   cr_assert(type_ok(longest));
   cr_assert_not(type_ok(too_long));
   cr_assert_not(type_ok(""));
   cr_assert_not(type_ok(NULL));
   cr_assert_not(type_ok("contact created"));
   cr_assert_not(type_ok("contact/created"));
   cr_assert_not(type_ok("contact$created"));
   cr_assert_not(type_ok("caf\xc3\xa9"));
}

Test(event, data_must_be_utf8)
{
   bson_t data = BSON_INITIALIZER;
   outbox_event_t *ev;
   bson_error_t error;

   bson_append_utf8(&data, "s", 1, "bad\xff", 4);
   ev = outbox_event_new("t", &data);
   cr_assert_not(outbox_event_validate(ev, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   outbox_event_destroy(ev);
   bson_destroy(&data);
}

static bool
data_ok(bson_t *data)
{
   outbox_event_t *ev = outbox_event_new("t", data);
   bson_error_t error;
   bool ok = outbox_event_validate(ev, &error);

   if (!ok) {
      cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   }
   outbox_event_destroy(ev);
   bson_destroy(data);
   return ok;
}

Test(event, data_keys)
{
   cr_assert(data_ok(BCON_NEW("a.b", BCON_INT32(1), "n", "{", "x", "[", BCON_UTF8("y"), "]", "}")));
   cr_assert(data_ok(BCON_NEW("price", BCON_UTF8("$5"))), "'$' in values is fine");
   cr_assert_not(data_ok(BCON_NEW("$date", BCON_INT64(1))));
   cr_assert_not(data_ok(BCON_NEW("n", "{", "$oid", BCON_UTF8("x"), "}")));
   cr_assert_not(data_ok(BCON_NEW("n", "[", "{", "$x", BCON_INT32(1), "}", "]")));
   cr_assert_not(data_ok(BCON_NEW("n", "{", "", BCON_INT32(1), "}")), "empty keys are refused");
}

Test(event, headers)
{
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t error;
   bson_iter_t it;

   cr_assert(outbox_event_set_header(ev, "x-trace", "00-abc-01", &error));
   cr_assert(outbox_event_set_header(ev, "content-type", "application/json", &error));
   cr_assert(outbox_event_set_header(ev, "x-trace", "00-def-01", &error));
   cr_assert_eq(bson_count_keys(&ev->headers), 2);
   cr_assert(bson_iter_init_find(&it, &ev->headers, "x-trace"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "00-def-01");

   cr_assert_not(outbox_event_set_header(ev, "", "v", &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_event_set_header(ev, "$set", "v", &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_event_set_header(ev, "k\xff", "v", &error));
   cr_assert_not(outbox_event_set_header(ev, "k", "v\xc3", &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_event_set_header(ev, "k", NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(bson_count_keys(&ev->headers), 2, "failed calls changed nothing");
   outbox_event_destroy(ev);
}

Test(event, expires_at)
{
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t error;
   cr_assert_not(ev->has_expires);
   cr_assert(outbox_event_set_expires_at(ev, 1700000000000, &error));
   cr_assert(ev->has_expires);
   cr_assert_eq(ev->expires_at, 1700000000000);
   cr_assert_not(outbox_event_set_expires_at(ev, INT64_C(253402300800000), &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_eq(ev->expires_at, 1700000000000, "a refused call changes nothing");
   cr_assert_not(outbox_event_set_expires_at(NULL, 0, &error));
   outbox_event_destroy(ev);

   bson_t *bad = BCON_NEW("id", BCON_UTF8("0f8fad5b-d9cb-469f-a165-70867728950e"), "seq",
                          BCON_INT64(1), "type", BCON_UTF8("t"), "time", BCON_DATE_TIME(0), "data",
                          "{", "}", "expiresAt", BCON_UTF8("tomorrow"));
   cr_assert_not(_outbox_stored_event_validate(bad, &error));
   cr_assert(strstr(error.message, "expiresAt"), "%s", error.message);
   bson_destroy(bad);
}

/* Issue 33: what the relay would leave out of the message (the contract's HEADER rows) is
 * refused at write, with the rule's reason. Before, non-characters, reserved names (replay
 * among them), a bad traceparent and a 17th header were all stored. */
Test(event, headers_follow_the_contract)
{
   static const struct {
      const char *key, *value, *why;
   } bad[] = {
      {"k", "a\xef\xbf\xbe", "MQTT text"},    /* U+FFFE */
      {"k", "\xef\xbf\xbf", "MQTT text"},     /* U+FFFF */
      {"k", "\xef\xb7\x90", "MQTT text"},     /* U+FDD0 */
      {"k", "\xf4\x8f\xbf\xbf", "MQTT text"}, /* U+10FFFF */
      {"k", "\xc2\x85", "MQTT text"},         /* C1 control */
      {"k", "tab\there", "MQTT text"},        {"k\xef\xbf\xbe", "v", "MQTT text"},
      {"replay", "false", "reserved"},        {"Replay", "true", "reserved"},
      {"EVENT-ID", "x", "reserved"},          {"traceparent", "00-nope", "W3C"},
   };
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t error;
   char big[4098];

   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      cr_assert_not(outbox_event_set_header(ev, bad[i].key, bad[i].value, &error), "%zu", i);
      cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
      cr_assert_not_null(strstr(error.message, bad[i].why), "%zu: %s", i, error.message);
   }
   cr_assert(outbox_event_set_header(ev, "k", "\xef\xbb\xbf BOM and \xe2\x82\xac", &error), "%s",
             error.message);
   memset(big, 'x', 4097);
   big[4097] = '\0';
   cr_assert_not(outbox_event_set_header(ev, "k", big, &error));
   big[4096] = '\0';
   cr_assert(outbox_event_set_header(ev, "k", big, &error), "%s", error.message);
   /* 16 headers at most; replacing one of them is fine. */
   for (int i = 1; i < 16; i++) {
      char key[8];
      snprintf(key, sizeof key, "h%d", i);
      cr_assert(outbox_event_set_header(ev, key, "v", &error), "%s", error.message);
   }
   cr_assert_not(outbox_event_set_header(ev, "h16", "v", &error));
   cr_assert_not_null(strstr(error.message, "more than 16"), "%s", error.message);
   cr_assert(outbox_event_set_header(ev, "h1", "w", &error), "%s", error.message);
   outbox_event_destroy(ev);
}

Test(event, binary_data)
{
   static const uint8_t bytes[] = {0x89, 'P', 'N', 'G', 0, 0xff};
   outbox_event_t *img = outbox_event_new_binary("image.stored", bytes, sizeof bytes, "image/png");
   outbox_event_t *raw = outbox_event_new_binary("raw.stored", NULL, 0, NULL);
   outbox_event_t *bad = outbox_event_new_binary("t", bytes, 1, "text/\x01plain");
   outbox_event_t *evs[] = {img, raw};
   bson_t arr = BSON_INITIALIZER, doc;
   bson_error_t error;
   bson_iter_t it, f;

   cr_assert(outbox_event_validate(img, &error), "%s", error.message);
   cr_assert(outbox_event_validate(raw, &error), "%s", error.message);
   cr_assert_not(outbox_event_validate(bad, &error), "a control character in the content type");
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   _outbox_events_append_stored(&arr, evs, 2, 1, 1700000000000);
   cr_assert_eq(_outbox_events_stored_size(evs, 2), (int64_t)arr.len);
   cr_assert(bson_iter_init(&it, &arr) && bson_iter_next(&it));
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   cr_assert(bson_init_static(&doc, data, len));
   cr_assert(_outbox_stored_event_validate(&doc, &error), "%s", error.message);
   cr_assert(bson_iter_init_find(&f, &doc, "data") && BSON_ITER_HOLDS_BINARY(&f));
   bson_subtype_t sub;
   uint32_t n;
   const uint8_t *got;
   bson_iter_binary(&f, &sub, &n, &got);
   cr_assert(sub == BSON_SUBTYPE_BINARY && n == sizeof bytes && !memcmp(got, bytes, n));
   cr_assert(bson_iter_init_find(&f, &doc, "contentType"));
   cr_assert_str_eq(bson_iter_utf8(&f, NULL), "image/png");
   cr_assert(bson_iter_next(&it));
   bson_iter_document(&it, &len, &data);
   cr_assert(bson_init_static(&doc, data, len));
   cr_assert_not(bson_has_field(&doc, "contentType"));
   bson_destroy(&arr);
   outbox_event_destroy(img);
   outbox_event_destroy(raw);
   outbox_event_destroy(bad);
}

Test(event, check_refuses_duplicates_and_committed)
{
   outbox_event_t *a = outbox_event_new("a", NULL);
   outbox_event_t *b = outbox_event_new("b", NULL);
   outbox_event_t *bad = outbox_event_new("not ok", NULL);
   outbox_event_t *twice[] = {a, b, a};
   outbox_event_t *with_bad[] = {a, bad};
   outbox_event_t *fine[] = {a, b};
   bson_error_t error;

   cr_assert(_outbox_events_check(fine, 2, &error));
   cr_assert(_outbox_events_check(NULL, 0, &error));
   cr_assert_not(_outbox_events_check(NULL, 1, &error));
   cr_assert_not(_outbox_events_check(twice, 3, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(_outbox_events_check(with_bad, 2, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert(strstr(error.message, "event 1") != NULL, "%s", error.message);
   _outbox_events_mark_committed(fine, 2, 7, 1234);
   cr_assert_eq(outbox_event_get_seq(b), 8);
   cr_assert_eq(outbox_event_get_time(b), 1234);
   cr_assert_not(_outbox_events_check(fine, 2, &error));
   outbox_event_destroy(a);
   outbox_event_destroy(b);
   outbox_event_destroy(bad);
}

Test(event, stored_size_is_exact)
{
   outbox_event_t *evs[12];
   bson_t arr = BSON_INITIALIZER;
   bson_error_t error;

   /* 12 events: keys "10" and "11" are longer than "0".."9". */
   for (int i = 0; i < 12; i++) {
      bson_t *data = BCON_NEW("i", BCON_INT32(i), "s", BCON_UTF8("some text"));

      evs[i] = outbox_event_new(i % 2 ? "a" : "a.much.longer.type-name", data);
      if (i % 3 == 0) {
         cr_assert(outbox_event_set_header(evs[i], "k", "value", &error));
      }
      if (i % 4 == 0) {
         cr_assert(outbox_event_set_expires_at(evs[i], 1700000000000 + i, &error));
      }
      bson_destroy(data);
   }
   _outbox_events_append_stored(&arr, evs, 12, 1, 0);
   cr_assert_eq(_outbox_events_stored_size(evs, 12), (int64_t)arr.len);
   bson_destroy(&arr);
   for (int i = 0; i < 12; i++) {
      outbox_event_destroy(evs[i]);
   }
}

Test(event, stored_form_is_valid)
{
   bson_t *data = BCON_NEW("x", BCON_UTF8("y"));
   outbox_event_t *a = outbox_event_new("a.b", data);
   outbox_event_t *b = outbox_event_new("c", NULL);
   outbox_event_t *evs[] = {a, b};
   bson_t arr = BSON_INITIALIZER, doc;
   bson_iter_t it, child;
   bson_error_t error;
   int64_t expect_seq = 5;

   cr_assert(outbox_event_set_header(b, "h", "v", &error));
   cr_assert(outbox_event_set_expires_at(b, 1700000060000, &error));
   _outbox_events_append_stored(&arr, evs, 2, 5, 1700000000000);
   cr_assert(bson_iter_init(&it, &arr));
   while (bson_iter_next(&it)) {
      uint32_t len;
      const uint8_t *bytes;

      bson_iter_document(&it, &len, &bytes);
      cr_assert(bson_init_static(&doc, bytes, len));
      cr_assert(_outbox_stored_event_validate(&doc, &error), "%s", error.message);
      cr_assert(bson_iter_init_find(&child, &doc, "seq"));
      cr_assert_eq(bson_iter_int64(&child), expect_seq++);
      cr_assert(bson_iter_init_find(&child, &doc, "time"));
      cr_assert_eq(bson_iter_date_time(&child), 1700000000000);
      /* Only b has an expiry (issue 38). */
      bool has = bson_iter_init_find(&child, &doc, "expiresAt");
      cr_assert_eq(has, expect_seq == 7);
      cr_assert(!has || bson_iter_date_time(&child) == 1700000060000);
   }
   cr_assert_eq(expect_seq, 7);
   cr_assert_eq(_outbox_events_stored_size(evs, 2), (int64_t)arr.len);
   cr_assert_eq(_outbox_events_stored_size(evs, 0), 5);
   cr_assert_eq(outbox_event_get_seq(a), 0, "appending does not commit");
   bson_destroy(&arr);
   bson_destroy(data);
   outbox_event_destroy(a);
   outbox_event_destroy(b);
}

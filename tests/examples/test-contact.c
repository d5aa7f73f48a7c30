/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the Contact domain rules and its JSON representation (no servers).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "contact.h"
#include "representation.h"

static contact_input_t
ada(void)
{
   contact_input_t in = {.first_name = "Ada",
                         .last_name = "Lovelace",
                         .email = "ada@example.org",
                         .description = "first programmer",
                         .has_company = true,
                         .company_name = "Analytical Engines",
                         .street = "St James's Square",
                         .house_number = "12",
                         .postal_code = "SW1Y",
                         .city = "London",
                         .country = "UK"};
   return in;
}

static contact_t *
new_ada(void)
{
   contact_input_t in = ada();
   contact_error_t err;
   contact_t *c = contact_create("0123456789abcdef01234567", &in, 1000, &err);

   cr_assert_not_null(c, "create failed: %s %s", err.field, err.message);
   return c;
}

/* Ada as loaded back from her stored fields: no events pending, nothing changed. */
static contact_t *
reloaded_ada(void)
{
   contact_t *c = new_ada(), *d;
   bson_t stored = BSON_INITIALIZER;
   contact_error_t err;

   contact_append_fields(c, 0, &stored);
   d = contact_from_bson("0123456789abcdef01234567", &stored, &err);
   cr_assert_not_null(d, "reload failed: %s %s", err.field, err.message);
   bson_destroy(&stored);
   contact_destroy(c);
   return d;
}

static const char *
str_at(const bson_t *doc, const char *path)
{
   bson_iter_t it;

   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
       BSON_ITER_HOLDS_UTF8(&it))
      return bson_iter_utf8(&it, NULL);
   return NULL;
}

Test(contact, create_raises_only_created)
{
   contact_t *c = new_ada();

   cr_assert_eq(contact_event_count(c), 1);
   cr_assert_str_eq(contact_event_type(c, 0), "ContactCreated");
   cr_assert_str_eq(str_at(contact_event_data(c, 0), "name.firstName"), "Ada");
   cr_assert_str_eq(str_at(contact_event_data(c, 0), "company.city"), "London");
   cr_assert_eq(contact_changes(c), 0);
   contact_destroy(c);
}

Test(contact, blank_names_refused)
{
   contact_input_t in = ada();
   contact_error_t err;

   in.first_name = "   ";
   cr_assert_null(contact_create("x", &in, 0, &err));
   cr_assert_str_eq(err.field, "name.firstName");
   in = ada();
   in.last_name = "";
   cr_assert_null(contact_create("x", &in, 0, &err));
   cr_assert_str_eq(err.field, "name.lastName");
   in.last_name = NULL;
   cr_assert_null(contact_create("x", &in, 0, &err));
}

Test(contact, email_rules)
{
   cr_assert(contact_email_valid("a@b.co"));
   cr_assert(contact_email_valid("first.last+tag@mail.example.org"));
   cr_assert_not(contact_email_valid("plain"));
   cr_assert_not(contact_email_valid("a@b"));
   cr_assert_not(contact_email_valid("@b.co"));
   cr_assert_not(contact_email_valid("a@@b.co"));
   cr_assert_not(contact_email_valid("a b@c.de"));
   cr_assert_not(contact_email_valid("a..b@c.de"));
   cr_assert_not(contact_email_valid("a@-b.de"));
   cr_assert_not(contact_email_valid("a@b..de"));
   cr_assert_not(contact_email_valid(""));
}

Test(contact, rename_raises_one_event_per_kind)
{
   contact_t *d = reloaded_ada();
   contact_error_t err;

   cr_assert_not_null(d);
   cr_assert_eq(contact_event_count(d), 0);
   cr_assert(contact_rename(d, "Augusta", "King", &err));
   cr_assert(contact_change_email(d, "ada@king.org", &err));
   cr_assert(contact_rename(d, "Ada", "King", &err));
   cr_assert_eq(contact_event_count(d), 2);
   /* The later rename replaced the earlier one and moved behind the email change. */
   cr_assert_str_eq(contact_event_type(d, 0), "ContactEmailUpdated");
   cr_assert_str_eq(contact_event_type(d, 1), "ContactNameUpdated");
   cr_assert_str_eq(str_at(contact_event_data(d, 1), "name.firstName"), "Ada");
   cr_assert_eq(contact_changes(d), CONTACT_CHANGED_NAME | CONTACT_CHANGED_EMAIL);
   contact_destroy(d);
}

Test(contact, unchanged_values_raise_nothing)
{
   contact_input_t in = ada();
   contact_error_t err;
   contact_t *d = reloaded_ada();

   cr_assert(contact_replace(d, &in, &err));
   cr_assert_eq(contact_event_count(d), 0);
   cr_assert_eq(contact_changes(d), 0);
   in.description = "changed";
   cr_assert(contact_replace(d, &in, &err));
   cr_assert_eq(contact_event_count(d), 0, "a description change raises no event");
   cr_assert_eq(contact_changes(d), CONTACT_CHANGED_DESCRIPTION);
   contact_destroy(d);
}

Test(contact, company_change_and_invalid_replace_is_atomic)
{
   contact_input_t in = ada();
   contact_error_t err;
   contact_t *d = reloaded_ada();

   in.first_name = "Augusta";
   in.email = "not-an-email";
   cr_assert_not(contact_replace(d, &in, &err));
   cr_assert_str_eq(err.field, "email");
   cr_assert_str_eq(contact_first_name(d), "Ada", "nothing changes on invalid input");
   cr_assert_eq(contact_event_count(d), 0);
   in = ada();
   in.city = "Paris";
   cr_assert(contact_replace(d, &in, &err));
   cr_assert_eq(contact_event_count(d), 1);
   cr_assert_str_eq(contact_event_type(d, 0), "ContactCompanyUpdated");
   cr_assert_str_eq(str_at(contact_event_data(d, 0), "company.city"), "Paris");
   contact_destroy(d);
}

Test(contact, delete_once)
{
   contact_t *c = new_ada();
   contact_error_t err;

   cr_assert(contact_delete(c, &err));
   cr_assert(contact_is_deleted(c));
   cr_assert_not(contact_delete(c, &err));
   cr_assert_not(contact_replace(c, &(contact_input_t){0}, &err));
   contact_destroy(c);
}

static bool
parse(const char *json, contact_input_t *in, contact_error_t *err)
{
   bson_t holder;
   bool ok = representation_parse(json, strlen(json), &holder, in, err);

   bson_destroy(&holder);
   return ok;
}

Test(representation, accepts_a_full_contact)
{
   contact_input_t in;
   contact_error_t err;
   bson_t holder;
   const char *json = "{\"name\":{\"firstName\":\"Ada\",\"lastName\":\"L\"},"
                      "\"email\":\"a@b.co\",\"description\":null,"
                      "\"company\":{\"companyName\":\"X\",\"city\":\"Y\"}}";

   cr_assert(representation_parse(json, strlen(json), &holder, &in, &err), "%s", err.message);
   cr_assert_str_eq(in.first_name, "Ada");
   cr_assert(in.has_company);
   cr_assert_str_eq(in.city, "Y");
   cr_assert_null(in.description);
   bson_destroy(&holder);
}

Test(representation, refuses_bad_input)
{
   contact_input_t in;
   contact_error_t err;
   const char *name = "\"name\":{\"firstName\":\"A\",\"lastName\":\"B\"}";
   char buf[256];

   cr_assert_not(parse("", &in, &err));
   cr_assert_not(parse("[1]", &in, &err));
   cr_assert_not(parse("{\"name\":", &in, &err));
   snprintf(buf, sizeof buf, "{%s,\"email\":\"a@b.co\",\"age\":3}", name);
   cr_assert_not(parse(buf, &in, &err));
   cr_assert_str_eq(err.field, "age");
   snprintf(buf, sizeof buf, "{%s,\"email\":\"a@b.co\",\"id\":\"x\"}", name);
   cr_assert_not(parse(buf, &in, &err));
   cr_assert_str_eq(err.message, "is read-only");
   snprintf(buf, sizeof buf, "{%s,\"email\":42}", name);
   cr_assert_not(parse(buf, &in, &err));
   cr_assert_str_eq(err.field, "email");
   snprintf(buf, sizeof buf, "{%s,\"email\":\"a@b.co\",\"email\":\"c@d.co\"}", name);
   cr_assert_not(parse(buf, &in, &err));
   cr_assert_str_eq(err.message, "appears twice");
   cr_assert_not(parse("{\"name\":{\"firstName\":\"A\"},\"email\":\"a@b.co\"}", &in, &err));
   cr_assert_str_eq(err.field, "name.lastName");
   snprintf(buf, sizeof buf, "{%s,\"email\":\"a@b.co\",\"company\":{\"zip\":\"1\"}}", name);
   cr_assert_not(parse(buf, &in, &err));
   cr_assert_str_eq(err.field, "company.zip");
}

Test(representation, writes_json)
{
   contact_t *c = new_ada();
   bson_string_t *out = bson_string_new(NULL);
   bson_t *back;

   representation_write(c, out);
   back = bson_new_from_json((const uint8_t *)out->str, (ssize_t)out->len, NULL);
   cr_assert_not_null(back, "not JSON: %s", out->str);
   cr_assert_str_eq(str_at(back, "id"), "0123456789abcdef01234567");
   cr_assert_str_eq(str_at(back, "createdAt"), "1970-01-01T00:00:01.000Z");
   cr_assert_str_eq(str_at(back, "company.houseNumber"), "12");
   bson_destroy(back);
   bson_string_free(out, true);
   contact_destroy(c);
}

Test(representation, merge_patch)
{
   bson_t *target = BCON_NEW("name", "{", "firstName", BCON_UTF8("Ada"), "lastName", BCON_UTF8("L"),
                             "}", "email", BCON_UTF8("a@b.co"), "company", BCON_NULL);
   bson_t *patch = BCON_NEW("name", "{", "lastName", BCON_UTF8("King"), "}", "email", BCON_NULL,
                            "company", "{", "companyName", BCON_UTF8("X"), "city", BCON_NULL, "}");
   bson_t *dup = BCON_NEW("name", "{", "a", BCON_INT32(1), "a", BCON_INT32(2), "}");
   contact_error_t err;
   bson_iter_t it;
   bson_t out;

   cr_assert(representation_merge_patch(target, patch, &out, &err));
   cr_assert_str_eq(str_at(&out, "name.firstName"), "Ada");
   cr_assert_str_eq(str_at(&out, "name.lastName"), "King");
   cr_assert_not(bson_iter_init_find(&it, &out, "email"), "null removes a member");
   cr_assert_str_eq(str_at(&out, "company.companyName"), "X");
   cr_assert_not(bson_iter_init(&it, &out) && bson_iter_find_descendant(&it, "company.city", &it),
                 "nulls inside a new object are dropped");
   bson_destroy(&out);
   cr_assert_not(representation_merge_patch(target, dup, &out, &err));
   cr_assert_str_eq(err.field, "a");
   bson_destroy(&out);
   bson_destroy(target);
   bson_destroy(patch);
   bson_destroy(dup);
}

Test(contact, control_characters)
{
   contact_input_t in = ada();
   contact_error_t err;
   contact_t *c;

   in.description = "line one\nline two\tindented";
   c = contact_create("x", &in, 0, &err);
   cr_assert_not_null(c, "a description may span lines: %s", err.message);
   contact_destroy(c);
   in = ada();
   in.last_name = "Love\nlace";
   cr_assert_null(contact_create("x", &in, 0, &err));
   cr_assert_str_eq(err.field, "name.lastName");
   in = ada();
   in.city = "Lon\x01"
             "don";
   cr_assert_null(contact_create("x", &in, 0, &err));
   cr_assert_str_eq(err.field, "company.city");
}

/* Issue 14, 2: "\u0000" in a string was kept by libbson and cut every C string there, so
 * "a@b.org\u0000evil" was stored and published as "a@b.org". Refused with the field's path,
 * in bodies and merge patches alike. */
Test(representation, refuses_nul_escapes)
{
   contact_input_t in;
   contact_error_t err;
   bson_t patch;
   const char *cases[][2] = {
      {"{\"name\":{\"firstName\":\"A\",\"lastName\":\"B\"},\"email\":\"a@b.org\\u0000evil\"}",
       "email"},
      {"{\"name\":{\"firstName\":\"A\\u0000\",\"lastName\":\"B\"},\"email\":\"a@b.org\"}",
       "name.firstName"},
      {"{\"name\":{\"firstName\":\"A\",\"lastName\":\"B\"},\"email\":\"a@b.org\","
       "\"company\":{\"name\":\"\\u0000\"}}",
       "company.name"},
   };

   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      cr_assert_not(parse(cases[i][0], &in, &err), "%s", cases[i][0]);
      cr_assert_str_eq(err.field, cases[i][1]);
      cr_assert_str_eq(err.message, "must not contain a NUL character (\\u0000)");
   }
   const char *p = "{\"description\":\"x\\u0000y\"}";
   cr_assert_not(representation_parse_json(p, strlen(p), &patch, &err));
   cr_assert_str_eq(err.field, "description");
   bson_destroy(&patch);
}

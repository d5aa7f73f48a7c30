/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Strict JSON parsing of contact input and JSON output of contacts.
 */
#include "representation.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static bool
refuse(contact_error_t *err, const char *field, const char *message)
{
   snprintf(err->field, sizeof err->field, "%s", field);
   snprintf(err->message, sizeof err->message, "%s", message);
   return false;
}

/* One allowed key of an object and where its string goes. */
typedef struct {
   const char *key;
   const char **dst;
   bool nullable;
} slot_t;

static bool
read_string(bson_iter_t *it, const slot_t *slot, const char *path, contact_error_t *err)
{
   char msg[96];

   if (BSON_ITER_HOLDS_NULL(it) && slot->nullable) {
      *slot->dst = NULL;
      return true;
   }
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      snprintf(msg, sizeof msg, "must be a string%s", slot->nullable ? " or null" : "");
      return refuse(err, path, msg);
   }
   *slot->dst = bson_iter_utf8(it, NULL);
   return true;
}

/* Reads an object whose every key must be one of `slots` and appear once. Nested objects
 * are handled by the callers; here every value is a string (or null when allowed). */
static bool
read_object(bson_iter_t *obj, const slot_t *slots, size_t n, const char *prefix,
            contact_error_t *err)
{
   bool seen[8] = {false};
   char path[64];

   while (bson_iter_next(obj)) {
      const char *key = bson_iter_key(obj);
      size_t i;

      for (i = 0; i < n && strcmp(key, slots[i].key) != 0; i++)
         ;
      snprintf(path, sizeof path, "%s%s", prefix, key);
      if (i == n)
         return refuse(err, path, "is not a known field");
      if (seen[i])
         return refuse(err, path, "appears twice");
      seen[i] = true;
      if (!read_string(obj, &slots[i], path, err))
         return false;
   }
   return true;
}

static bool
read_name(bson_iter_t *it, contact_input_t *in, contact_error_t *err)
{
   const slot_t slots[] = {{"firstName", &in->first_name, false},
                           {"lastName", &in->last_name, false}};
   bson_iter_t child;

   if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &child))
      return refuse(err, "name", "must be an object {firstName, lastName}");
   if (!read_object(&child, slots, 2, "name.", err))
      return false;
   if (!in->first_name)
      return refuse(err, "name.firstName", "is required");
   if (!in->last_name)
      return refuse(err, "name.lastName", "is required");
   return true;
}

static bool
read_company(bson_iter_t *it, contact_input_t *in, contact_error_t *err)
{
   const slot_t slots[] = {{"companyName", &in->company_name, false},
                           {"street", &in->street, false},
                           {"houseNumber", &in->house_number, false},
                           {"postalCode", &in->postal_code, false},
                           {"city", &in->city, false},
                           {"country", &in->country, false}};
   bson_iter_t child;

   if (BSON_ITER_HOLDS_NULL(it)) {
      in->has_company = false;
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &child))
      return refuse(err, "company", "must be an object or null");
   in->has_company = true;
   if (!read_object(&child, slots, 6, "company.", err))
      return false;
   if (!in->company_name)
      return refuse(err, "company.companyName", "is required when company is given");
   return true;
}

static bool
read_top(bson_iter_t *it, contact_input_t *in, contact_error_t *err)
{
   static const char *const read_only[] = {"id", "createdAt", "deleted", "version"};
   const char *known[] = {"name", "email", "description", "company"};
   bool seen[4] = {false};

   while (bson_iter_next(it)) {
      const char *key = bson_iter_key(it);
      size_t i;

      for (i = 0; i < 4 && strcmp(key, known[i]) != 0; i++)
         ;
      if (i == 4) {
         for (size_t r = 0; r < 4; r++) {
            if (!strcmp(key, read_only[r]))
               return refuse(err, key, "is read-only");
         }
         return refuse(err, key, "is not a known field");
      }
      if (seen[i])
         return refuse(err, key, "appears twice");
      seen[i] = true;
      if ((i == 0 && !read_name(it, in, err)) || (i == 3 && !read_company(it, in, err)))
         return false;
      if (i == 1 && !read_string(it, &(slot_t){"email", &in->email, false}, "email", err))
         return false;
      if (i == 2 &&
          !read_string(it, &(slot_t){"description", &in->description, true}, "description", err))
         return false;
   }
   if (!seen[0])
      return refuse(err, "name", "is required");
   if (!seen[1])
      return refuse(err, "email", "is required");
   return true;
}

/* bson_init_from_json() stops after the first value, so "{...}{...}" would pass as its first
 * object: count the values (stopping at two). */
static bool
single_json_value(const char *body, size_t len)
{
   bson_json_reader_t *reader = bson_json_data_reader_new(false, 0);
   bson_t scratch = BSON_INITIALIZER;
   bson_error_t error;
   int values = 0;

   bson_json_data_reader_ingest(reader, (const uint8_t *)body, len);
   while (values < 2 && bson_json_reader_read(reader, &scratch, &error) == 1) {
      values++;
      bson_reinit(&scratch);
   }
   bson_destroy(&scratch);
   bson_json_reader_destroy(reader);
   return values == 1;
}

/* Finds a string holding a NUL ("\u0000" in the JSON: libbson keeps it, and every C string
 * after it would cut the value there, so "a@b.org\u0000evil" was stored as "a@b.org").
 * Writes its path ("name.first") to @path and returns true. */
static bool
find_nul_string(bson_iter_t *it, const char *prefix, char *path, size_t pathlen)
{
   while (bson_iter_next(it)) {
      bson_iter_t child;
      char here[64];
      uint32_t len;
      const char *s;

      snprintf(here, sizeof here, "%s%s%s", prefix, *prefix ? "." : "", bson_iter_key(it));
      if (BSON_ITER_HOLDS_UTF8(it) && (s = bson_iter_utf8(it, &len)) && strlen(s) != len) {
         snprintf(path, pathlen, "%s", here);
         return true;
      }
      if ((BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) &&
          bson_iter_recurse(it, &child) && find_nul_string(&child, here, path, pathlen))
         return true;
   }
   return false;
}

bool
representation_parse_json(const char *body, size_t len, bson_t *doc, contact_error_t *err)
{
   bson_error_t error;
   size_t i = 0;

   bson_init(doc);
   while (i < len && strchr(" \t\r\n", body[i]) && body[i])
      i++;
   if (i == len)
      return refuse(err, "", "the request body is empty; send a JSON object");
   if (memchr(body, '\0', len))
      return refuse(err, "", "the request body contains a NUL byte");
   /* libbson's parser would also take a top-level array; a contact is an object. */
   if (body[i] != '{')
      return refuse(err, "", "the request body must be a JSON object");
   bson_destroy(doc);
   if (!bson_init_from_json(doc, body, (ssize_t)len, &error)) {
      char msg[256];

      bson_init(doc);
      snprintf(msg, sizeof msg, "the request body is not valid JSON: %.200s", error.message);
      return refuse(err, "", msg);
   }
   if (!single_json_value(body, len))
      return refuse(err, "", "the request body must be one JSON object, not several");
   bson_iter_t it;
   char path[64];
   if (bson_iter_init(&it, doc) && find_nul_string(&it, "", path, sizeof path))
      return refuse(err, path, "must not contain a NUL character (\\u0000)");
   return true;
}

bool
representation_read(const bson_t *doc, contact_input_t *in, contact_error_t *err)
{
   bson_iter_t it;

   memset(in, 0, sizeof *in);
   if (!bson_iter_init(&it, doc))
      return refuse(err, "", "the request body is not valid JSON");
   return read_top(&it, in, err);
}

bool
representation_parse(const char *body, size_t len, bson_t *holder, contact_input_t *in,
                     contact_error_t *err)
{
   memset(in, 0, sizeof *in);
   return representation_parse_json(body, len, holder, err) && representation_read(holder, in, err);
}

/* ---- JSON merge patch (RFC 7396) ---------------------------------------------------------- */

static void merge_into(const bson_t *target, const bson_t *patch, bson_t *out);

/* Appends patch value `pv` under `key`, merged with `tv` (may be NULL) when both are
 * objects; null patch values delete, so they are never appended. */
static void
merge_value(const char *key, const bson_iter_t *tv, const bson_iter_t *pv, bson_t *out)
{
   bson_t target = BSON_INITIALIZER, patch, child;
   const uint8_t *data;
   uint32_t len;

   if (BSON_ITER_HOLDS_NULL(pv))
      return;
   if (!BSON_ITER_HOLDS_DOCUMENT(pv)) {
      bson_append_iter(out, key, -1, pv);
      return;
   }
   if (tv && BSON_ITER_HOLDS_DOCUMENT(tv)) {
      bson_iter_document(tv, &len, &data);
      bson_destroy(&target);
      bson_init_static(&target, data, len);
   }
   bson_iter_document(pv, &len, &data);
   bson_init_static(&patch, data, len);
   bson_append_document_begin(out, key, -1, &child);
   merge_into(&target, &patch, &child);
   bson_append_document_end(out, &child);
   bson_destroy(&target);
}

static void
merge_into(const bson_t *target, const bson_t *patch, bson_t *out)
{
   bson_iter_t t, p;

   if (bson_iter_init(&t, target)) {
      while (bson_iter_next(&t)) {
         if (bson_iter_init_find(&p, patch, bson_iter_key(&t)))
            merge_value(bson_iter_key(&t), &t, &p, out);
         else
            bson_append_iter(out, bson_iter_key(&t), -1, &t);
      }
   }
   if (bson_iter_init(&p, patch)) {
      while (bson_iter_next(&p)) {
         if (!bson_iter_init_find(&t, target, bson_iter_key(&p)))
            merge_value(bson_iter_key(&p), NULL, &p, out);
      }
   }
}

/* A key given twice would make the patch's meaning depend on which one wins. */
static bool
has_duplicates(const bson_t *doc, const char **dup)
{
   bson_iter_t it, other;
   const uint8_t *data;
   uint32_t len;
   bson_t sub;

   if (!bson_iter_init(&it, doc))
      return false;
   while (bson_iter_next(&it)) {
      other = it;
      while (bson_iter_next(&other)) {
         if (!strcmp(bson_iter_key(&it), bson_iter_key(&other))) {
            *dup = bson_iter_key(&it);
            return true;
         }
      }
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_document(&it, &len, &data);
         bson_init_static(&sub, data, len);
         if (has_duplicates(&sub, dup))
            return true;
      }
   }
   return false;
}

bool
representation_merge_patch(const bson_t *target, const bson_t *patch, bson_t *out,
                           contact_error_t *err)
{
   const char *dup;

   bson_init(out);
   if (has_duplicates(patch, &dup))
      return refuse(err, dup, "appears twice");
   merge_into(target, patch, out);
   return true;
}

/* ---- output ------------------------------------------------------------------------------- */

void
json_append_string(bson_string_t *out, const char *s)
{
   bson_string_append_c(out, '"');
   for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
      if (*p == '"' || *p == '\\') {
         bson_string_append_c(out, '\\');
         bson_string_append_c(out, (char)*p);
      } else if (*p < 0x20 || *p == 0x7f) {
         bson_string_append_printf(out, "\\u%04x", *p);
      } else {
         bson_string_append_c(out, (char)*p);
      }
   }
   bson_string_append_c(out, '"');
}

void
json_format_time(int64_t ms, char buf[32])
{
   time_t secs = (time_t)(ms / 1000);
   unsigned millis = (unsigned)(((ms % 1000) + 1000) % 1000);
   struct tm tm;
   size_t n;

   gmtime_r(&secs, &tm);
   n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
   snprintf(buf + n, 32 - n, ".%03uZ", millis % 1000u);
}

static void
append_member(bson_string_t *out, const char *key, const char *value, bool comma)
{
   if (comma)
      bson_string_append_c(out, ',');
   json_append_string(out, key);
   bson_string_append_c(out, ':');
   json_append_string(out, value);
}

static void
write_company(const contact_t *c, bson_string_t *out)
{
   static const char *const keys[] = {"companyName", "street", "houseNumber",
                                      "postalCode",  "city",   "country"};
   bson_t fields = BSON_INITIALIZER;
   bson_iter_t it, co;

   contact_append_fields(c, CONTACT_CHANGED_COMPANY, &fields);
   if (!bson_iter_init_find(&it, &fields, "company") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_string_append(out, "null");
      bson_destroy(&fields);
      return;
   }
   bson_string_append_c(out, '{');
   for (int i = 0; i < 6; i++) {
      bson_iter_recurse(&it, &co);
      append_member(out, keys[i], bson_iter_find(&co, keys[i]) ? bson_iter_utf8(&co, NULL) : "",
                    i > 0);
   }
   bson_string_append_c(out, '}');
   bson_destroy(&fields);
}

void
representation_write(const contact_t *c, bson_string_t *out)
{
   bson_t fields = BSON_INITIALIZER;
   bson_iter_t it;
   char when[32];

   contact_append_fields(c, CONTACT_CHANGED_DESCRIPTION, &fields);
   bson_string_append_c(out, '{');
   append_member(out, "id", contact_id(c), false);
   bson_string_append(out, ",\"name\":{");
   append_member(out, "firstName", contact_first_name(c), false);
   append_member(out, "lastName", contact_last_name(c), true);
   bson_string_append_c(out, '}');
   append_member(out, "description",
                 bson_iter_init_find(&it, &fields, "description") ? bson_iter_utf8(&it, NULL) : "",
                 true);
   append_member(out, "email", contact_email(c), true);
   bson_string_append(out, ",\"company\":");
   write_company(c, out);
   json_format_time(contact_created_at(c), when);
   append_member(out, "createdAt", when, true);
   bson_string_append_printf(out, ",\"deleted\":%s}", contact_is_deleted(c) ? "true" : "false");
   bson_destroy(&fields);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Commands printed the way mongod's BSONObj::toString() prints them in "not authorized"
 * messages: unquoted keys, "strings", ObjectId('...'), UUID("..."), Timestamp(t, i). The
 * password of createUser/updateUser is shown as "xxx", as mongod's redaction does.
 */
#include <inttypes.h>
#include <string.h>

#include "auth/auth-private.h"
#include "engine/engine.h"

static void format_doc(bson_string_t *s, const bson_t *doc, bool array, size_t max);

static void
format_string(bson_string_t *s, const char *v, uint32_t len)
{
   bson_string_append_c(s, '"');
   for (uint32_t i = 0; i < len; i++) {
      unsigned char ch = (unsigned char)v[i];
      if (ch == '"' || ch == '\\') {
         bson_string_append_printf(s, "\\%c", ch);
      } else if (ch < 0x20) {
         bson_string_append_printf(s, "\\x%02x", ch);
      } else {
         bson_string_append_c(s, (char)ch);
      }
   }
   bson_string_append_c(s, '"');
}

static void
format_binary(bson_string_t *s, const bson_iter_t *it)
{
   bson_subtype_t sub;
   uint32_t len;
   const uint8_t *data;
   bson_iter_binary(it, &sub, &len, &data);
   if (sub == BSON_SUBTYPE_UUID && len == 16) {
      bson_string_append(s, "UUID(\"");
      for (uint32_t i = 0; i < 16; i++) {
         bson_string_append_printf(s, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                                   data[i]);
      }
      bson_string_append(s, "\")");
      return;
   }
   bson_string_append_printf(s, "BinData(%d, ", (int)sub);
   for (uint32_t i = 0; i < len && i < 64; i++) {
      bson_string_append_printf(s, "%02X", data[i]);
   }
   bson_string_append_c(s, ')');
}

static void
format_value(bson_string_t *s, bson_iter_t *it, size_t max)
{
   uint32_t len;
   const uint8_t *data;
   char oid[25];
   switch (bson_iter_type(it)) {
   case BSON_TYPE_UTF8: {
      const char *v = bson_iter_utf8(it, &len);
      format_string(s, v, len);
      break;
   }
   case BSON_TYPE_INT32:
      bson_string_append_printf(s, "%d", bson_iter_int32(it));
      break;
   case BSON_TYPE_INT64:
      bson_string_append_printf(s, "%" PRId64, bson_iter_int64(it));
      break;
   case BSON_TYPE_DOUBLE: {
      double d = bson_iter_double(it);
      bson_string_append_printf(s, d == (double)(int64_t)d ? "%.1f" : "%g", d);
      break;
   }
   case BSON_TYPE_BOOL:
      bson_string_append(s, bson_iter_bool(it) ? "true" : "false");
      break;
   case BSON_TYPE_NULL:
      bson_string_append(s, "null");
      break;
   case BSON_TYPE_OID:
      bson_oid_to_string(bson_iter_oid(it), oid);
      bson_string_append_printf(s, "ObjectId('%s')", oid);
      break;
   case BSON_TYPE_BINARY:
      format_binary(s, it);
      break;
   case BSON_TYPE_TIMESTAMP: {
      uint32_t t, i;
      bson_iter_timestamp(it, &t, &i);
      bson_string_append_printf(s, "Timestamp(%u, %u)", t, i);
      break;
   }
   case BSON_TYPE_DATE_TIME:
      bson_string_append_printf(s, "new Date(%" PRId64 ")", bson_iter_date_time(it));
      break;
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY: {
      bool array = BSON_ITER_HOLDS_ARRAY(it);
      bson_t sub;
      if (array) {
         bson_iter_array(it, &len, &data);
      } else {
         bson_iter_document(it, &len, &data);
      }
      if (bson_init_static(&sub, data, len)) {
         format_doc(s, &sub, array, max);
      }
      break;
   }
   default:
      bson_string_append(s, "?");
      break;
   }
}

static void
format_doc(bson_string_t *s, const bson_t *doc, bool array, size_t max)
{
   bson_iter_t it;
   bool first = true;
   bson_string_append(s, array ? "[" : "{");
   if (bson_iter_init(&it, doc)) {
      while (bson_iter_next(&it)) {
         if (s->len > max) {
            bson_string_append(s, " ...");
            break;
         }
         bson_string_append(s, first ? " " : ", ");
         first = false;
         if (!array) {
            bson_string_append_printf(s, "%s: ", bson_iter_key(&it));
         }
         if (!array && strcmp(bson_iter_key(&it), "pwd") == 0) {
            bson_string_append(s, "\"xxx\"");
         } else {
            format_value(s, &it, max);
         }
      }
   }
   bson_string_append(s, first ? (array ? "]" : "}") : (array ? " ]" : " }"));
}

char *
md_auth_format_command(const bson_t *cmd, size_t max)
{
   bson_string_t *s = bson_string_new(NULL);
   format_doc(s, cmd, false, max);
   return bson_string_free(s, false);
}

bool
md_auth_not_authorized(const char *db, const bson_t *cmd, bson_error_t *error)
{
   char *text = md_auth_format_command(cmd, 600);
   tm_error_set(error, 13, "not authorized on %s to execute command %s", db, text);
   bson_free(text);
   return false;
}

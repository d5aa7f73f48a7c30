/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Prints liboutbox's event contract (outbox/contract.h) as one JSON document, for the
 * differential fuzzer (fuzz.py) to generate its events from: every rule with both forms
 * (types by name, bounds, text rules by name), its two outcomes and its reason, and the
 * reserved names. Only the public API: what any tool could read.
 *
 * usage: fuzz-contract
 */
#include <stdio.h>

#include <outbox/outbox.h>

static const struct {
   bson_type_t type;
   const char *name;
} types[] = {
   {BSON_TYPE_DOUBLE, "double"},
   {BSON_TYPE_UTF8, "string"},
   {BSON_TYPE_DOCUMENT, "object"},
   {BSON_TYPE_ARRAY, "array"},
   {BSON_TYPE_BINARY, "binData"},
   {BSON_TYPE_UNDEFINED, "undefined"},
   {BSON_TYPE_OID, "objectId"},
   {BSON_TYPE_BOOL, "bool"},
   {BSON_TYPE_DATE_TIME, "date"},
   {BSON_TYPE_NULL, "null"},
   {BSON_TYPE_REGEX, "regex"},
   {BSON_TYPE_DBPOINTER, "dbPointer"},
   {BSON_TYPE_CODE, "javascript"},
   {BSON_TYPE_SYMBOL, "symbol"},
   {BSON_TYPE_CODEWSCOPE, "javascriptWithScope"},
   {BSON_TYPE_INT32, "int"},
   {BSON_TYPE_TIMESTAMP, "timestamp"},
   {BSON_TYPE_INT64, "long"},
   {BSON_TYPE_DECIMAL128, "decimal"},
   {BSON_TYPE_MINKEY, "minKey"},
   {BSON_TYPE_MAXKEY, "maxKey"},
};

static const struct {
   unsigned bit;
   const char *name;
} texts[] = {
   {OUTBOX_CONTRACT_TEXT_UTF8, "utf8"},
   {OUTBOX_CONTRACT_TEXT_NO_NUL, "no_nul"},
   {OUTBOX_CONTRACT_TEXT_MQTT, "mqtt"},
   {OUTBOX_CONTRACT_TEXT_EVENT_TYPE, "event_type"},
   {OUTBOX_CONTRACT_TEXT_UUID, "uuid"},
   {OUTBOX_CONTRACT_TEXT_NO_DOLLAR, "no_dollar"},
   {OUTBOX_CONTRACT_TEXT_NOT_RESERVED, "not_reserved"},
   {OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT, "trace_context"},
};

static const char *const scopes[] = {"", "entity", "event", "header", "message"};

static void
bound(const char *key, int64_t v)
{
   if (v == OUTBOX_CONTRACT_UNBOUNDED) {
      printf("\"%s\": null", key);
   } else {
      printf("\"%s\": %" PRId64, key, v);
   }
}

static void
form(const char *key, const outbox_contract_form_t *f)
{
   const char *sep = "";

   printf("\"%s\": {\"required\": %s, \"types\": [", key, f->required ? "true" : "false");
   for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
      if (outbox_contract_type_allowed(f, types[i].type)) {
         printf("%s\"%s\"", sep, types[i].name);
         sep = ", ";
      }
   }
   printf("], ");
   bound("min", f->min);
   printf(", ");
   bound("max", f->max);
   printf(", \"text\": [");
   sep = "";
   for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
      if (f->text & texts[i].bit) {
         printf("%s\"%s\"", sep, texts[i].name);
         sep = ", ";
      }
   }
   printf("]}");
}

/* A static sentence of the table as a JSON string (they hold no character to escape but
 * quotes and backslashes; anything below 0x20 is escaped all the same). */
static void
string(const char *s)
{
   putchar('"');
   for (; *s; s++) {
      if (*s == '"' || *s == '\\') {
         printf("\\%c", *s);
      } else if ((unsigned char)*s < 0x20) {
         printf("\\u%04x", *s);
      } else {
         putchar(*s);
      }
   }
   putchar('"');
}

int
main(void)
{
   const outbox_contract_rule_t *rules;
   const char *const *reserved;
   size_t n = outbox_contract_rules(&rules);
   size_t nr = outbox_contract_reserved_names(&reserved);

   printf("{\"rules\": [\n");
   for (size_t i = 0; i < n; i++) {
      const outbox_contract_rule_t *r = &rules[i];
      printf("  {\"scope\": \"%s\", \"name\": ", scopes[r->scope]);
      string(r->name);
      printf(", ");
      form("written", &r->written);
      printf(", ");
      form("accepted", &r->accepted);
      printf(", \"at_write\": \"%s\", \"outcome\": \"%s\", \"reason\": ",
             outbox_contract_outcome_name(r->at_write), outbox_contract_outcome_name(r->outcome));
      string(r->reason);
      printf("}%s\n", i + 1 < n ? "," : "");
   }
   printf("], \"reserved\": [");
   for (size_t i = 0; i < nr; i++) {
      printf("%s", i ? ", " : "");
      string(reserved[i]);
   }
   printf("]}\n");
   return 0;
}

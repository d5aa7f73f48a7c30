/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The README's contract table, made from the event contract (outbox/contract.h):
 *   contract-table            prints the table (Markdown) to paste into README.md;
 *   contract-table README.md  exits 1 (and prints both) unless README.md holds exactly that
 *                             table between its two contract-table markers: the 'lib-contract-
 *                             readme' test, so the README cannot drift from the code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <outbox/contract.h>

#define BEGIN "<!-- contract-table: made by tests/lib/contract-table.c; do not edit -->\n"
#define END "<!-- end of contract-table -->\n"

static const char *
scope_name(outbox_contract_scope_t s)
{
   switch (s) {
   case OUTBOX_CONTRACT_ENTITY:
      return "entity";
   case OUTBOX_CONTRACT_EVENT:
      return "event";
   case OUTBOX_CONTRACT_HEADER:
      return "header";
   default:
      return "message";
   }
}

static const char *
type_name(int t)
{
   static const char *const names[] = {
      [BSON_TYPE_DOUBLE] = "double",      [BSON_TYPE_UTF8] = "string",
      [BSON_TYPE_DOCUMENT] = "document",  [BSON_TYPE_ARRAY] = "array",
      [BSON_TYPE_BINARY] = "UUID binary", [BSON_TYPE_OID] = "ObjectId",
      [BSON_TYPE_BOOL] = "bool",          [BSON_TYPE_DATE_TIME] = "Date",
      [BSON_TYPE_INT32] = "int32",        [BSON_TYPE_INT64] = "Int64",
   };
   return t < (int)(sizeof names / sizeof names[0]) ? names[t] : NULL;
}

static void
append(char *out, size_t size, const char *sep, const char *s)
{
   if (*out) {
      strncat(out, sep, size - strlen(out) - 1);
   }
   strncat(out, s, size - strlen(out) - 1);
}

/* One form in words: types, bounds, text rules, required or optional. */
static void
form_text(const outbox_contract_form_t *f, char *out, size_t size)
{
   static const struct {
      unsigned bit;
      const char *words;
   } texts[] = {
      {OUTBOX_CONTRACT_TEXT_MQTT, "MQTT text"},
      {OUTBOX_CONTRACT_TEXT_EVENT_TYPE, "`[A-Za-z0-9._-]`"},
      {OUTBOX_CONTRACT_TEXT_UUID, "UUID v4"},
      {OUTBOX_CONTRACT_TEXT_NO_DOLLAR, "no `$`"},
      {OUTBOX_CONTRACT_TEXT_NOT_RESERVED, "not reserved"},
      {OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT, "W3C Trace Context"},
   };
   char types[128] = "", buf[96];

   *out = '\0';
   if (f->types == OUTBOX_CONTRACT_ANY_TYPE) {
      strcpy(types, "any type");
   }
   for (int t = BSON_TYPE_DOUBLE; f->types != OUTBOX_CONTRACT_ANY_TYPE && t <= BSON_TYPE_DECIMAL128;
        t++) {
      if (outbox_contract_type_allowed(f, (bson_type_t)t) && type_name(t)) {
         append(types, sizeof types, " or ", type_name(t));
      }
   }
   append(out, size, ", ", *types ? types : "-");
   bool strings = outbox_contract_type_allowed(f, BSON_TYPE_UTF8);
   bool dates = outbox_contract_type_allowed(f, BSON_TYPE_DATE_TIME);
   const char *unit = strings ? " bytes" : "";
   if (dates && f->min != OUTBOX_CONTRACT_UNBOUNDED) {
      snprintf(buf, sizeof buf, "years 0001-9999");
   } else if (f->min != OUTBOX_CONTRACT_UNBOUNDED && f->max != OUTBOX_CONTRACT_UNBOUNDED &&
              f->min == f->max) {
      snprintf(buf, sizeof buf, "%lld%s", (long long)f->max, unit);
   } else if (f->min > 0 && f->max != OUTBOX_CONTRACT_UNBOUNDED) {
      snprintf(buf, sizeof buf, "%lld..%lld%s", (long long)f->min, (long long)f->max, unit);
   } else if (f->max != OUTBOX_CONTRACT_UNBOUNDED) {
      snprintf(buf, sizeof buf, "at most %lld%s", (long long)f->max, unit);
   } else if (f->min != OUTBOX_CONTRACT_UNBOUNDED && f->min > 0) {
      snprintf(buf, sizeof buf, ">= %lld", (long long)f->min);
   } else {
      buf[0] = '\0';
   }
   if (*buf) {
      append(out, size, ", ", buf);
   }
   if ((f->text & OUTBOX_CONTRACT_TEXT_UTF8) && !(f->text & OUTBOX_CONTRACT_TEXT_MQTT)) {
      append(out, size, ", ",
             (f->text & OUTBOX_CONTRACT_TEXT_NO_NUL) ? "UTF-8 without NUL" : "valid UTF-8");
   }
   for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
      if (f->text & texts[i].bit) {
         append(out, size, ", ", texts[i].words);
      }
   }
   append(out, size, "; ", f->required ? "required" : "optional");
}

/* The whole table, as a malloc'ed string. */
static char *
table(void)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules), size = 65536;
   char *out = calloc(1, size), written[512], accepted[512];
   size_t len = 0;

   len += (size_t)snprintf(out + len, size - len,
                           "| part | name | liboutbox writes | the relay accepts | a liboutbox "
                           "caller's violation | another writer's violation | reason |\n"
                           "| --- | --- | --- | --- | --- | --- | --- |\n");
   for (size_t i = 0; i < n; i++) {
      const outbox_contract_rule_t *r = &rules[i];
      form_text(&r->written, written, sizeof written);
      form_text(&r->accepted, accepted, sizeof accepted);
      len += (size_t)snprintf(out + len, size - len, "| %s | `%s`: %s | %s | %s | %s | %s | %s |\n",
                              scope_name(r->scope), r->name, r->description, written, accepted,
                              outbox_contract_outcome_name(r->at_write),
                              outbox_contract_outcome_name(r->outcome), r->reason);
   }
   return out;
}

static char *
slurp(const char *path)
{
   FILE *f = fopen(path, "rb");
   char *buf;
   long n;

   if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
      return NULL;
   }
   buf = calloc(1, (size_t)n + 1);
   if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
      free(buf);
      buf = NULL;
   }
   fclose(f);
   return buf;
}

int
main(int argc, char **argv)
{
   char *want = table(), *readme, *begin, *end;
   int rc = 0;

   if (argc < 2) {
      fputs(want, stdout);
      free(want);
      return 0;
   }
   readme = slurp(argv[1]);
   begin = readme ? strstr(readme, BEGIN) : NULL;
   end = begin ? strstr(begin, END) : NULL;
   if (!end) {
      fprintf(stderr, "%s: no contract table between the markers\n%s%s", argv[1], BEGIN, END);
      rc = 1;
   } else {
      begin += strlen(BEGIN);
      *end = '\0';
      if (strcmp(begin, want) != 0) {
         fprintf(stderr,
                 "%s's contract table differs from the contract (lib/src/contract.c); put "
                 "this between the markers (build/tests/lib/contract-table prints it):\n%s",
                 argv[1], want);
         rc = 1;
      }
   }
   free(readme);
   free(want);
   return rc;
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: the event contract's table (outbox/contract.h) is consistent, each form's
 * bounds and types hold at their edges, the MQTT text rule follows MQTT 5 section 1.5.4, the
 * reserved names, and the $jsonSchema validators are made from the table.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "outbox/archive.h"
#include "outbox/contract.h"

static bson_value_t
str(const char *s, size_t len)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)s;
   v.value.v_utf8.len = (uint32_t)len;
   return v;
}

static bson_value_t
i64(int64_t n)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT64};
   v.value.v_int64 = n;
   return v;
}

Test(contract, table_is_consistent)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);

   cr_assert_gt(n, 10);
   for (size_t i = 0; i < n; i++) {
      const outbox_contract_rule_t *r = &rules[i];
      cr_assert(r->name && *r->name && r->reason && *r->reason && r->description, "row %zu", i);
      cr_assert_eq(outbox_contract_find(r->scope, r->name), r, "%s is not unique", r->name);
      /* What liboutbox writes, the relay accepts: no type, bound or requirement of the
       * written form is looser than the accepted one. */
      cr_assert_eq(r->written.types & ~r->accepted.types, 0, "%s: types", r->name);
      cr_assert(r->written.required || !r->accepted.required, "%s: required", r->name);
      if (r->accepted.min != OUTBOX_CONTRACT_UNBOUNDED) {
         cr_assert(r->written.min != OUTBOX_CONTRACT_UNBOUNDED && r->written.min >= r->accepted.min,
                   "%s: min", r->name);
      }
      if (r->accepted.max != OUTBOX_CONTRACT_UNBOUNDED) {
         cr_assert(r->written.max != OUTBOX_CONTRACT_UNBOUNDED && r->written.max <= r->accepted.max,
                   "%s: max", r->name);
      }
      cr_assert_str_neq(outbox_contract_outcome_name(r->outcome), "", "%s", r->name);
   }
   cr_assert_null(outbox_contract_find(OUTBOX_CONTRACT_EVENT, "nope"));
}

/* Every bounded integer and string rule at its edges, and a type it does not allow. */
Test(contract, bounds_hold_at_their_edges)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   static char text[70000];

   memset(text, 'a', sizeof text);
   for (size_t i = 0; i < n; i++) {
      const outbox_contract_rule_t *r = &rules[i];
      for (int strict = 0; strict < 2; strict++) {
         const outbox_contract_form_t *f = strict ? &r->written : &r->accepted;
         bson_value_t v;
         if (outbox_contract_type_allowed(f, BSON_TYPE_INT64) &&
             f->min != OUTBOX_CONTRACT_UNBOUNDED) {
            v = i64(f->min);
            cr_assert_null(outbox_contract_check(r, &v, strict, NULL), "%s min", r->name);
            v = i64(f->min - 1);
            cr_assert_eq(outbox_contract_check(r, &v, strict, NULL), r->reason, "%s", r->name);
         }
         if (outbox_contract_type_allowed(f, BSON_TYPE_UTF8) &&
             f->max != OUTBOX_CONTRACT_UNBOUNDED &&
             !(f->text & (OUTBOX_CONTRACT_TEXT_UUID | OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT))) {
            v = str(text, (size_t)f->max);
            cr_assert_null(outbox_contract_check(r, &v, strict, NULL), "%s max", r->name);
            v = str(text, (size_t)f->max + 1);
            cr_assert_eq(outbox_contract_check(r, &v, strict, NULL), r->reason, "%s", r->name);
         }
         if (f->types && f->types != OUTBOX_CONTRACT_ANY_TYPE &&
             !outbox_contract_type_allowed(f, BSON_TYPE_DOUBLE)) {
            v = (bson_value_t){.value_type = BSON_TYPE_DOUBLE};
            cr_assert_eq(outbox_contract_check(r, &v, strict, NULL), r->reason, "%s", r->name);
         }
         cr_assert_eq(outbox_contract_check(r, NULL, strict, NULL) != NULL, f->required, "%s",
                      r->name);
      }
   }
}

Test(contract, mqtt_text_follows_mqtt5_1_5_4)
{
   static const struct {
      const char *s;
      bool ok;
   } cases[] = {
      {"plain ascii ~", true},
      {"\xc2\xa0", true},         /* U+00A0 */
      {"\xef\xbb\xbf", true},     /* U+FEFF must not be stripped, is allowed */
      {"\xef\xb7\x8f", true},     /* U+FDCF */
      {"\xef\xb7\xb0", true},     /* U+FDF0 */
      {"\xef\xbf\xbd", true},     /* U+FFFD */
      {"\xf4\x8f\xbf\xbd", true}, /* U+10FFFD */
      {"\x1f", false},
      {"\x7f", false},
      {"\xc2\x80", false},
      {"\xc2\x9f", false},
      {"\xef\xb7\x90", false}, /* U+FDD0 */
      {"\xef\xb7\xaf", false}, /* U+FDEF */
      {"\xef\xbf\xbe", false},
      {"\xef\xbf\xbf", false},
      {"\xf0\x9f\xbf\xbe", false},
      {"\xf4\x8f\xbf\xbf", false},
      {"\xed\xa0\x80", false}, /* a surrogate */
      {"\xc0\xaf", false},     /* overlong */
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      cr_assert_eq(
         outbox_contract_text_valid(cases[i].s, strlen(cases[i].s), OUTBOX_CONTRACT_TEXT_MQTT),
         cases[i].ok, "case %zu", i);
   }
   cr_assert_not(outbox_contract_text_valid("a\0b", 3, OUTBOX_CONTRACT_TEXT_MQTT));
   cr_assert(outbox_contract_text_valid("a\0b", 3, OUTBOX_CONTRACT_TEXT_UTF8));
   cr_assert_not(outbox_contract_text_valid("a\0b", 3, OUTBOX_CONTRACT_TEXT_NO_NUL));
}

Test(contract, reserved_names)
{
   const char *const *names;
   size_t n = outbox_contract_reserved_names(&names);

   cr_assert_eq(n, 15);
   cr_assert_null(names[n]);
   for (size_t i = 0; i < n; i++) {
      cr_assert(outbox_contract_name_is_reserved(names[i]));
   }
   cr_assert(outbox_contract_name_is_reserved("REPLAY"));
   cr_assert(outbox_contract_name_is_reserved("Event-Id"));
   cr_assert_not(outbox_contract_name_is_reserved("traceparent"));
   cr_assert_not(outbox_contract_name_is_reserved("replayed"));
}

/* The archive's validator is made from the table: time is optional (the relay publishes
 * events without one), seq is Int64 (entries are normalised), headers hold strings. */
Test(contract, archive_schema_from_the_table)
{
   bson_t validator;
   bson_iter_t it, req;
   bool has_time = false, has_seq = false;

   outbox_archive_schema(&validator);
   cr_assert(bson_iter_init(&it, &validator) &&
             bson_iter_find_descendant(&it, "$jsonSchema.required", &req));
   cr_assert(bson_iter_recurse(&req, &it));
   while (bson_iter_next(&it)) {
      has_time |= !strcmp(bson_iter_utf8(&it, NULL), "time");
      has_seq |= !strcmp(bson_iter_utf8(&it, NULL), "seq");
   }
   cr_assert_not(has_time);
   cr_assert(has_seq);
   cr_assert(bson_iter_init(&it, &validator) &&
             bson_iter_find_descendant(&it, "$jsonSchema.properties.seq.bsonType", &req));
   cr_assert_str_eq(bson_iter_utf8(&req, NULL), "long");
   cr_assert(bson_iter_init(&it, &validator) &&
             bson_iter_find_descendant(
                &it, "$jsonSchema.properties.headers.additionalProperties.maxLength", &req));
   cr_assert_eq(bson_iter_as_int64(&req), OUTBOX_CONTRACT_HEADER_VALUE_MAX);
   bson_destroy(&validator);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Update operators: results, errors, and above all the update descriptions that the change
 * streams report (the relay reads "events.N" keys from them).
 */
#include "test-util.h"

typedef struct {
   const char *doc;
   const char *update;
   const char *out;     /* expected document; NULL when an error is expected */
   const char *updated; /* expected updatedFields */
   const char *removed; /* expected removedFields as {'0': 'path', ...} */
   uint32_t code;       /* expected error code when out is NULL */
   const char *filters; /* arrayFilters as {'0': {...}} or NULL */
   int32_t positional;
} ucase_t;

/* Whether every array in @doc has the keys "0", "1", ... in order: canonical JSON (what
 * tm_assert_doc compares) does not show array keys. */
static bool
arrays_numbered(const bson_t *doc, bool is_array)
{
   bson_iter_t it;
   uint32_t i = 0;
   bson_iter_init(&it, doc);
   while (bson_iter_next(&it)) {
      char buf[16];
      const char *key;
      bson_uint32_to_string(i++, &key, buf, sizeof buf);
      if (is_array && strcmp(bson_iter_key(&it), key) != 0) {
         return false;
      }
      if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
         const bson_value_t *v = bson_iter_value(&it);
         bson_t sub;
         if (!bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len) ||
             !arrays_numbered(&sub, BSON_ITER_HOLDS_ARRAY(&it))) {
            return false;
         }
      }
   }
   return true;
}

static void
run_one(const ucase_t *c)
{
   bson_t *doc = tm_json(c->doc), *upd = tm_json(c->update);
   bson_t *filters = c->filters ? tm_json(c->filters) : NULL;
   bson_error_t error = {0};
   tm_update_t *u = tm_update_new(upd, filters, &error);
   tm_update_desc_t desc;
   bson_t out;
   bool modified = false, ok;

   if (!u) {
      cr_assert_null(c->out, "%s: parse failed: %s", c->update, error.message);
      cr_assert_eq(error.code, c->code, "%s: code %u (%s), want %u", c->update, error.code,
                   error.message, c->code);
      goto done;
   }
   tm_update_desc_init(&desc);
   ok = tm_update_apply(u, doc, c->positional, false, &out, &modified, &desc, &error);
   if (!c->out) {
      cr_assert_not(ok, "%s on %s should fail", c->update, c->doc);
      cr_assert_eq(error.code, c->code, "%s: code %u (%s), want %u", c->update, error.code,
                   error.message, c->code);
   } else {
      cr_assert(ok, "%s on %s: %s", c->update, c->doc, error.message);
      tm_assert_doc(&out, c->out, c->update);
      cr_assert(arrays_numbered(&out, false), "%s on %s: array keys out of order", c->update,
                c->doc);
      tm_assert_doc(&desc.updated_fields, c->updated ? c->updated : "{}", "updatedFields");
      tm_assert_doc(&desc.removed_fields, c->removed ? c->removed : "{}", "removedFields");
      cr_assert_eq(modified, out.len != doc->len ||
                                memcmp(bson_get_data(&out), bson_get_data(doc), doc->len) != 0);
   }
   bson_destroy(&out);
   tm_update_desc_destroy(&desc);
done:
   tm_update_destroy(u);
   bson_destroy(doc);
   bson_destroy(upd);
   bson_destroy(filters);
}

static void
run_cases(const ucase_t *cases, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      run_one(&cases[i]);
   }
}

#define RUN(cases) run_cases(cases, sizeof cases / sizeof cases[0])
#define NOPOS -1

Test(update, set_and_unset)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'a': 1}", "{'%set': {'a': 2}}", "{'_id': 1, 'a': 2}", "{'a': 2}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {'a': 1}}", "{'_id': 1, 'a': 1}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {'a': 1.0}}", "{'_id': 1, 'a': 1.0}", "{'a': 1.0}", NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'b': 1, 'a': 2}}", "{'_id': 1, 'a': 2, 'b': 1}", "{'a': 2, 'b': 1}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': {'x': 1}}", "{'%set': {'a.b.c': 5}}",
       "{'_id': 1, 'a': {'x': 1, 'b': {'c': 5}}}", "{'a.b': {'c': 5}}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a.b': 1, 'a.c': 2}}", "{'_id': 1, 'a': {'b': 1, 'c': 2}}",
       "{'a': {'b': 1, 'c': 2}}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': {'b': 1}}", "{'%set': {'a.b': 2}}", "{'_id': 1, 'a': {'b': 2}}",
       "{'a.b': 2}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%set': {'a.1': 5}}", "{'_id': 1, 'a': [1, 5]}", "{'a.1': 5}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.3': 5}}", "{'_id': 1, 'a': [1, null, null, 5]}",
       "{'a.1': null, 'a.2': null, 'a.3': 5}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {}}", "{'_id': 1, 'a': 1}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1, 'b': 2}", "{'%unset': {'a': ''}}", "{'_id': 1, 'b': 2}", NULL,
       "{'0': 'a'}", 0, NULL, NOPOS},
      {"{'_id': 1, 'b': 2}", "{'%unset': {'a': '', 'b.c': 1}}", "{'_id': 1, 'b': 2}", NULL, NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1, 'a': {'b': 1, 'c': 2}}", "{'%unset': {'a.b': 1}}", "{'_id': 1, 'a': {'c': 2}}",
       NULL, "{'0': 'a.b'}", 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%unset': {'a.0': 1}}", "{'_id': 1, 'a': [null, 2]}",
       "{'a.0': null}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%setOnInsert': {'b': 1}}", "{'_id': 1, 'a': 1}", NULL, NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {'_id': 1}}", "{'_id': 1, 'a': 1}", NULL, NULL, 0, NULL,
       NOPOS},
   };
   RUN(cases);
}

Test(update, arithmetic_and_compare)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'x': 1}", "{'%inc': {'x': 1}}", "{'_id': 1, 'x': 2}", "{'x': 2}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'x': 1}", "{'%inc': {'x': 0}}", "{'_id': 1, 'x': 1}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1}", "{'%inc': {'x': 5}}", "{'_id': 1, 'x': 5}", "{'x': 5}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'x': 2147483647}", "{'%inc': {'x': 1}}",
       "{'_id': 1, 'x': {'$numberLong': '2147483648'}}", "{'x': {'$numberLong': '2147483648'}}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'x': 1}", "{'%inc': {'x': 0.5}}", "{'_id': 1, 'x': 1.5}", "{'x': 1.5}", NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1, 'x': {'$numberLong': '9223372036854775807'}}", "{'%inc': {'x': 1}}", NULL, NULL,
       NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'x': 'a'}", "{'%inc': {'x': 1}}", NULL, NULL, NULL, 14, NULL, NOPOS},
      {"{'_id': 1}", "{'%inc': {'x': 'a'}}", NULL, NULL, NULL, 14, NULL, NOPOS},
      {"{'_id': 1, 'x': 3}", "{'%mul': {'x': 2}}", "{'_id': 1, 'x': 6}", "{'x': 6}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1}", "{'%mul': {'x': {'$numberLong': '2'}}}",
       "{'_id': 1, 'x': {'$numberLong': '0'}}", "{'x': {'$numberLong': '0'}}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'x': 3}", "{'%min': {'x': 2}}", "{'_id': 1, 'x': 2}", "{'x': 2}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'x': 3}", "{'%min': {'x': 4}}", "{'_id': 1, 'x': 3}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'x': 3}", "{'%max': {'x': 4}}", "{'_id': 1, 'x': 4}", "{'x': 4}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'x': 3}", "{'%max': {'x': 'a'}}", "{'_id': 1, 'x': 'a'}", "{'x': 'a'}", NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1}", "{'%min': {'y': 1}}", "{'_id': 1, 'y': 1}", "{'y': 1}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'f': 12}", "{'%bit': {'f': {'and': 10}}}", "{'_id': 1, 'f': 8}", "{'f': 8}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'f': 12}", "{'%bit': {'f': {'or': 1, 'xor': 4}}}", "{'_id': 1, 'f': 9}",
       "{'f': 9}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'f': 1}", "{'%bit': {'f': {'or': {'$numberLong': '2'}}}}",
       "{'_id': 1, 'f': {'$numberLong': '3'}}", "{'f': {'$numberLong': '3'}}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1}", "{'%bit': {'f': {'or': 5}}}", "{'_id': 1, 'f': 5}", "{'f': 5}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'f': 1}", "{'%bit': {'f': {'or': 0}}}", "{'_id': 1, 'f': 1}", NULL, NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1, 'f': 1.5}", "{'%bit': {'f': {'or': 1}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%bit': {'f': {'nand': 1}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%bit': {'f': {'and': 1.0}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, rename)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'a': 1, 'c': 3}", "{'%rename': {'a': 'b'}}", "{'_id': 1, 'c': 3, 'b': 1}",
       "{'b': 1}", "{'0': 'a'}", 0, NULL, NOPOS},
      {"{'_id': 1, 'a': {'x': [1]}, 'b': 0}", "{'%rename': {'a': 'b'}}",
       "{'_id': 1, 'b': {'x': [1]}}", "{'b': {'x': [1]}}", "{'0': 'a'}", 0, NULL, NOPOS},
      {"{'_id': 1, 'c': 3}", "{'%rename': {'a': 'b'}}", "{'_id': 1, 'c': 3}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1}", "{'%rename': {'a': 'a'}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%rename': {'a': 'a.b'}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%rename': {'a': 1}}", NULL, NULL, NULL, 2, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, push_and_descriptions)
{
   static const ucase_t cases[] = {
      /* appending to a non-empty array: one key per new element */
      {"{'_id': 1, 'events': [{'n': 0}, {'n': 1}, {'n': 2}]}", "{'%push': {'events': {'n': 3}}}",
       "{'_id': 1, 'events': [{'n': 0}, {'n': 1}, {'n': 2}, {'n': 3}]}", "{'events.3': {'n': 3}}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'events': [0, 1, 2]}", "{'%push': {'events': {'%each': [3, 4]}}}",
       "{'_id': 1, 'events': [0, 1, 2, 3, 4]}", "{'events.3': 3, 'events.4': 4}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'events': [0]}", "{'%push': {'events': {'%each': [1], '%slice': 5}}}",
       "{'_id': 1, 'events': [0, 1]}", "{'events.1': 1}", NULL, 0, NULL, NOPOS},
      /* empty or missing array: the whole array */
      {"{'_id': 1, 'events': []}", "{'%push': {'events': 7}}", "{'_id': 1, 'events': [7]}",
       "{'events': [7]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'%push': {'events': 7}}", "{'_id': 1, 'events': [7]}", "{'events': [7]}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'%push': {'events': {'%each': []}}}", "{'_id': 1, 'events': []}",
       "{'events': []}", NULL, 0, NULL, NOPOS},
      /* modifiers: insert, then sort, then slice; the whole array */
      {"{'_id': 1, 'a': [1, 2]}", "{'%push': {'a': {'%each': [0], '%position': 0}}}",
       "{'_id': 1, 'a': [0, 1, 2]}", "{'a': [0, 1, 2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%push': {'a': {'%each': [9], '%position': -1}}}",
       "{'_id': 1, 'a': [1, 9, 2]}", "{'a': [1, 9, 2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [3, 1]}", "{'%push': {'a': {'%each': [2], '%sort': 1}}}",
       "{'_id': 1, 'a': [1, 2, 3]}", "{'a': [1, 2, 3]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [3, 1]}", "{'%push': {'a': {'%each': [2], '%sort': -1, '%slice': 2}}}",
       "{'_id': 1, 'a': [3, 2]}", "{'a': [3, 2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3]}", "{'%push': {'a': {'%each': [4], '%slice': -2}}}",
       "{'_id': 1, 'a': [3, 4]}", "{'a': [3, 4]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [{'s': 2}, {'s': 1}]}",
       "{'%push': {'a': {'%each': [{'s': 0}], '%sort': {'s': 1}}}}",
       "{'_id': 1, 'a': [{'s': 0}, {'s': 1}, {'s': 2}]}", "{'a': [{'s': 0}, {'s': 1}, {'s': 2}]}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%push': {'a': {'%each': [], '%slice': 5}}}",
       "{'_id': 1, 'a': [1, 2]}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 5}", "{'%push': {'a': 1}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%push': {'a': {'%each': 1}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%push': {'a': {'%each': [1], '%foo': 1}}}", NULL, NULL, NULL, 2, NULL,
       NOPOS},
      /* a nested array inside an array element */
      {"{'_id': 1, 'o': [{'ev': [1]}]}", "{'%push': {'o.0.ev': 2}}",
       "{'_id': 1, 'o': [{'ev': [1, 2]}]}", "{'o.0.ev.1': 2}", NULL, 0, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, other_array_operators)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'a': [1, 2]}", "{'%addToSet': {'a': 3}}", "{'_id': 1, 'a': [1, 2, 3]}",
       "{'a': [1, 2, 3]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%addToSet': {'a': 2.0}}", "{'_id': 1, 'a': [1, 2]}", NULL,
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [{'x': 1, 'y': 2}]}", "{'%addToSet': {'a': {'y': 2, 'x': 1}}}",
       "{'_id': 1, 'a': [{'x': 1, 'y': 2}, {'y': 2, 'x': 1}]}",
       "{'a': [{'x': 1, 'y': 2}, {'y': 2, 'x': 1}]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'%addToSet': {'a': {'%each': [1, 1, 2]}}}", "{'_id': 1, 'a': [1, 2]}",
       "{'a': [1, 2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%addToSet': {'a': 1}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3, 2]}", "{'%pull': {'a': 2}}", "{'_id': 1, 'a': [1, 3]}",
       "{'a': [1, 3]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3]}", "{'%pull': {'a': {'%gte': 2}}}", "{'_id': 1, 'a': [1]}",
       "{'a': [1]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3]}", "{'%pull': {'a': 7}}", "{'_id': 1, 'a': [1, 2, 3]}", NULL,
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'e': [{'id': 1, 's': 'new'}, {'id': 2, 's': 'sent'}, 5]}",
       "{'%pull': {'e': {'s': 'sent'}}}", "{'_id': 1, 'e': [{'id': 1, 's': 'new'}, 5]}",
       "{'e': [{'id': 1, 's': 'new'}, 5]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'e': [{'id': 1, 'n': 3}, {'id': 2, 'n': 9}]}",
       "{'%pull': {'e': {'n': {'%gt': 5}, 'id': 2}}}", "{'_id': 1, 'e': [{'id': 1, 'n': 3}]}",
       "{'e': [{'id': 1, 'n': 3}]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'e': [{'t': [1, 2]}, {'t': [3]}]}", "{'%pull': {'e': {'t': 2}}}",
       "{'_id': 1, 'e': [{'t': [3]}]}", "{'e': [{'t': [3]}]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': ['ab', 'cd']}",
       "{'%pull': {'a': {'$regularExpression': {'pattern': '^a', 'options': ''}}}}",
       "{'_id': 1, 'a': ['cd']}", "{'a': ['cd']}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'%pull': {'a': 1}}", "{'_id': 1}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 3}", "{'%pull': {'a': 1}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 1, 3]}", "{'%pullAll': {'a': [1, 3]}}", "{'_id': 1, 'a': [2]}",
       "{'a': [2]}", NULL, 0, NULL, NOPOS},
      /* $pull rebuilds an untouched array from its bytes: every element pulled, a nested
       * path beside another operator, an array inside an array, an array of documents */
      {"{'_id': 1, 'a': [2, 2]}", "{'%pull': {'a': 2}}", "{'_id': 1, 'a': []}", "{'a': []}", NULL,
       0, NULL, NOPOS},
      {"{'_id': 1, 'd': {'e': [1, 2], 'f': 1}}", "{'%pull': {'d.e': 1}, '%inc': {'d.f': 1}}",
       "{'_id': 1, 'd': {'e': [2], 'f': 2}}", "{'d.e': [2], 'd.f': 2}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [[1, 2], [3]]}", "{'%pull': {'a.0': 1}}", "{'_id': 1, 'a': [[2], [3]]}",
       "{'a.0': [2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'e': [{'id': 'x', 'n': 1}, {'id': 'y', 'n': 2}, {'id': 'z', 'n': 3}]}",
       "{'%pull': {'e': {'id': {'%in': ['z', 'x', 'q']}}}}",
       "{'_id': 1, 'e': [{'id': 'y', 'n': 2}]}", "{'e': [{'id': 'y', 'n': 2}]}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%pullAll': {'a': 1}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3]}", "{'%pop': {'a': 1}}", "{'_id': 1, 'a': [1, 2]}",
       "{'a': [1, 2]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2, 3]}", "{'%pop': {'a': -1}}", "{'_id': 1, 'a': [2, 3]}",
       "{'a': [2, 3]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': []}", "{'%pop': {'a': 1}}", "{'_id': 1, 'a': []}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%pop': {'a': 1}}", NULL, NULL, NULL, 14, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%pop': {'a': 2}}", NULL, NULL, NULL, 2, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, positional_and_array_filters)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'a': [{'s': 0}, {'s': 1}]}", "{'%set': {'a.$.s': 5}}",
       "{'_id': 1, 'a': [{'s': 0}, {'s': 5}]}", "{'a.1.s': 5}", NULL, 0, NULL, 1},
      {"{'_id': 1, 'a': [1, 2]}", "{'%set': {'a.$': 5}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1, 2]}", "{'%inc': {'a.$[]': 10}}", "{'_id': 1, 'a': [11, 12]}",
       "{'a': [11, 12]}", NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%inc': {'a.$[]': 10}}", "{'_id': 1, 'a': [11]}", "{'a.0': 11}",
       NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'y': [{'b': 3}, {'b': 1}]}", "{'%set': {'y.$[i].b': 2}}",
       "{'_id': 1, 'y': [{'b': 3}, {'b': 2}]}", "{'y.1.b': 2}", NULL, 0, "{'0': {'i.b': 1}}",
       NOPOS},
      {"{'_id': 1, 'y': [{'b': 3}, {'b': 1}]}", "{'%set': {'y.$[i].b': 2}}",
       "{'_id': 1, 'y': [{'b': 3}, {'b': 1}]}", NULL, NULL, 0, "{'0': {'i.b': 4}}", NOPOS},
      {"{'_id': 3, 'y': [{'b': 5, 'c': [{'d': 2}, {'d': 1}]}, {'b': 1, 'c': [{'d': 1}]}]}",
       "{'%set': {'y.$[i].c.$[j].d': 0}}",
       "{'_id': 3, 'y': [{'b': 5, 'c': [{'d': 2}, {'d': 0}]}, {'b': 1, 'c': [{'d': 1}]}]}",
       "{'y.0.c.1.d': 0}", NULL, 0, "{'0': {'i.b': 5}, '1': {'j.d': 1}}", NOPOS},
      {"{'_id': 1, 'a': [5, 1, 7]}", "{'%set': {'a.$[x]': 0}}", "{'_id': 1, 'a': [0, 1, 0]}",
       "{'a': [0, 1, 0]}", NULL, 0, "{'0': {'x': {'%gt': 4}}}", NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.$[x]': 0}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.0': 0}}", NULL, NULL, NULL, 9, "{'0': {'x': 1}}",
       NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {'a.$[]': 0}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a.$[].b': 0}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.$[x]': 0}}", NULL, NULL, NULL, 9,
       "{'0': {'x': 1}, '1': {'x': 2}}", NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.$[x]': 0}}", NULL, NULL, NULL, 9,
       "{'0': {'x': 1, 'y': 2}}", NOPOS},
   };
   RUN(cases);
}

/* MongoDB's UpdateArrayNode: when more than one element matched the $[] / $[id] paths of an
 * array, the oplog holds the one element that changed (whole), or the whole array. */
Test(update, array_filters_log_whole_elements_or_arrays)
{
   static const ucase_t cases[] = {
      /* The relay's acknowledgement shape: several events marked at once. */
      {"{'_id': 1, 'events': [{'id': 'a', 's': 0}, {'id': 'b', 's': 0}, {'id': 'c', 's': 0}]}",
       "{'%set': {'events.$[e].s': 1}}",
       "{'_id': 1, 'events': [{'id': 'a', 's': 1}, {'id': 'b', 's': 0}, {'id': 'c', 's': 1}]}",
       "{'events': [{'id': 'a', 's': 1}, {'id': 'b', 's': 0}, {'id': 'c', 's': 1}]}", NULL, 0,
       "{'0': {'e.id': {'%in': ['a', 'c']}}}", NOPOS},
      /* Two matched, one of them already had the value: that element, whole. */
      {"{'_id': 1, 'a': [{'s': 1, 'v': 1}, {'s': 1, 'v': 2}, {'s': 2, 'v': 1}]}",
       "{'%set': {'a.$[e].v': 1}}",
       "{'_id': 1, 'a': [{'s': 1, 'v': 1}, {'s': 1, 'v': 1}, {'s': 2, 'v': 1}]}",
       "{'a.1': {'s': 1, 'v': 1}}", NULL, 0, "{'0': {'e.s': 1}}", NOPOS},
      /* Two identifiers on the same array: the union of their matches counts. */
      {"{'_id': 1, 'a': [{'k': 1, 'v': 0}, {'k': 2, 'v': 0}, {'k': 3, 'v': 0}]}",
       "{'%set': {'a.$[x].v': 5}, '%inc': {'a.$[y].v': 1}}",
       "{'_id': 1, 'a': [{'k': 1, 'v': 5}, {'k': 2, 'v': 0}, {'k': 3, 'v': 1}]}",
       "{'a': [{'k': 1, 'v': 5}, {'k': 2, 'v': 0}, {'k': 3, 'v': 1}]}", NULL, 0,
       "{'0': {'x.k': 1}, '1': {'y.k': 3}}", NOPOS},
      /* Outer array: one match, so the inner array decides (two matches: whole inner). */
      {"{'_id': 1, 'y': [{'b': 5, 'c': [1, 1]}, {'b': 1, 'c': [1]}]}",
       "{'%set': {'y.$[i].c.$[]': 0}}",
       "{'_id': 1, 'y': [{'b': 5, 'c': [0, 0]}, {'b': 1, 'c': [1]}]}", "{'y.0.c': [0, 0]}", NULL, 0,
       "{'0': {'i.b': 5}}", NOPOS},
      /* Several matched, none changed: nothing. */
      {"{'_id': 1, 'a': [0, 0]}", "{'%set': {'a.$[]': 0}}", "{'_id': 1, 'a': [0, 0]}", NULL, NULL,
       0, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, errors)
{
   static const ucase_t cases[] = {
      {"{'_id': 1}", "{'%set': {'a': 1}, '%inc': {'a': 1}}", NULL, NULL, NULL, 40, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a.b': 1, 'a': 1}}", NULL, NULL, NULL, 40, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a': 1}, '%rename': {'b': 'a'}}", NULL, NULL, NULL, 40, NULL,
       NOPOS},
      {"{'_id': 1}", "{'%foo': {'a': 1}}", NULL, NULL, NULL, 9, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': 1}", NULL, NULL, NULL, 9, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a': 1}, 'b': 2}", NULL, NULL, NULL, 9, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'_id': 2}}", NULL, NULL, NULL, 66, NULL, NOPOS},
      {"{'_id': 1}", "{'%unset': {'_id': 1}}", NULL, NULL, NULL, 66, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'%set': {'a.b': 1}}", NULL, NULL, NULL, 28, NULL, NOPOS},
      {"{'_id': 1, 'a': [1]}", "{'%set': {'a.b': 1}}", NULL, NULL, NULL, 28, NULL, NOPOS},
      {"{'_id': 1}", "{'%set': {'a..b': 1}}", NULL, NULL, NULL, 56, NULL, NOPOS},
      {"{'_id': 1}", "{'%currentDate': {'a': {'%type': 'x'}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, replacement_keeps_id_first)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'a': 1}", "{'b': 2}", "{'_id': 1, 'b': 2}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'b': 2, '_id': 1}", "{'_id': 1, 'b': 2}", NULL, NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'a': 1}", "{'_id': 2}", NULL, NULL, NULL, 66, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{}", "{'_id': 1}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1}", "{'a': 1, '%set': {'b': 1}}", NULL, NULL, NULL, 52, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, set_on_insert_and_current_date)
{
   bson_t *doc = tm_json("{'_id': 1}");
   bson_t *spec = tm_json(
      "{'%setOnInsert': {'a': 1}, '%currentDate': {'d': true, 't': {'%type': 'timestamp'}}}");
   tm_update_t *u = tm_update_new(spec, NULL, NULL);
   bson_t out;
   bool modified;
   bson_value_t v;

   cr_assert_not_null(u);
   cr_assert(tm_update_apply(u, doc, -1, true, &out, &modified, NULL, NULL));
   cr_assert(modified);
   cr_assert(tm_path_get(&out, "a", &v));
   cr_assert_eq(v.value_type, BSON_TYPE_INT32);
   cr_assert(tm_path_get(&out, "d", &v));
   cr_assert_eq(v.value_type, BSON_TYPE_DATE_TIME);
   cr_assert_gt(v.value.v_datetime, 1600000000000LL);
   cr_assert(tm_path_get(&out, "t", &v));
   cr_assert_eq(v.value_type, BSON_TYPE_TIMESTAMP);
   bson_destroy(&out);
   tm_update_destroy(u);
   bson_destroy(spec);
   bson_destroy(doc);
}

Test(update, push_onto_large_array, .timeout = 10)
{
   bson_t doc = BSON_INITIALIZER, arr, out;
   bson_t *spec = tm_json("{'%push': {'events': {'n': 1000}}}");
   tm_update_t *u = tm_update_new(spec, NULL, NULL);
   tm_update_desc_t desc;
   bson_value_t v;
   bool modified;

   bson_append_int32(&doc, "_id", 3, 1);
   bson_append_array_begin(&doc, "events", 6, &arr);
   for (int i = 0; i < 1000; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      bson_append_int32(&arr, k, -1, i);
   }
   bson_append_array_end(&doc, &arr);
   /* 200 pushes onto 1000 elements must stay fast (well under the test timeout). */
   for (int round = 0; round < 200; round++) {
      cr_assert(tm_update_apply(u, &doc, -1, false, &out, &modified, NULL, NULL));
      bson_destroy(&out);
   }
   tm_update_desc_init(&desc);
   cr_assert(tm_update_apply(u, &doc, -1, false, &out, &modified, &desc, NULL));
   cr_assert(modified);
   cr_assert(tm_path_get(&out, "events.1000.n", &v));
   cr_assert_eq(v.value.v_int32, 1000);
   {
      bson_iter_t it;
      cr_assert(bson_iter_init_find(&it, &desc.updated_fields, "events.1000"));
      cr_assert_eq(bson_count_keys(&desc.updated_fields), 1);
   }
   bson_destroy(&out);
   tm_update_desc_destroy(&desc);
   tm_update_destroy(u);
   bson_destroy(spec);
   bson_destroy(&doc);
}

static void
seed_case(const char *filter, const char *expected, uint32_t code)
{
   bson_t *f = tm_json(filter);
   bson_t seed = BSON_INITIALIZER;
   bson_error_t error = {0};
   bool ok = tm_filter_upsert_seed(f, &seed, &error);

   if (expected) {
      cr_assert(ok, "%s: %s", filter, error.message);
      tm_assert_doc(&seed, expected, filter);
   } else {
      cr_assert_not(ok, "%s should fail", filter);
      cr_assert_eq(error.code, code, "%s: %u %s", filter, error.code, error.message);
   }
   bson_destroy(&seed);
   bson_destroy(f);
}

Test(seed, equalities_become_fields)
{
   seed_case("{}", "{}", 0);
   seed_case("{'b': 2, '_id': 5, 'a': 1}", "{'_id': 5, 'a': 1, 'b': 2}", 0);
   seed_case("{'a.b': 1, 'a.c': {'%eq': 2}, 'd': {'%gt': 1}}", "{'a': {'b': 1, 'c': 2}}", 0);
   seed_case("{'%and': [{'x': 1}, {'%and': [{'y': 'z'}]}], '%or': [{'q': 1}]}",
             "{'x': 1, 'y': 'z'}", 0);
   seed_case("{'a': {'$regularExpression': {'pattern': 'x', 'options': ''}}, 'e': {'k': 1}}",
             "{'e': {'k': 1}}", 0);
   seed_case("{'a': 1, '%and': [{'a': 2}]}", NULL, 54);
   seed_case("{'a': 1, 'a.b': 2}", NULL, 54);
}

Test(update, pipeline_style)
{
   static const ucase_t cases[] = {
      /* the change-streams spec test "Test array truncation" */
      {"{'_id': 1, 'a': 1, 'array': ['foo', {'a': 'bar'}, 1, 2, 3]}",
       "{'0': {'%set': {'array': ['foo', {'a': 'bar'}]}}}",
       "{'_id': 1, 'a': 1, 'array': ['foo', {'a': 'bar'}]}", NULL, NULL, 0, NULL, NOPOS},
      {"{'_id': 1, 'a': {'b': 1, 'c': 2}}",
       "{'0': {'%set': {'a.b': 5, 'n': '%a.c'}}, '1': {'%unset': 'a.c'}}",
       "{'_id': 1, 'a': {'b': 5}, 'n': 2}", "{'a.b': 5, 'n': 2}", "{'0': 'a.c'}", 0, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'0': {'%match': {}}}", NULL, NULL, NULL, 2, NULL, NOPOS},
      {"{'_id': 1, 'a': 1}", "{'0': {'%set': {'_id': 2}}}", NULL, NULL, NULL, 66, NULL, NOPOS},
   };
   RUN(cases);
}

Test(update, pipeline_truncated_arrays)
{
   bson_t *doc = tm_json("{'_id': 1, 'array': ['foo', {'a': 'bar'}, 1, 2, 3]}");
   bson_t *spec = tm_json("{'0': {'%set': {'array': ['foo', {'a': 'bar'}]}}}");
   tm_update_t *u = tm_update_new(spec, NULL, NULL);
   tm_update_desc_t desc;
   bson_t out;
   bool modified;

   tm_update_desc_init(&desc);
   cr_assert(tm_update_apply(u, doc, -1, false, &out, &modified, &desc, NULL));
   cr_assert(modified);
   tm_assert_doc(&desc.truncated_arrays, "{'0': {'field': 'array', 'newSize': 2}}",
                 "truncatedArrays");
   tm_assert_doc(&desc.updated_fields, "{}", "updatedFields");
   bson_destroy(&out);
   tm_update_desc_destroy(&desc);
   tm_update_destroy(u);
   bson_destroy(spec);
   bson_destroy(doc);
}

Test(update, explicit_pipeline_constructor)
{
   bson_t *doc = tm_json("{'_id': 1, 'a': 1}");
   bson_t *empty = bson_new(), *stages = tm_json("{'0': {'%set': {'b': '%a'}}}");
   bson_t *filters = tm_json("{'0': {'x': 1}}");
   bson_error_t error;
   tm_update_t *u = tm_update_new_pipeline(empty, NULL, &error);
   bson_t out;
   bool modified = true;

   cr_assert_not_null(u);
   cr_assert_not(tm_update_is_replacement(u));
   cr_assert(tm_update_apply(u, doc, -1, false, &out, &modified, NULL, &error));
   cr_assert_not(modified);
   bson_destroy(&out);
   tm_update_destroy(u);

   u = tm_update_new_pipeline(stages, NULL, &error);
   cr_assert(tm_update_apply(u, doc, -1, false, &out, &modified, NULL, &error));
   cr_assert(modified);
   tm_assert_doc(&out, "{'_id': 1, 'a': 1, 'b': 1}", "pipeline $set");
   bson_destroy(&out);
   tm_update_destroy(u);

   cr_assert_null(tm_update_new_pipeline(stages, filters, &error));
   cr_assert_eq(error.code, 72);
   cr_assert_null(tm_update_new(stages, filters, &error));
   cr_assert_eq(error.code, 72);
   bson_destroy(filters);
   bson_destroy(stages);
   bson_destroy(empty);
   bson_destroy(doc);
}

static void
message_case(const char *doc_json, const char *update_json, const char *message)
{
   bson_t *doc = tm_json(doc_json), *spec = tm_json(update_json);
   bson_error_t error = {0};
   tm_update_t *u = tm_update_new(spec, NULL, &error);
   bson_t out;
   bool modified;

   if (u) {
      cr_assert_not(tm_update_apply(u, doc, -1, false, &out, &modified, NULL, &error),
                    "%s should fail", update_json);
      bson_destroy(&out);
   }
   cr_assert_str_eq(error.message, message);
   tm_update_destroy(u);
   bson_destroy(spec);
   bson_destroy(doc);
}

Test(update, mongodb_error_messages)
{
   message_case("{'_id': 1}", "{'%set': {'a': 1}, '%inc': {'a': 1}}",
                "Updating the path 'a' would create a conflict at 'a'");
   message_case("{'_id': 1}", "{'%set': {'a': 1, 'a.b': 1}}",
                "Updating the path 'a.b' would create a conflict at 'a'");
   message_case("{'_id': 1}", "{'%set': {'_id': 2}}",
                "Performing an update on the path '_id' would modify the immutable field '_id'");
   message_case("{'_id': 1, 'a': 1}", "{'%set': {'a.b': 1}}",
                "Cannot create field 'b' in element {a: 1}");
   message_case("{'_id': 1, 'a': 'x'}", "{'%inc': {'a': 1}}",
                "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of "
                "non-numeric type string");
   message_case("{'_id': 1, 'a': 1}", "{'%push': {'a': 1}}",
                "The field 'a' must be an array but is of type int in document {_id: 1}");
   message_case("{'_id': 1}", "{'%bogus': {'a': 1}}",
                "Unknown modifier: $bogus. Expected a valid update modifier or pipeline-style "
                "update specified as an array");
}

Test(update, positional_from_matcher)
{
   bson_t *doc = tm_json("{'_id': 1, 'ev': [{'id': 'a', 's': 0}, {'id': 'b', 's': 0}]}");
   bson_t *filter = tm_json("{'ev.id': 'b'}"), *spec = tm_json("{'%set': {'ev.$.s': 1}}");
   tm_matcher_t *m = tm_matcher_new(filter, NULL);
   tm_update_t *u = tm_update_new(spec, NULL, NULL);
   tm_update_desc_t desc;
   int32_t pos = -1;
   bson_t out;
   bool modified;

   cr_assert(tm_matcher_match(m, doc, &pos));
   cr_assert_eq(pos, 1);
   tm_update_desc_init(&desc);
   cr_assert(tm_update_apply(u, doc, pos, false, &out, &modified, &desc, NULL));
   tm_assert_doc(&out, "{'_id': 1, 'ev': [{'id': 'a', 's': 0}, {'id': 'b', 's': 1}]}", "out");
   tm_assert_doc(&desc.updated_fields, "{'ev.1.s': 1}", "updatedFields");
   bson_destroy(&out);
   tm_update_desc_destroy(&desc);
   tm_update_destroy(u);
   tm_matcher_destroy(m);
   bson_destroy(spec);
   bson_destroy(filter);
   bson_destroy(doc);
}

/* The shapes the relay sends: clearing acknowledged events, dead-lettering one. */
Test(update, relay_shapes)
{
   static const ucase_t cases[] = {
      {"{'_id': 1, 'events': [{'id': 'a', 'seq': 1}, {'id': 'b', 'seq': 2}, {'id': 'c', 'seq': "
       "3}]}",
       "{'%pull': {'events': {'id': {'%in': ['a', 'c']}}}}",
       "{'_id': 1, 'events': [{'id': 'b', 'seq': 2}]}", "{'events': [{'id': 'b', 'seq': 2}]}", NULL,
       0, NULL, NOPOS},
      {"{'_id': 1, 'events': [{'id': 'a'}, {'id': 'b'}], 'dead': [{'event': {'id': 'x'}}]}",
       "{'%pull': {'events': {'%in': [{'id': 'b'}]}}, '%push': {'dead': {'event': {'id': 'b'}, "
       "'reason': 'bad'}}}",
       "{'_id': 1, 'events': [{'id': 'a'}], 'dead': [{'event': {'id': 'x'}}, {'event': {'id': "
       "'b'}, 'reason': 'bad'}]}",
       "{'events': [{'id': 'a'}], 'dead.1': {'event': {'id': 'b'}, 'reason': 'bad'}}", NULL, 0,
       NULL, NOPOS},
      {"{'_id': 1, 'version': 4, 'eventSeq': 7, 'events': [{'seq': 7}]}",
       "{'%set': {'version': 5, 'eventSeq': 8, 'status': 'paid'}, '%push': {'events': {'%each': "
       "[{'seq': 8}]}}}",
       "{'_id': 1, 'version': 5, 'eventSeq': 8, 'events': [{'seq': 7}, {'seq': 8}], 'status': "
       "'paid'}",
       "{'version': 5, 'eventSeq': 8, 'events.1': {'seq': 8}, 'status': 'paid'}", NULL, 0, NULL,
       NOPOS},
      {"{'_id': 1, 'inbox': ['a', 'b', 'c']}",
       "{'%push': {'inbox': {'%each': ['d'], '%slice': -3}}, '%max': {'inboxSeq': 4}}",
       "{'_id': 1, 'inbox': ['b', 'c', 'd'], 'inboxSeq': 4}",
       "{'inbox': ['b', 'c', 'd'], 'inboxSeq': 4}", NULL, 0, NULL, NOPOS},
   };
   RUN(cases);
}

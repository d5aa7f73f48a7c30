/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the engine's query matcher: every supported query operator, dotted paths
 * through arrays, and the errors of malformed filters.
 */
#include "test-util.h"

typedef struct {
   const char *filter;
   const char *doc;
   bool match;
   int32_t pos; /* expected positional index when matching; -2 = do not check */
} case_t;

static void
run_cases(const case_t *cases, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      bson_t *f = tm_json(cases[i].filter);
      bson_t *d = tm_json(cases[i].doc);
      bson_error_t error;
      tm_matcher_t *m = tm_matcher_new(f, &error);
      int32_t pos = 99;

      cr_assert_not_null(m, "filter %s: %s", cases[i].filter, error.message);
      cr_assert_eq(tm_matcher_match(m, d, &pos), cases[i].match, "filter %s on %s: want %d",
                   cases[i].filter, cases[i].doc, cases[i].match);
      if (cases[i].match && cases[i].pos != -2) {
         cr_assert_eq(pos, cases[i].pos, "filter %s on %s: pos %d, want %d", cases[i].filter,
                      cases[i].doc, pos, cases[i].pos);
      }
      tm_matcher_destroy(m);
      bson_destroy(f);
      bson_destroy(d);
   }
}

#define RUN(cases) run_cases(cases, sizeof cases / sizeof cases[0])

Test(match, equality_and_arrays)
{
   static const case_t cases[] = {
      {"{}", "{'a': 1}", true, -1},
      {"{'a': 1}", "{'a': 1.0}", true, -1},
      {"{'a': 1}", "{'a': '1'}", false, -2},
      {"{'a': 2}", "{'a': [1, 2, 3]}", true, 1},
      {"{'a': [1, 2]}", "{'a': [1, 2]}", true, -2},
      {"{'a': [1, 2]}", "{'a': [[1, 2], 3]}", true, 0},
      {"{'a': [2, 1]}", "{'a': [1, 2]}", false, -2},
      {"{'a': 1}", "{'a': [[1]]}", false, -2},
      {"{'a.b': 2}", "{'a': [{'b': 1}, {'b': 2}]}", true, 1},
      {"{'a.b': 2}", "{'a': {'b': [1, 2]}}", true, 1},
      {"{'a.1': 5}", "{'a': [4, 5]}", true, 1},
      {"{'a.1.b': 5}", "{'a': [4, {'b': 5}]}", true, 1},
      {"{'a.b.c': 1}", "{'a': [{'b': [{'c': 0}, {'c': 1}]}]}", true, 0},
      {"{'a': {'x': 1}}", "{'a': {'x': 1.0}}", true, -1},
      {"{'a': {'x': 1}}", "{'a': {'x': 1, 'y': 2}}", false, -2},
      {"{'a': 1, 'b': 2}", "{'a': 1, 'b': 3}", false, -2},
   };
   RUN(cases);
}

Test(match, null_and_missing)
{
   static const case_t cases[] = {
      {"{'a': null}", "{}", true, -1},
      {"{'a': null}", "{'a': null}", true, -1},
      {"{'a': null}", "{'a': 0}", false, -2},
      {"{'a.b': null}", "{'a': [{'b': 1}, {}]}", true, -2},
      {"{'a.b': null}", "{'a': 5}", true, -2},
      {"{'a': {'$ne': 1}}", "{}", true, -2},
      {"{'a': {'$ne': 1}}", "{'a': [0, 1]}", false, -2},
      {"{'a': {'$ne': null}}", "{'a': 0}", true, -2},
      {"{'a': {'$nin': [1, 2]}}", "{}", true, -2},
      {"{'a': {'$nin': [1, 2]}}", "{'a': 2}", false, -2},
      {"{'a': {'$in': [null]}}", "{}", true, -2},
      {"{'a': {'$gte': null}}", "{}", true, -2},
      {"{'a': {'$gt': null}}", "{}", false, -2},
      {"{'a': {'$exists': true}}", "{'a': null}", true, -2},
      {"{'a': {'$exists': false}}", "{'a': null}", false, -2},
      {"{'a': {'$exists': false}}", "{'b': 1}", true, -2},
      {"{'a.b': {'$exists': true}}", "{'a': [{'c': 1}, {'b': 1}]}", true, -2},
      {"{'a.b': {'$exists': 0}}", "{'a': [{'c': 1}]}", true, -2},
   };
   RUN(cases);
}

Test(match, comparisons_are_type_bracketed)
{
   static const case_t cases[] = {
      {"{'a': {'$gt': 1}}", "{'a': 2}", true, -1},
      {"{'a': {'$gt': 1}}", "{'a': 'z'}", false, -2},
      {"{'a': {'$gt': 1}}", "{'a': {'$numberLong': '2'}}", true, -1},
      {"{'a': {'$gte': 2.0}}", "{'a': 2}", true, -1},
      {"{'a': {'$lt': 'b'}}", "{'a': 'a'}", true, -1},
      {"{'a': {'$lt': 'b'}}", "{'a': 1}", false, -2},
      {"{'a': {'$lte': 1}}", "{'a': [5, 1]}", true, 1},
      {"{'a': {'$gt': 1, '$lt': 5}}", "{'a': [0, 10]}", true, -2},
      {"{'a': {'$gt': {'$minKey': 1}}}", "{'a': 'x'}", true, -2},
      {"{'a': {'$lt': {'$maxKey': 1}}}", "{'a': null}", true, -2},
      {"{'a': {'$gt': {'$date': 1000}}}", "{'a': {'$date': 2000}}", true, -2},
      {"{'a': {'$gt': {'$date': 1000}}}", "{'a': 5000}", false, -2},
      {"{'_id': {'$gt': 1}}", "{'_id': 2}", true, -1},
   };
   RUN(cases);
}

/* $in keeps its string operands sorted (binary search): strings, symbols, regexes, null and
 * other types mixed in one list must match exactly as one comparison after another would. */
Test(match, in_many_strings_and_mixed_types)
{
   static const case_t cases[] = {
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': 'bb'}", true, -1},
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': 'a'}", true, -1},
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': 'z'}", true, -1},
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': 'ba'}", false, -2},
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': ''}", false, -2},
      {"{'a': {'$in': ['m', 'b', 'z', 'a', 'y', 'c', 'bb', 'b']}}", "{'a': ['q', 'c']}", true, 1},
      {"{'a': {'$in': ['x', 2, 'y']}}", "{'a': 2.0}", true, -1},
      {"{'a': {'$in': ['x', 2, 'y']}}", "{'a': '2'}", false, -2},
      {"{'a': {'$in': ['x', {'$symbol': 'q'}, 'y']}}", "{'a': 'q'}", true, -1},
      {"{'a': {'$in': ['x', 'q', 'y']}}", "{'a': {'$symbol': 'q'}}", true, -1},
      {"{'a': {'$in': ['x', null, 'y']}}", "{'b': 1}", true, -2},
      {"{'a': {'$in': ['x', 'y']}}", "{'b': 1}", false, -2},
      {"{'a': {'$in': ['x', null, 'y']}}", "{'a': 'null'}", false, -2},
      {"{'a': {'$in': ['x', {'$regularExpression': {'pattern': '^q', 'options': ''}}, 'y']}}",
       "{'a': 'qq'}", true, -1},
      {"{'a': {'$in': ['x', {'$regularExpression': {'pattern': '^q', 'options': ''}}, 'y']}}",
       "{'a': 'y'}", true, -1},
      {"{'a': {'$in': ['x', {'$regularExpression': {'pattern': '^q', 'options': ''}}, 'y']}}",
       "{'a': 'aq'}", false, -2},
      {"{'a': {'$in': ['x', {'$regularExpression': {'pattern': '^q', 'options': ''}}]}}",
       "{'a': {'$regularExpression': {'pattern': '^q', 'options': ''}}}", true, -1},
      {"{'a': {'$in': ['x', 1, {'k': 'x'}, ['x']]}}", "{'a': {'k': 'x'}}", true, -1},
      {"{'a': {'$in': ['x', 1, {'k': 'x'}, ['x']]}}", "{'a': [['x']]}", true, 0},
      {"{'a.id': {'$in': ['e3', 'e1']}}", "{'a': [{'id': 'e0'}, {'id': 'e1'}]}", true, 1},
   };
   RUN(cases);
}

Test(match, in_all_size_type)
{
   static const case_t cases[] = {
      {"{'a': {'$in': [1, 'x']}}", "{'a': 'x'}", true, -1},
      {"{'a': {'$in': [1, 'x']}}", "{'a': [3, 1]}", true, 1},
      {"{'a': {'$in': []}}", "{'a': 1}", false, -2},
      {"{'a': {'$in': [{'$regularExpression': {'pattern': '^ab', 'options': ''}}]}}",
       "{'a': 'abc'}", true, -1},
      {"{'a': {'$all': [1, 2]}}", "{'a': [2, 3, 1]}", true, -2},
      {"{'a': {'$all': [1, 4]}}", "{'a': [2, 3, 1]}", false, -2},
      {"{'a': {'$all': []}}", "{'a': []}", false, -2},
      {"{'a': {'$all': [{'$elemMatch': {'x': 1}}]}}", "{'a': [{'x': 1}]}", true, -2},
      {"{'a': {'$size': 2}}", "{'a': [1, [2, 3]]}", true, -2},
      {"{'a': {'$size': 0}}", "{'a': []}", true, -2},
      {"{'a': {'$size': 1}}", "{'a': 1}", false, -2},
      {"{'a.b': {'$size': 1}}", "{'a': [{'b': [1]}]}", true, -2},
      {"{'a': {'%type': 'string'}}", "{'a': 'x'}", true, -2},
      {"{'a': {'%type': 'number'}}", "{'a': 1.5}", true, -2},
      {"{'a': {'%type': 'array'}}", "{'a': []}", true, -2},
      {"{'a': {'%type': ['null', 16]}}", "{'a': 7}", true, -2},
      {"{'a': {'%type': 2}}", "{'a': 7}", false, -2},
      {"{'a': {'%type': 'long'}}", "{'a': [1, {'$numberLong': '2'}]}", true, 1},
      {"{'a': {'$mod': [4, 1]}}", "{'a': 9}", true, -2},
      {"{'a': {'$mod': [4, 1]}}", "{'a': 8}", false, -2},
   };
   RUN(cases);
}

Test(match, logical_operators)
{
   static const case_t cases[] = {
      {"{'$and': [{'a': 1}, {'b': 2}]}", "{'a': 1, 'b': 2}", true, -2},
      {"{'$and': [{'a': 1}, {'b': 2}]}", "{'a': 1}", false, -2},
      {"{'$or': [{'a': 1}, {'b': 2}]}", "{'b': 2}", true, -2},
      {"{'$or': [{'a': 1}, {'b': 2}]}", "{'b': 3}", false, -2},
      {"{'$nor': [{'a': 1}, {'b': 2}]}", "{'b': 3}", true, -2},
      {"{'$nor': [{'a': 1}, {'b': 2}]}", "{'a': 1}", false, -2},
      {"{'a': {'$not': {'$gt': 5}}}", "{'a': 3}", true, -2},
      {"{'a': {'$not': {'$gt': 5}}}", "{}", true, -2},
      {"{'a': {'$not': {'$gt': 5}}}", "{'a': [1, 6]}", false, -2},
      {"{'a': {'$not': {'$regularExpression': {'pattern': '^x', 'options': ''}}}}", "{'a': 'yx'}",
       true, -2},
      {"{'a': 1, '$comment': 'hello'}", "{'a': 1}", true, -2},
      {"{'%expr': {'%gt': ['%a', '%b']}}", "{'a': 2, 'b': 1}", true, -2},
      {"{'%expr': {'%gt': ['%a', '%b']}}", "{'a': 1, 'b': 1}", false, -2},
      {"{'%expr': {'%divide': [1, 0]}}", "{'a': 1}", false, -2},
      {"{'r': {'%ref': 'c', '%id': 1}}", "{'r': {'%ref': 'c', '%id': 1}}", true, -1},
   };
   RUN(cases);
}

Test(match, elem_match)
{
   static const case_t cases[] = {
      {"{'a': {'$elemMatch': {'$gt': 1, '$lt': 5}}}", "{'a': [0, 10, 3]}", true, 2},
      {"{'a': {'$elemMatch': {'$gt': 1, '$lt': 5}}}", "{'a': [0, 10]}", false, -2},
      {"{'a': {'$elemMatch': {'b': 1, 'c': 2}}}", "{'a': [{'b': 1}, {'b': 1, 'c': 2}]}", true, 1},
      {"{'a': {'$elemMatch': {'b': 1, 'c': 2}}}", "{'a': [{'b': 1}, {'c': 2}]}", false, -2},
      {"{'a': {'$elemMatch': {'b': 1}}}", "{'a': {'b': 1}}", false, -2},
      {"{'a': {'$elemMatch': {'$or': [{'b': 5}, {'c': 6}]}}}", "{'a': [{'c': 6}]}", true, 0},
      {"{'a.b': {'$elemMatch': {'c': {'$gte': 2}}}}", "{'a': {'b': [{'c': 1}, {'c': 3}]}}", true,
       1},
      {"{'a': {'$elemMatch': {'b': {'$elemMatch': {'$eq': 3}}}}}",
       "{'a': [{'b': [1]}, {'b': [3]}]}", true, 1},
      {"{'a': {'$elemMatch': {'$not': {'$gt': 3}}}}", "{'a': [5, 4, 2]}", true, 2},
   };
   RUN(cases);
}

Test(match, regex)
{
   static const case_t cases[] = {
      {"{'a': {'%regex': '^ab.d$'}}", "{'a': 'abcd'}", true, -2},
      {"{'a': {'%regex': '^AB', '%options': 'i'}}", "{'a': 'abcd'}", true, -2},
      {"{'a': {'%regex': '^AB'}}", "{'a': 'abcd'}", false, -2},
      {"{'a': {'%regex': '\\\\d+x'}}", "{'a': 'n42x'}", true, -2},
      {"{'a': {'$regularExpression': {'pattern': 'b', 'options': ''}}}", "{'a': ['x', 'abc']}",
       true, 1},
      {"{'a': {'%regex': 'b'}}", "{'a': 5}", false, -2},
      {"{'a': {'%regex': '^x$', '%options': 'm'}}", "{'a': 'y\\nx'}", true, -2},
      {"{'a': {'%regex': '(?i)^ab'}}", "{'a': 'ABc'}", true, -2},
      {"{'a': {'%regex': '^a b # comment', '%options': 'x'}}", "{'a': 'abc'}", true, -2},
   };
   RUN(cases);
}

Test(match, parse_errors)
{
   static const struct {
      const char *filter;
      uint32_t code;
   } cases[] = {
      {"{'a': {'$foo': 1}}", 2},
      {"{'$foo': 1}", 2},
      {"{'$or': []}", 2},
      {"{'$and': 1}", 2},
      {"{'a': {'$in': 1}}", 2},
      {"{'a': {'$size': -1}}", 2},
      {"{'a': {'$size': 'x'}}", 2},
      {"{'a': {'%type': 'nope'}}", 2},
      {"{'a': {'$elemMatch': 1}}", 2},
      {"{'a': {'$not': {}}}", 2},
      {"{'$where': 'true'}", 2},
      {"{'a': {'%regex': '('}}", 51091},
      {"{'a': {'%options': 'i'}}", 2},
      {"{'a': {'$mod': [0, 1]}}", 2},
   };

   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      bson_t *f = tm_json(cases[i].filter);
      bson_error_t error;
      tm_matcher_t *m = tm_matcher_new(f, &error);

      cr_assert_null(m, "%s should fail", cases[i].filter);
      cr_assert_eq(error.code, cases[i].code, "%s: code %u (%s)", cases[i].filter, error.code,
                   error.message);
      cr_assert_eq(error.domain, TM_ERROR_DOMAIN);
      bson_destroy(f);
   }
}

/* The relay's change-stream $match (reader.c) against update and insert events. */
Test(match, relay_change_stream_filter)
{
   static const char *filter =
      "{'ns.coll': {'%in': ['orders']}, '%or': [{'operationType': {'%in': ['insert', 'replace']}, "
      "'fullDocument.events.0': {'%exists': true}}, {'operationType': 'update', "
      "'updateDescription.updatedFields.eventSeq': {'%exists': true}}, {'operationType': "
      "'invalidate'}]}";
   const case_t cases[] = {
      {filter,
       "{'ns': {'coll': 'orders'}, 'operationType': 'update', 'updateDescription': "
       "{'updatedFields': {'eventSeq': 3, 'events.2': {}}}}",
       true, -2},
      {filter,
       "{'ns': {'coll': 'orders'}, 'operationType': 'update', 'updateDescription': "
       "{'updatedFields': {'status': 1}}}",
       false, -2},
      {filter,
       "{'ns': {'coll': 'orders'}, 'operationType': 'insert', 'fullDocument': {'events': [{'seq': "
       "1}]}}",
       true, -2},
      {filter,
       "{'ns': {'coll': 'orders'}, 'operationType': 'insert', 'fullDocument': {'events': []}}",
       false, -2},
      {filter,
       "{'ns': {'coll': 'other'}, 'operationType': 'insert', 'fullDocument': {'events': [1]}}",
       false, -2},
   };
   RUN(cases);
}

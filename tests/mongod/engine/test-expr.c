/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Expressions a lease protocol leans on: date arithmetic as mongod 6.0 does it ($add,
 * $subtract, comparisons of dates), $$NOW and $$CLUSTER_TIME held still for a command, and a
 * server started without an expression answering like one that never had it. Expected codes
 * and messages are mongod's (src/mongo/db/pipeline/expression.cpp, 6.0: ExpressionAdd's
 * AddState, ExpressionSubtract::apply, ExpressionMultiply; Variables for 51144).
 */
#include "expr.h"
#include "test-util.h"

/* Evaluates {'e': <expr>} against `doc_json`; returns true with `out` set, or false with
 * `error` set. */
static bool
eval_json(const char *expr_json, const char *doc_json, bson_value_t *out, bson_error_t *error)
{
   bson_t *spec = tm_json(expr_json), *doc = tm_json(doc_json);
   bson_iter_t it;
   tm_expr_t *e;
   bool ok = false;

   cr_assert(bson_iter_init_find(&it, spec, "e"), "%s", expr_json);
   e = tm_expr_parse(bson_iter_value(&it), error);
   if (e) {
      ok = tm_expr_eval(e, doc, out, error);
      tm_expr_destroy(e);
   }
   bson_destroy(spec);
   bson_destroy(doc);
   return ok;
}

/* Asserts that {'e': expr} evaluates to the value of {'r': ...} in `want_json`, type included. */
static void
expect_value(const char *expr_json, const char *want_json)
{
   bson_t *want = tm_json(want_json), got = BSON_INITIALIZER;
   bson_value_t v;
   bson_error_t error;
   bson_iter_t it;

   cr_assert(eval_json(expr_json, "{'_id': 1}", &v, &error), "%s: %s", expr_json, error.message);
   cr_assert(bson_iter_init_find(&it, want, "r"));
   bson_append_value(&got, "r", 1, &v);
   tm_assert_doc(&got, want_json, expr_json);
   bson_value_destroy(&v);
   bson_destroy(&got);
   bson_destroy(want);
}

static void
expect_error(const char *expr_json, uint32_t code, const char *message)
{
   bson_value_t v;
   bson_error_t error;

   cr_assert_not(eval_json(expr_json, "{'_id': 1}", &v, &error), "%s should fail", expr_json);
   cr_expect_eq(error.code, code, "%s: code %u (%s)", expr_json, error.code, error.message);
   cr_expect_str_eq(error.message, message, "%s", expr_json);
}

#define DATE(ms) "{'$date': {'$numberLong': '" #ms "'}}"

Test(expr, add_dates)
{
   expect_value("{'e': {'%add': [" DATE(1000) ", 1]}}", "{'r': " DATE(1001) "}");
   expect_value("{'e': {'%add': [1, " DATE(1000) ", {'$numberLong': '5'}]}}",
                "{'r': " DATE(1006) "}");
   /* A double total rounds half away from zero (llround); a decimal one half to even. */
   expect_value("{'e': {'%add': [" DATE(1000) ", 1.5]}}", "{'r': " DATE(1002) "}");
   expect_value("{'e': {'%add': [" DATE(1000) ", -1.5]}}", "{'r': " DATE(999) "}");
   expect_value("{'e': {'%add': [" DATE(1000) ", {'$numberDecimal': '2.5'}]}}",
                "{'r': " DATE(1002) "}");
   expect_value("{'e': {'%add': [" DATE(1000) ", null]}}", "{'r': null}");
   expect_value("{'e': {'%add': ['%missing', " DATE(1000) "]}}", "{'r': null}");
   expect_error("{'e': {'%add': [" DATE(1) ", 1, " DATE(2) "]}}", 16612,
                "only one date allowed in an $add expression");
   expect_error("{'e': {'%add': [" DATE(1) ", 'x']}}", 14,
                "$add only supports numeric or date types, not string");
   expect_error("{'e': {'%add': [" DATE(1) ", 1e300]}}", 15, "date overflow in $add");
}

Test(expr, add_numbers)
{
   expect_value("{'e': {'%add': [1, 2]}}", "{'r': {'$numberInt': '3'}}");
   expect_value("{'e': {'%add': [2147483647, 1]}}", "{'r': {'$numberLong': '2147483648'}}");
   expect_value("{'e': {'%add': [{'$numberLong': '1'}, 2]}}", "{'r': {'$numberLong': '3'}}");
   expect_value("{'e': {'%add': [{'$numberLong': '9223372036854775807'}, 1]}}",
                "{'r': {'$numberDouble': '9.2233720368547758e+18'}}");
   expect_value("{'e': {'%add': [1, 0.5]}}", "{'r': 1.5}");
   expect_value("{'e': {'%add': []}}", "{'r': {'$numberInt': '0'}}");
}

Test(expr, subtract_dates)
{
   expect_value("{'e': {'%subtract': [" DATE(5000) ", " DATE(2000) "]}}",
                "{'r': {'$numberLong': '3000'}}");
   expect_value("{'e': {'%subtract': [" DATE(2000) ", " DATE(5000) "]}}",
                "{'r': {'$numberLong': '-3000'}}");
   expect_value("{'e': {'%subtract': [" DATE(5000) ", 1000]}}", "{'r': " DATE(4000) "}");
   /* The number is truncated to whole milliseconds (Value::coerceToLong). */
   expect_value("{'e': {'%subtract': [" DATE(5000) ", 1.9]}}", "{'r': " DATE(4999) "}");
   expect_value("{'e': {'%subtract': [" DATE(5000) ", null]}}", "{'r': null}");
   expect_value("{'e': {'%subtract': [null, 'x']}}", "{'r': null}");
   expect_error("{'e': {'%subtract': [1000, " DATE(5000) "]}}", 14,
                "can't $subtract date from int");
   expect_error("{'e': {'%subtract': [" DATE(5000) ", 'x']}}", 14,
                "can't $subtract string from Date");
   expect_error("{'e': {'%subtract': ['a', 'b']}}", 14, "can't $subtract string from string");
   expect_value("{'e': {'%subtract': [{'$numberLong': '-9223372036854775808'}, 1]}}",
                "{'r': {'$numberDouble': '-9.2233720368547758e+18'}}");
   expect_value("{'e': {'%subtract': [5, 7]}}", "{'r': {'$numberInt': '-2'}}");
}

Test(expr, multiply_and_compare_dates)
{
   expect_error("{'e': {'%multiply': [" DATE(5000) ", 2]}}", 16555,
                "$multiply only supports numeric types, not date");
   expect_value("{'e': {'%multiply': [3, {'$numberLong': '4'}]}}", "{'r': {'$numberLong': '12'}}");
   expect_value("{'e': {'%multiply': [3037000500, 3037000500]}}",
                "{'r': {'$numberDouble': '9.22337203700025e+18'}}");
   expect_value("{'e': {'%lt': [" DATE(1) ", " DATE(2) "]}}", "{'r': true}");
   expect_value("{'e': {'%gte': [" DATE(2) ", " DATE(2) "]}}", "{'r': true}");
   /* Dates sort after every number (canonical type 45 > 10). */
   expect_value("{'e': {'%gt': [" DATE(0) ", 99999999999999]}}", "{'r': true}");
   expect_value("{'e': {'%lt': ['%expiresAt', " DATE(0) "]}}", "{'r': true}");
}

static void
set_clock(int64_t now_ms, uint32_t t, uint32_t i)
{
   tm_command_clock_t clock = {
      .now_ms = now_ms, .cluster_time_t = t, .cluster_time_i = i, .has_cluster_time = true};
   tm_command_clock_set(&clock);
}

Test(expr, now_and_cluster_time)
{
   bson_value_t v;
   bson_error_t error;

   set_clock(1700000000123, 1700000000, 7);
   expect_value("{'e': '%%NOW'}", "{'r': " DATE(1700000000123) "}");
   expect_value("{'e': {'%add': ['%%NOW', 10000]}}", "{'r': " DATE(1700000010123) "}");
   expect_value("{'e': '%%CLUSTER_TIME'}", "{'r': {'$timestamp': {'t': 1700000000, 'i': 7}}}");
   expect_value("{'e': {'%subtract': ['%%NOW', " DATE(1700000000000) "]}}",
                "{'r': {'$numberLong': '123'}}");
   /* A path below a date reaches nothing. */
   cr_assert(eval_json("{'e': '%%NOW.x'}", "{}", &v, &error));
   cr_assert_eq(v.value_type, BSON_TYPE_EOD);
   /* Without a command clock: $$NOW is the wall clock, $$CLUSTER_TIME is unavailable. */
   tm_command_clock_set(NULL);
   cr_assert(eval_json("{'e': '%%NOW'}", "{}", &v, &error));
   cr_assert_eq(v.value_type, BSON_TYPE_DATE_TIME);
   cr_assert_gt(v.value.v_datetime, 1700000000123);
   expect_error("{'e': '%%CLUSTER_TIME'}", 51144,
                "Builtin variable '$$CLUSTER_TIME' is not available");
   expect_error("{'e': '%%NOWISH'}", 17276, "Use of undefined variable: NOWISH");
}

/* The lease protocol's queries: acquire if free or expired (matcher with $expr on $$NOW),
 * then the pipeline-style update that takes the lease; all against one command clock. */
Test(expr, lease_filter_and_pipeline_update)
{
   bson_t *filter = tm_json("{'_id': 'p1', '%or': [{'owner': null}, "
                            "{'%expr': {'%lt': ['%expiresAt', '%%NOW']}}]}");
   bson_t *pipe = tm_json("{'0': {'%set': {'owner': 'me', 'epoch': {'%add': [{'%ifNull': "
                          "['%epoch', 0]}, 1]}, 'expiresAt': {'%add': ['%%NOW', 10000]}}}}");
   bson_t *live =
      tm_json("{'_id': 'p1', 'owner': 'other', 'epoch': 4, 'expiresAt': " DATE(1700000000200) "}");
   bson_t *expired =
      tm_json("{'_id': 'p1', 'owner': 'other', 'epoch': 4, 'expiresAt': " DATE(1700000000100) "}");
   bson_t *fresh = tm_json("{'_id': 'p1'}");
   bson_error_t error;
   tm_matcher_t *m = tm_matcher_new(filter, &error);
   tm_update_t *u = tm_update_new_pipeline(pipe, NULL, &error);
   bson_t out;
   bool modified;

   set_clock(1700000000150, 1700000000, 1);
   cr_assert(m && u, "%s", error.message);
   cr_assert_not(tm_matcher_match(m, live, NULL), "a live lease is not taken");
   cr_assert(tm_matcher_match(m, expired, NULL), "an expired lease is taken");
   cr_assert(tm_matcher_match(m, fresh, NULL), "a free lease is taken");
   cr_assert(tm_update_apply(u, expired, -1, false, &out, &modified, NULL, &error), "%s",
             error.message);
   tm_assert_doc(&out,
                 "{'_id': 'p1', 'owner': 'me', 'epoch': 5, 'expiresAt': " DATE(1700000010150) "}",
                 "taken");
   bson_destroy(&out);
   cr_assert(tm_update_apply(u, fresh, -1, false, &out, &modified, NULL, &error));
   tm_assert_doc(&out,
                 "{'_id': 'p1', 'owner': 'me', 'epoch': 1, 'expiresAt': " DATE(1700000010150) "}",
                 "first owner");
   bson_destroy(&out);
   tm_update_destroy(u);
   tm_matcher_destroy(m);
   bson_destroy(filter);
   bson_destroy(pipe);
   bson_destroy(live);
   bson_destroy(expired);
   bson_destroy(fresh);
}

/* --without-expression: 168 with mongod's message, wrapped by the stages that add context. */
Test(expr, disabled_expression)
{
   bson_t *pipe = tm_json("{'0': {'%addFields': {'h': {'%toHashedIndexKey': '%_id'}}}}");
   bson_t *filter = tm_json("{'%expr': {'%gte': [{'%toHashedIndexKey': '%_id'}, 0]}}");
   bson_error_t error;
   tm_pipeline_t *p;
   tm_matcher_t *m;

   cr_assert_not(tm_expr_disable("$noSuchThing"));
   cr_assert(tm_expr_disable("toHashedIndexKey"));
   p = tm_pipeline_new(pipe, &error);
   cr_assert_null(p);
   cr_assert_eq(error.code, 168);
   cr_assert_str_eq(error.message, "Invalid $addFields :: caused by :: Unrecognized expression "
                                   "'$toHashedIndexKey'");
   m = tm_matcher_new(filter, &error);
   cr_assert_null(m);
   cr_assert_eq(error.code, 168);
   cr_assert_str_eq(error.message, "Unrecognized expression '$toHashedIndexKey'");
   /* Other expressions are unaffected. */
   expect_value("{'e': {'%add': [1, 2]}}", "{'r': {'$numberInt': '3'}}");
   bson_destroy(pipe);
   bson_destroy(filter);
}

/* Every stage an update pipeline may use sees the command's $$NOW (release, handoff). */
Test(expr, update_pipeline_stages_with_now)
{
   static const struct {
      const char *pipeline, *want;
   } cases[] = {
      {"{'0': {'%addFields': {'at': '%%NOW'}}}", "{'_id': 1, 'owner': 'a', 'at': " DATE(5000) "}"},
      {"{'0': {'%unset': 'owner'}, '1': {'%set': {'releasedAt': {'%add': ['%%NOW', 1]}}}}",
       "{'_id': 1, 'releasedAt': " DATE(5001) "}"},
      {"{'0': {'%project': {'owner': 1, 'at': '%%NOW'}}}",
       "{'_id': 1, 'owner': 'a', 'at': " DATE(5000) "}"},
      {"{'0': {'%replaceRoot': {'newRoot': {'_id': '%_id', 'at': '%%NOW'}}}}",
       "{'_id': 1, 'at': " DATE(5000) "}"},
      {"{'0': {'%replaceWith': {'_id': '%_id', 'ct': '%%CLUSTER_TIME'}}}",
       "{'_id': 1, 'ct': {'$timestamp': {'t': 5, 'i': 2}}}"},
   };
   bson_t *doc = tm_json("{'_id': 1, 'owner': 'a'}");

   set_clock(5000, 5, 2);
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      bson_t *pipe = tm_json(cases[i].pipeline), out;
      bson_error_t error;
      bool modified;
      tm_update_t *u = tm_update_new_pipeline(pipe, NULL, &error);
      cr_assert(u, "%s: %s", cases[i].pipeline, error.message);
      cr_assert(tm_update_apply(u, doc, -1, false, &out, &modified, NULL, &error), "%s: %s",
                cases[i].pipeline, error.message);
      tm_assert_doc(&out, cases[i].want, cases[i].pipeline);
      bson_destroy(&out);
      tm_update_destroy(u);
      bson_destroy(pipe);
   }
   bson_destroy(doc);
}

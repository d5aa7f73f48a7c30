/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Expressions with variables ($filter, $map, $reduce, $let), the array and accumulator-style
 * operators, $mergeObjects, $toLong, $lookup in its three forms, and which names get 168.
 */
#include "test-util.h"

/* A "database" for $lookup: collection name -> documents ({'d': [...]}). */
typedef struct {
   const char *name;
   bson_t *docs[16];
   size_t n;
} tcoll_t;

static tcoll_t colls[2];

static size_t
docs_from_json(const char *json, bson_t **docs, size_t max)
{
   bson_t *wrapper = tm_json(json);
   bson_iter_t it, sub;
   size_t n = 0;
   cr_assert(bson_iter_init_find(&it, wrapper, "d") && bson_iter_recurse(&it, &sub));
   while (bson_iter_next(&sub) && n < max) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&sub, &len, &data);
      docs[n++] = bson_new_from_data(data, len);
   }
   bson_destroy(wrapper);
   return n;
}

static bool
read_coll(void *ctx, const char *name, bson_t ***docs, size_t *n, bson_error_t *error)
{
   (void)ctx;
   *n = 0;
   *docs = bson_malloc(17 * sizeof(bson_t *));
   for (size_t c = 0; c < 2; c++) {
      for (size_t i = 0; colls[c].name && strcmp(colls[c].name, name) == 0 && i < colls[c].n; i++) {
         (*docs)[(*n)++] = colls[c].docs[i];
      }
   }
   (void)error;
   return true;
}

/* Runs the pipeline {'p': [...]} over {'d': [...]} and returns the error code (0 on success,
 * then the result must equal {'r': [...]}). */
static uint32_t
run(const char *docs_json, const char *pipeline_json, const char *expected_json)
{
   bson_t *in[16], *pipe = tm_json(pipeline_json), p_arr, result = BSON_INITIALIZER;
   size_t n_in = docs_from_json(docs_json, in, 16), n_out = 0;
   bson_t **out = NULL;
   bson_error_t error = {0};
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   cr_assert(bson_iter_init_find(&it, pipe, "p"));
   bson_iter_array(&it, &len, &data);
   bson_init_static(&p_arr, data, len);
   tm_pipeline_t *p = tm_pipeline_new(&p_arr, &error);
   bool ok = p && tm_pipeline_exec_env(p, read_coll, NULL, in, n_in, &out, &n_out, &error);
   if (ok) {
      cr_assert_not_null(expected_json, "%s should fail", pipeline_json);
      tm_result_docs(&result, out, n_out);
      tm_assert_doc(&result, expected_json, pipeline_json);
   } else {
      cr_assert_null(expected_json, "%s: %s", pipeline_json, error.message);
   }
   tm_pipeline_destroy(p);
   tm_docs_free(out, n_out);
   for (size_t i = 0; i < n_in; i++) {
      bson_destroy(in[i]);
   }
   bson_destroy(&result);
   bson_destroy(pipe);
   return ok ? 0 : error.code;
}

static const char *one = "{'d': [{'_id': 1, 'a': [1, 2, 3, 4, 5], 'o': [{'k': 1, 'v': 'x'}, "
                         "{'k': 2, 'v': 'y'}], 'n': null, 's': '42'}]}";

#define EXPR(expr, result)                                                                         \
   cr_assert_eq(                                                                                   \
      run(one, "{'p': [{'%project': {'_id': 0, 'r': " expr "}}]}", "{'r': [{'r': " result "}]}"),  \
      0)
#define EXPR_ERROR(expr, code)                                                                     \
   cr_assert_eq(run(one, "{'p': [{'%project': {'_id': 0, 'r': " expr "}}]}", NULL), code, "%s",    \
                expr)

Test(expr, slice_first_last)
{
   EXPR("{'%slice': ['%a', 2]}", "[1, 2]");
   EXPR("{'%slice': ['%a', -2]}", "[4, 5]");
   EXPR("{'%slice': ['%a', 1, 2]}", "[2, 3]");
   EXPR("{'%slice': ['%a', -2, 10]}", "[4, 5]");
   EXPR("{'%slice': ['%a', 9, 1]}", "[]");
   EXPR("{'%slice': ['%n', 1]}", "null");
   EXPR_ERROR("{'%slice': ['%s', 1]}", 28724);
   EXPR_ERROR("{'%slice': ['%a', 1, 0]}", 28729);
   EXPR_ERROR("{'%slice': ['%a']}", 28667);
   EXPR("{'%first': '%a'}", "1");
   EXPR("{'%last': '%o.v'}", "'y'");
   EXPR("{'%first': '%n'}", "null");
   EXPR_ERROR("{'%first': '%s'}", 28689);
   cr_assert_eq(run(one, "{'p': [{'%project': {'_id': 0, 'r': {'%first': [[]]}}}]}", "{'r': [{}]}"),
                0, "the first of an empty array is missing");
}

Test(expr, filter_map_reduce_let)
{
   EXPR("{'%filter': {'input': '%a', 'cond': {'%gt': ['%%this', 3]}}}", "[4, 5]");
   EXPR("{'%filter': {'input': '%a', 'as': 'x', 'cond': {'%lt': ['%%x', 3]}, 'limit': 1}}", "[1]");
   EXPR("{'%filter': {'input': '%n', 'cond': true}}", "null");
   EXPR("{'%map': {'input': '%o', 'as': 'e', 'in': '%%e.v'}}", "['x', 'y']");
   EXPR("{'%map': {'input': '%a', 'in': {'%multiply': ['%%this', 10]}}}", "[10, 20, 30, 40, 50]");
   EXPR("{'%reduce': {'input': '%a', 'initialValue': 0, 'in': {'%add': ['%%value', '%%this']}}}",
        "15");
   EXPR("{'%let': {'vars': {'t': {'%size': '%a'}}, 'in': {'%multiply': ['%%t', 2]}}}", "10");
   /* Nested scopes: the inner `this` hides the outer one; named variables stay visible. */
   EXPR("{'%map': {'input': [1, 2], 'as': 'x', 'in': {'%map': {'input': [10], 'in': "
        "{'%add': ['%%x', '%%this']}}}}}",
        "[[11], [12]]");
   EXPR_ERROR("{'%filter': {'input': '%a'}}", 28650);
   EXPR_ERROR("{'%filter': {'input': '%a', 'cond': true, 'bad': 1}}", 28647);
   EXPR_ERROR("{'%filter': {'input': '%s', 'cond': true}}", 28651);
   EXPR_ERROR("{'%filter': {'input': '%a', 'cond': true, 'limit': 0}}", 327392);
   EXPR_ERROR("{'%map': {'input': '%a'}}", 16882);
   EXPR_ERROR("{'%map': {'input': '%a', 'as': 'Bad', 'in': 1}}", 16870);
   EXPR_ERROR("{'%map': {'input': '%a', 'in': '%%nope'}}", 17276);
   EXPR_ERROR("{'%reduce': {'input': '%a', 'in': 1}}", 40078);
}

Test(expr, accumulator_style_and_conversions)
{
   EXPR("{'%max': '%a'}", "5");
   EXPR("{'%max': [[3, 9, 2]]}", "9");
   EXPR("{'%min': [[3, 1, 2]]}", "1");
   EXPR("{'%min': [7, '%n', 3]}", "3");
   EXPR("{'%max': ['%n']}", "null");
   EXPR("{'%sum': '%a'}", "15");
   EXPR("{'%sum': ['%a', 1]}", "1");
   EXPR("{'%avg': [1, 2]}", "1.5");
   EXPR("{'%mergeObjects': [{'a': 1, 'b': 1}, '%n', {'b': 2, 'c': 3}]}",
        "{'a': 1, 'b': 2, 'c': 3}");
   EXPR_ERROR("{'%mergeObjects': ['%a']}", 40400);
   EXPR("{'%toLong': '%s'}", "{'%numberLong': '42'}");
   EXPR("{'%toLong': 2.9}", "{'%numberLong': '2'}");
   EXPR("{'%toLong': '%n'}", "null");
   EXPR_ERROR("{'%toLong': 'x1'}", 241);
}

Test(expr, unknown_versus_unsupported)
{
   EXPR_ERROR("{'%noSuchOperator': 1}", 168);
   EXPR_ERROR("{'%push': '%a'}", 168); /* an accumulator only: MongoDB does not know it here */
   EXPR_ERROR("{'%dateFromParts': {'year': 2020}}", 2); /* MongoDB's, not implemented here */
   cr_assert_eq(run(one, "{'p': [{'%group': {'_id': null, 'x': {'%noSuch': 1}}}]}", NULL), 15952);
}

Test(pipeline, group_merge_objects)
{
   cr_assert_eq(
      run("{'d': [{'g': 1, 'o': {'a': 1}}, {'g': 1, 'o': null}, {'g': 1, 'o': {'b': 2}}]}",
          "{'p': [{'%group': {'_id': '%g', 'm': {'%mergeObjects': '%o'}}}]}",
          "{'r': [{'_id': 1, 'm': {'a': 1, 'b': 2}}]}"),
      0);
}

Test(lookup, equality_pipeline_and_let)
{
   colls[0].name = "items";
   colls[0].n = docs_from_json("{'d': [{'_id': 10, 'order': 1, 'q': 5}, {'_id': 11, 'order': 1, "
                               "'q': 1}, {'_id': 12, 'order': 2, 'q': 7}, {'_id': 13}]}",
                               colls[0].docs, 16);
   const char *orders = "{'d': [{'_id': 1, 'min': 2}, {'_id': 2, 'min': 9}, {'_id': 3}]}";
   cr_assert_eq(run(orders,
                    "{'p': [{'%lookup': {'from': 'items', 'localField': '_id', "
                    "'foreignField': 'order', 'as': 'its'}}, {'%project': {'n': "
                    "{'%size': '%its'}}}]}",
                    "{'r': [{'_id': 1, 'n': 2}, {'_id': 2, 'n': 1}, {'_id': 3, 'n': 0}]}"),
                0);
   /* A missing local field matches foreign documents without the field. */
   cr_assert_eq(run("{'d': [{'_id': 'x'}]}",
                    "{'p': [{'%lookup': {'from': 'items', 'localField': "
                    "'nope', 'foreignField': 'order', 'as': 'a.b'}}]}",
                    "{'r': [{'_id': 'x', 'a': {'b': [{'_id': 13}]}}]}"),
                0);
   cr_assert_eq(run(orders,
                    "{'p': [{'%lookup': {'from': 'items', 'let': {'o': '%_id', 'm': '%min'}, "
                    "'pipeline': [{'%match': {'%expr': {'%and': [{'%eq': ['%order', '%%o']}, "
                    "{'%gte': ['%q', '%%m']}]}}}, {'%project': {'_id': 1}}], 'as': 'big'}}, "
                    "{'%project': {'big': 1}}]}",
                    "{'r': [{'_id': 1, 'big': [{'_id': 10}]}, {'_id': 2, 'big': []}, "
                    "{'_id': 3, 'big': []}]}"),
                0);
   /* Both: the equality selects, the pipeline transforms. */
   cr_assert_eq(run(orders,
                    "{'p': [{'%limit': 1}, {'%lookup': {'from': 'items', 'localField': "
                    "'_id', 'foreignField': 'order', 'pipeline': [{'%sort': {'q': 1}}, "
                    "{'%project': {'_id': 0, 'q': 1}}], 'as': 'qs'}}]}",
                    "{'r': [{'_id': 1, 'min': 2, 'qs': [{'q': 1}, {'q': 5}]}]}"),
                0);
   cr_assert_eq(run(orders, "{'p': [{'%lookup': {'from': 'items', 'as': 'x'}}]}", NULL), 9);
   cr_assert_eq(run(orders,
                    "{'p': [{'%lookup': {'from': 'items', 'localField': 'a', 'as': 'x', "
                    "'foreignField': 'b', 'let': {}}}]}",
                    NULL),
                9);
   cr_assert_eq(run(orders,
                    "{'p': [{'%lookup': {'from': 'items', 'pipeline': [{'%match': "
                    "{'%expr': '%%undefinedVar'}}], 'as': 'x'}}]}",
                    NULL),
                17276);
   for (size_t i = 0; i < colls[0].n; i++) {
      bson_destroy(colls[0].docs[i]);
   }
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Projection, sort, aggregation expressions and pipeline stages.
 */
#include "test-util.h"

/* Runs `pipeline` (a JSON array wrapped as {'p': [...]}) over `docs` ({'d': [...]}) and
 * compares the result with `expected` ({'r': [...]}). */
static void
run_pipeline(const char *docs_json, const char *pipeline_json, const char *expected_json)
{
   bson_t *docs = tm_json(docs_json), *pipe = tm_json(pipeline_json);
   bson_t in_arr, p_arr, result = BSON_INITIALIZER;
   bson_iter_t it, sub;
   bson_t *in[64];
   size_t n_in = 0, n_out = 0;
   bson_t **out = NULL;
   bson_error_t error;

   cr_assert(bson_iter_init_find(&it, docs, "d") && bson_iter_recurse(&it, &sub));
   while (bson_iter_next(&sub)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&sub, &len, &data);
      in[n_in++] = bson_new_from_data(data, len);
   }
   {
      uint32_t len;
      const uint8_t *data;
      cr_assert(bson_iter_init_find(&it, pipe, "p"));
      bson_iter_array(&it, &len, &data);
      bson_init_static(&p_arr, data, len);
   }
   cr_assert(tm_pipeline_run(&p_arr, in, n_in, &out, &n_out, &error), "%s: %s", pipeline_json,
             error.message);
   tm_result_docs(&result, out, n_out);
   tm_assert_doc(&result, expected_json, pipeline_json);
   tm_docs_free(out, n_out);
   for (size_t i = 0; i < n_in; i++) {
      bson_destroy(in[i]);
   }
   bson_destroy(&result);
   bson_destroy(docs);
   bson_destroy(pipe);
   (void)in_arr;
}

/* The stages array of a {'p': [...]} document, as a static view into it. */
static void
stages_of(const bson_t *spec, bson_t *stages)
{
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   cr_assert(bson_iter_init_find(&it, spec, "p"));
   bson_iter_array(&it, &len, &data);
   bson_init_static(stages, data, len);
}

static uint32_t
pipeline_error(const char *pipeline_json)
{
   bson_t *pipe = tm_json(pipeline_json), p_arr;
   bson_t *in[1] = {tm_json("{'_id': 1, 'a': 'x'}")};
   bson_t **out = NULL;
   size_t n_out = 0;
   bson_error_t error = {0};

   stages_of(pipe, &p_arr);
   cr_assert_not(tm_pipeline_run(&p_arr, in, 1, &out, &n_out, &error), "%s should fail",
                 pipeline_json);
   bson_destroy(pipe);
   bson_destroy(in[0]);
   return error.code;
}

static const char *docs3 = "{'d': [{'_id': 1, 'x': 11, 'g': 'a'}, {'_id': 2, 'x': 22, 'g': 'b'}, "
                           "{'_id': 3, 'x': 33, 'g': 'a'}]}";

Test(pipeline, match_sort_skip_limit)
{
   run_pipeline(docs3, "{'p': [{'%match': {'_id': {'%gt': 1}}}]}",
                "{'r': [{'_id': 2, 'x': 22, 'g': 'b'}, {'_id': 3, 'x': 33, 'g': 'a'}]}");
   run_pipeline(docs3, "{'p': [{'%sort': {'x': -1}}, {'%skip': 1}, {'%limit': 1}]}",
                "{'r': [{'_id': 2, 'x': 22, 'g': 'b'}]}");
   run_pipeline(docs3, "{'p': [{'%sort': {'g': 1}}, {'%project': {'_id': 1}}]}",
                "{'r': [{'_id': 1}, {'_id': 3}, {'_id': 2}]}");
   run_pipeline(docs3, "{'p': [{'%match': {'x': 0}}]}", "{'r': []}");
}

Test(pipeline, count_documents_shape)
{
   run_pipeline(docs3,
                "{'p': [{'%match': {}}, {'%skip': 1}, {'%group': {'_id': 1, 'n': {'%sum': 1}}}]}",
                "{'r': [{'_id': 1, 'n': 2}]}");
   run_pipeline(docs3, "{'p': [{'%match': {'x': 5}}, {'%group': {'_id': 1, 'n': {'%sum': 1}}}]}",
                "{'r': []}");
   run_pipeline(docs3, "{'p': [{'%count': 'total'}]}", "{'r': [{'total': 3}]}");
}

/* Leading $match stages and a $group after them read the caller's documents in place
 * (pipeline.c, run_borrowed_prefix): what comes out must not share memory with the inputs
 * (run_pipeline frees the results first, then the inputs: ASan sees any sharing), and the
 * inputs must be left as they were. */
Test(pipeline, leading_match_and_group_borrow_inputs)
{
   run_pipeline(docs3,
                "{'p': [{'%match': {'g': 'a'}}, {'%match': {'x': {'%gt': 20}}}, "
                "{'%group': {'_id': '%g', 's': {'%sum': '%x'}, 'f': {'%first': '%_id'}}}]}",
                "{'r': [{'_id': 'a', 's': 33, 'f': 3}]}");
   run_pipeline(docs3,
                "{'p': [{'%group': {'_id': null, 'n': {'%sum': 1}}}, {'%project': {'_id': 0}}]}",
                "{'r': [{'n': 3}]}");
   run_pipeline(docs3, "{'p': [{'%match': {'g': 'b'}}, {'%set': {'x': 0}}]}",
                "{'r': [{'_id': 2, 'x': 0, 'g': 'b'}]}");
   run_pipeline(docs3, "{'p': [{'%match': {'g': 'a'}}]}",
                "{'r': [{'_id': 1, 'x': 11, 'g': 'a'}, {'_id': 3, 'x': 33, 'g': 'a'}]}");

   bson_t *spec = tm_json("{'p': [{'%match': {'g': 'a'}}, {'%set': {'x': 0}}]}"), stages;
   bson_t *in[2] = {tm_json("{'_id': 1, 'x': 11, 'g': 'a'}"),
                    tm_json("{'_id': 2, 'x': 22, 'g': 'a'}")};
   bson_t **out = NULL;
   size_t n = 0;
   bson_error_t error = {0};
   stages_of(spec, &stages);
   cr_assert(tm_pipeline_run(&stages, in, 2, &out, &n, &error), "%s", error.message);
   cr_assert_eq(n, 2u);
   tm_assert_doc(in[0], "{'_id': 1, 'x': 11, 'g': 'a'}", "first input after the run");
   tm_assert_doc(in[1], "{'_id': 2, 'x': 22, 'g': 'a'}", "second input after the run");
   tm_docs_free(out, n);
   bson_destroy(in[0]);
   bson_destroy(in[1]);
   bson_destroy(spec);
}

Test(pipeline, group_accumulators)
{
   run_pipeline(docs3,
                "{'p': [{'%group': {'_id': '%g', 's': {'%sum': '%x'}, 'a': {'%avg': '%x'}, "
                "'mn': {'%min': '%x'}, 'mx': {'%max': '%x'}, 'f': {'%first': '%_id'}, "
                "'l': {'%last': '%_id'}, 'p': {'%push': '%x'}, 'u': {'%addToSet': '%g'}, "
                "'c': {'%count': {}}}}]}",
                "{'r': [{'_id': 'a', 's': 44, 'a': 22.0, 'mn': 11, 'mx': 33, 'f': 1, 'l': 3, "
                "'p': [11, 33], 'u': ['a'], 'c': 2}, {'_id': 'b', 's': 22, 'a': 22.0, 'mn': 22, "
                "'mx': 22, 'f': 2, 'l': 2, 'p': [22], 'u': ['b'], 'c': 1}]}");
   run_pipeline("{'d': [{'v': 2147483647}, {'v': 1}, {'v': 'x'}]}",
                "{'p': [{'%group': {'_id': null, 's': {'%sum': '%v'}}}]}",
                "{'r': [{'_id': null, 's': {'$numberLong': '2147483648'}}]}");
}

Test(pipeline, project_and_expressions)
{
   run_pipeline(
      "{'d': [{'_id': 1, 'a': {'b': 1, 'c': 2}, 'n': [1, 2, 3], 's': 'x'}]}",
      "{'p': [{'%project': {'a.b': 1, 'sz': {'%size': '%n'}, 'cat': {'%concat': ['%s', '-', 'y']}, "
      "'sum': {'%add': [1, '%a.c', 0.5]}, 'lit': {'%literal': '%s'}, 'c': {'%cond': "
      "[{'%gt': ['%a.c', 1]}, 'big', 'small']}, 'e': {'%arrayElemAt': ['%n', -1]}, "
      "'i': {'%in': [2, '%n']}, 'z': {'%ifNull': ['%missing', 'dflt']}, "
      "'t': {'%toString': 42}}}]}",
      "{'r': [{'_id': 1, 'a': {'b': 1}, 'sz': 3, 'cat': 'x-y', 'sum': 3.5, 'lit': '$s', "
      "'c': 'big', 'e': 3, 'i': true, 'z': 'dflt', 't': '42'}]}");
   /* change streams: literal strings and nested computed fields (spec tests) */
   run_pipeline(
      "{'d': [{'_id': {'_data': 'x'}, 'operationType': 'insert', 'ns': {'db': 'd', 'coll': 'c'}}]}",
      "{'p': [{'%project': {'operationType': 'insert', 'ns.viewOn': 'db.coll'}}]}",
      "{'r': [{'_id': {'_data': 'x'}, 'ns': {'viewOn': 'db.coll'}, 'operationType': 'insert'}]}");
   run_pipeline("{'d': [{'_id': 1, 'operationType': 'insert', 'ns': {'db': 'd', 'coll': 'c'}}]}",
                "{'p': [{'%project': {'operationType': 'insert', 'ns': {'db': '%ns.db', 'coll': "
                "'%ns.coll', 'viewOn': 'db.coll'}}}]}",
                "{'r': [{'_id': 1, 'ns': {'db': 'd', 'coll': 'c', 'viewOn': 'db.coll'}, "
                "'operationType': 'insert'}]}");
   run_pipeline("{'d': [{'_id': 1, 'operationType': 'insert', 'ns': {'db': 'd'}}]}",
                "{'p': [{'%project': {'optype': '%operationType', 'ns': 1, 'newField': 'value'}}]}",
                "{'r': [{'_id': 1, 'ns': {'db': 'd'}, 'optype': 'insert', 'newField': 'value'}]}");
   run_pipeline("{'d': [{'_id': 1, 'a': 1, 'b': {'c': 1, 'd': 2}}]}",
                "{'p': [{'%project': {'_id': 0}}]}", "{'r': [{'a': 1, 'b': {'c': 1, 'd': 2}}]}");
   run_pipeline("{'d': [{'_id': 1, 'a': 1, 'b': {'c': 1, 'd': 2}}]}",
                "{'p': [{'%unset': ['a', 'b.c']}]}", "{'r': [{'_id': 1, 'b': {'d': 2}}]}");
}

Test(pipeline, add_fields_unwind_replace_root)
{
   run_pipeline("{'d': [{'_id': 1, 'a': {'x': 1}, 'n': [1, 2]}]}",
                "{'p': [{'%addFields': {'a.y': 2, 'b': '%a.x', 'n': '$$REMOVE'}}]}",
                "{'r': [{'_id': 1, 'a': {'x': 1, 'y': 2}, 'b': 1}]}");
   run_pipeline("{'d': [{'_id': 1, 'n': [1, 2]}, {'_id': 2, 'n': []}, {'_id': 3}]}",
                "{'p': [{'%unwind': '%n'}]}", "{'r': [{'_id': 1, 'n': 1}, {'_id': 1, 'n': 2}]}");
   run_pipeline(
      "{'d': [{'_id': 1, 'n': [5]}, {'_id': 2, 'n': []}]}",
      "{'p': [{'%unwind': {'path': '%n', 'includeArrayIndex': 'i', 'preserveNullAndEmptyArrays': "
      "true}}]}",
      "{'r': [{'_id': 1, 'n': 5, 'i': {'$numberLong': '0'}}, {'_id': 2, 'n': [], 'i': null}]}");
   run_pipeline("{'d': [{'_id': 1, 'in': {'k': 2}}]}",
                "{'p': [{'%replaceRoot': {'newRoot': '%in'}}]}", "{'r': [{'k': 2}]}");
   run_pipeline("{'d': [{'_id': 1, 'in': {'k': 2}}]}", "{'p': [{'%replaceWith': {'w': '%in.k'}}]}",
                "{'r': [{'w': 2}]}");
}

Test(pipeline, errors)
{
   cr_assert_eq(pipeline_error("{'p': [{'%unsupported': 'foo'}]}"), 40324);
   cr_assert_eq(pipeline_error("{'p': [{'%match': {}, '%sort': {'a': 1}}]}"), 40323);
   cr_assert_eq(pipeline_error("{'p': [{'%project': {'a': {'%foo': 1}}}]}"), 168);
   cr_assert_eq(pipeline_error("{'p': [{'%project': {'a': 1, 'b': 0}}]}"), 31254);
   cr_assert_eq(pipeline_error("{'p': [{'%project': {}}]}"), 51272);
   cr_assert_eq(pipeline_error("{'p': [{'%group': {'n': {'%sum': 1}}}]}"), 15955);
   cr_assert_eq(pipeline_error("{'p': [{'%group': {'_id': 1, 'n': {'%median': 1}}}]}"), 15952);
   cr_assert_eq(pipeline_error("{'p': [{'%limit': 0}]}"), 15958);
   cr_assert_eq(pipeline_error("{'p': [{'%sort': {'a': 2}}]}"), 15975);
   cr_assert_eq(pipeline_error("{'p': [{'%project': {'s': {'%size': '%a'}}}]}"), 17124);
   cr_assert_eq(pipeline_error("{'p': [{'%facet': {}}]}"), 2);  /* MongoDB's, not implemented */
   cr_assert_eq(pipeline_error("{'p': [{'%lookup': {}}]}"), 9); /* 'as' missing */
}

/* find projections */
static void
project_case(const char *spec, const char *doc, const char *expected)
{
   bson_t *s = tm_json(spec), *d = tm_json(doc), out;
   bson_error_t error;
   tm_projection_t *p = tm_projection_new(s, &error);

   cr_assert_not_null(p, "%s: %s", spec, error.message);
   tm_projection_apply(p, d, &out);
   tm_assert_doc(&out, expected, spec);
   bson_destroy(&out);
   tm_projection_destroy(p);
   bson_destroy(s);
   bson_destroy(d);
}

Test(projection, find_projections)
{
   const char *doc = "{'_id': 1, 'x': 5, 'a': [{'b': 1, 'c': 2}, 3], 'y': {'z': 1, 'w': 2}}";

   project_case("{}", doc, doc);
   project_case("{'x': 1, '_id': 0}", doc, "{'x': 5}");
   project_case("{'x': 1}", doc, "{'_id': 1, 'x': 5}");
   project_case("{'a.b': 1}", doc, "{'_id': 1, 'a': [{'b': 1}]}");
   project_case("{'a.b': 0, 'y.w': 0}", doc,
                "{'_id': 1, 'x': 5, 'a': [{'c': 2}, 3], 'y': {'z': 1}}");
   project_case("{'_id': 0}", doc, "{'x': 5, 'a': [{'b': 1, 'c': 2}, 3], 'y': {'z': 1, 'w': 2}}");
   project_case("{'y': {'z': 1}}", doc, "{'_id': 1, 'y': {'z': 1}}");
   project_case("{'missing': 1}", doc, "{'_id': 1}");
}

Test(projection, errors)
{
   static const struct {
      const char *spec;
      uint32_t code;
   } cases[] = {
      {"{'a': 1, 'b': 0}", 31254}, {"{'a': 0, 'b': 1}", 31253}, {"{'a': 1, 'a.b': 1}", 31250},
      {"{'a': {'%slice': 1}}", 2}, {"{'a.$': 1}", 2},           {"{'a': {}}", 51270},
   };

   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      bson_t *s = tm_json(cases[i].spec);
      bson_error_t error = {0};
      cr_assert_null(tm_projection_new(s, &error), "%s", cases[i].spec);
      cr_assert_eq(error.code, cases[i].code, "%s: %u %s", cases[i].spec, error.code,
                   error.message);
      bson_destroy(s);
   }
}

static int
sort_cmp(const char *spec, const char *a, const char *b)
{
   bson_t *s = tm_json(spec), *da = tm_json(a), *db = tm_json(b);
   tm_sort_t *sort = tm_sort_new(s, NULL);
   int r;

   cr_assert_not_null(sort);
   r = tm_sort_compare(sort, da, db);
   tm_sort_destroy(sort);
   bson_destroy(s);
   bson_destroy(da);
   bson_destroy(db);
   return r;
}

Test(sort, keys_and_arrays)
{
   cr_assert_lt(sort_cmp("{'a': 1}", "{'a': 1}", "{'a': 2}"), 0);
   cr_assert_gt(sort_cmp("{'a': -1}", "{'a': 1}", "{'a': 2}"), 0);
   cr_assert_lt(sort_cmp("{'a': 1}", "{}", "{'a': 0}"), 0);
   cr_assert_eq(sort_cmp("{'a': 1}", "{}", "{'a': null}"), 0);
   cr_assert_lt(sort_cmp("{'a': 1}", "{'a': 5}", "{'a': 'x'}"), 0);
   cr_assert_lt(sort_cmp("{'a': 1, 'b': -1}", "{'a': 1, 'b': 9}", "{'a': 1, 'b': 3}"), 0);
   /* arrays: ascending by their smallest element, descending by their largest */
   cr_assert_lt(sort_cmp("{'a': 1}", "{'a': [9, 0]}", "{'a': 1}"), 0);
   cr_assert_lt(sort_cmp("{'a': -1}", "{'a': [9, 0]}", "{'a': 5}"), 0);
   cr_assert_lt(sort_cmp("{'a.b': 1}", "{'a': [{'b': 3}, {'b': 1}]}", "{'a': {'b': 2}}"), 0);
   cr_assert_lt(sort_cmp("{'a': 1}", "{'a': []}", "{'a': null}"), 0);
}

Test(sort, bad_specs)
{
   bson_t *s = tm_json("{'a': 2}");
   bson_error_t error;

   cr_assert_null(tm_sort_new(s, &error));
   cr_assert_eq(error.code, 15975);
   bson_destroy(s);
   s = tm_json("{'a': 'up'}");
   cr_assert_null(tm_sort_new(s, &error));
   cr_assert_eq(error.code, 15974);
   bson_destroy(s);
}

Test(pipeline, parsed_once_run_many)
{
   bson_t *spec = tm_json(
      "{'p': [{'%match': {'operationType': 'insert'}}, "
      "{'%project': {'operationType': 1, 'k': {'%concat': ['%ns.db', '.', '%ns.coll']}}}]}");
   bson_t stages, *bad = tm_json("{'p': [{'%match': {'a': {'%bogus': 1}}}]}"), bad_stages;
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   bson_error_t error = {0};
   tm_pipeline_t *p;

   bson_iter_init_find(&it, spec, "p");
   bson_iter_array(&it, &len, &data);
   bson_init_static(&stages, data, len);
   p = tm_pipeline_new(&stages, &error);
   cr_assert_not_null(p, "%s", error.message);
   for (int i = 0; i < 3; i++) {
      bson_t *ev =
         tm_json(i == 1 ? "{'_id': 9, 'operationType': 'delete'}"
                        : "{'_id': 9, 'operationType': 'insert', 'ns': {'db': 'd', 'coll': 'c'}}");
      bson_t **out = NULL;
      size_t n = 0;
      cr_assert(tm_pipeline_exec(p, &ev, 1, &out, &n, &error), "%s", error.message);
      cr_assert_eq(n, i == 1 ? 0u : 1u);
      if (n == 1) {
         tm_assert_doc(out[0], "{'_id': 9, 'operationType': 'insert', 'k': 'd.c'}", "event");
      }
      tm_docs_free(out, n);
      bson_destroy(ev);
   }
   tm_pipeline_destroy(p);

   /* a bad operator is reported when the pipeline is built, not on the first document */
   bson_iter_init_find(&it, bad, "p");
   bson_iter_array(&it, &len, &data);
   bson_init_static(&bad_stages, data, len);
   cr_assert_null(tm_pipeline_new(&bad_stages, &error));
   cr_assert_eq(error.code, 2);
   bson_destroy(bad);
   bson_destroy(spec);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * $jsonSchema: matching, parse errors, and the DocumentValidationFailure details. The
 * expected details are MongoDB's own (doc_validation_error_json_schema_test.cpp and
 * jstests/core/doc_validation/doc_validation_error.js), transcribed.
 */
#include "test-util.h"

/* Asserts that `validator` rejects `doc` and explains it as `details`. */
static void
check_details(const char *validator, const char *doc, const char *details)
{
   bson_t *v = tm_json(validator), *d = tm_json(doc), out;
   bson_error_t error;
   tm_matcher_t *m = tm_matcher_new(v, &error);
   cr_assert_not_null(m, "validator %s: %s", validator, error.message);
   cr_assert(!tm_matcher_match(m, d, NULL), "%s should reject %s", validator, doc);
   tm_validation_details(m, d, &out);
   tm_assert_doc(&out, details, validator);
   bson_destroy(&out);
   tm_matcher_destroy(m);
   bson_destroy(v);
   bson_destroy(d);
}

static void
check_match(const char *validator, const char *doc, bool want)
{
   bson_t *v = tm_json(validator), *d = tm_json(doc);
   bson_error_t error;
   tm_matcher_t *m = tm_matcher_new(v, &error);
   cr_assert_not_null(m, "validator %s: %s", validator, error.message);
   cr_assert_eq(tm_matcher_match(m, d, NULL), want, "%s on %s: want %d", validator, doc, want);
   tm_matcher_destroy(m);
   bson_destroy(v);
   bson_destroy(d);
}

static void
check_parse_error(const char *validator, uint32_t code, const char *message)
{
   bson_t *v = tm_json(validator);
   bson_error_t error;
   tm_matcher_t *m = tm_matcher_new(v, &error);
   cr_assert_null(m, "%s should not parse", validator);
   cr_assert_eq(error.code, code, "%s: code %u (%s), want %u", validator, error.code, error.message,
                code);
   cr_assert_str_eq(error.message, message);
   bson_destroy(v);
}

Test(jsonschema, types_and_restrictions)
{
   check_match("{'%jsonSchema': {'properties': {'a': {'bsonType': 'long'}}}}",
               "{'a': {'$numberLong': '1'}}", true);
   check_match("{'%jsonSchema': {'properties': {'a': {'bsonType': 'long'}}}}", "{'a': 1}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'bsonType': 'long'}}}}", "{'b': 1}", true);
   check_match("{'%jsonSchema': {'required': ['a']}}", "{'a': null}", true);
   check_match("{'%jsonSchema': {'properties': {'a': {'type': 'number'}}}}", "{'a': 1.5}", true);
   check_match("{'%jsonSchema': {'properties': {'a': {'bsonType': ['int', 'string']}}}}",
               "{'a': 'x'}", true);
   /* A keyword applies only to its type ... */
   check_match("{'%jsonSchema': {'properties': {'a': {'minimum': 5}}}}", "{'a': 'x'}", true);
   check_match("{'%jsonSchema': {'properties': {'a': {'pattern': '^x'}}}}", "{'a': 1}", true);
   /* ... and has no effect on the document itself. */
   check_match("{'%jsonSchema': {'minProperties': 1, 'minimum': 5, 'items': {}}}", "{'a': 1}",
               true);
   check_match("{'%jsonSchema': {'bsonType': 'string'}}", "{'a': 1}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'items': {'bsonType': 'int'}}}}}",
               "{'a': [1, 2, 'x']}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'items': [{'bsonType': 'int'}], "
               "'additionalItems': false}}}}",
               "{'a': [1, 2]}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'uniqueItems': true}}}}",
               "{'a': [{'x': 1, 'y': 2}, {'y': 2, 'x': 1}]}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'enum': [{'x': 1, 'y': 2}]}}}}",
               "{'a': {'y': 2, 'x': 1.0}}", true);
   check_match("{'%jsonSchema': {'patternProperties': {'^x': {'bsonType': 'int'}}, "
               "'additionalProperties': false}}",
               "{'x1': 1, 'x2': 2}", true);
   check_match("{'%jsonSchema': {'patternProperties': {'^x': {'bsonType': 'int'}}, "
               "'additionalProperties': false}}",
               "{'x1': 1, 'y': 2}", false);
   check_match("{'%jsonSchema': {'dependencies': {'a': ['b'], 'c': {'required': ['d']}}}}",
               "{'a': 1, 'b': 1, 'c': 1, 'd': 1}", true);
   check_match("{'%jsonSchema': {'dependencies': {'c': {'required': ['d']}}}}", "{'c': 1}", false);
   check_match("{'%jsonSchema': {'oneOf': [{'required': ['a']}, {'required': ['b']}]}}",
               "{'a': 1, 'b': 1}", false);
   check_match("{'%jsonSchema': {'properties': {'a': {'maxLength': 2}}}}", "{'a': '\u00e9\u00e9'}",
               true);
   check_match("{'%jsonSchema': {'properties': {'a': {'multipleOf': 3}}}}", "{'a': 9}", true);
   check_match("{'%jsonSchema': {'properties': {'a': {'multipleOf': 3}}}}", "{'a': 10}", false);
   check_match("{'a': 1, '%jsonSchema': {'required': ['b']}}", "{'a': 1, 'b': 2}", true);
}

Test(jsonschema, parse_errors)
{
   check_parse_error("{'%jsonSchema': {'%ref': '#/x'}}", 9,
                     "$jsonSchema keyword '$ref' is not currently supported");
   check_parse_error("{'%jsonSchema': {'format': 'date'}}", 9,
                     "$jsonSchema keyword 'format' is not currently supported");
   check_parse_error("{'%jsonSchema': {'foo': 1}}", 9, "Unknown $jsonSchema keyword: foo");
   check_parse_error("{'%jsonSchema': {'type': 'integer'}}", 9,
                     "$jsonSchema type 'integer' is not currently supported.");
   check_parse_error("{'%jsonSchema': {'bsonType': 'long', 'type': 'number'}}", 9,
                     "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
   check_parse_error("{'%jsonSchema': {'bsonType': 'foo'}}", 2, "Unknown type name alias: foo");
   check_parse_error("{'%jsonSchema': {'properties': {'a': {'minimum': 'x'}}}}", 14,
                     "$jsonSchema keyword 'minimum' must be a number");
   check_parse_error("{'%jsonSchema': {'required': []}}", 9,
                     "$jsonSchema keyword 'required' cannot be an empty array");
   check_parse_error("{'%jsonSchema': {'enum': [1, 1.0]}}", 9,
                     "$jsonSchema keyword 'enum' array cannot contain duplicate values.");
   check_parse_error("{'%jsonSchema': {'minItems': -1}}", 9,
                     "Expected a positive number in: minItems: -1");
   check_parse_error("{'%jsonSchema': 1}", 14, "$jsonSchema must be an object");
}

Test(jsonschema, details_properties_and_bounds)
{
   check_details("{'%jsonSchema': {'properties': {'a': {'minimum': 1}}}}", "{'a': 0}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'minimum', 'specifiedAs': {'minimum': 1}, 'reason': "
                 "'comparison failed', 'consideredValue': 0}]}]}]}");
   check_details("{'%jsonSchema': {'properties': {'a': {'minimum': 1, 'exclusiveMinimum': "
                 "true}}}}",
                 "{'a': 1}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'minimum', 'specifiedAs': {'minimum': 1, "
                 "'exclusiveMinimum': true}, 'reason': 'comparison failed', "
                 "'consideredValue': 1}]}]}]}");
   /* maximum is checked (and reported) before minimum, whatever the schema's order. */
   check_details("{'%jsonSchema': {'properties': {'a': {'properties': {'b': {'minimum': 10, "
                 "'maximum': -10}}}}}}",
                 "{'a': {'b': 5}}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'properties', 'propertiesNotSatisfied': [{'propertyName': "
                 "'b', 'details': [{'operatorName': 'maximum', 'specifiedAs': {'maximum': -10}, "
                 "'reason': 'comparison failed', 'consideredValue': 5}, {'operatorName': "
                 "'minimum', 'specifiedAs': {'minimum': 10}, 'reason': 'comparison failed', "
                 "'consideredValue': 5}]}]}]}]}]}");
   /* A keyword of another type than the stated one is ignored: only the type explains. */
   check_details("{'%jsonSchema': {'type': 'object', 'properties': {'a': {'type': 'string', "
                 "'minimum': 5}}}}",
                 "{'a': 6}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'type', 'specifiedAs': {'type': 'string'}, 'reason': "
                 "'type did not match', 'consideredValue': 6, 'consideredType': 'int'}]}]}]}");
   check_details("{'%jsonSchema': {'type': 'number', 'properties': {'a': {}}}}", "{'a': 1}",
                 "{'operatorName': '%jsonSchema', 'specifiedAs': {'%jsonSchema': {'type': "
                 "'number', 'properties': {'a': {}}}}, 'reason': 'expression always evaluates "
                 "to false'}");
}

Test(jsonschema, details_students)
{
   /* MongoDB's manual example, as jstests/core/doc_validation/doc_validation_error.js. */
   check_details(
      "{'%jsonSchema': {'bsonType': 'object', 'required': ['name', 'year', 'major', "
      "'address'], 'properties': {'name': {'bsonType': 'string', 'description': 'must be a "
      "string and is required'}, 'year': {'bsonType': 'int', 'minimum': 2017, 'maximum': 3017, "
      "'description': 'must be an integer in [ 2017, 3017 ] and is required'}, 'major': "
      "{'enum': ['Math', 'English', 'Computer Science', 'History', null], 'description': 'can "
      "only be one of the enum values and is required'}, 'gpa': {'bsonType': ['double'], "
      "'description': 'must be a double if the field exists'}, 'address': {'bsonType': "
      "'object', 'required': ['city'], 'properties': {'street': {'bsonType': 'string', "
      "'description': 'must be a string if the field exists'}, 'city': {'bsonType': 'string', "
      "'description': 'must be a string and is required'}}}}}}",
      "{'year': 2020, 'major': 'Software Engineering', 'gpa': 5.0, 'address': {'city': 'NYC', "
      "'street': 5}}",
      "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
      "'properties', 'propertiesNotSatisfied': [{'propertyName': 'major', 'description': 'can "
      "only be one of the enum values and is required', 'details': [{'operatorName': 'enum', "
      "'specifiedAs': {'enum': ['Math', 'English', 'Computer Science', 'History', null]}, "
      "'reason': 'value was not found in enum', 'consideredValue': 'Software Engineering'}]}, "
      "{'propertyName': 'address', 'details': [{'operatorName': 'properties', "
      "'propertiesNotSatisfied': [{'propertyName': 'street', 'description': 'must be a string "
      "if the field exists', 'details': [{'operatorName': 'bsonType', 'specifiedAs': "
      "{'bsonType': 'string'}, 'reason': 'type did not match', 'consideredValue': 5, "
      "'consideredType': 'int'}]}]}]}]}, {'operatorName': 'required', 'specifiedAs': "
      "{'required': ['name', 'year', 'major', 'address']}, 'missingProperties': ['name']}]}");
}

Test(jsonschema, details_arrays)
{
   check_details("{'%jsonSchema': {'properties': {'values': {'bsonType': 'array', 'items': "
                 "{'bsonType': 'string', 'enum': ['one', 'two', 'three']}, 'minItems': 1, "
                 "'uniqueItems': true}}}}",
                 "{'values': ['two', 'two']}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'values', "
                 "'details': [{'operatorName': 'uniqueItems', 'specifiedAs': {'uniqueItems': "
                 "true}, 'reason': 'found a duplicate item', 'consideredValue': ['two', 'two'], "
                 "'duplicatedValue': 'two'}]}]}]}");
   check_details("{'%jsonSchema': {'title': 'T', 'properties': {'scripts': {'type': 'array', "
                 "'description': 'D', 'items': {'type': 'string'}}}}}",
                 "{'scripts': [1.0, 2.0]}",
                 "{'operatorName': '%jsonSchema', 'title': 'T', 'schemaRulesNotSatisfied': "
                 "[{'operatorName': 'properties', 'propertiesNotSatisfied': [{'propertyName': "
                 "'scripts', 'description': 'D', 'details': [{'operatorName': 'items', "
                 "'reason': 'At least one item did not match the sub-schema', 'itemIndex': 0, "
                 "'details': [{'operatorName': 'type', 'specifiedAs': {'type': 'string'}, "
                 "'reason': 'type did not match', 'consideredValue': 1.0, 'consideredType': "
                 "'double'}]}]}]}]}");
   check_details("{'%jsonSchema': {'properties': {'a': {'bsonType': ['array'], 'items': "
                 "{'bsonType': ['string']}, 'minItems': 0, 'maxItems': 2}}}}",
                 "{'a': 2.0}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'bsonType', 'specifiedAs': {'bsonType': ['array']}, "
                 "'reason': 'type did not match', 'consideredValue': 2.0, 'consideredType': "
                 "'double'}]}]}]}");
   check_details("{'%jsonSchema': {'properties': {'a': {'maxItems': 1, 'items': "
                 "[{'bsonType': 'int'}], 'additionalItems': false}}}}",
                 "{'a': [1, 2, 3]}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'maxItems', 'specifiedAs': {'maxItems': 1}, 'reason': "
                 "'array did not match specified length', 'consideredValue': [1, 2, 3], "
                 "'numberOfItems': 3}, {'operatorName': 'additionalItems', 'specifiedAs': "
                 "{'additionalItems': false}, 'reason': 'found additional items', "
                 "'additionalItems': [2, 3]}]}]}]}");
}

Test(jsonschema, details_objects_and_logic)
{
   check_details("{'%jsonSchema': {'properties': {'_id': {}}, 'additionalProperties': false}}",
                 "{'_id': 1, 'a': 1, 'b': 2}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'additionalProperties', 'specifiedAs': {'additionalProperties': false}, "
                 "'additionalProperties': ['a', 'b']}]}");
   check_details("{'%jsonSchema': {'dependencies': {'a': ['b', 'c']}, 'minProperties': 3}}",
                 "{'_id': 1, 'a': 1}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'minProperties', 'specifiedAs': {'minProperties': 3}, 'reason': 'specified "
                 "number of properties was not satisfied', 'numberOfProperties': 2}, "
                 "{'operatorName': 'dependencies', 'failingDependencies': "
                 "[{'conditionalProperty': 'a', 'missingProperties': ['b', 'c']}]}]}");
   check_details("{'%jsonSchema': {'oneOf': [{'required': ['a']}, {'required': ['b']}], "
                 "'not': {'required': ['c']}}}",
                 "{'_id': 1, 'a': 1, 'b': 1, 'c': 1}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'oneOf', 'reason': 'more than one subschema matched', "
                 "'matchingSchemaIndexes': [0, 1]}, {'operatorName': 'not', 'reason': 'child "
                 "expression matched'}]}");
   check_details("{'%jsonSchema': {'anyOf': [{'required': ['a']}, {'title': 'B', 'required': "
                 "['b']}]}}",
                 "{'_id': 1}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'anyOf', 'schemasNotSatisfied': [{'index': 0, 'details': [{'operatorName': "
                 "'required', 'specifiedAs': {'required': ['a']}, 'missingProperties': ['a']}]}, "
                 "{'index': 1, 'title': 'B', 'details': [{'operatorName': 'required', "
                 "'specifiedAs': {'required': ['b']}, 'missingProperties': ['b']}]}]}]}");
}

Test(validate, query_operators)
{
   check_details("{'a': {'%eq': 2}}", "{'_id': 1, 'a': 1}",
                 "{'operatorName': '%eq', 'specifiedAs': {'a': {'%eq': 2}}, 'reason': "
                 "'comparison failed', 'consideredValue': 1}");
   check_details("{'a': {'%lt': 0}}", "{'_id': 1, 'a': [3, 4, 5]}",
                 "{'operatorName': '%lt', 'specifiedAs': {'a': {'%lt': 0}}, 'reason': "
                 "'comparison failed', 'consideredValues': [3, 4, 5]}");
   check_details("{'a': {'%ne': 2}}", "{'_id': 1, 'a': 2}",
                 "{'operatorName': '%ne', 'specifiedAs': {'a': {'%ne': 2}}, 'reason': "
                 "'comparison succeeded', 'consideredValue': 2}");
   check_details("{'a': {'%exists': false}}", "{'_id': 1, 'a': 1}",
                 "{'operatorName': '%exists', 'specifiedAs': {'a': {'%exists': false}}, "
                 "'reason': 'path does exist'}");
   check_details("{'a': {'%type': 'int'}}", "{'_id': 1, 'a': 'one'}",
                 "{'operatorName': '%type', 'specifiedAs': {'a': {'%type': 'int'}}, 'reason': "
                 "'type did not match', 'consideredValue': 'one', 'consideredType': 'string'}");
   check_details("{'a': {'%mod': [2, 1]}}", "{'_id': 1, 'a': 'two'}",
                 "{'operatorName': '%mod', 'specifiedAs': {'a': {'%mod': [2, 1]}}, 'reason': "
                 "'type did not match', 'consideredType': 'string', 'expectedTypes': "
                 "['decimal', 'double', 'int', 'long'], 'consideredValue': 'two'}");
   check_details("{'a': {'%not': {'%lt': 20, '%gt': 5}}}", "{'_id': 1, 'a': 10}",
                 "{'operatorName': '%not', 'details': {'operatorName': '%and', "
                 "'clausesSatisfied': [{'index': 0, 'details': {'operatorName': '%lt', "
                 "'specifiedAs': {'a': {'%lt': 20}}, 'reason': 'comparison succeeded', "
                 "'consideredValue': 10}}, {'index': 1, 'details': {'operatorName': '%gt', "
                 "'specifiedAs': {'a': {'%gt': 5}}, 'reason': 'comparison succeeded', "
                 "'consideredValue': 10}}]}}");
   check_details("{'%and': [{'%or': [{'price': {'%gt': 50}}, {'price': {'%lt': 20}}]}, "
                 "{'qty': {'%gt': 0}}, {'qty': {'%lt': 10}}]}",
                 "{'_id': 1, 'price': 30, "
                 "'qty': 30}",
                 "{'operatorName': '%and', 'clausesNotSatisfied': [{'index': 0, 'details': "
                 "{'operatorName': '%or', 'clausesNotSatisfied': [{'index': 0, 'details': "
                 "{'operatorName': '%gt', 'specifiedAs': {'price': {'%gt': 50}}, 'reason': "
                 "'comparison failed', 'consideredValue': 30}}, {'index': 1, 'details': "
                 "{'operatorName': '%lt', 'specifiedAs': {'price': {'%lt': 20}}, 'reason': "
                 "'comparison failed', 'consideredValue': 30}}]}}, {'index': 2, 'details': "
                 "{'operatorName': '%lt', 'specifiedAs': {'qty': {'%lt': 10}}, 'reason': "
                 "'comparison failed', 'consideredValue': 30}}]}");
   check_details("{'%nor': [{'%jsonSchema': {'minLength': 1}}]}", "{'_id': 1, 'a': 'foo'}",
                 "{'operatorName': '%nor', 'clausesSatisfied': [{'index': 0, 'details': "
                 "{'operatorName': '%jsonSchema', 'reason': 'schema matched'}}]}");
   check_details("{'%expr': {'%eq': ['%a', '%b']}}", "{'_id': 1, 'a': 1, 'b': 2}",
                 "{'operatorName': '%expr', 'specifiedAs': {'%expr': {'%eq': ['%a', '%b']}}, "
                 "'reason': 'expression did not match', 'expressionResult': false}");
}

Test(jsonschema, details_allowed_properties_and_lists)
{
   check_details("{'%jsonSchema': {'properties': {'_id': {}}, 'patternProperties': {'^x': "
                 "{'bsonType': 'int'}}, 'additionalProperties': {'bsonType': 'string'}}}",
                 "{'_id': 1, 'x1': 'no', 'y': 2}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'additionalProperties', 'reason': 'at least one additional property did not "
                 "match the subschema', 'failingProperty': 'y', 'details': [{'operatorName': "
                 "'bsonType', 'specifiedAs': {'bsonType': 'string'}, 'reason': 'type did not "
                 "match', 'consideredValue': 2, 'consideredType': 'int'}]}, {'operatorName': "
                 "'patternProperties', 'details': [{'propertyName': 'x1', 'regexMatched': '^x', "
                 "'details': [{'operatorName': 'bsonType', 'specifiedAs': {'bsonType': 'int'}, "
                 "'reason': 'type did not match', 'consideredValue': 'no', 'consideredType': "
                 "'string'}]}]}]}");
   check_details("{'%jsonSchema': {'properties': {'a': {'items': [{'bsonType': 'int'}, "
                 "{'bsonType': 'string'}]}}}}",
                 "{'_id': 1, 'a': ['x', 2]}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'properties', 'propertiesNotSatisfied': [{'propertyName': 'a', 'details': "
                 "[{'operatorName': 'items', 'details': [{'itemIndex': {'$numberLong': '0'}, "
                 "'details': [{'operatorName': 'bsonType', 'specifiedAs': {'bsonType': 'int'}, "
                 "'reason': 'type did not match', 'consideredValue': 'x', 'consideredType': "
                 "'string'}]}, {'itemIndex': {'$numberLong': '1'}, 'details': [{'operatorName': "
                 "'bsonType', 'specifiedAs': {'bsonType': 'string'}, 'reason': 'type did not "
                 "match', 'consideredValue': 2, 'consideredType': 'int'}]}]}]}]}]}");
   check_details("{'%jsonSchema': {'dependencies': {'a': {'properties': {'b': {'bsonType': "
                 "'string'}}}}}}",
                 "{'_id': 1, 'a': 1, 'b': 2}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'dependencies', 'failingDependencies': [{'conditionalProperty': 'a', "
                 "'details': [{'operatorName': 'properties', 'propertiesNotSatisfied': "
                 "[{'propertyName': 'b', 'details': [{'operatorName': 'bsonType', "
                 "'specifiedAs': {'bsonType': 'string'}, 'reason': 'type did not match', "
                 "'consideredValue': 2, 'consideredType': 'int'}]}]}]}]}]}");
   check_details("{'%jsonSchema': {'enum': [1, 'x']}}", "{'_id': 1}",
                 "{'operatorName': '%jsonSchema', 'schemaRulesNotSatisfied': [{'operatorName': "
                 "'enum', 'specifiedAs': {'enum': [1, 'x']}, 'reason': 'expression always "
                 "evaluates to false'}]}");
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * $jsonSchema as MongoDB 6.0 implements it (JSON Schema draft 4 minus $ref, $schema,
 * default, definitions, format and id; plus bsonType): the parsed form shared by
 * jsonschema-parse.c / jsonschema-kw.c (building), jsonschema-match.c (matching) and
 * jsonschema-error.c (the DocumentValidationFailure details a failed document gets).
 *
 * MongoDB translates a schema into match expressions; this module keeps the schema's own
 * shape and reproduces the translation's semantics where they differ from plain JSON Schema:
 * a keyword that only applies to one type (minimum to numbers, pattern to strings, items to
 * arrays, properties to objects) is ignored when the schema states a single other type, and
 * at the top level (the document itself) scalar and array keywords have no effect.
 *
 * A parsed schema borrows every value from the BSON it was parsed from (the matcher's copy
 * of the filter) and is immutable, so matching may run from several threads.
 */
#ifndef TM_JSONSCHEMA_PRIVATE_H
#define TM_JSONSCHEMA_PRIVATE_H

#include <regex.h>

#include "engine-private.h"

/* The keywords MongoDB knows, in no particular order; the parser evaluates them in its own
 * fixed order (see jsonschema-parse.c), which is also the order of error details. */
typedef enum {
   TM_KW_ADDITIONAL_ITEMS,
   TM_KW_ADDITIONAL_PROPERTIES,
   TM_KW_ALL_OF,
   TM_KW_ANY_OF,
   TM_KW_BSON_TYPE,
   TM_KW_DEPENDENCIES,
   TM_KW_DESCRIPTION,
   TM_KW_ENCRYPT,
   TM_KW_ENCRYPT_METADATA,
   TM_KW_ENUM,
   TM_KW_EXCLUSIVE_MAXIMUM,
   TM_KW_EXCLUSIVE_MINIMUM,
   TM_KW_ITEMS,
   TM_KW_MAX_ITEMS,
   TM_KW_MAX_LENGTH,
   TM_KW_MAX_PROPERTIES,
   TM_KW_MAXIMUM,
   TM_KW_MIN_ITEMS,
   TM_KW_MIN_LENGTH,
   TM_KW_MIN_PROPERTIES,
   TM_KW_MINIMUM,
   TM_KW_MULTIPLE_OF,
   TM_KW_NOT,
   TM_KW_ONE_OF,
   TM_KW_PATTERN,
   TM_KW_PATTERN_PROPERTIES,
   TM_KW_PROPERTIES,
   TM_KW_REQUIRED,
   TM_KW_TITLE,
   TM_KW_TYPE,
   TM_KW_UNIQUE_ITEMS,
   TM_KW_COUNT
} tm_kw_t;

/* The keyword's name as written in schemas. */
const char *tm_kw_name(tm_kw_t kw);

/* A set of BSON types as `type`/`bsonType` name them: bit (type code) for codes 1..19,
 * TM_TYPE_BIT_MINKEY/MAXKEY for the keys, plus "number" (all four numeric types). */
#define TM_TYPE_BIT_MINKEY 20
#define TM_TYPE_BIT_MAXKEY 21
typedef struct {
   uint32_t bits;
   bool all_numbers;
} tm_typeset_t;

bool tm_typeset_has(const tm_typeset_t *set, bson_type_t type);
/* MongoDB's "single type": exactly one BSON type, or "number" alone. */
bool tm_typeset_is_single(const tm_typeset_t *set);

/* The types a restriction keyword applies to. */
typedef enum { TM_R_STRING, TM_R_NUMBER, TM_R_ARRAY, TM_R_OBJECT } tm_restrict_t;

typedef struct _tm_schema_t tm_schema_t;

typedef struct {
   const char *name;
   tm_schema_t *schema;
} tm_schema_prop_t;

typedef struct {
   const char *pattern;
   regex_t re;
   tm_schema_t *schema;
} tm_schema_pattern_t;

/* One entry of `dependencies`: a schema the object must also match, or property names it
 * must also have (`names`, a borrowed array). */
typedef struct {
   const char *name;
   tm_schema_t *schema;
   bson_t names;
} tm_schema_dep_t;

typedef struct {
   tm_schema_t **items;
   size_t n;
} tm_schema_list_t;

struct _tm_schema_t {
   bool top;                     /* applies to the document itself (no path) */
   bson_t doc;                   /* the schema object (borrowed view) */
   bool has[TM_KW_COUNT];        /* which keywords it names */
   bson_value_t kw[TM_KW_COUNT]; /* their values (borrowed), for specifiedAs */
   const char *title, *description;

   tm_typeset_t types; /* type or bsonType, when has[] says so */
   regex_t pattern;
   int64_t max_length, min_length, max_items, min_items, max_props, min_props;
   bool exclusive_max, exclusive_min, unique_items;

   tm_schema_t *items;         /* items: a schema ... */
   tm_schema_list_t item_list; /* ... or one schema per position */
   bool items_is_list;
   tm_schema_t *additional_items; /* NULL with additional_items_false meaning false */
   bool additional_items_false;

   tm_schema_prop_t *props;
   size_t n_props;
   tm_schema_pattern_t *patterns;
   size_t n_patterns;
   tm_schema_t *additional_props;
   bool additional_props_false;
   const char **required; /* sorted, as MongoDB checks them */
   size_t n_required;
   tm_schema_dep_t *deps;
   size_t n_deps;

   tm_schema_list_t all_of, any_of, one_of;
   tm_schema_t *not_schema;
};

/* Parses the operand of $jsonSchema (which must be a document; else 14), or NULL with
 * MongoDB's error (9 FailedToParse, 14 TypeMismatch, 2 BadValue). Borrows from `v`. */
tm_schema_t *tm_schema_parse(const bson_value_t *v, bson_error_t *error);
void tm_schema_destroy(tm_schema_t *s);

/* jsonschema-kw.c: the parsers of compound keywords, called by jsonschema-parse.c. Each
 * fills its fields of `s` or fails with MongoDB's error. */
tm_schema_t *tm_schema_parse_sub(const bson_value_t *v, bool top, bson_error_t *error);
bool tm_schema_parse_items(tm_schema_t *s, bson_error_t *error);
bool tm_schema_parse_object(tm_schema_t *s, bson_error_t *error);
bool tm_schema_parse_logical(tm_schema_t *s, bson_error_t *error);
/* minLength, maxItems ...: a non-negative integral number (9 otherwise). */
bool tm_schema_parse_count(const tm_schema_t *s, tm_kw_t kw, int64_t *out, bson_error_t *error);

/* jsonschema-match.c */
bool tm_schema_match_doc(const tm_schema_t *s, const bson_t *doc);
/* Matches a value (NULL: missing) against a nested schema. */
bool tm_schema_match_value(const tm_schema_t *s, const bson_value_t *v);

/* How a keyword restricted to `r` treats `v`: it does not apply (SKIP), it fails without
 * explaining itself because the type keyword does (SILENT), or it is checked (CHECK). */
typedef enum { TM_RESTRICT_SKIP, TM_RESTRICT_SILENT, TM_RESTRICT_CHECK } tm_restrict_mode_t;
tm_restrict_mode_t tm_schema_restriction(const tm_schema_t *s, tm_restrict_t r,
                                         const bson_value_t *v);

/* Per-keyword checks on a value of the right type, shared with the error generator. */
bool tm_schema_check_scalar(const tm_schema_t *s, tm_kw_t kw, const bson_value_t *v);
bool tm_schema_check_array(const tm_schema_t *s, tm_kw_t kw, const bson_value_t *v,
                           int32_t *failing_index);
bool tm_schema_check_allowed(const tm_schema_t *s, const bson_t *obj);
/* Whether `name` is named by `properties` / by `required`. */
bool tm_schema_is_property(const tm_schema_t *s, const char *name);
bool tm_schema_is_required(const tm_schema_t *s, const char *name);
bool tm_schema_check_object(const tm_schema_t *s, tm_kw_t kw, const bson_t *obj);
bool tm_schema_dep_holds(const tm_schema_dep_t *d, const bson_value_t *v);
bool tm_schema_enum_has(const tm_schema_t *s, const bson_value_t *v);
/* The first element equal to an earlier one, or NULL. */
bool tm_schema_first_duplicate(const bson_value_t *arr, bson_value_t *dup);
/* BSON equality where documents compare regardless of field order (enum, uniqueItems). */
bool tm_schema_values_equal(const bson_value_t *a, const bson_value_t *b);

/* jsonschema-error.c helpers, shared with jsonschema-error-object.c: an array being built
 * (`arr`, `n` entries so far), entries opened and closed in it, the details of a nested
 * schema for a value, a schema's title/description, and operatorName (+ specifiedAs). */
typedef struct {
   bson_t *arr;
   uint32_t n;
} tm_schema_err_list_t;

void tm_schema_err_open(tm_schema_err_list_t *l, bson_t *child);
void tm_schema_err_close(tm_schema_err_list_t *l, bson_t *child);
void tm_schema_err_sub(const tm_schema_t *s, const bson_value_t *v, bson_t *arr);
void tm_schema_err_details(bson_t *e, const char *name, const tm_schema_t *s,
                           const bson_value_t *v);
void tm_schema_err_annotations(bson_t *e, const tm_schema_t *s);
void tm_schema_err_head(bson_t *e, const tm_schema_t *s, tm_kw_t kw, bool specified);
/* jsonschema-error-object.c: the object keywords' errors for an object value. */
void tm_schema_err_object(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l);

/* jsonschema-error.c: the error object of a $jsonSchema that `doc` does not match (or, when
 * `inverted`, does match), appended to `out` field by field. */
void tm_schema_explain(const tm_schema_t *s, const bson_t *doc, bool inverted, bson_t *out);

#endif /* TM_JSONSCHEMA_PRIVATE_H */

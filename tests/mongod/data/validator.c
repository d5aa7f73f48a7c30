/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Collection validators (see validator.h). The parsed validator lives in coll->validator;
 * the options document stays the source of truth that listCollections shows.
 */
#include "data/validator.h"

#include <stdio.h>
#include <string.h>

/* A borrowed view of the document `it` holds. */
static bool
view_doc(const bson_iter_t *it, bson_t *doc)
{
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(it, &len, &data);
   return bson_init_static(doc, data, len);
}

static const char *
option_string(const bson_t *options, const char *field, const char *dflt)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, options, field) && BSON_ITER_HOLDS_UTF8(&it)) {
      return bson_iter_utf8(&it, NULL);
   }
   return dflt;
}

static bool
check_enum(const bson_t *cmd, const char *cmd_name, const char *field, const char *const *values,
           bson_error_t *error)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, cmd, field)) {
      return true;
   }
   if (!BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 14,
                          "BSON field '%s.%s' is the wrong type '%s', expected type "
                          "'string'",
                          cmd_name, field, BSON_ITER_HOLDS_NUMBER(&it) ? "int" : "non-string");
   }
   for (int i = 0; values[i]; i++) {
      if (strcmp(values[i], bson_iter_utf8(&it, NULL)) == 0) {
         return true;
      }
   }
   return tm_error_set(error, 2,
                       "Enumeration value '%s' for field '%s.%s' is not a valid "
                       "value.",
                       bson_iter_utf8(&it, NULL), cmd_name, field);
}

bool
md_validator_check_options(const bson_t *cmd, const char *cmd_name, bson_error_t *error)
{
   static const char *const levels[] = {"off", "strict", "moderate", NULL};
   static const char *const actions[] = {"error", "warn", NULL};
   bson_iter_t it;
   if (!check_enum(cmd, cmd_name, "validationLevel", levels, error) ||
       !check_enum(cmd, cmd_name, "validationAction", actions, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, cmd, "validator")) {
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return tm_error_set(error, 14,
                          "BSON field '%s.validator' is the wrong type, expected "
                          "type 'object'",
                          cmd_name);
   }
   bson_t validator;
   bson_error_t parse = {0};
   view_doc(&it, &validator);
   tm_matcher_t *m = tm_matcher_new(&validator, &parse);
   if (!m) {
      return tm_error_set(error, parse.code,
                          "Parsing of collection validator failed :: caused "
                          "by :: %s",
                          parse.message);
   }
   tm_matcher_destroy(m);
   return true;
}

void
md_validator_install(md_coll_t *coll)
{
   bson_iter_t it;
   bson_t validator;
   tm_matcher_destroy(coll->validator);
   coll->validator = NULL;
   if (bson_iter_init_find(&it, coll->options, "validator") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
       view_doc(&it, &validator) && !bson_empty(&validator)) {
      coll->validator = tm_matcher_new(&validator, NULL);
   }
}

static void
error_info(const md_coll_t *coll, const bson_t *doc, bson_t *out)
{
   bson_iter_t it;
   bson_t details;
   if (bson_iter_init_find(&it, doc, "_id")) {
      bson_append_value(out, "failingDocumentId", -1, bson_iter_value(&it));
   }
   tm_validation_details(coll->validator, doc, &details);
   BSON_APPEND_DOCUMENT(out, "details", &details);
   bson_destroy(&details);
}

bool
md_validator_check(md_dataset_t *ds, md_coll_t *coll, const bson_t *old, const bson_t *doc,
                   bson_t *details, bson_error_t *error)
{
   const char *level = option_string(coll->options, "validationLevel", "strict");
   if (!coll->validator || ds->bypass_validation || strcmp(level, "off") == 0 ||
       tm_matcher_match(coll->validator, doc, NULL)) {
      return true;
   }
   /* moderate: documents that already broke the rules may still be updated. */
   if (old && strcmp(level, "moderate") == 0 && !tm_matcher_match(coll->validator, old, NULL)) {
      return true;
   }
   bson_t info = BSON_INITIALIZER;
   error_info(coll, doc, &info);
   if (strcmp(option_string(coll->options, "validationAction", "error"), "warn") == 0) {
      char *json = bson_as_relaxed_extended_json(&info, NULL);
      /* mongod logs this warning whatever the verbosity (log id 20294). */
      fprintf(stderr,
              "test-mongod: warning: Document would fail validation: namespace "
              "%s.%s, errInfo %s\n",
              coll->db->name, coll->name, json ? json : "?");
      bson_free(json);
      bson_destroy(&info);
      return true;
   }
   if (details) {
      BSON_APPEND_DOCUMENT(details, "errInfo", &info);
   }
   bson_destroy(&info);
   return tm_error_set(error, 121, "Document failed validation");
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Validation of events as they are stored, against the written form of the event contract's
 * EVENT rows (contract.c), for readers of the stored contract (requeue, tests).
 * Pure functions over the caller's documents: no state, thread-safe.
 */
#include <string.h>

#include "contract-private.h"
#include "error-private.h"
#include "event-private.h"

static bool
wrong_type(const bson_iter_t *iter, const char *expected, bson_error_t *error)
{
   _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: expected %s, got %s",
                     bson_iter_key(iter), expected, _outbox_bson_type_name(bson_iter_type(iter)));
   return false;
}

static bool
check_headers(const bson_iter_t *field, bson_error_t *error)
{
   bson_iter_t child;

   if (!BSON_ITER_HOLDS_DOCUMENT(field)) {
      return wrong_type(field, "document", error);
   }
   if (!bson_iter_recurse(field, &child)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "headers: corrupt document");
      return false;
   }
   while (bson_iter_next(&child)) {
      uint32_t len;
      const char *value;

      if (!BSON_ITER_HOLDS_UTF8(&child)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "headers.%.100s: expected string, got %s", bson_iter_key(&child),
                           _outbox_bson_type_name(bson_iter_type(&child)));
         return false;
      }
      value = bson_iter_utf8(&child, &len);
      if (!bson_utf8_validate(value, len, false)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "headers.%.100s: value is not valid UTF-8", bson_iter_key(&child));
         return false;
      }
   }
   return true;
}

/* The first BSON type the form allows, by name ("Int64", "string" ...). */
static const char *
form_type_name(const outbox_contract_form_t *f)
{
   for (int t = BSON_TYPE_DOUBLE; t <= BSON_TYPE_DECIMAL128; t++) {
      if (outbox_contract_type_allowed(f, (bson_type_t)t)) {
         return _outbox_bson_type_name((bson_type_t)t);
      }
   }
   return "nothing";
}

/* What a string of the form must be, for the message. */
static const char *
form_text(const outbox_contract_form_t *f)
{
   if (f->text & OUTBOX_CONTRACT_TEXT_UUID) {
      return "a lowercase 36-character UUID v4";
   }
   if (f->text & OUTBOX_CONTRACT_TEXT_EVENT_TYPE) {
      return "1..128 characters of [A-Za-z0-9._-]";
   }
   return "valid";
}

/* Checks one field against its rule's written form (the contract, outbox/contract.h). */
static bool
check_rule(const outbox_contract_rule_t *r, const bson_iter_t *it, bson_error_t *error)
{
   const bson_value_t *v = bson_iter_value((bson_iter_t *)it);
   const outbox_contract_form_t *f = &r->written;

   if (!outbox_contract_type_allowed(f, v->value_type)) {
      return wrong_type(it, form_type_name(f), error);
   }
   if (!strcmp(r->name, "headers")) {
      return check_headers(it, error);
   }
   if (!outbox_contract_check(r, v, true, NULL)) {
      return true;
   }
   switch (v->value_type) {
   case BSON_TYPE_UTF8:
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: \"%.140s\" is not %s", r->name,
                        v->value.v_utf8.str, form_text(f));
      break;
   case BSON_TYPE_INT64:
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: %" PRId64 " is not >= %" PRId64,
                        r->name, v->value.v_int64, f->min);
      break;
   default:
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: %s", r->name, r->reason);
   }
   return false;
}

bool
_outbox_stored_event_validate(const bson_t *event, bson_error_t *error)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bson_iter_t it;

   if (!event || !bson_iter_init(&it, event)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "event is not a valid document");
      return false;
   }
   /* Extra fields are allowed (forward compatibility). */
   for (size_t i = 0; i < n; i++) {
      const outbox_contract_rule_t *r = &rules[i];
      if (r->scope != OUTBOX_CONTRACT_EVENT) {
         continue;
      }
      if (!bson_iter_init_find(&it, event, r->name)) {
         if (r->written.required) {
            _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: missing", r->name);
            return false;
         }
         continue;
      }
      if (!check_rule(r, &it, error)) {
         return false;
      }
   }
   return true;
}

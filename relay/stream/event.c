/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One stored event, parsed and checked against the event contract's accepted form (liboutbox's
 * outbox/contract.h: every rule and its reason is there; event.h). Pure functions; any thread.
 */
#include "stream/event.h"

#include <string.h>

#include "contract-private.h" /* liboutbox's event contract: what an event may hold */

bool
relay_event_type_valid(const char *type, size_t len)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)type;
   v.value.v_utf8.len = (uint32_t)len;
   return !outbox_contract_check(_outbox_contract_row(_OUTBOX_RULE_EVENT_TYPE), &v, false, NULL);
}

/* A seq is an integer >= 1 (the contract's accepted form): int32 too, since a document
 * edited by hand or by another driver may carry one, and its meaning is not ambiguous. */
static bool
read_seq(const bson_iter_t *it, int64_t *seq)
{
   if (outbox_contract_check(_outbox_contract_row(_OUTBOX_RULE_EVENT_SEQ),
                             bson_iter_value((bson_iter_t *)it), false, NULL)) {
      return false;
   }
   *seq = bson_iter_as_int64(it);
   return true;
}

/* The field at @it against its rule's accepted form; then what the event keeps of it. */
static const char *
check_field(const outbox_contract_rule_t *rule, const bson_iter_t *it, relay_event_t *ev)
{
   const bson_value_t *v = bson_iter_value((bson_iter_t *)it);
   const char *why = outbox_contract_check(rule, v, false, NULL);

   if (why) {
      return why;
   }
   if (!strcmp(rule->name, "id")) {
      ev->id = v->value.v_utf8.str; /* NUL-terminated inside ev->raw, which the event owns */
   } else if (!strcmp(rule->name, "seq")) {
      ev->seq = bson_iter_as_int64(it);
   } else if (!strcmp(rule->name, "type")) {
      ev->type = v->value.v_utf8.str;
   } else if (!strcmp(rule->name, "time")) {
      ev->has_time = true;
      ev->time_ms = v->value.v_datetime;
   } else if (!strcmp(rule->name, "contentType")) {
      ev->content_type = v->value.v_utf8.str; /* NUL-terminated inside ev->raw */
   } else if (!strcmp(rule->name, "data") && v->value_type == BSON_TYPE_BINARY) {
      ev->bin = v->value.v_binary.data;
      ev->bin_len = v->value.v_binary.data_len;
   } else if (!strcmp(rule->name, "expiresAt")) {
      ev->has_expires = true;
      ev->expires_ms = v->value.v_datetime;
   } else if (!strcmp(rule->name, "data")) {
      /* A view into ev->raw, which the event owns: no copy of the data. Its bson_t lives at
       * the front of the event's block (relay_event_parse()). */
      if (!bson_init_static((bson_t *)ev->block, v->value.v_doc.data, v->value.v_doc.data_len)) {
         return rule->reason;
      }
      ev->data = ev->block;
   }
   return NULL;
}

/* The relay's own field: how often an operator requeued the event. */
static void
read_requeued(const bson_iter_t *it, relay_event_t *ev)
{
   bson_iter_t count;
   if (BSON_ITER_HOLDS_DOCUMENT(it) && bson_iter_recurse(it, &count) &&
       bson_iter_find(&count, "count") && BSON_ITER_HOLDS_NUMBER(&count)) {
      ev->requeued = bson_iter_as_int64(&count);
   }
}

/* Walks the event's fields once against the contract's EVENT rows (accepted form: what the
 * relay publishes from any writer); the first violation found is the reason. The first of
 * two fields of one name decides. Headers never make an event poison: a headers field that
 * is not a document only loses its headers (mqtt/headers.c). */
static const char *
check_fields(const bson_t *doc, relay_event_t *ev)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bool seen[64] = {false};
   const char *reason = NULL;
   bson_iter_t it;

   if (!bson_iter_init(&it, doc)) {
      return "event is not valid BSON";
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (!strcmp(key, "requeued")) {
         read_requeued(&it, ev);
         continue;
      }
      for (size_t i = 0; i < n && i < 64; i++) {
         const outbox_contract_rule_t *r = &rules[i];
         if (r->scope != OUTBOX_CONTRACT_EVENT || seen[i] || r->name[0] != key[0] ||
             strcmp(key, r->name) != 0) {
            continue;
         }
         seen[i] = true;
         if (r->outcome == OUTBOX_CONTRACT_LEFT_OUT) { /* headers */
            if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
               bson_iter_document(&it, &ev->headers_len, &ev->headers);
            } else {
               ev->headers_bad = true;
            }
         } else {
            const char *r_why = check_field(r, &it, ev);
            reason = reason ? reason : r_why;
         }
         break;
      }
   }
   for (size_t i = 0; i < n && i < 64 && !reason; i++) {
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT && rules[i].accepted.required && !seen[i]) {
         reason = rules[i].reason;
      }
   }
   return reason;
}

int64_t
relay_event_peek_seq(const bson_value_t *elem)
{
   bson_iter_t it;
   int64_t seq = 0;

   /* The first "seq" decides, as in check_fields(). */
   if (elem->value_type == BSON_TYPE_DOCUMENT &&
       bson_iter_init_from_data(&it, elem->value.v_doc.data, elem->value.v_doc.data_len) &&
       bson_iter_find(&it, "seq") && !read_seq(&it, &seq)) {
      seq = 0;
   }
   return seq;
}

/* The event's own copy of a document element, in one block: first a bson_t for the data view
 * (bson_t asks for 128-byte alignment), then the element's bytes, which raw points to. One
 * allocation instead of a copy of the element, a copy of its data and two strings. */
static void
copy_document(const bson_value_t *elem, relay_event_t *ev)
{
   size_t head = sizeof(bson_t), align = BSON_ALIGNOF(bson_t);
   uint32_t len = elem->value.v_doc.data_len;

   /* aligned_alloc() wants a multiple of the alignment. */
   ev->block = bson_aligned_alloc(align, (head + len + align - 1) / align * align);
   memcpy((uint8_t *)ev->block + head, elem->value.v_doc.data, len);
   ev->raw.value_type = BSON_TYPE_DOCUMENT;
   ev->raw.value.v_doc.data = (uint8_t *)ev->block + head;
   ev->raw.value.v_doc.data_len = len;
}

bool
relay_event_parse(const bson_value_t *elem, relay_event_t *ev)
{
   bson_t doc;

   memset(ev, 0, sizeof *ev);
   if (elem->value_type != BSON_TYPE_DOCUMENT) {
      bson_value_copy(elem, &ev->raw);
      ev->reason = "event is not a document";
      return false;
   }
   copy_document(elem, ev);
   /* Parsed from the event's own copy: id, type and data point into it. */
   if (!bson_init_static(&doc, ev->raw.value.v_doc.data, ev->raw.value.v_doc.data_len)) {
      ev->reason = "event is not valid BSON";
      return false;
   }
   ev->reason = check_fields(&doc, ev);
   return ev->reason == NULL;
}

void
relay_event_cleanup(relay_event_t *ev)
{
   if (!ev) {
      return;
   }
   if (ev->block) {
      bson_free(ev->block); /* raw's bytes and the data view */
   } else if (ev->raw.value_type != BSON_TYPE_EOD) {
      bson_value_destroy(&ev->raw);
   }
   memset(ev, 0, sizeof *ev);
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Contact aggregate's state, shared by contact.c (rules and changes) and contact-read.c
 * (accessors and pending events).
 */
#ifndef CONTACTS_CONTACT_PRIVATE_H
#define CONTACTS_CONTACT_PRIVATE_H

#include "contact.h"

enum { CO_NAME, CO_STREET, CO_HOUSE, CO_POSTAL, CO_CITY, CO_COUNTRY, CO_FIELDS };

extern const char *const _contact_kind_names[CONTACT_EVENT_KINDS];

typedef struct {
   bool pending;
   unsigned order; /* when it was last raised: events come out in this order */
   bson_t data;
} pending_event_t;

struct _contact_t {
   char *id;
   char *first_name;
   char *last_name;
   char *description;
   char *email;
   bool has_company;
   char *company[CO_FIELDS];
   int64_t created_at;
   bool deleted;
   unsigned changes;
   unsigned next_order;
   pending_event_t events[CONTACT_EVENT_KINDS];
};

#endif /* CONTACTS_CONTACT_PRIVATE_H */

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Contact aggregate. State changes only through the operations below (no setters); each
 * operation validates its input, changes nothing when it fails, and raises the domain event
 * that describes the change. A contact keeps at most one pending event per kind: a later
 * event of the same kind replaces the earlier one, so one commit stores, say, one
 * ContactNameUpdated however often the name changed before it.
 *
 * Events and their data:
 *   ContactCreated         the whole contact (name, description, email, company, createdAt);
 *                          the only event of a new contact
 *   ContactNameUpdated     {name: {firstName, lastName}}
 *   ContactEmailUpdated    {email}
 *   ContactCompanyUpdated  {company: {companyName, street, houseNumber, postalCode, city,
 *                          country}}
 *   ContactDeleted         {} (soft delete)
 * A change of the description alone raises no event (nothing downstream needs it).
 *
 * Not thread-safe: a contact_t belongs to one request.
 */
#ifndef CONTACTS_CONTACT_H
#define CONTACTS_CONTACT_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest accepted text field, in bytes. */
#define CONTACT_TEXT_MAX 200
#define CONTACT_DESCRIPTION_MAX 2000
#define CONTACT_EMAIL_MAX 254

typedef enum {
   CONTACT_CREATED,
   CONTACT_NAME_UPDATED,
   CONTACT_EMAIL_UPDATED,
   CONTACT_COMPANY_UPDATED,
   CONTACT_DELETED,
   CONTACT_EVENT_KINDS
} contact_event_kind_t;

/* Bits of contact_changes(): which stored fields differ from the loaded state. */
enum {
   CONTACT_CHANGED_NAME = 1 << 0,
   CONTACT_CHANGED_EMAIL = 1 << 1,
   CONTACT_CHANGED_COMPANY = 1 << 2,
   CONTACT_CHANGED_DESCRIPTION = 1 << 3,
   CONTACT_CHANGED_DELETED = 1 << 4,
};

/* Why an operation refused its input: the offending field as a JSON path ("name.firstName")
 * and a sentence for humans. */
typedef struct {
   char field[64];
   char message[256];
} contact_error_t;

/* The writable fields, as a client sends them. All strings are borrowed; NULL means absent
 * (company fields and description may be absent; names and email may not). */
typedef struct {
   const char *first_name;
   const char *last_name;
   const char *description;
   const char *email;
   bool has_company;
   const char *company_name;
   const char *street;
   const char *house_number;
   const char *postal_code;
   const char *city;
   const char *country;
} contact_input_t;

typedef struct _contact_t contact_t;

/* Creates a contact with id `id` (copied) from `in`, created at `now_ms` (ms since the epoch),
 * raising ContactCreated. Returns NULL and fills *err if the input breaks a rule. */
contact_t *contact_create(const char *id, const contact_input_t *in, int64_t now_ms,
                          contact_error_t *err);

/* Rebuilds a contact from its stored business fields (no events pending, nothing changed).
 * Returns NULL and fills *err if the document is not a contact. */
contact_t *contact_from_bson(const char *id, const bson_t *doc, contact_error_t *err);

void contact_destroy(contact_t *contact);

/* Operations. Each validates, changes nothing on failure, raises its event only if the value
 * really changes, and returns false with *err on invalid input. */
bool contact_rename(contact_t *c, const char *first_name, const char *last_name,
                    contact_error_t *err);
bool contact_change_email(contact_t *c, const char *email, contact_error_t *err);
bool contact_change_company(contact_t *c, const contact_input_t *company, contact_error_t *err);
bool contact_change_description(contact_t *c, const char *description, contact_error_t *err);
/* Applies a full representation: all of the above, all or nothing. */
bool contact_replace(contact_t *c, const contact_input_t *in, contact_error_t *err);
/* Soft delete: raises ContactDeleted. Fails if already deleted. */
bool contact_delete(contact_t *c, contact_error_t *err);

/* Checks a whole input as contact_create() would. */
bool contact_validate(const contact_input_t *in, contact_error_t *err);
/* The email rule on its own: local@domain, at most 254 bytes, printable ASCII, a dotted
 * domain of letters, digits and hyphens. */
bool contact_email_valid(const char *email);

/* Accessors. Strings are owned by the contact; "" for absent optional fields. */
const char *contact_id(const contact_t *c);
bool contact_is_deleted(const contact_t *c);
int64_t contact_created_at(const contact_t *c);
const char *contact_email(const contact_t *c);
const char *contact_first_name(const contact_t *c);
const char *contact_last_name(const contact_t *c);
/* CONTACT_CHANGED_* bits since creation or loading. */
unsigned contact_changes(const contact_t *c);

/* Appends the business fields (name, description, email, company, createdAt, deleted) to
 * `doc`; with `mask` (CONTACT_CHANGED_* bits, or 0 for all) only those fields. */
void contact_append_fields(const contact_t *c, unsigned mask, bson_t *doc);

/* Pending events, in the order they were (last) raised. */
size_t contact_event_count(const contact_t *c);
/* The type ("ContactCreated", ...) and data of pending event `i`; owned by the contact. */
const char *contact_event_type(const contact_t *c, size_t i);
const bson_t *contact_event_data(const contact_t *c, size_t i);
/* The type name of a kind. */
const char *contact_event_kind_name(contact_event_kind_t kind);

#endif /* CONTACTS_CONTACT_H */

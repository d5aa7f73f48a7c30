/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Contact aggregate: validation, state changes and the events they raise.
 */
#include "contact-private.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const company_keys[CO_FIELDS] = {"companyName", "street", "houseNumber",
                                                    "postalCode",  "city",   "country"};

const char *const _contact_kind_names[CONTACT_EVENT_KINDS] = {
   "ContactCreated", "ContactNameUpdated", "ContactEmailUpdated", "ContactCompanyUpdated",
   "ContactDeleted"};

static bool
refuse(contact_error_t *err, const char *field, const char *message)
{
   if (err) {
      snprintf(err->field, sizeof err->field, "%s", field);
      snprintf(err->message, sizeof err->message, "%s", message);
   }
   return false;
}

static const char *
nz(const char *s)
{
   return s ? s : "";
}

/* ---- validation --------------------------------------------------------------------------- */

static bool
is_blank(const char *s)
{
   for (; *s; s++) {
      if (!isspace((unsigned char)*s))
         return false;
   }
   return true;
}

/* Text is valid UTF-8 without control characters: they have no place in names or addresses
 * and would only make trouble in logs downstream. A description may span lines. */
static bool
text_ok_ml(const char *s, size_t max, bool multiline, const char *field, contact_error_t *err)
{
   size_t len = strlen(s);

   if (len > max) {
      char msg[96];
      snprintf(msg, sizeof msg, "must be at most %zu bytes long", max);
      return refuse(err, field, msg);
   }
   if (!bson_utf8_validate(s, len, false))
      return refuse(err, field, "must be valid UTF-8");
   for (size_t i = 0; i < len; i++) {
      if (multiline && (s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
         continue;
      if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
         return refuse(err, field, "must not contain control characters");
   }
   return true;
}

static bool
text_ok(const char *s, size_t max, const char *field, contact_error_t *err)
{
   return text_ok_ml(s, max, false, field, err);
}

static bool
name_part_ok(const char *s, const char *field, contact_error_t *err)
{
   if (!s || is_blank(s))
      return refuse(err, field, "must not be blank");
   return text_ok(s, CONTACT_TEXT_MAX, field, err);
}

static bool
domain_ok(const char *d)
{
   size_t label = 0;
   bool dotted = false;

   if (!*d || *d == '.' || *d == '-')
      return false;
   for (const char *p = d; *p; p++) {
      if (*p == '.') {
         if (label == 0 || p[-1] == '-')
            return false;
         label = 0;
         dotted = true;
      } else if (isalnum((unsigned char)*p) || *p == '-') {
         if (++label > 63)
            return false;
      } else {
         return false;
      }
   }
   return dotted && label > 0 && d[strlen(d) - 1] != '-';
}

bool
contact_email_valid(const char *email)
{
   static const char local_extra[] = "!#$%&'*+/=?^_`{|}~.-";
   const char *at;
   size_t local_len;

   if (!email || strlen(email) > CONTACT_EMAIL_MAX || !(at = strchr(email, '@')) ||
       strchr(at + 1, '@'))
      return false;
   local_len = (size_t)(at - email);
   if (local_len == 0 || local_len > 64 || email[0] == '.' || at[-1] == '.')
      return false;
   for (const char *p = email; p < at; p++) {
      if (!isalnum((unsigned char)*p) && !strchr(local_extra, *p))
         return false;
      if (*p == '.' && p[1] == '.')
         return false;
   }
   return domain_ok(at + 1);
}

static bool
email_ok(const char *email, contact_error_t *err)
{
   if (!email || is_blank(email))
      return refuse(err, "email", "is required");
   if (!contact_email_valid(email))
      return refuse(err, "email", "is not a valid email address");
   return true;
}

static const char *
company_value(const contact_input_t *in, int i)
{
   const char *v[CO_FIELDS] = {in->company_name, in->street, in->house_number,
                               in->postal_code,  in->city,   in->country};
   return v[i];
}

static bool
company_ok(const contact_input_t *in, contact_error_t *err)
{
   char field[64];

   if (!in->has_company)
      return true;
   if (!in->company_name || is_blank(in->company_name))
      return refuse(err, "company.companyName", "must not be blank");
   for (int i = 0; i < CO_FIELDS; i++) {
      snprintf(field, sizeof field, "company.%s", company_keys[i]);
      if (!text_ok(nz(company_value(in, i)), CONTACT_TEXT_MAX, field, err))
         return false;
   }
   return true;
}

bool
contact_validate(const contact_input_t *in, contact_error_t *err)
{
   if (!in)
      return refuse(err, "", "a contact is required");
   return name_part_ok(in->first_name, "name.firstName", err) &&
          name_part_ok(in->last_name, "name.lastName", err) && email_ok(in->email, err) &&
          text_ok_ml(nz(in->description), CONTACT_DESCRIPTION_MAX, true, "description", err) &&
          company_ok(in, err);
}

/* ---- events ------------------------------------------------------------------------------- */

static void
append_name(const contact_t *c, bson_t *doc)
{
   bson_t name;

   BSON_APPEND_DOCUMENT_BEGIN(doc, "name", &name);
   BSON_APPEND_UTF8(&name, "firstName", c->first_name);
   BSON_APPEND_UTF8(&name, "lastName", c->last_name);
   bson_append_document_end(doc, &name);
}

static void
append_company(const contact_t *c, bson_t *doc)
{
   bson_t co;

   if (!c->has_company) {
      BSON_APPEND_NULL(doc, "company");
      return;
   }
   BSON_APPEND_DOCUMENT_BEGIN(doc, "company", &co);
   for (int i = 0; i < CO_FIELDS; i++)
      BSON_APPEND_UTF8(&co, company_keys[i], c->company[i]);
   bson_append_document_end(doc, &co);
}

void
contact_append_fields(const contact_t *c, unsigned mask, bson_t *doc)
{
   if (!mask || (mask & CONTACT_CHANGED_NAME))
      append_name(c, doc);
   if (!mask || (mask & CONTACT_CHANGED_DESCRIPTION))
      BSON_APPEND_UTF8(doc, "description", c->description);
   if (!mask || (mask & CONTACT_CHANGED_EMAIL))
      BSON_APPEND_UTF8(doc, "email", c->email);
   if (!mask || (mask & CONTACT_CHANGED_COMPANY))
      append_company(c, doc);
   if (!mask)
      BSON_APPEND_DATE_TIME(doc, "createdAt", c->created_at);
   if (!mask || (mask & CONTACT_CHANGED_DELETED))
      BSON_APPEND_BOOL(doc, "deleted", c->deleted);
}

/* Raises an event of `kind` with the current state; an earlier pending event of the same
 * kind is replaced, because one commit carries one event per kind. */
static void
raise_event(contact_t *c, contact_event_kind_t kind)
{
   pending_event_t *ev = &c->events[kind];

   if (ev->pending)
      bson_reinit(&ev->data);
   else
      bson_init(&ev->data);
   ev->pending = true;
   ev->order = c->next_order++;
   switch (kind) {
   case CONTACT_CREATED:
      contact_append_fields(c,
                            CONTACT_CHANGED_NAME | CONTACT_CHANGED_DESCRIPTION |
                               CONTACT_CHANGED_EMAIL | CONTACT_CHANGED_COMPANY,
                            &ev->data);
      BSON_APPEND_DATE_TIME(&ev->data, "createdAt", c->created_at);
      break;
   case CONTACT_NAME_UPDATED:
      append_name(c, &ev->data);
      break;
   case CONTACT_EMAIL_UPDATED:
      BSON_APPEND_UTF8(&ev->data, "email", c->email);
      break;
   case CONTACT_COMPANY_UPDATED:
      append_company(c, &ev->data);
      break;
   case CONTACT_DELETED:
   case CONTACT_EVENT_KINDS:
      break;
   }
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void
set_str(char **dst, const char *src)
{
   bson_free(*dst);
   *dst = bson_strdup(nz(src));
}

static void
set_company(contact_t *c, const contact_input_t *in)
{
   c->has_company = in->has_company;
   for (int i = 0; i < CO_FIELDS; i++)
      set_str(&c->company[i], in->has_company ? company_value(in, i) : "");
}

contact_t *
contact_create(const char *id, const contact_input_t *in, int64_t now_ms, contact_error_t *err)
{
   contact_t *c;

   if (!id || !*id) {
      refuse(err, "id", "is required");
      return NULL;
   }
   if (!contact_validate(in, err))
      return NULL;
   c = bson_malloc0(sizeof *c);
   c->id = bson_strdup(id);
   set_str(&c->first_name, in->first_name);
   set_str(&c->last_name, in->last_name);
   set_str(&c->description, in->description);
   set_str(&c->email, in->email);
   set_company(c, in);
   c->created_at = now_ms;
   /* A new contact raises ContactCreated and nothing else, whatever it contains. */
   raise_event(c, CONTACT_CREATED);
   return c;
}

void
contact_destroy(contact_t *c)
{
   if (!c)
      return;
   bson_free(c->id);
   bson_free(c->first_name);
   bson_free(c->last_name);
   bson_free(c->description);
   bson_free(c->email);
   for (int i = 0; i < CO_FIELDS; i++)
      bson_free(c->company[i]);
   for (int k = 0; k < CONTACT_EVENT_KINDS; k++) {
      if (c->events[k].pending)
         bson_destroy(&c->events[k].data);
   }
   bson_free(c);
}

/* ---- operations --------------------------------------------------------------------------- */

static bool
same(const char *a, const char *b)
{
   return strcmp(nz(a), nz(b)) == 0;
}

bool
contact_rename(contact_t *c, const char *first_name, const char *last_name, contact_error_t *err)
{
   if (!name_part_ok(first_name, "name.firstName", err) ||
       !name_part_ok(last_name, "name.lastName", err))
      return false;
   if (same(c->first_name, first_name) && same(c->last_name, last_name))
      return true;
   set_str(&c->first_name, first_name);
   set_str(&c->last_name, last_name);
   c->changes |= CONTACT_CHANGED_NAME;
   raise_event(c, CONTACT_NAME_UPDATED);
   return true;
}

bool
contact_change_email(contact_t *c, const char *email, contact_error_t *err)
{
   if (!email_ok(email, err))
      return false;
   if (same(c->email, email))
      return true;
   set_str(&c->email, email);
   c->changes |= CONTACT_CHANGED_EMAIL;
   raise_event(c, CONTACT_EMAIL_UPDATED);
   return true;
}

static bool
company_same(const contact_t *c, const contact_input_t *in)
{
   if (c->has_company != in->has_company)
      return false;
   for (int i = 0; in->has_company && i < CO_FIELDS; i++) {
      if (!same(c->company[i], company_value(in, i)))
         return false;
   }
   return true;
}

bool
contact_change_company(contact_t *c, const contact_input_t *company, contact_error_t *err)
{
   if (!company_ok(company, err))
      return false;
   if (company_same(c, company))
      return true;
   set_company(c, company);
   c->changes |= CONTACT_CHANGED_COMPANY;
   raise_event(c, CONTACT_COMPANY_UPDATED);
   return true;
}

bool
contact_change_description(contact_t *c, const char *description, contact_error_t *err)
{
   if (!text_ok_ml(nz(description), CONTACT_DESCRIPTION_MAX, true, "description", err))
      return false;
   if (!same(c->description, description)) {
      set_str(&c->description, description);
      c->changes |= CONTACT_CHANGED_DESCRIPTION;
   }
   return true;
}

bool
contact_replace(contact_t *c, const contact_input_t *in, contact_error_t *err)
{
   if (c->deleted)
      return refuse(err, "", "the contact is deleted");
   /* Validate everything first so a bad field leaves the contact untouched. */
   if (!contact_validate(in, err))
      return false;
   return contact_rename(c, in->first_name, in->last_name, err) &&
          contact_change_email(c, in->email, err) && contact_change_company(c, in, err) &&
          contact_change_description(c, in->description, err);
}

bool
contact_delete(contact_t *c, contact_error_t *err)
{
   if (c->deleted)
      return refuse(err, "", "the contact is deleted already");
   c->deleted = true;
   c->changes |= CONTACT_CHANGED_DELETED;
   raise_event(c, CONTACT_DELETED);
   return true;
}

/* ---- loading and reading ------------------------------------------------------------------ */

static const char *
stored_str(const bson_t *doc, const char *path)
{
   bson_iter_t it;

   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
       BSON_ITER_HOLDS_UTF8(&it))
      return bson_iter_utf8(&it, NULL);
   return NULL;
}

contact_t *
contact_from_bson(const char *id, const bson_t *doc, contact_error_t *err)
{
   contact_input_t in = {0};
   bson_iter_t it;
   contact_t *c;

   in.first_name = stored_str(doc, "name.firstName");
   in.last_name = stored_str(doc, "name.lastName");
   in.email = stored_str(doc, "email");
   in.description = stored_str(doc, "description");
   if (!in.first_name || !in.last_name || !in.email) {
      refuse(err, "", "the stored document is not a contact");
      return NULL;
   }
   in.has_company = bson_iter_init_find(&it, doc, "company") && BSON_ITER_HOLDS_DOCUMENT(&it);
   in.company_name = stored_str(doc, "company.companyName");
   in.street = stored_str(doc, "company.street");
   in.house_number = stored_str(doc, "company.houseNumber");
   in.postal_code = stored_str(doc, "company.postalCode");
   in.city = stored_str(doc, "company.city");
   in.country = stored_str(doc, "company.country");
   c = bson_malloc0(sizeof *c);
   c->id = bson_strdup(nz(id));
   set_str(&c->first_name, in.first_name);
   set_str(&c->last_name, in.last_name);
   set_str(&c->description, in.description);
   set_str(&c->email, in.email);
   set_company(c, &in);
   if (bson_iter_init_find(&it, doc, "createdAt") && BSON_ITER_HOLDS_DATE_TIME(&it))
      c->created_at = bson_iter_date_time(&it);
   c->deleted = bson_iter_init_find(&it, doc, "deleted") && bson_iter_as_bool(&it);
   return c;
}

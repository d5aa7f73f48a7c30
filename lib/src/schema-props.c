/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The $jsonSchema property blocks both contracts share (schema-props-private.h). No state.
 */
#include "schema-props-private.h"

void
_outbox_schema_prop(bson_t *props, const char *name, const char *type, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BSON_APPEND_UTF8(&p, "bsonType", type);
   if (what) {
      BSON_APPEND_UTF8(&p, "description", what);
   }
   bson_append_document_end(props, &p);
}

void
_outbox_schema_long_prop(bson_t *props, const char *name, int64_t minimum, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "long", "minimum", BCON_INT64(minimum), "description",
               BCON_UTF8(what));
   bson_append_document_end(props, &p);
}

void
_outbox_schema_pattern_prop(bson_t *props, const char *name, const char *pattern, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "string", "pattern", BCON_UTF8(pattern), "description",
               BCON_UTF8(what));
   bson_append_document_end(props, &p);
}

void
_outbox_schema_event_type_prop(bson_t *props, const char *name)
{
   _outbox_schema_pattern_prop(props, name, _OUTBOX_EVENT_TYPE_PATTERN,
                               "1..128 characters of [A-Za-z0-9._-]");
}

void
_outbox_schema_headers_prop(bson_t *props, const char *name)
{
   bson_t p, values;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "object", "description", "string values only");
   BSON_APPEND_DOCUMENT_BEGIN(&p, "additionalProperties", &values);
   BCON_APPEND(&values, "bsonType", "string");
   bson_append_document_end(&p, &values);
   bson_append_document_end(props, &p);
}

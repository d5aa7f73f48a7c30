/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's own error messages: names of BSON types for messages that say what was found
 * (error-private.h). Static strings only: no state, thread-safe.
 */
#include "error-private.h"

const char *
_outbox_bson_type_name(bson_type_t type)
{
   switch (type) {
   case BSON_TYPE_EOD:
      return "end of document";
   case BSON_TYPE_DOUBLE:
      return "double";
   case BSON_TYPE_UTF8:
      return "string";
   case BSON_TYPE_DOCUMENT:
      return "document";
   case BSON_TYPE_ARRAY:
      return "array";
   case BSON_TYPE_BINARY:
      return "binary";
   case BSON_TYPE_UNDEFINED:
      return "undefined";
   case BSON_TYPE_OID:
      return "ObjectId";
   case BSON_TYPE_BOOL:
      return "bool";
   case BSON_TYPE_DATE_TIME:
      return "Date";
   case BSON_TYPE_NULL:
      return "null";
   case BSON_TYPE_REGEX:
      return "regex";
   case BSON_TYPE_DBPOINTER:
      return "DBPointer";
   case BSON_TYPE_CODE:
      return "code";
   case BSON_TYPE_SYMBOL:
      return "symbol";
   case BSON_TYPE_CODEWSCOPE:
      return "code with scope";
   case BSON_TYPE_INT32:
      return "int32";
   case BSON_TYPE_TIMESTAMP:
      return "Timestamp";
   case BSON_TYPE_INT64:
      return "Int64";
   case BSON_TYPE_DECIMAL128:
      return "Decimal128";
   case BSON_TYPE_MAXKEY:
      return "MaxKey";
   case BSON_TYPE_MINKEY:
      return "MinKey";
   default:
      return "unknown type";
   }
}

/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's own errors: one bson_error_t domain and one enum of codes, and the one place
 * that decides what a MongoDB error means to the relay (a refusal of its writes). Errors from
 * mongoc, paho and the system are passed through as they are; these codes are for what the
 * relay itself finds wrong. Two kinds, as in dbus-broker's util/error.h: a setup error
 * (relay_new() fails, the daemon exits with it) and an expected result the caller handles
 * and retries (a clear that could not be built). Header-only, no state: any thread.
 */
#ifndef RELAY_UTIL_ERROR_H
#define RELAY_UTIL_ERROR_H

#include <stdbool.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

/* "rl" in ASCII: far from mongoc's and libbson's small domains and from liboutbox's "ob". */
#define RELAY_ERROR_DOMAIN 0x726c

typedef enum {
   /* Setup: the configuration cannot work (checked once in relay_new()). */
   RELAY_ERROR_CONFIG = 1,
   /* Setup: a worker thread (reader, clearer, scanner, lease) could not be started. */
   RELAY_ERROR_THREAD,
   /* Setup: the metrics endpoint cannot resolve or listen on its address. */
   RELAY_ERROR_LISTEN,
   /* Expected, retried: a clear batch could not be built (the clearer gives no reason). */
   RELAY_ERROR_CLEAR,
   /* outbox-admin: a command line that cannot be used (exit 64). */
   RELAY_ERROR_USAGE,
   /* The MQTT client could not be created or connected (paho's code and words in the
    * message). */
   RELAY_ERROR_MQTT,
   /* A system call failed (errno's words in the message): e.g. the log file cannot be
    * opened. */
   RELAY_ERROR_SYSTEM,
   /* Expected, retried: an archive entry could not be built from an event. */
   RELAY_ERROR_ARCHIVE,
} relay_error_code_t;

/* Whether MongoDB refuses the relay's credentials or privileges: 13 Unauthorized, or an
 * authentication failure. The writer and the lease thread both stop publishing on it (what
 * was published stays pending); relay.c owns the gauge that shows it. */
static inline bool
relay_error_is_refusal(const bson_error_t *error)
{
   return (error->domain == MONGOC_ERROR_SERVER && error->code == 13) ||
          (error->domain == MONGOC_ERROR_CLIENT && error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE);
}

/* Whether the server that answered is no longer (or not yet) the primary: 10107
 * NotWritablePrimary, 13435 NotPrimaryNoSecondaryOk, 13436 NotPrimaryOrSecondary, 189
 * PrimarySteppedDown, 11602 InterruptedDueToReplStateChange, 91 ShutdownInProgress, 11600
 * InterruptedAtShutdown (MongoDB r6.0 src/mongo/base/error_codes.yml, category
 * NotPrimaryError / ShutdownError). mongoc marks that server unknown and finds the new primary;
 * a write that is not retryable (updateMany) can be sent again once it has. */
static inline bool
relay_error_is_not_primary(const bson_error_t *error)
{
   if (error->domain != MONGOC_ERROR_SERVER && error->domain != MONGOC_ERROR_WRITE_CONCERN &&
       error->domain != MONGOC_ERROR_QUERY) {
      return false;
   }
   switch (error->code) {
   case 10107:
   case 13435:
   case 13436:
   case 189:
   case 11602:
   case 91:
   case 11600:
      return true;
   default:
      return false;
   }
}

/* Whether @error is a read that waited for the majority snapshot past its maxTimeMS (50
 * MaxTimeMSExpired; store/concerns.h: relay_concerns_read_wait_ms()): nothing was read,
 * nothing is lost, the read is to be retried. */
static inline bool
relay_concerns_read_timed_out(const bson_error_t *error)
{
   return error->domain == MONGOC_ERROR_SERVER && error->code == 50;
}

#endif /* RELAY_UTIL_ERROR_H */

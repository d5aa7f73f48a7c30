/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Keeping secrets out of everything the relay prints. One place decides what a secret looks
 * like in a connection string, and every path that prints text someone else produced (mongoc's
 * and paho's messages, mongoc's URI parse errors, the log) goes through it:
 *  - relay_redact_uri() shows a URI without its password and secret query values;
 *  - relay_redact_message() cuts those secrets out of any message that may quote them, e.g.
 *    mongoc's `Password "p@ss" must not have unescaped chars`;
 *  - secrets registered with relay_redact_register*() are cut out of every log line
 *    (relay_log() calls relay_redact_known()), whoever wrote the line.
 * Secrets shorter than RELAY_REDACT_MIN_LEN are not searched for in free text (every "a"
 * in a log line would go); they still never appear in a redacted URI.
 *
 * Pure functions except the registry, which is process-wide and guarded by a mutex: every
 * function here may be called from any thread. Free returned strings with bson_free().
 * Only libbson is needed, so the examples use this file too (examples/common).
 */
#ifndef RELAY_REDACT_H
#define RELAY_REDACT_H

#include <stdbool.h>

/* Registered secrets shorter than this are not searched for in log lines. */
#define RELAY_REDACT_MIN_LEN 4

/* A copy of @uri with the password of "user:password@" and the values of query parameters
 * that name a secret (password, secret, token: tlsCertificateKeyFilePassword=...,
 * authMechanismProperties=AWS_SESSION_TOKEN:...) replaced by "***"; the user name stays.
 * Over-redacts rather than leaks when the URI is malformed (an unescaped '@' or '/' in the
 * password). NULL gives NULL. */
char *relay_redact_uri(const char *uri);

/* A copy of @message in which every secret of @uri (as written and percent-decoded; @uri
 * may be NULL), every registered secret and the quoted password of mongoc's
 * `Password "..." must not have unescaped chars` are replaced by "***". NULL gives NULL. */
char *relay_redact_message(const char *message, const char *uri);

/* Like relay_redact_message(@message, NULL), but returns NULL when nothing had to be cut
 * (the common case, so relay_log() copies nothing). */
char *relay_redact_known(const char *message);

/* Remembers @secret (copied) so that relay_redact_message() and the log cut it out. NULL,
 * "" and repeats are ignored. */
void relay_redact_register(const char *secret);

/* Registers every secret of @uri (its password and secret query values, as written and
 * percent-decoded). NULL is ignored. */
void relay_redact_register_uri(const char *uri);

/* Forgets every registered secret (tests; the end of main()). */
void relay_redact_forget_all(void);

#endif /* RELAY_REDACT_H */

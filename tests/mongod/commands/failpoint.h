/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Fault injection as mongod's test commands provide it: configureFailPoint with the
 * failCommand and failGetMoreAfterCursorCheckout fail points. Callers hold the server lock.
 */
#ifndef MD_FAILPOINT_H
#define MD_FAILPOINT_H

#include <bson/bson.h>

typedef struct {
   int mode;  /* 0 off, 1 alwaysOn, 2 times, 3 skip */
   int64_t n; /* times left, or skips left */
   int64_t entered;
   bson_t *data;
} md_failpoint_t;

typedef struct {
   md_failpoint_t fail_command;
   md_failpoint_t fail_getmore; /* failGetMoreAfterCursorCheckout */
   md_failpoint_t txn_write;    /* onPrimaryTransactionalWrite */
} md_failpoints_t;

/* What a triggered fail point asks for. `labels` and `wce` borrow from the fail point's
 * data and stay valid while the server lock is held. */
typedef struct {
   bool hit;
   int32_t code; /* 0: no error */
   bool close_connection;
   int64_t block_ms;
   bool has_labels;
   bson_iter_t labels;    /* errorLabels array, if has_labels */
   const bson_t *wce_doc; /* writeConcernError (NULL if none) */
   bson_t wce;
} md_fp_action_t;

void md_failpoints_destroy(md_failpoints_t *fps);

/* Runs configureFailPoint; appends `count` to reply. */
bool md_failpoint_configure(md_failpoints_t *fps, const bson_t *cmd, bson_t *reply,
                            bson_error_t *error);

/* Checks failCommand for command `name` from a client named `app_name` (may be NULL). */
void md_failpoint_check(md_failpoints_t *fps, const char *name, const char *app_name,
                        md_fp_action_t *action);

/* Checks onPrimaryTransactionalWrite (for a retryable write that is about to run):
 * failBeforeCommitExceptionCode comes back as action->code, closeConnection as
 * action->close_connection (to apply after the write). */
void md_failpoint_check_txn_write(md_failpoints_t *fps, md_fp_action_t *action);

/* Checks failGetMoreAfterCursorCheckout. */
void md_failpoint_check_getmore(md_failpoints_t *fps, md_fp_action_t *action);

#endif

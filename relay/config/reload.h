/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What SIGHUP does to the configuration.
 *
 * Called on the signal thread; see reload.c for what it may touch.
 */
#ifndef RELAY_RELOAD_H
#define RELAY_RELOAD_H

#include "config/config.h"

/* Reads the configuration again the way main() read it at start (@argc/@argv, the
 * environment, the config file) and applies what can change while the relay runs: the log
 * level, format and file. Every other option that changed is named in one warning and keeps
 * its running value until a restart (a different database or topic mid-stream would break
 * the guarantees the running state was built on). A configuration that no longer loads, or a
 * log file that cannot be opened, is reported and changes nothing. Without a config file
 * nothing can have changed, so it only reopens the log file (for logrotate). @running is the
 * configuration the relay runs with; it is not modified. Call from one thread at a time. */
void relay_reload(const relay_config_t *running, int argc, char **argv);

/* Appends to @out the names of the options whose values differ between @a and @b, as
 * "name, name"; secrets and URIs are compared in full but never shown. The log options are
 * left out unless @with_log. */
void relay_config_diff(const relay_config_t *a, const relay_config_t *b, bool with_log,
                       bson_string_t *out);

#endif /* RELAY_RELOAD_H */

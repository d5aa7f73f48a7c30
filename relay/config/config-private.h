/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The option table shared by config.c (loading), config-value.c (parsing one value) and
 * config-dump.c (--help, --check-config). One row per option keeps the flag, the variable,
 * the config-file key, the default, the help text and the validation in one place, so they
 * cannot drift apart.
 *
 * The table is constant (config-table.c); the functions work on the relay_config_t they are
 * given and keep no state of their own.
 */
#ifndef RELAY_CONFIG_PRIVATE_H
#define RELAY_CONFIG_PRIVATE_H

#include <stddef.h>

#include "config/config.h"

typedef enum {
   OPT_STRING,       /* char *; "" allowed only where noted */
   OPT_SECRET,       /* char *; never printed, not accepted as a flag (visible in ps) */
   OPT_SECRET_FILE,  /* char * path; the file's contents go to mqtt_password */
   OPT_URI_MONGODB,  /* char *; parsed by mongoc */
   OPT_URI_MQTT,     /* char *; scheme checked */
   OPT_TEMPLATE,     /* char *; placeholders checked */
   OPT_NAME,         /* char *; a MongoDB database/collection/field name */
   OPT_FILE,         /* char *; must be readable */
   OPT_INT,          /* int in [min, max] */
   OPT_SIZE,         /* size_t in [min, max] */
   OPT_BOOL,         /* bool; a flag without a value means true */
   OPT_LIST,         /* char ** at offset, its size_t count at offset max (collections...) */
   OPT_QOS,          /* int 0..2 */
   OPT_MQTT_VERSION, /* int 4 or 5 */
   OPT_LEVEL,        /* relay_log_level_t */
   OPT_FORMAT,       /* relay_log_format_t */
   OPT_PAYLOAD,      /* relay_payload_mode_t */
   OPT_PROPS,        /* unsigned RELAY_PROP_* bits: all, none or a list (user-props.c) */
   OPT_LISTEN,       /* char *; HOST:PORT, "" or "off" */
} relay_opt_type_t;

/* Kinds of OPT_NAME and OPT_LIST, in relay_opt_t.min: MongoDB's naming rules differ. */
enum {
   RELAY_NAME_DATABASE = 0,
   RELAY_NAME_COLLECTION = 1,
   RELAY_NAME_FIELD = 2,
   RELAY_NAME_NAMESPACE = 3, /* DB.COLL with `*` globs (namespace.h) */
};

/* An OPT_LIST's items and count in @cfg. */
#define RELAY_OPT_ITEMS(cfg, opt) ((char ***)((char *)(cfg) + (opt)->offset))
#define RELAY_OPT_COUNT(cfg, opt) ((size_t *)((char *)(cfg) + (size_t)(opt)->max))
#define RELAY_OPT_CITEMS(cfg, opt) ((char **const *)((const char *)(cfg) + (opt)->offset))
#define RELAY_OPT_CCOUNT(cfg, opt) ((const size_t *)((const char *)(cfg) + (size_t)(opt)->max))

typedef struct {
   const char *name; /* flag without "--" and config-file key */
   const char *env;  /* environment variable */
   relay_opt_type_t type;
   size_t offset;      /* of the field in relay_config_t */
   long long min, max; /* OPT_INT, OPT_SIZE: range; OPT_STRING: min length; OPT_NAME: kind */
   const char *arg;    /* placeholder in --help, NULL for booleans */
   const char *def;    /* default as shown in --help (relay_config_init_defaults() sets it) */
   const char *help;   /* one line */
} relay_opt_t;

extern const relay_opt_t relay_opts[];
extern const size_t relay_n_opts;

/* Where a value came from, for error messages. */
typedef enum {
   RELAY_SRC_DEFAULT = 0,
   RELAY_SRC_FILE,
   RELAY_SRC_ENV,
   RELAY_SRC_FLAG,
} relay_src_t;

/* Parses @text for @opt and stores it in @cfg; @what names the source in messages ("--qos",
 * "OUTBOX_QOS", "config file 'f.json': key \"qos\""). @append adds to a list instead of
 * replacing it. Returns false and fills @error on a bad value. */
bool _relay_opt_apply(relay_config_t *cfg, const relay_opt_t *opt, const char *text,
                      const char *what, bool append, bson_error_t *error);

/* Reads a secret file: the contents without one trailing newline. */
char *_relay_read_secret_file(const char *path, const char *what, bson_error_t *error);

/* True if @uri starts with a scheme the relay knows (any case); *@len is its length with
 * "://". */
bool _relay_mqtt_scheme(const char *uri, size_t *len);

/* Checks what follows the scheme (@scheme_len bytes) of an MQTT URI: a host or a bracketed
 * IPv6 address, an optional port 1-65535, no path except for ws:// and wss:// (mqtt-uri.c).
 * Returns false and fills @error, naming @what and the reason, otherwise. */
bool _relay_mqtt_uri_check_address(const char *uri, size_t scheme_len, const char *what,
                                   bson_error_t *error);

/* Warns (relay_log) that @path, described by @what, is readable by other users, naming its
 * mode, when @mode has S_IROTH: as ssh and mosquitto do for files holding secrets. */
void _relay_warn_readable(const char *what, const char *path, unsigned mode);

/* Looks up an option by flag or key name (also accepts "collections"). NULL if unknown. */
const relay_opt_t *_relay_opt_find(const char *name, size_t len);

/* The option's current value as text for dumps (redacted); bson_free() the result. NULL if
 * unset. */
char *_relay_opt_value_text(const relay_config_t *cfg, const relay_opt_t *opt);

/* Whether @opt has the same value in @a and @b; secrets and URIs are compared in full. */
bool _relay_opt_equal(const relay_config_t *a, const relay_config_t *b, const relay_opt_t *opt);

/* user-props.c: --user-properties "all", "none" or a comma-separated list of names, to bits
 * and back ("all", "none" or the list in a fixed order). */
bool _relay_user_props_parse(const char *text, unsigned *bits, const char *what,
                             bson_error_t *error);
char *_relay_user_props_text(unsigned bits);

/* Reads the JSON config file at @path and applies its keys to @cfg (config-file.c). */
bool _relay_config_load_file(relay_config_t *cfg, const char *path, bson_error_t *error);

/* After all layers: fills derived defaults (client id), normalises "off" values to NULL and
 * checks what involves several options (required ones, TLS options with a TLS URI ...). */
bool _relay_config_finish(relay_config_t *cfg, bson_error_t *error);

/* The archive options (archive.c): --archive-ttl parsed into archive_ttl_s, and an archive
 * collection that is none of the relay's other collections. */
bool _relay_config_check_archive(relay_config_t *cfg, bson_error_t *error);

/* A duration in whole seconds (base/duration.h: "30d", "1.5h", "90m", "3600s", "2w" or a
 * plain number of seconds; at most 100 years); "none" or "0": 0. False for anything else. */
bool _relay_parse_duration(const char *text, int64_t *seconds);

/* Parses message-expiry and expired-events into their loaded forms (config/expiry.c). */
bool _relay_config_check_expiry(relay_config_t *cfg, bson_error_t *error);

#endif /* RELAY_CONFIG_PRIVATE_H */

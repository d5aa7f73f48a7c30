/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "util/version.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <MQTTAsync.h>
#include <microhttpd.h>
#include <mongoc/mongoc.h>
#include <outbox/outbox.h>

const char *
relay_version(void)
{
   return OUTBOX_VERSION_STRING;
}

static char long_version[512];
static pthread_once_t long_version_once = PTHREAD_ONCE_INIT;

static const char *
paho_version(void)
{
   for (MQTTAsync_nameValue *nv = MQTTAsync_getVersionInfo(); nv && nv->name; nv++) {
      if (strcmp(nv->name, "Version") == 0) {
         return nv->value;
      }
   }
   return "unknown";
}

static void
build_long_version(void)
{
   /* Runtime versions, not the headers': a bug report needs what actually ran. */
   snprintf(long_version, sizeof long_version,
            "outbox-relay %s\nliboutbox %s\nlibmongoc %s\nlibbson %s\npaho.mqtt.c %s\n"
            "libmicrohttpd %s\n",
            relay_version(), outbox_get_version(), mongoc_get_version(), bson_get_version(),
            paho_version(), MHD_get_version());
}

const char *
relay_version_long(void)
{
   pthread_once(&long_version_once, build_long_version);
   return long_version;
}

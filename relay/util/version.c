/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's version and, for --version, those of the libraries it was built with and runs
 * against (version.h). Its one piece of state, the long version text, is built once under
 * pthread_once and only read afterwards: any thread may call it.
 */
#include "util/version.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
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

/* The malloc that runs: jemalloc when the build linked it (meson -Dallocator) or it was
 * preloaded, found by its mallctl() entry point rather than by a build flag, so a link that
 * dropped it shows. */
static void
malloc_version(char *buf, size_t size)
{
   int (*mallctl)(const char *, void *, size_t *, void *, size_t);
   /* POSIX's way to a function from dlsym(); a cast would be an ISO C diagnostic. */
   *(void **)&mallctl = dlsym(RTLD_DEFAULT, "mallctl");
   const char *v = NULL;
   size_t len = sizeof v;
   if (mallctl && mallctl("version", (void *)&v, &len, NULL, 0) == 0 && v) {
      snprintf(buf, size, "jemalloc %s", v);
   } else {
      snprintf(buf, size, "glibc %s", gnu_get_libc_version());
   }
}

static void
build_long_version(void)
{
   char malloc_v[128];
   malloc_version(malloc_v, sizeof malloc_v);
   /* Runtime versions, not the headers': a bug report needs what actually ran. */
   snprintf(long_version, sizeof long_version,
            "outbox-relay %s\nliboutbox %s\nlibmongoc %s\nlibbson %s\npaho.mqtt.c %s\n"
            "libmicrohttpd %s\nmalloc %s\n",
            relay_version(), outbox_get_version(), mongoc_get_version(), bson_get_version(),
            paho_version(), MHD_get_version(), malloc_v);
}

const char *
relay_version_long(void)
{
   pthread_once(&long_version_once, build_long_version);
   return long_version;
}

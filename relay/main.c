/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-relay entry point: arguments, signals and exit code only.
 */
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "relay.h"

static void
usage(FILE *out)
{
   fprintf(out, "Usage: outbox-relay [OPTIONS]\n"
                "Publish events from MongoDB outbox documents to MQTT.\n\n"
                "  -h, --help      show this help and exit\n"
                "  -V, --version   show the version and exit\n");
}

int
main(int argc, char **argv)
{
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
         usage(stdout);
         return EX_OK;
      }
      if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
         printf("outbox-relay %s\n", relay_version());
         return EX_OK;
      }
      fprintf(stderr, "outbox-relay: unknown option '%s' (see --help)\n", argv[i]);
      return EX_USAGE;
   }
   usage(stderr);
   return EX_USAGE;
}

// A command's rlimits as the server sends them ("cpu=N,data=N,...": limits.ts), for the bwrap
// supervisor's enter.c and the Docker agent (../../docker/agent/agent.c). Header-only (static
// functions): each program includes it once.
#pragma once
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#pragma GCC diagnostic ignored "-Wunused-function"

static const struct {
  const char *name;
  int resource;
} LIMITS[] = {
    {"cpu", RLIMIT_CPU},     {"data", RLIMIT_DATA}, {"as", RLIMIT_AS},         {"nproc", RLIMIT_NPROC},
    {"fsize", RLIMIT_FSIZE}, {"core", RLIMIT_CORE}, {"nofile", RLIMIT_NOFILE},
};

/* Calls set(resource, value, name) for each item of `spec` whose name is a limit above, in order;
 * stops at the first call that returns nonzero and returns that. -1 (errno E2BIG): a spec longer than
 * limits.ts makes. No allocation: the agent calls it in a forked child of a container that may be
 * out of memory. */
static int each_limit(const char *spec, int (*set)(int resource, unsigned long long v, const char *name)) {
  char copy[512];
  if (strlen(spec) >= sizeof copy) {
    errno = E2BIG;
    return -1;
  }
  strcpy(copy, spec);
  int r = 0;
  for (char *save = NULL, *item = strtok_r(copy, ",", &save); item && !r; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) continue;
    *eq = 0;
    unsigned long long v = strtoull(eq + 1, NULL, 10);
    for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0] && !r; i++)
      if (strcmp(LIMITS[i].name, item) == 0) r = set(LIMITS[i].resource, v, item);
  }
  return r;
}

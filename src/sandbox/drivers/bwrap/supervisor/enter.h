// One command inside a sandbox: see enter.c.
#pragma once
#include <linux/filter.h>
#include <sys/types.h>

struct enter {
  uid_t uid;
  gid_t gid;
  const char *dir;    /* working directory inside the sandbox */
  const char *limits; /* "cpu=N,data=N,..." */
  char **argv;
  char **envp;
  pid_t parent; /* the supervisor */
  const struct sock_fprog *filter;
};

/* In a fresh child whose fds 0-3 are the command's stdio and result channel, 4 the holder's /proc
 * directory and 5 the status pipe. Never returns. */
void enter_and_exec(const struct enter *e) __attribute__((noreturn));

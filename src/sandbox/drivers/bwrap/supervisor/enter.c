// Runs one command inside a rollout's existing sandbox, in a child of the supervisor (H):
//
//   H (host uid 0)  joins the holder's namespaces, found through its /proc directory (fd 4: once the
//     |             holder is gone it names nothing, never a process that reused its pid); waits.
//     I  (in the sandbox's PID namespace)  unshares a PID, mount and IPC namespace for the command.
//       C  (PID 1 of the command's namespace, non-dumpable)  mounts the command's own /proc; reaps.
//         D  drops every privilege (joins the holder's own user namespace, where the sandbox uid is
//            itself and no further user namespace may be made; bounding set, capabilities), applies
//            the rlimits, no_new_privs and the seccomp filter, and execs the command.
//
// Whatever the command starts lives in its PID namespace, so it all dies when C does: when the
// command exits (C returns its status), or when the supervisor kills the chain's process group
// (timeout, abort; C and I also die with their parent). H, I and C keep the host's uid 0 (unmapped
// inside) and their capabilities, so no process of the sandbox can signal, trace or read them, and
// the command sees none of them but C (as its PID 1). Failures of our own are one line on fd 5,
// never on the command's stderr, so a command cannot fake them: "gone" (the sandbox was gone, the
// command never ran), "lost" (it went while the command ran), "setup <what>: <error>"; H exits 125.
#define _GNU_SOURCE
#include "enter.h"
#include "limits.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROC_FD 4
#define STATUS_FD 5
#define EXIT_SETUP 125

static void report(const char *what, int err) {
  if (err == 0) dprintf(STATUS_FD, "%s\n", what);
  else dprintf(STATUS_FD, "setup %s: %s\n", what, strerror(err));
}

static __attribute__((noreturn)) void fail(const char *what) {
  report(what, errno);
  _exit(EXIT_SETUP);
}

/* The sandbox is gone: "gone" when the command never started, "lost" when it died while running. */
static __attribute__((noreturn)) void gone(const char *how) {
  report(how, 0);
  _exit(EXIT_SETUP);
}

/* Dies with the parent; `alive` is a pipe whose write end only the parent holds, to catch a parent
 * that died before the prctl. */
static void die_with_parent(int alive[2]) {
  close(alive[1]);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail("pdeathsig");
  struct pollfd p = {.fd = alive[0], .events = POLLIN};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) _exit(EXIT_SETUP);
}

/* Waits for `pid`, reaping any other child; its status as a shell reports it (128 + signal). */
static int wait_for(pid_t pid) {
  for (;;) {
    int st;
    pid_t got = waitpid(-1, &st, __WALL);
    if (got < 0) {
      if (errno == EINTR) continue;
      return EXIT_SETUP;
    }
    if (got != pid) continue;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  }
}

/*
 * Forks; the parent closes the command's stdio, waits and exits with the child's status. With
 * `sandbox_ns` the child is the first process in the sandbox's PID namespace: a fork that fails with
 * ENOMEM there means the namespace has no init any more (the holder is gone), and a child killed by
 * a signal is checked the same way (the holder's death kills every process of its namespace).
 */
static void fork_and_wait(int sandbox_ns) {
  int alive[2];
  if (pipe2(alive, O_CLOEXEC) != 0) fail("pipe");
  pid_t pid = fork();
  if (pid < 0) {
    if (sandbox_ns && errno == ENOMEM) gone("gone");
    fail("fork");
  }
  if (pid == 0) {
    die_with_parent(alive);
    return;
  }
  close(alive[0]);
  for (int fd = 0; fd <= 3; fd++) close(fd);
  int st;
  while (waitpid(pid, &st, __WALL) < 0) {
    if (errno != EINTR) _exit(EXIT_SETUP);
  }
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  if (sandbox_ns) {
    pid_t probe = fork();
    if (probe < 0 && errno == ENOMEM) gone("lost");
    if (probe == 0) _exit(0);
    if (probe > 0) waitpid(probe, NULL, __WALL);
  }
  _exit(128 + WTERMSIG(st));
}

/* Sets one limit, soft and hard; a refusal fails the command's setup, naming the limit. */
static int set_limit(int resource, unsigned long long v, const char *name) {
  struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
  if (setrlimit(resource, &rl) != 0) fail(name);
  return 0;
}

static void apply_limits(const char *spec) {
  if (each_limit(spec, set_limit) != 0) fail("limits");
}

/* The command's own /proc (its own processes only), with what bubblewrap also keeps read-only. */
static void mount_proc(void) {
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) fail("mount /proc");
  static const char *const RO[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
  for (size_t i = 0; i < sizeof RO / sizeof RO[0]; i++) {
    if (mount(RO[i], RO[i], NULL, MS_BIND | MS_REC, NULL) != 0) {
      if (errno == ENOENT) continue;
      fail("bind /proc");
    }
    if (mount(NULL, RO[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) fail("remount /proc");
  }
}

static void drop_privileges(uid_t uid, int userns) {
  /* Joining a user namespace grants every capability in it, bounding set included: drop after. */
  if (setns(userns, CLONE_NEWUSER) != 0) fail("ns/user");
  close(userns);
  for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) fail("bounding set");
  }
  if (setresuid(uid, uid, uid) != 0) fail("setresuid");
  /* uid 0 of that namespace is not mapped, so the uid change kept our capabilities: drop them. */
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) != 0) fail("capset");
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) fail("ambient");
}

void enter_and_exec(const struct enter *e) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != e->parent) _exit(EXIT_SETUP);
  if (setpgid(0, 0) != 0) fail("setpgid"); /* the supervisor kills the whole chain by this group */
  if (fcntl(STATUS_FD, F_SETFD, FD_CLOEXEC) != 0) _exit(EXIT_SETUP);

  /* The holder's namespaces. Its own user namespace is nested (bwrap --disable-userns: there the
   * sandbox uid is itself and no more user namespaces may be made); the others belong to its
   * parent, where the sandbox uid is 0: we join that one, the command the holder's. */
  static const struct {
    const char *name;
    int type;
  } NS[] = {{"ns/cgroup", CLONE_NEWCGROUP}, {"ns/uts", CLONE_NEWUTS}, {"ns/net", CLONE_NEWNET}, {"ns/pid", CLONE_NEWPID}, {"ns/mnt", CLONE_NEWNS}};
  enum { COUNT = sizeof NS / sizeof NS[0] };
  int fds[COUNT];
  for (int i = 0; i < COUNT; i++) {
    fds[i] = openat(PROC_FD, NS[i].name, O_RDONLY | O_CLOEXEC);
    if (fds[i] < 0) {
      if (errno == ENOENT || errno == ESRCH) gone("gone");
      fail(NS[i].name);
    }
  }
  int inner_userns = openat(PROC_FD, "ns/user", O_RDONLY | O_CLOEXEC);
  int root = openat(PROC_FD, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (inner_userns < 0 || root < 0) {
    if (errno == ENOENT || errno == ESRCH) gone("gone");
    fail("root");
  }
  close(PROC_FD);
  int userns = ioctl(fds[COUNT - 1], NS_GET_USERNS);
  if (userns < 0) fail("user namespace");

  int root_on_host = getuid() == 0;
  /* Groups and gid while still on the host: setgroups is refused inside. */
  if (root_on_host && (setgroups(0, NULL) != 0 || setresgid(e->gid, e->gid, e->gid) != 0)) fail("setresgid");
  /* The user namespace first: joining the others takes CAP_SYS_ADMIN in our own user namespace,
   * which a server that is not root on the host has only there (it owns that namespace). */
  if (setns(userns, CLONE_NEWUSER) != 0) fail("ns/user");
  close(userns);
  for (int i = 0; i < COUNT; i++) {
    if (setns(fds[i], NS[i].type) != 0) fail(NS[i].name);
    close(fds[i]);
  }
  if (fchdir(root) != 0 || chroot(".") != 0) fail("chroot");
  close(root);

  fork_and_wait(1); /* I: in the sandbox's PID namespace */
  if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC) != 0) fail("unshare");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("private mounts");

  fork_and_wait(0); /* C: PID 1 of the command's namespace */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail("dumpable");
  mount_proc();

  pid_t pid = fork(); /* D: the command */
  if (pid < 0) fail("fork");
  if (pid > 0) {
    for (int fd = 0; fd <= 3; fd++) close(fd);
    /* When the command is done, so is everything it started: C's exit empties the namespace. */
    _exit(wait_for(pid));
  }
  drop_privileges(e->uid, inner_userns);
  if (e->limits[0]) apply_limits(e->limits);
  if (chdir(e->dir) != 0) {
    /* the model's own working directory (gone, or not a directory): its error, on its stderr */
    dprintf(2, "cannot enter %s: %s\n", e->dir, strerror(errno));
    _exit(1);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, e->filter) != 0) fail("seccomp");
  syscall(SYS_close_range, 4U, ~0U, 0U); /* stdio and the result channel only */
  execvpe(e->argv[0], e->argv, e->envp);
  dprintf(2, "%s: %s\n", e->argv[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

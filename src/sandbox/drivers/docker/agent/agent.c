// rft-agent: the Docker driver's one long-lived channel into a container (see README.md beside this
// file). The server starts it with the container's first exec (attached, as the sandbox uid) and
// then runs every command, file helper and long-running process of the rollout through it, in the
// bwrap supervisor's frames (../../bwrap/supervisor/frames.h), instead of one engine exec per call.
// A command's pipes, output, stdin and end, and the event loop, are the supervisor's code
// (../../bwrap/supervisor/commands.h); this file holds the agent's own: its child, its reaping and
// sweep, what it does when the server is gone.
//
//  * It runs as the sandbox's own uid (the container has no capabilities to change uids with), is
//    non-dumpable (no process of the sandbox can ptrace it or open its /proc fd, mem or environ),
//    and gives a command only its stdio and result channel (every other descriptor is close-on-exec
//    and closed in the child). A process of the rollout can still signal it: that is the rollout
//    ending its own channel, which the server reports as such (RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT).
//  * Every command leads its own session (setsid). When it exits, or is killed ('S'), its process
//    group is killed and then a sweep stops, then kills, every process of the uid that is neither
//    under a running command of this agent nor under another exec of the container (a process
//    whose parent is outside the container, PPid 0: another replica's agent, the exec fallback):
//    what the command left (background jobs, setsid daemons, double forks). Stopped first, pass by
//    pass, so nothing forks behind the walk. A child subreaper where the kernel has one (runc), so
//    orphans come back here; gVisor has none, and the walk finds them under the container's init.
//  * stdin EOF (the server or its connection is gone): every command is killed and it exits 0.
//
// Requests (server -> agent), as the supervisor's (supervisor.c), fields in order:
//   'X' sandbox (unused), uid, gid (unused: the agent's own), cwd, limits, argv, env (NUL-separated),
//       stdin, flags ('r' result channel on fd 3, 's' stdin streamed), output cap per stream
//   'I' data      'J' (end of stdin)      'S' (kill the command), with the id of its 'X'
// Replies: 'R' 0 "ready" <pid> once started; 'o' 'e' 'r' data; 'x' exit code or "" (128 + n for a
//   signal the command got elsewhere than from an 'S', as the bwrap supervisor reports it), signal or "",
//   truncated streams ("oer" subset), failure ("" or one line: "setup <what>: <error>").
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../bwrap/supervisor/commands.h" /* and frames.h */
#include "../../bwrap/supervisor/limits.h"

#define LINGER_MS 250
#define MAX_PASSES 16

static pid_t self;

/* Commands (commands.h) are found by a walk: an agent has few at a time. */
static struct proc *find_proc(uint32_t id) {
  for (uint32_t i = 0; i < procs.len; i++) {
    struct proc *p = procs.items[i];
    if (p && p->id == id) return p;
  }
  return NULL;
}

/* A running command by its pid (also its session and process group). */
static struct proc *find_pid(pid_t pid) {
  for (uint32_t i = 0; i < procs.len; i++) {
    struct proc *p = procs.items[i];
    if (p && p->pid == pid && !p->exited) return p;
  }
  return NULL;
}

/* ---------- the sweep ---------- */

struct pinfo {
  pid_t pid, ppid, sid;
};

static struct pinfo *table;
static size_t ntable, captable;

/* Reads every process's pid, parent and session (what /proc/N/stat says past the command name). */
static void read_table(void) {
  ntable = 0;
  DIR *d = opendir("/proc");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    char state;
    int ppid, pgrp, sid;
    if (!rp || sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4 || state == 'Z') continue;
    if (ntable == captable) {
      captable = captable ? captable * 2 : 256;
      table = realloc(table, captable * sizeof *table);
      if (!table) abort();
    }
    table[ntable++] = (struct pinfo){atoi(e->d_name), ppid, sid};
  }
  closedir(d);
}

static struct pinfo *lookup(pid_t pid) {
  for (size_t i = 0; i < ntable; i++)
    if (table[i].pid == pid) return &table[i];
  return NULL;
}

/* Whether the process must be left alone: this agent, the init, or under a running command of ours
 * (its session, or its ancestry) or under another exec of the container. */
static int spared(const struct pinfo *p) {
  if (p->pid == self || p->pid == 1) return 1;
  struct proc *c = find_pid(p->sid);
  if (c) return 1;
  const struct pinfo *at = p;
  for (int depth = 0; at && depth < 4096; depth++) {
    if (find_pid(at->pid)) return 1; /* a running command, or under one */
    if (at->pid == self) return 0;                        /* an orphan of ours (subreaper) */
    if (at->ppid == 0) return 1;                          /* another exec's process */
    if (at->ppid == 1) return 0;                          /* an orphan under the init */
    at = lookup(at->ppid);
  }
  return 0;
}

static pid_t *stopped;
static size_t nstopped, capstopped;

static int was_stopped(pid_t pid) {
  for (size_t i = 0; i < nstopped; i++)
    if (stopped[i] == pid) return 1;
  return 0;
}

/* Stops, then kills, every process the sweep finds (see the top of this file). */
static void sweep(void) {
  nstopped = 0;
  for (int pass = 0; pass < MAX_PASSES; pass++) {
    read_table();
    int grew = 0;
    for (size_t i = 0; i < ntable; i++) {
      struct pinfo *p = &table[i];
      if (was_stopped(p->pid) || spared(p)) continue;
      if (kill(p->pid, SIGSTOP) != 0) continue; /* another uid's, or gone */
      if (nstopped == capstopped) {
        capstopped = capstopped ? capstopped * 2 : 64;
        stopped = realloc(stopped, capstopped * sizeof *stopped);
        if (!stopped) abort();
      }
      stopped[nstopped++] = p->pid;
      grew = 1;
    }
    if (!grew) break;
  }
  for (size_t i = 0; i < nstopped; i++) kill(stopped[i], SIGKILL);
}

/* ---------- commands (commands.h) ---------- */

/* Kills a command's process group (its session's, from its setsid on), and the command itself. */
static void kill_proc(struct proc *p) {
  kill(-p->pid, SIGKILL);
  kill(p->pid, SIGKILL);
}

/* In the child: lowers one rlimit; a limit above the container's stays as it is (a refusal too). */
static int lower_limit(int resource, unsigned long long v, const char *name) {
  (void)name;
  struct rlimit rl;
  if (getrlimit(resource, &rl) != 0) return 0;
  if (rl.rlim_max != RLIM_INFINITY && v > rl.rlim_max) v = rl.rlim_max;
  rl.rlim_cur = rl.rlim_max = v;
  setrlimit(resource, &rl);
  return 0;
}

/* The container is the sandbox: any command runs, as this agent's uid and gid. */
static const char *exec_refused(struct exec_req *x) {
  (void)x;
  return NULL;
}

/* Leads its own session, gets its stdio, result channel (fd 3) and the status pipe (fd 4, for our
 * failures, never the command's), the container's rlimits lowered to the request's. */
static void exec_child(const struct exec_req *x, const int fds[5]) {
  setsid();
  if (place_fds(fds, 5) != 0) _exit(125);
  fcntl(4, F_SETFD, FD_CLOEXEC);
  if (!x->result) close(3);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* the command's own /proc/self (gVisor keeps the flag across execve) */
  if (x->limits[0] && each_limit(x->limits, lower_limit) != 0) {
    dprintf(4, "setup limits: %s\n", strerror(errno));
    _exit(125);
  }
  if (chdir(x->cwd) != 0) {
    dprintf(2, "cannot enter %s: %s\n", x->cwd, strerror(errno));
    _exit(1);
  }
  execvpe(x->argv[0], x->argv, x->envp);
  dprintf(2, "%s: %s\n", x->argv[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

/* No setpgid here: it would make the child a group leader, whose setsid then fails. A kill read
 * before the child's setsid ran takes the child itself (see kill_proc). */
static void proc_added(struct proc *p) {
  (void)p;
}

static void proc_forgotten(struct proc *p) {
  (void)p;
}

static void reap(void) {
  int swept = 0;
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
    if (pid <= 0) break;
    struct proc *p = find_pid(pid);
    if (!p) continue; /* an orphan that came back to us (subreaper) */
    kill(-pid, SIGKILL); /* its process group */
    proc_exited(p, st, LINGER_MS, 1); /* its own signal (a crash, a kill from the rollout): 128 + n */
    swept = 1;
  }
  if (!swept) return;
  sweep(); /* what the ended commands left, once for all of them */
  for (uint32_t i = 0; i < procs.len; i++) {
    struct proc *p = procs.items[i];
    if (p && p->exited) proc_maybe_done(p);
  }
}

static struct buf in;

static void __attribute__((noreturn)) kill_all_and_exit(void) {
  for (uint32_t i = 0; i < procs.len; i++) {
    struct proc *p = procs.items[i];
    if (p && !p->exited) kill_proc(p);
    if (p) p->exited = 1;
  }
  sweep();
  _exit(0);
}

static void handle_frame(char type, uint32_t id, struct fields *f) {
  struct proc *pr;
  switch (type) {
  case 'X': start_exec(id, f); break;
  case 'I': proc_input(find_proc(id), f); break;
  case 'J': proc_input_end(find_proc(id)); break;
  case 'S':
    if ((pr = find_proc(id)) && !pr->exited) {
      pr->killed = 1;
      kill_proc(pr); /* the sweep follows its reaping */
    }
    break;
  default: break;
  }
}

static void read_requests(void) {
  if (read_frames(&in, handle_frame) != 0) kill_all_and_exit();
}

static void server_gone(void) {
  kill_all_and_exit();
}

static void own_event(int kind, uint32_t index) {
  (void)kind, (void)index; /* none: commands only */
}

static void turn_end(void) {}

extern char **environ;

int main(void) {
  self = getpid();
  /* Never as root: its sweep kills every process it can signal outside its commands' trees, which
   * for root outside a container is the whole machine (it happened once, run by hand on a host). It
   * is started as the sandbox uid (client.ts); anything else is refused. */
  if (getuid() == 0 || geteuid() == 0) return 3;
  /* Its environment (the image's) is nobody's business: blanked where /proc/N/environ reads it. */
  for (char **e = environ; *e; e++) memset(*e, 0, strlen(*e));
  environ = NULL;
  /* No process of the sandbox (same uid) may ptrace this one or open its /proc fd, mem or environ. */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 2;
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* runc: orphans come back here; gVisor: refused */
  /* Nothing but stdio: whatever the exec was given beyond it is closed. */
  syscall(SYS_close_range, 3U, ~0U, 0U);
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 2), close(devnull);
  fcntl(2, F_SETFD, FD_CLOEXEC);
  loop_open();
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)self);
  reply('R', 0, S("0"), S("ready"), S(pid), NULL);
  loop_run();
}

// rft-agent: the Docker driver's one long-lived channel into a container (see README.md beside this
// file). The server starts it with the container's first exec (attached, as the sandbox uid) and
// then runs every command, file helper and long-running process of the rollout through it, in the
// bwrap supervisor's frames (../../bwrap/supervisor/frames.h), instead of one engine exec per call.
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

#include "../../bwrap/supervisor/frames.h"
#include "../../bwrap/supervisor/limits.h"

#define LINGER_MS 250
#define MAX_PASSES 16

static int epfd;
static pid_t self;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct proc {
  uint32_t id, index;
  pid_t pid; /* also its session and process group */
  int fds[3];
  size_t sent[3], cap;
  int truncated[3];
  int in_fd, in_end;
  struct buf in;
  int status_fd;
  char status[256];
  size_t status_len;
  int exited, code, sig;
  int killed; /* by an 'S': its end is reported as the signal, else as a shell says it (128 + n) */
  long long linger_until;
};

static struct proc **procs;
static uint32_t nprocs, capprocs;
static uint32_t *freed, nfreed; /* slots emptied this turn, reusable from the next one */
static uint32_t *reusable, nreusable;

enum { K_STREAM = 1, K_STDIN, K_STATUS };

static uint32_t proc_slot(struct proc *p) {
  uint32_t i;
  if (nreusable) i = reusable[--nreusable];
  else {
    if (nprocs == capprocs) {
      capprocs = capprocs ? capprocs * 2 : 64;
      procs = realloc(procs, capprocs * sizeof *procs);
      freed = realloc(freed, capprocs * sizeof *freed);
      reusable = realloc(reusable, capprocs * sizeof *reusable);
      if (!procs || !freed || !reusable) abort();
    }
    i = nprocs++;
  }
  procs[i] = p;
  return i;
}

static struct proc *find_id(uint32_t id) {
  for (uint32_t i = 0; i < nprocs; i++)
    if (procs[i] && procs[i]->id == id) return procs[i];
  return NULL;
}

static struct proc *find_pid(pid_t pid) {
  for (uint32_t i = 0; i < nprocs; i++)
    if (procs[i] && procs[i]->pid == pid && !procs[i]->exited) return procs[i];
  return NULL;
}

static void ep_add(int fd, int kind, uint32_t index, int stream, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)kind << 56) | ((uint64_t)index << 8) | (uint64_t)stream};
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void close_fd(int *fd) {
  if (*fd >= 0) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, *fd, NULL);
    close(*fd);
    *fd = -1;
  }
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

/* ---------- commands ---------- */

static void stream_read(struct proc *p, int s, int rounds) {
  static char chunk[READ_CHUNK];
  for (int r = 0; r < rounds && p->fds[s] >= 0; r++) {
    ssize_t n = read(p->fds[s], chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n <= 0) {
      close_fd(&p->fds[s]);
      break;
    }
    size_t keep = (size_t)n;
    if (p->cap && p->sent[s] + keep > p->cap) {
      keep = p->cap - p->sent[s];
      p->truncated[s] = 1;
    }
    if (keep) reply("oer"[s], p->id, chunk, keep, NULL);
    p->sent[s] += keep;
    /* Past the cap the pipe closes: the writer gets EPIPE, as with `| head -c N`. */
    if (p->truncated[s]) close_fd(&p->fds[s]);
    if ((size_t)n < sizeof chunk) break;
  }
}

static void proc_maybe_done(struct proc *p) {
  if (!p->exited) return;
  int open_streams = 0;
  for (int i = 0; i < 3; i++) open_streams += p->fds[i] >= 0;
  if ((open_streams || p->status_fd >= 0) && now_ms() < p->linger_until) return;
  for (int i = 0; i < 3; i++) stream_read(p, i, 16);
  if (p->status_fd >= 0) {
    ssize_t n = read(p->status_fd, p->status + p->status_len, sizeof p->status - 1 - p->status_len);
    if (n > 0) p->status_len += (size_t)n;
  }
  for (int i = 0; i < 3; i++) close_fd(&p->fds[i]);
  close_fd(&p->status_fd);
  close_fd(&p->in_fd);
  char code[16] = "", sig[16] = "", trunc[4] = "";
  if (p->sig) snprintf(sig, sizeof sig, "%d", p->sig);
  else snprintf(code, sizeof code, "%d", p->code);
  int t = 0;
  for (int i = 0; i < 3; i++)
    if (p->truncated[i]) trunc[t++] = "oer"[i];
  while (p->status_len && p->status[p->status_len - 1] == '\n') p->status_len--;
  /* A setup failure of ours (the child could not exec into the command's state) reports no exit. */
  if (p->status_len) code[0] = sig[0] = 0;
  reply('x', p->id, S(code), S(sig), S(trunc), p->status, p->status_len, NULL);
  procs[p->index] = NULL;
  freed[nfreed++] = p->index;
  free(p->in.data);
  free(p);
}

static void proc_write_stdin(struct proc *p) {
  while (p->in_fd >= 0 && buf_pending(&p->in)) {
    ssize_t w = write(p->in_fd, p->in.data + p->in.off, buf_pending(&p->in));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) {
      close_fd(&p->in_fd);
      return;
    }
    p->in.off += (size_t)w;
  }
  if (p->in_fd < 0) return;
  struct epoll_event ev = {.events = buf_pending(&p->in) ? EPOLLOUT : 0, .data.u64 = ((uint64_t)K_STDIN << 56) | ((uint64_t)p->index << 8)};
  if (!buf_pending(&p->in) && p->in_end) close_fd(&p->in_fd);
  else epoll_ctl(epfd, EPOLL_CTL_MOD, p->in_fd, &ev);
}

/* Kills a command's process group (its session's, from its setsid on), and the command itself. */
static void kill_proc(struct proc *p) {
  kill(-p->pid, SIGKILL);
  kill(p->pid, SIGKILL);
}

static void exec_fail(uint32_t id, const char *what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "setup %s: %s", what, strerror(err));
  reply('x', id, S(""), S(""), S(""), S(msg), NULL);
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

static int pipe_nb(int p[2], int read_nb, int write_nb) {
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  if (read_nb) fcntl(p[0], F_SETFL, O_NONBLOCK);
  if (write_nb) fcntl(p[1], F_SETFL, O_NONBLOCK);
  return 0;
}

static void start_exec(uint32_t id, struct fields *f) {
  free(field_str(f)); /* sandbox */
  (void)field_num(f); /* uid: ours */
  (void)field_num(f); /* gid: ours */
  char *cwd = field_str(f), *limits = field_str(f);
  char **argv = field_list(f), **envp = field_list(f);
  size_t stdin_len;
  const char *stdin_data = field(f, &stdin_len);
  char *flags = field_str(f);
  size_t cap = (size_t)field_num(f);
  int result = strchr(flags, 'r') != NULL, streamed = strchr(flags, 's') != NULL;
  int want_in = streamed || stdin_len > 0;
  int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, r[2] = {-1, -1}, st[2] = {-1, -1};
  if (find_id(id)) {
    reply('x', id, S(""), S(""), S(""), S("setup exec: id in use"), NULL);
    goto done;
  }
  if (!argv[0]) {
    reply('x', id, S(""), S(""), S(""), S("setup exec: no command"), NULL);
    goto done;
  }
  if ((want_in && pipe_nb(in, 0, 1)) || pipe_nb(o, 1, 0) || pipe_nb(e, 1, 0) || (result && pipe_nb(r, 1, 0)) || pipe_nb(st, 1, 0)) {
    exec_fail(id, "pipes", errno);
    goto close_all;
  }
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    int src[5] = {want_in ? in[0] : devnull, o[1], e[1], result ? r[1] : devnull, st[1]}, moved[5];
    for (int i = 0; i < 5; i++)
      if ((moved[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 5)) < 0) _exit(125);
    for (int i = 0; i < 5; i++)
      if (dup2(moved[i], i) < 0) _exit(125);
    fcntl(4, F_SETFD, FD_CLOEXEC); /* the status pipe: our failures, never the command's */
    syscall(SYS_close_range, 5U, ~0U, 0U);
    if (!result) close(3);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* the command's own /proc/self (gVisor keeps the flag across execve) */
    if (limits[0] && each_limit(limits, lower_limit) != 0) {
      dprintf(4, "setup limits: %s\n", strerror(errno));
      _exit(125);
    }
    if (chdir(cwd) != 0) {
      dprintf(2, "cannot enter %s: %s\n", cwd, strerror(errno));
      _exit(1);
    }
    execvpe(argv[0], argv, envp);
    dprintf(2, "%s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (pid < 0) {
    exec_fail(id, "fork", errno);
    goto close_all;
  }
  /* No setpgid here: it would make the child a group leader, whose setsid then fails. A kill read
   * before the child's setsid ran takes the child itself (see kill_proc). */
  struct proc *p = calloc(1, sizeof *p);
  if (!p) abort();
  p->id = id;
  p->pid = pid;
  p->cap = cap;
  p->index = proc_slot(p);
  p->fds[0] = o[0];
  p->fds[1] = e[0];
  p->fds[2] = result ? r[0] : -1;
  p->status_fd = st[0];
  p->in_fd = want_in ? in[1] : -1;
  close(o[1]);
  close(e[1]);
  close(st[1]);
  if (result) close(r[1]);
  if (want_in) close(in[0]);
  for (int s = 0; s < 3; s++)
    if (p->fds[s] >= 0) ep_add(p->fds[s], K_STREAM, p->index, s, EPOLLIN);
  ep_add(p->status_fd, K_STATUS, p->index, 0, EPOLLIN);
  if (p->in_fd >= 0) {
    ep_add(p->in_fd, K_STDIN, p->index, 0, 0);
    if (stdin_len) buf_put(&p->in, stdin_data, stdin_len);
    p->in_end = !streamed;
    proc_write_stdin(p);
  }
  goto done;
close_all:
  for (int i = 0; i < 2; i++) {
    if (in[i] >= 0) close(in[i]);
    if (o[i] >= 0) close(o[i]);
    if (e[i] >= 0) close(e[i]);
    if (r[i] >= 0) close(r[i]);
    if (st[i] >= 0) close(st[i]);
  }
done:
  free(cwd);
  free(limits);
  free(flags);
  free_list(argv);
  free_list(envp);
}

static void proc_status(struct proc *p) {
  ssize_t n = read(p->status_fd, p->status + p->status_len, sizeof p->status - 1 - p->status_len);
  if (n > 0) p->status_len += (size_t)n;
  else if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_fd(&p->status_fd);
  if (p->status_len >= sizeof p->status - 1) close_fd(&p->status_fd);
  proc_maybe_done(p);
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
    p->exited = 1;
    if (WIFEXITED(st)) p->code = WEXITSTATUS(st);
    else if (p->killed) p->sig = WTERMSIG(st);
    else p->code = 128 + WTERMSIG(st); /* its own signal (a crash, a kill from the rollout) */
    p->linger_until = now_ms() + LINGER_MS;
    swept = 1;
  }
  if (!swept) return;
  sweep(); /* what the ended commands left, once for all of them */
  for (uint32_t i = 0; i < nprocs; i++)
    if (procs[i] && procs[i]->exited) proc_maybe_done(procs[i]);
}

static struct buf in;

static void kill_all_and_exit(void) {
  for (uint32_t i = 0; i < nprocs; i++)
    if (procs[i] && !procs[i]->exited) kill_proc(procs[i]);
  for (uint32_t i = 0; i < nprocs; i++)
    if (procs[i]) procs[i]->exited = 1;
  sweep();
  _exit(0);
}

static void handle_frame(const unsigned char *p, size_t n) {
  if (n < 5) return;
  char type = (char)p[0];
  uint32_t id = get_u32(p + 1);
  struct fields f = {p + 5, n - 5};
  struct proc *pr;
  size_t len;
  const char *data;
  switch (type) {
  case 'X': start_exec(id, &f); break;
  case 'I':
    data = field(&f, &len);
    if ((pr = find_id(id)) && pr->in_fd >= 0 && len) {
      buf_put(&pr->in, data, len);
      proc_write_stdin(pr);
    }
    break;
  case 'J':
    if ((pr = find_id(id))) {
      pr->in_end = 1;
      proc_write_stdin(pr);
    }
    break;
  case 'S':
    if ((pr = find_id(id)) && !pr->exited) {
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

static int flush_out(void) {
  int pending = flush_frames();
  if (pending < 0) kill_all_and_exit();
  return pending;
}

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
  fcntl(0, F_SETFL, O_NONBLOCK);
  fcntl(1, F_SETFL, O_NONBLOCK);
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 2), close(devnull);
  fcntl(2, F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
  epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &ev);
  ev.data.u64 = 2;
  epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
  ev.events = 0;
  ev.data.u64 = 3;
  epoll_ctl(epfd, EPOLL_CTL_ADD, 1, &ev);
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)self);
  reply('R', 0, S("0"), S("ready"), S(pid), NULL);
  int out_blocked = 0;
  for (;;) {
    int pending = flush_out();
    if (pending != out_blocked) {
      ev.events = pending ? EPOLLOUT : 0;
      ev.data.u64 = 3;
      epoll_ctl(epfd, EPOLL_CTL_MOD, 1, &ev);
      out_blocked = pending;
    }
    long long next = -1, t = now_ms();
    for (uint32_t i = 0; i < nprocs; i++) {
      struct proc *p = procs[i];
      if (!p || !p->exited) continue;
      if (p->linger_until <= t) proc_maybe_done(p);
      else if (next < 0 || p->linger_until - t < next) next = p->linger_until - t;
    }
    if (buf_pending(&out) && !pending) continue; /* a reply made by the linger loop: flush it first */
    struct epoll_event events[64];
    int n = epoll_wait(epfd, events, 64, (int)next);
    for (int i = 0; i < n; i++) {
      uint64_t d = events[i].data.u64;
      if (d == 1) read_requests();
      else if (d == 2) {
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == sizeof si) {}
        reap();
      } else if (d == 3) {
      } else {
        int kind = (int)(d >> 56);
        uint32_t index = (uint32_t)((d >> 8) & 0xffffffffu);
        struct proc *p = index < nprocs ? procs[index] : NULL;
        if (!p) continue;
        if (kind == K_STREAM) {
          stream_read(p, (int)(d & 0xff), 4);
          proc_maybe_done(p);
        } else if (kind == K_STDIN) proc_write_stdin(p);
        else proc_status(p);
      }
    }
    while (nfreed) reusable[nreusable++] = freed[--nfreed];
  }
}

// Commands, as the bwrap supervisor (supervisor.c) and the Docker driver's agent
// (../../docker/agent/agent.c) run them: the 'X' request, the command's pipes, its output relayed
// within the cap ('o' 'e' 'r'), its stdin written ('I' 'J'), its end reported ('x') once its pipes
// closed or lingered long enough; and the event loop both run. Header-only (static functions), included after frames.h; each
// program includes it once. What differs between the two programs is theirs, in the hooks below:
// the supervisor enters a bwrap sandbox (enter.c) and finds its objects through maps, the agent runs
// in a container and sweeps what a command leaves.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frames.h"

static int epfd;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---------- epoll, pipes, descriptors ---------- */

/* What an epoll event names: a kind (the program's own start at K_OWN), a slot index, a stream. */
enum { K_STREAM = 1, K_STDIN, K_STATUS, K_OWN };

static uint64_t ep_data(int kind, uint32_t index, int stream) {
  return ((uint64_t)kind << 56) | ((uint64_t)index << 8) | (uint64_t)stream;
}

static void ep_add(int fd, int kind, uint32_t index, int stream, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u64 = ep_data(kind, index, stream)};
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void close_fd(int *fd) {
  if (*fd >= 0) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, *fd, NULL);
    close(*fd);
    *fd = -1;
  }
}

static int nonblock_pipe(int p[2], int read_nonblock, int write_nonblock) {
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  if (read_nonblock) fcntl(p[0], F_SETFL, O_NONBLOCK);
  if (write_nonblock) fcntl(p[1], F_SETFL, O_NONBLOCK);
  return 0;
}

/* In a child: places `src[i]` at fd i, then closes every descriptor at or above `count` (at most 16). */
static int place_fds(const int *src, int count) {
  int moved[16];
  for (int i = 0; i < count; i++) {
    moved[i] = fcntl(src[i], F_DUPFD, count);
    if (moved[i] < 0) return -1;
  }
  for (int i = 0; i < count; i++)
    if (dup2(moved[i], i) < 0) return -1;
  syscall(SYS_close_range, (unsigned)count, ~0U, 0U);
  return 0;
}

/* ---------- slots ---------- */

/* Objects live in slot arrays (an index names one in epoll data). */
struct slots {
  void **items;
  uint32_t len, cap;
  uint32_t *free, *dead; /* dead: removed in this turn of the loop, reusable from the next one */
  uint32_t nfree, ndead;
};

static uint32_t slots_add(struct slots *s, void *item) {
  uint32_t i;
  if (s->nfree) i = s->free[--s->nfree];
  else {
    if (s->len == s->cap) {
      s->cap = s->cap ? s->cap * 2 : 64;
      s->items = realloc(s->items, s->cap * sizeof(void *));
      s->free = realloc(s->free, s->cap * sizeof(uint32_t));
      s->dead = realloc(s->dead, s->cap * sizeof(uint32_t));
      if (!s->items || !s->free || !s->dead) abort();
    }
    i = s->len++;
  }
  s->items[i] = item;
  return i;
}

/* An event of this turn may still name the index: it finds NULL, never a newer object. */
static void slots_remove(struct slots *s, uint32_t i) {
  s->items[i] = NULL;
  s->dead[s->ndead++] = i;
}

static void slots_flush(struct slots *s) {
  while (s->ndead) s->free[s->nfree++] = s->dead[--s->ndead];
}

/* ---------- commands ---------- */

struct proc {
  uint32_t id, index;
  pid_t pid;
  int fds[3]; /* stdout, stderr, result channel: our read ends, -1 once closed */
  size_t sent[3];
  size_t cap; /* per stream; 0 = unlimited */
  int truncated[3];
  int in_fd;
  struct buf in;
  int in_end; /* close stdin once the buffer is written */
  int status_fd; /* our own failures in the child ("setup <what>: <error>", enter.c's "gone", "lost") */
  char status[256];
  size_t status_len;
  int exited, code, sig;
  int killed; /* by an 'S' (the agent reports any other signal as a shell does: proc_exited) */
  long long linger_until;
};

static struct slots procs;
static int lingering; /* commands that exited and wait for their pipes */

/* An 'X' request: sandbox, uid, gid, cwd, limits, argv, env, stdin, flags, output cap. */
struct exec_req {
  uint32_t id, sandbox;
  uid_t uid;
  gid_t gid;
  char *cwd, *limits, *flags;
  char **argv, **envp;
  const char *stdin_data;
  size_t stdin_len, cap;
  int result, streamed, want_in; /* flags 'r' (a result channel on fd 3), 's' (stdin streamed) */
  void *ctx; /* the program's own, from exec_refused (the supervisor's sandbox) */
};

/* Hooks: each program that includes this header defines them. */
/* The command of this 'X' id, or NULL. */
static struct proc *find_proc(uint32_t id);
/* Why the command cannot start (its 'x' failure), or NULL to start it. */
static const char *exec_refused(struct exec_req *x);
/* In the forked child: fds = its stdin, stdout, stderr, result channel (/dev/null for those not
 * wanted) and the status pipe's write end. Runs the command, never returns. */
static void exec_child(const struct exec_req *x, const int fds[5]) __attribute__((noreturn));
/* In the parent, right after the fork: `p` is in its slot (p->index); found by id and pid from now. */
static void proc_added(struct proc *p);
/* Its 'x' was sent: forget its id and pid (it is freed next). */
static void proc_forgotten(struct proc *p);

static void stream_read(struct proc *p, int s, int rounds);

static void proc_maybe_done(struct proc *p) {
  if (!p->exited) return;
  int open_streams = 0;
  for (int i = 0; i < 3; i++) open_streams += p->fds[i] >= 0;
  if ((open_streams || p->status_fd >= 0) && now_ms() < p->linger_until) return;
  /* The linger is over: take what the pipes still hold before closing them. Under load this loop can
   * come back to a command later than its linger (its exit reaped, its pipes' events not yet
   * handled): closing unread pipes then lost whole outputs (exit 0, empty stdout; 196 in a burst of
   * 2,500 calls). What is read here is bounded: the pipe's buffer, plus what something that escaped
   * the command writes meanwhile, up to the rounds. */
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
  /* A failure of ours (the child could not run the command) reports no exit. */
  if (p->status_len) code[0] = sig[0] = 0;
  reply('x', p->id, S(code), S(sig), S(trunc), p->status, p->status_len, NULL);
  lingering--;
  proc_forgotten(p);
  slots_remove(&procs, p->index);
  free(p->in.data);
  free(p);
}

/* Reads what stream s holds now, up to `rounds` chunks, relaying it within the cap. */
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

static void proc_write_stdin(struct proc *p) {
  while (p->in_fd >= 0 && buf_pending(&p->in)) {
    ssize_t w = write(p->in_fd, p->in.data + p->in.off, buf_pending(&p->in));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) { /* the command closed its stdin */
      close_fd(&p->in_fd);
      return;
    }
    p->in.off += (size_t)w;
  }
  if (p->in_fd < 0) return;
  struct epoll_event ev = {.events = buf_pending(&p->in) ? EPOLLOUT : 0, .data.u64 = ep_data(K_STDIN, p->index, 0)};
  if (!buf_pending(&p->in) && p->in_end) close_fd(&p->in_fd);
  else epoll_ctl(epfd, EPOLL_CTL_MOD, p->in_fd, &ev);
}

/* 'I': more stdin for a command that has it open. */
static void proc_input(struct proc *p, struct fields *f) {
  size_t len;
  const char *data = field(f, &len);
  if (p && p->in_fd >= 0 && len) {
    buf_put(&p->in, data, len);
    proc_write_stdin(p);
  }
}

/* 'J': its stdin ends once what is buffered is written. */
static void proc_input_end(struct proc *p) {
  if (!p) return;
  p->in_end = 1;
  proc_write_stdin(p);
}

static void proc_status(struct proc *p) {
  ssize_t n = read(p->status_fd, p->status + p->status_len, sizeof p->status - 1 - p->status_len);
  if (n > 0) p->status_len += (size_t)n;
  else if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_fd(&p->status_fd);
  if (p->status_len >= sizeof p->status - 1) close_fd(&p->status_fd);
  proc_maybe_done(p);
}

/* An event of a command's pipe: 0 when `kind` is not a command's. */
static int proc_event(int kind, uint32_t index, int stream) {
  if (kind != K_STREAM && kind != K_STDIN && kind != K_STATUS) return 0;
  struct proc *p = index < procs.len ? procs.items[index] : NULL;
  if (!p) return 1;
  if (kind == K_STREAM) {
    stream_read(p, stream, 4);
    proc_maybe_done(p);
  } else if (kind == K_STDIN) proc_write_stdin(p);
  else proc_status(p);
  return 1;
}

/* The command exited (waitpid's status): its pipes may stay open `linger` ms more, for what it left
 * that still holds them. `shell_signals`: a signal it did not get from an 'S' is reported as a shell
 * says it, exit code 128 + n (the agent; the supervisor's enter.c has done so inside the sandbox). */
static void proc_exited(struct proc *p, int st, long long linger, int shell_signals) {
  p->exited = 1;
  lingering++;
  if (WIFEXITED(st)) p->code = WEXITSTATUS(st);
  else if (shell_signals && !p->killed) p->code = 128 + WTERMSIG(st);
  else p->sig = WTERMSIG(st);
  p->linger_until = now_ms() + linger;
}

/* Ends the commands whose linger is over; the time until the next one's (ms), or -1 for none. */
static long long procs_linger(void) {
  long long next = -1, t = now_ms();
  for (uint32_t i = 0; lingering > 0 && i < procs.len; i++) {
    struct proc *p = procs.items[i];
    if (!p || !p->exited) continue;
    if (p->linger_until <= t) proc_maybe_done(p);
    else if (next < 0 || p->linger_until - t < next) next = p->linger_until - t;
  }
  return next;
}

static void exec_fail(uint32_t id, const char *what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "setup %s: %s", what, strerror(err));
  reply('x', id, S(""), S(""), S(""), S(msg), NULL);
}

/* The command's pipes, its child (exec_child), and our ends of the pipes watched. */
static void exec_start(struct exec_req *x) {
  int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, r[2] = {-1, -1}, st[2] = {-1, -1};
  if ((x->want_in && nonblock_pipe(in, 0, 1)) || nonblock_pipe(o, 1, 0) || nonblock_pipe(e, 1, 0) ||
      (x->result && nonblock_pipe(r, 1, 0)) || nonblock_pipe(st, 1, 0)) {
    exec_fail(x->id, "pipes", errno);
    goto close_all;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    exec_child(x, (int[5]){x->want_in ? in[0] : devnull, o[1], e[1], x->result ? r[1] : devnull, st[1]});
  }
  if (pid < 0) {
    exec_fail(x->id, "fork", errno);
    goto close_all;
  }
  struct proc *p = calloc(1, sizeof *p);
  if (!p) abort();
  p->id = x->id;
  p->pid = pid;
  p->cap = x->cap;
  p->index = slots_add(&procs, p);
  proc_added(p);
  p->fds[0] = o[0];
  p->fds[1] = e[0];
  p->fds[2] = x->result ? r[0] : -1;
  p->status_fd = st[0];
  p->in_fd = x->want_in ? in[1] : -1;
  close(o[1]);
  close(e[1]);
  close(st[1]);
  if (x->result) close(r[1]);
  if (x->want_in) close(in[0]);
  for (int s = 0; s < 3; s++)
    if (p->fds[s] >= 0) ep_add(p->fds[s], K_STREAM, p->index, s, EPOLLIN);
  ep_add(p->status_fd, K_STATUS, p->index, 0, EPOLLIN);
  if (p->in_fd >= 0) {
    ep_add(p->in_fd, K_STDIN, p->index, 0, 0);
    if (x->stdin_len) buf_put(&p->in, x->stdin_data, x->stdin_len);
    p->in_end = !x->streamed;
    proc_write_stdin(p);
  }
  return;
close_all:
  for (int i = 0; i < 2; i++) {
    if (in[i] >= 0) close(in[i]);
    if (o[i] >= 0) close(o[i]);
    if (e[i] >= 0) close(e[i]);
    if (r[i] >= 0) close(r[i]);
    if (st[i] >= 0) close(st[i]);
  }
}

/* 'X' (see the top of supervisor.c): starts the command unless the id is in use, it has none, or
 * the program refuses it. */
static void start_exec(uint32_t id, struct fields *f) {
  struct exec_req x = {.id = id};
  x.sandbox = (uint32_t)field_num(f);
  x.uid = (uid_t)field_num(f);
  x.gid = (gid_t)field_num(f);
  x.cwd = field_str(f);
  x.limits = field_str(f);
  x.argv = field_list(f);
  x.envp = field_list(f);
  x.stdin_data = field(f, &x.stdin_len);
  x.flags = field_str(f);
  x.cap = (size_t)field_num(f);
  x.result = strchr(x.flags, 'r') != NULL;
  x.streamed = strchr(x.flags, 's') != NULL;
  x.want_in = x.streamed || x.stdin_len > 0;
  const char *refused = find_proc(id) ? "setup exec: id in use" : exec_refused(&x);
  if (!refused && !x.argv[0]) refused = "setup exec: no command";
  if (refused) reply('x', id, S(""), S(""), S(""), S(refused), NULL);
  else exec_start(&x);
  free(x.cwd);
  free(x.limits);
  free(x.flags);
  free_list(x.argv);
  free_list(x.envp);
}

/* ---------- the loop: requests on fd 0, replies on fd 1, children's ends through a signalfd ---------- */

/* Hooks of the loop, each program's. Requests can be read (fd 0); some child ended (SIGCHLD); an event
 * of one of the program's own kinds (K_OWN on); the server is gone (replies cannot be written: never
 * returns); a turn of the loop is over (its objects removed in it can be reused). */
static void read_requests(void);
static void reap(void);
static void own_event(int kind, uint32_t index);
static void server_gone(void) __attribute__((noreturn));
static void turn_end(void);

static int sigchld_fd;

/* Before the loop: stdio non-blocking, SIGPIPE ignored, SIGCHLD read from a signalfd, the epoll set. */
static void loop_open(void) {
  fcntl(0, F_SETFL, O_NONBLOCK);
  fcntl(1, F_SETFL, O_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  sigchld_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
  epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &ev);
  ev.data.u64 = 2;
  epoll_ctl(epfd, EPOLL_CTL_ADD, sigchld_fd, &ev);
  ev.events = 0;
  ev.data.u64 = 3;
  epoll_ctl(epfd, EPOLL_CTL_ADD, 1, &ev);
}

static void __attribute__((noreturn)) loop_run(void) {
  int out_blocked = 0;
  for (;;) {
    int pending = flush_frames();
    if (pending < 0) server_gone();
    if (pending != out_blocked) {
      struct epoll_event ev = {.events = pending ? EPOLLOUT : 0, .data.u64 = 3};
      epoll_ctl(epfd, EPOLL_CTL_MOD, 1, &ev);
      out_blocked = pending;
    }
    /* Lingering commands (exited, pipes still held by something that escaped) close on time. */
    long long next = procs_linger();
    if (buf_pending(&out) && !pending) continue; /* a reply made by the linger: sent before any wait */
    struct epoll_event events[64];
    int n = epoll_wait(epfd, events, 64, (int)next);
    for (int i = 0; i < n; i++) {
      uint64_t d = events[i].data.u64;
      if (d == 1) read_requests();
      else if (d == 2) {
        struct signalfd_siginfo si;
        while (read(sigchld_fd, &si, sizeof si) == sizeof si) {}
        reap();
      } else if (d == 3) {
        /* writable: flushed at the top of the loop */
      } else {
        int kind = (int)(d >> 56);
        uint32_t index = (uint32_t)((d >> 8) & 0xffffffffu);
        if (!proc_event(kind, index, (int)(d & 0xff))) own_event(kind, index);
      }
    }
    slots_flush(&procs);
    turn_end();
  }
}

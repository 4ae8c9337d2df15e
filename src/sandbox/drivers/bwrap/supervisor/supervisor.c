// rft-supervisor: the bubblewrap driver's one helper process (see README.md beside this file).
//
// The server starts it once and speaks to it over its stdin and stdout in frames. It does every
// privileged step and every process creation of the bwrap driver, so the server never forks: a fork
// of a Node process costs a copy of its page tables (10 ms at 200 MB, on the event loop), this
// process is a few hundred kilobytes.
//
//  * A sandbox is created once per rollout: bubblewrap builds it (namespaces, mounts, seccomp) around
//    a holder process (`cat`, PID 1 of the sandbox's PID namespace, which only waits).
//  * Every command enters it (enter.c): its own PID, mount and IPC namespaces inside the sandbox's,
//    its own /proc, privileges dropped, rlimits, the seccomp filter. Its output is relayed here
//    (commands.h, shared with the Docker agent).
//  * Workspace mounts and uid-wide kills, which need root on the host.
//  * bubblewrap is never started in the host's mount namespace: its own namespace is a copy of the
//    one it starts in, which costs time in proportion to the mounts there, and the host holds one
//    tmpfs per live sandbox (500 of them made each bwrap 5x slower, measured). It starts in a fresh
//    copy of a namespace taken when this process started (base_ns, without sandbox mounts) holding
//    only its own sandbox's tmpfs, carried over from the host (open_tree + move_mount).
//
// Frames, both ways: u32 length (of what follows, little-endian), u8 type, u32 id, then fields,
// each a u32 length and its bytes. Requests (server -> supervisor), id = the request's:
//   'F' the seccomp filter every command runs under (struct sock_filter[])
//   'C' sandbox, uid, gid, the sandbox's tmpfs ("" = none), bwrap's argv (NUL-separated), then
//       data for its fds 4, 5, ... (its --info-fd is the next one)   -> 'R' once the sandbox is built
//   'D' sandbox                                     -> 'R' once every process of it is gone
//   'X' sandbox, uid, gid, cwd, limits, argv, env (NUL-separated), stdin, flags, output cap
//       flags: 'r' a result channel on fd 3, 's' stdin streamed ('I' data, 'J' end)
//   'I' data      'J'      'S' (kill the command), with the id of its 'X'
//   'M' target, options (mount a tmpfs)   'U' target (detach it)   'K' uid (kill its processes)
// Replies (supervisor -> server):
//   'R' errno ("0" = done), message
//   'o' 'e' 'r' data (stdout, stderr, result channel of the command 'X' id)
//   'x' exit code or "", signal or "", truncated streams ("oer" subset), failure ("" or one line; with
//       one, neither exit code nor signal)
//   'g' (id = a sandbox) its holder died without a 'D'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>

#include "enter.h"

#include "commands.h"

#define LINGER_MS 250
/* How long an exited command's pipes may stay open (argv[1] overrides it: tests use 0). */
static long long linger_ms = LINGER_MS;

/* ---------- objects ---------- */

/* epoll kinds past the commands' (commands.h) */
enum kind { K_SANDBOX_READY = K_OWN, K_SANDBOX_INFO, K_SANDBOX_ERR, K_SANDBOX_PIDFD };

struct sandbox {
  uint32_t id, index;
  pid_t bwrap; /* our child: its pid cannot be reused before we reap it; 0 once reaped */
  int procfd, pidfd; /* the holder's /proc directory and pidfd, once it runs */
  int holder_in, holder_out, info_fd, err_fd;
  char info[1024];
  size_t info_len;
  char err[512];
  size_t err_len;
  int echoed, ready, gone;
  uint32_t create_req, destroy_req; /* requests waiting for a reply, 0 = none */
  uid_t uid;
};

struct op {
  uint32_t id, index;
};

/* Objects live in slot arrays (commands.h); ids and pids find them through small open-addressing
 * maps, so no request costs a walk over every object. */
#define EMPTY 0u
#define TOMB 0xffffffffu
struct map {
  uint32_t *keys;
  uint64_t *vals;
  size_t cap, used; /* used counts tombstones too */
};

static size_t map_find(const struct map *m, uint32_t key) {
  size_t mask = m->cap - 1, i = (key * 2654435761u) & mask;
  while (m->keys[i] != EMPTY && m->keys[i] != key) i = (i + 1) & mask;
  return i;
}

static void map_put(struct map *m, uint32_t key, uint64_t val);

static void map_grow(struct map *m) {
  struct map old = *m;
  m->cap = old.cap ? old.cap * 2 : 256;
  m->keys = calloc(m->cap, sizeof(uint32_t));
  m->vals = calloc(m->cap, sizeof(uint64_t));
  if (!m->keys || !m->vals) abort();
  m->used = 0;
  for (size_t i = 0; i < old.cap; i++)
    if (old.keys[i] != EMPTY && old.keys[i] != TOMB) map_put(m, old.keys[i], old.vals[i]);
  free(old.keys);
  free(old.vals);
}

static void map_put(struct map *m, uint32_t key, uint64_t val) {
  if ((m->used + 1) * 2 > m->cap) map_grow(m);
  size_t mask = m->cap - 1, i = (key * 2654435761u) & mask;
  while (m->keys[i] != EMPTY && m->keys[i] != TOMB && m->keys[i] != key) i = (i + 1) & mask;
  if (m->keys[i] == EMPTY) m->used++;
  m->keys[i] = key;
  m->vals[i] = val;
}

/* The value for `key` + 1, or 0 when absent. */
static uint64_t map_get(const struct map *m, uint32_t key) {
  if (!m->cap) return 0;
  size_t i = map_find(m, key);
  return m->keys[i] == key ? m->vals[i] + 1 : 0;
}

static void map_del(struct map *m, uint32_t key) {
  if (!m->cap) return;
  size_t i = map_find(m, key);
  if (m->keys[i] == key) m->keys[i] = TOMB;
}

static struct slots sandboxes, ops; /* and procs (commands.h) */
static struct map sandbox_ids, proc_ids, pids; /* pids: kind << 32 | index */
enum { PID_PROC = 1, PID_BWRAP, PID_OP };
static struct sock_filter *filter;
static struct sock_fprog filter_prog;
static pid_t self;

static struct sandbox *find_sandbox(uint32_t id) {
  uint64_t v = map_get(&sandbox_ids, id);
  return v ? sandboxes.items[v - 1] : NULL;
}

/* A memfd holding `data` (bwrap reads its --args, --ro-bind-data and --seccomp from fds). */
static int data_fd(const char *data, size_t n) {
  int fd = (int)syscall(SYS_memfd_create, "rft", 1u /* MFD_CLOEXEC */);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)w;
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

/* ---------- sandboxes ---------- */

static void sandbox_close_setup(struct sandbox *sb) {
  close_fd(&sb->info_fd);
  close_fd(&sb->err_fd);
}

/* Frees the slot once nothing is left to wait for (bwrap reaped, holder gone, replies sent). */
static void sandbox_release(struct sandbox *sb) {
  if (!sb->gone || sb->bwrap > 0 || sb->pidfd >= 0 || sb->create_req || sb->destroy_req) return;
  close_fd(&sb->holder_in);
  close_fd(&sb->holder_out);
  sandbox_close_setup(sb);
  close_fd(&sb->procfd);
  map_del(&sandbox_ids, sb->id);
  slots_remove(&sandboxes, sb->index);
  free(sb);
}

/* The sandbox could not be built: the creation fails with what bwrap said. */
static void sandbox_fail(struct sandbox *sb, const char *why) {
  if (sb->gone) return;
  sb->gone = 1;
  sb->ready = 0;
  if (sb->create_req) {
    char msg[700];
    snprintf(msg, sizeof msg, "%s%s%.*s", why, sb->err_len ? ": " : "", (int)sb->err_len, sb->err);
    reply_status(sb->create_req, EIO, msg);
    sb->create_req = 0;
  }
  if (sb->bwrap > 0) kill(sb->bwrap, SIGKILL); /* its holder, if any, dies with it (--die-with-parent) */
  sandbox_close_setup(sb);
  sandbox_release(sb);
}

/* A mount namespace as the host's was when this process started, private (no propagation from the
 * host), so without the tmpfs of any sandbox made since; -1 if it could not be made. */
static int base_ns = -1;

/* In base_ns's maker, after it left the host's namespace: detach every sandbox tmpfs (source
 * "rft-sandbox") the copy holds. They belong to sandboxes of another server (or test worker) on this
 * host, live when this one started: without this every bubblewrap of ours would copy and scan them
 * (hundreds, 20x the mounts of a clean base) under the kernel's one mount lock, stalling every mount
 * namespace operation on the host, the other server's included. Private, so the host keeps them. */
static void drop_sandbox_mounts(void) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return;
  char **targets = NULL;
  size_t count = 0, cap = 0;
  char *line = NULL;
  size_t len = 0;
  while (getline(&line, &len, f) > 0) {
    /* id parent major:minor root target options [optional fields] - fstype source superoptions */
    char *sep = strstr(line, " - ");
    if (!sep || strncmp(sep, " - tmpfs rft-sandbox ", 21) != 0) continue;
    char *p = line;
    for (int i = 0; i < 4 && p; i++) {
      p = strchr(p, ' ');
      if (p) p++;
    }
    char *end = p ? strchr(p, ' ') : NULL;
    if (!end) continue;
    /* Unescape \ooo (space, tab, newline, backslash) in place. */
    char *w = p;
    for (char *r = p; r < end; r++) {
      if (r[0] == '\\' && end - r >= 4 && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
        *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
        r += 3;
      } else {
        *w++ = *r;
      }
    }
    *w = 0;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      targets = realloc(targets, cap * sizeof *targets);
      if (!targets) abort();
    }
    targets[count] = strdup(p);
    if (!targets[count]) abort();
    count++;
  }
  free(line);
  fclose(f);
  /* Last mounted first; one stacked on another goes with it (EINVAL then, harmless). */
  while (count > 0) {
    count--;
    umount2(targets[count], MNT_DETACH);
    free(targets[count]);
  }
  free(targets);
}

static void make_base_ns(void) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  pid_t c = fork();
  if (c == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(p[0]);
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
      drop_sandbox_mounts();
      if (write(p[1], "k", 1) != 1) _exit(1);
      for (;;) pause();
    }
    _exit(1);
  }
  close(p[1]);
  char x;
  if (c > 0 && read(p[0], &x, 1) == 1) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", c);
    base_ns = open(path, O_RDONLY | O_CLOEXEC);
  }
  close(p[0]);
  if (c > 0) {
    kill(c, SIGKILL);
    waitpid(c, NULL, __WALL);
  }
}

/* In bubblewrap's child, before it drops root: leave the host's mount namespace for a fresh copy of
 * base_ns holding only this sandbox's tmpfs at its host path. Without a base (or without
 * open_tree, before Linux 5.2) it stays in the host's, which has the tmpfs too: slower, the same.
 * Past the point of no return a failure exits: bwrap must never bind an uncapped directory. */
static void carry_tmpfs(const char *path) {
  if (base_ns < 0 || !path[0]) return;
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | O_CLOEXEC);
  if (tree < 0) return;
  if (setns(base_ns, CLONE_NEWNS) != 0 || unshare(CLONE_NEWNS) != 0) _exit(125);
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) != 0) _exit(125);
  close(tree);
  if (chdir("/") != 0) _exit(125);
}

static void create_sandbox(uint32_t req, struct fields *f) {
  uint32_t id = (uint32_t)field_num(f);
  uid_t uid = (uid_t)field_num(f);
  gid_t gid = (gid_t)field_num(f);
  size_t carry_len = 0;
  const char *carry_field = field(f, &carry_len);
  char carry[4096] = "";
  if (carry_field && carry_len < sizeof carry) {
    memcpy(carry, carry_field, carry_len);
    carry[carry_len] = 0;
  }
  char **argv = field_list(f);
  int payload[8];
  int npayload = 0;
  size_t n;
  const char *data;
  while (npayload < 8 && (data = field(f, &n)) != NULL) {
    payload[npayload] = data_fd(data, n);
    if (payload[npayload] < 0) break;
    npayload++;
  }
  struct sandbox *sb = NULL;
  if (find_sandbox(id)) {
    reply_status(req, EEXIST, "sandbox exists");
    goto done;
  }
  int in[2] = {-1, -1}, outp[2] = {-1, -1}, info[2] = {-1, -1}, err[2] = {-1, -1};
  if (!argv[0] || nonblock_pipe(in, 0, 1) || nonblock_pipe(outp, 1, 0) || nonblock_pipe(info, 1, 0) || nonblock_pipe(err, 1, 0)) {
    reply_status(req, argv[0] ? EMFILE : EINVAL, "cannot start the sandbox");
    for (int i = 0; i < 2; i++) {
      if (in[i] >= 0) close(in[i]);
      if (outp[i] >= 0) close(outp[i]);
      if (info[i] >= 0) close(info[i]);
      if (err[i] >= 0) close(err[i]);
    }
    goto done;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int src[16];
    src[0] = in[0];
    src[1] = outp[1];
    src[2] = err[1];
    src[3] = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int i = 0; i < npayload; i++) src[4 + i] = payload[i];
    src[4 + npayload] = info[1];
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    carry_tmpfs(carry);
    /* bwrap runs as the sandbox uid: the user namespace it makes belongs to that uid. */
    if (getuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)) _exit(126);
    if (place_fds(src, 5 + npayload) != 0) _exit(126);
    char *envp[] = {NULL};
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(in[0]);
  close(outp[1]);
  close(info[1]);
  close(err[1]);
  if (pid < 0) {
    close(in[1]);
    close(outp[0]);
    close(info[0]);
    close(err[0]);
    reply_status(req, errno, "cannot start the sandbox");
    goto done;
  }
  sb = calloc(1, sizeof *sb);
  if (!sb) abort();
  sb->index = slots_add(&sandboxes, sb);
  map_put(&sandbox_ids, id, sb->index);
  map_put(&pids, (uint32_t)pid, ((uint64_t)PID_BWRAP << 32) | sb->index);
  sb->id = id;
  sb->uid = uid;
  sb->create_req = req;
  sb->bwrap = pid;
  sb->procfd = sb->pidfd = -1;
  sb->holder_in = in[1];
  sb->holder_out = outp[0];
  sb->info_fd = info[0];
  sb->err_fd = err[0];
  ep_add(sb->holder_out, K_SANDBOX_READY, sb->index, 0, EPOLLIN);
  ep_add(sb->info_fd, K_SANDBOX_INFO, sb->index, 0, EPOLLIN);
  ep_add(sb->err_fd, K_SANDBOX_ERR, sb->index, 0, EPOLLIN);
  /* The holder (cat) echoes this once it runs, that is once bwrap finished building the sandbox. */
  if (write(sb->holder_in, "\n", 1) != 1) sandbox_fail(sb, "cannot start the sandbox");
done:
  for (int i = 0; i < npayload; i++) close(payload[i]);
  free_list(argv);
}

/* Once the holder runs and bwrap told its pid: pin it (pidfd, /proc directory), check it is ours. */
static void sandbox_check_ready(struct sandbox *sb) {
  if (sb->ready || sb->gone || !sb->echoed) return;
  sb->info[sb->info_len] = 0;
  const char *p = strstr(sb->info, "\"child-pid\":");
  if (!p || !strchr(p, '}')) {
    if (sb->info_fd < 0) sandbox_fail(sb, "bubblewrap gave no child pid");
    return;
  }
  pid_t holder = (pid_t)strtol(p + 12, NULL, 10);
  int pidfd = (int)syscall(SYS_pidfd_open, holder, 0);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", holder);
  int procfd = pidfd >= 0 ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  int ok = procfd >= 0;
  if (ok) {
    int st = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
    char text[4096];
    ssize_t n = st >= 0 ? read(st, text, sizeof text - 1) : -1;
    if (st >= 0) close(st);
    ok = n > 0;
    if (ok) {
      text[n] = 0;
      const char *pp = strstr(text, "\nPPid:");
      const char *uu = strstr(text, "\nUid:");
      ok = pp && uu && (pid_t)strtol(pp + 6, NULL, 10) == sb->bwrap && (getuid() != 0 || (uid_t)strtoul(uu + 5, NULL, 10) == sb->uid);
    }
  }
  /* Alive after the checks: the pid named it all along. */
  if (ok) ok = syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
  if (!ok) {
    if (pidfd >= 0) close(pidfd);
    if (procfd >= 0) close(procfd);
    sandbox_fail(sb, "the sandbox's holder is not ours");
    return;
  }
  sb->pidfd = pidfd;
  sb->procfd = procfd;
  sb->ready = 1;
  sandbox_close_setup(sb);
  ep_add(pidfd, K_SANDBOX_PIDFD, sb->index, 0, EPOLLIN);
  reply_status(sb->create_req, 0, "");
  sb->create_req = 0;
}

static void sandbox_event(struct sandbox *sb, enum kind kind) {
  char tmp[64];
  ssize_t n;
  switch (kind) {
  case K_SANDBOX_READY:
    n = read(sb->holder_out, tmp, sizeof tmp);
    if (n > 0) {
      /* keep it open (a full pipe would only block cat), stop watching it */
      epoll_ctl(epfd, EPOLL_CTL_DEL, sb->holder_out, NULL);
      sb->echoed = 1;
      sandbox_check_ready(sb);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      close_fd(&sb->holder_out);
      if (!sb->ready) sandbox_fail(sb, "bubblewrap failed");
    }
    break;
  case K_SANDBOX_INFO:
    n = read(sb->info_fd, sb->info + sb->info_len, sizeof sb->info - 1 - sb->info_len);
    if (n > 0) sb->info_len += (size_t)n;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || sb->info_len >= sizeof sb->info - 1) close_fd(&sb->info_fd);
    sandbox_check_ready(sb);
    break;
  case K_SANDBOX_ERR:
    n = read(sb->err_fd, sb->err + sb->err_len, sizeof sb->err - 1 - sb->err_len);
    if (n > 0) sb->err_len += (size_t)n;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || sb->err_len >= sizeof sb->err - 1) close_fd(&sb->err_fd);
    while (sb->err_len && sb->err[sb->err_len - 1] == '\n') sb->err_len--;
    break;
  case K_SANDBOX_PIDFD:
    /* The holder is gone, and with it every process of the sandbox (their PID namespaces' init). */
    close_fd(&sb->pidfd);
    close_fd(&sb->procfd);
    sb->ready = 0;
    sb->gone = 1;
    if (sb->destroy_req) {
      reply_status(sb->destroy_req, 0, "");
      sb->destroy_req = 0;
    } else {
      reply('g', sb->id, NULL);
    }
    if (sb->bwrap > 0) kill(sb->bwrap, SIGKILL);
    sandbox_release(sb);
    break;
  default: break;
  }
}

static void destroy_sandbox(uint32_t req, struct fields *f) {
  struct sandbox *sb = find_sandbox((uint32_t)field_num(f));
  if (!sb || sb->destroy_req) {
    reply_status(req, sb ? EBUSY : 0, "");
    return;
  }
  if (sb->pidfd >= 0) {
    sb->destroy_req = req; /* answered once the holder is gone */
    syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
    return;
  }
  sandbox_fail(sb, "destroyed while being built");
  reply_status(req, 0, "");
}

/* bwrap itself exited (after its holder, or it failed). */
static void sandbox_reaped(struct sandbox *sb) {
  sb->bwrap = 0;
  if (!sb->ready) sandbox_fail(sb, "bubblewrap failed");
  sandbox_release(sb);
}


/* ---------- commands (commands.h) ---------- */

static struct proc *find_proc(uint32_t id) {
  uint64_t v = map_get(&proc_ids, id);
  return v ? procs.items[v - 1] : NULL;
}

/* The command runs in a sandbox that is built, under the seccomp filter. */
static const char *exec_refused(struct exec_req *x) {
  struct sandbox *sb = find_sandbox(x->sandbox);
  if (!sb || !sb->ready) return "gone";
  if (!filter) return "setup seccomp: no filter";
  x->ctx = sb;
  return NULL;
}

/* Enters the sandbox (enter.c), whose holder's /proc directory it gets at fd 4, the status pipe at 5. */
static void exec_child(const struct exec_req *x, const int fds[5]) {
  const struct sandbox *sb = x->ctx;
  int src[6] = {fds[0], fds[1], fds[2], fds[3], sb->procfd, fds[4]};
  if (place_fds(src, 6) != 0) _exit(125);
  enter_and_exec(&(struct enter){.uid = x->uid, .gid = x->gid, .dir = x->cwd, .limits = x->limits, .argv = x->argv, .envp = x->envp, .parent = self, .filter = &filter_prog});
}

static void proc_added(struct proc *p) {
  /* The child makes its own process group too (enter.c), but an 'S' read before it did would signal
     no group and be lost: the command would run on. Made here as well, the group exists from now. */
  setpgid(p->pid, p->pid);
  map_put(&proc_ids, p->id, p->index);
  map_put(&pids, (uint32_t)p->pid, ((uint64_t)PID_PROC << 32) | p->index);
}

static void proc_forgotten(struct proc *p) {
  map_del(&proc_ids, p->id);
}

/* ---------- host operations ---------- */

static void start_op(uint32_t id, char type, struct fields *f) {
  if (type == 'M') {
    char *target = field_str(f), *opts = field_str(f);
    int rc = mount("rft-sandbox", target, "tmpfs", MS_NOSUID | MS_NODEV, opts);
    reply_status(id, rc == 0 ? 0 : errno, rc == 0 ? "" : strerror(errno));
    free(target);
    free(opts);
    return;
  }
  if (type == 'U') {
    char *target = field_str(f);
    int rc = umount2(target, MNT_DETACH);
    reply_status(id, rc == 0 ? 0 : errno, rc == 0 ? "" : strerror(errno));
    free(target);
    return;
  }
  /* 'K': kill(-1) issued as the uid reaches exactly its processes, at once (a fork bomb cannot outrun it). */
  uid_t uid = (uid_t)field_num(f);
  if (uid == 0 || getuid() != 0) {
    reply_status(id, 0, "");
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(1);
    kill(-1, SIGKILL);
    _exit(0);
  }
  if (pid < 0) {
    reply_status(id, errno, "fork");
    return;
  }
  struct op *o = calloc(1, sizeof *o);
  if (!o) abort();
  o->id = id;
  o->index = slots_add(&ops, o);
  map_put(&pids, (uint32_t)pid, ((uint64_t)PID_OP << 32) | o->index);
}

/* ---------- main loop ---------- */

static void reap(void) {
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
    if (pid <= 0) return;
    uint64_t v = map_get(&pids, (uint32_t)pid);
    if (!v) continue;
    map_del(&pids, (uint32_t)pid);
    uint32_t kind = (uint32_t)((v - 1) >> 32), index = (uint32_t)(v - 1);
    if (kind == PID_PROC) {
      struct proc *p = procs.items[index];
      proc_exited(p, st, linger_ms, 0);
      proc_maybe_done(p);
    } else if (kind == PID_BWRAP) {
      sandbox_reaped(sandboxes.items[index]);
    } else {
      struct op *o = ops.items[index];
      reply_status(o->id, 0, "");
      slots_remove(&ops, index);
      free(o);
    }
  }
}

static struct buf in; /* frames from the server */

static void handle_frame(char type, uint32_t id, struct fields *f) {
  struct proc *pr;
  size_t len;
  const char *data;
  switch (type) {
  case 'C': create_sandbox(id, f); break;
  case 'D': destroy_sandbox(id, f); break;
  case 'F':
    data = field(f, &len);
    if (len && len % sizeof(struct sock_filter) == 0 && len / sizeof(struct sock_filter) < 65536) {
      free(filter);
      filter = malloc(len);
      if (!filter) abort();
      memcpy(filter, data, len);
      filter_prog.len = (unsigned short)(len / sizeof(struct sock_filter));
      filter_prog.filter = filter;
      reply_status(id, 0, "");
    } else {
      reply_status(id, EINVAL, "bad seccomp filter");
    }
    break;
  case 'X': start_exec(id, f); break;
  case 'I': proc_input(find_proc(id), f); break;
  case 'J': proc_input_end(find_proc(id)); break;
  case 'S':
    /* The command's chain shares one process group; its namespace dies with it. */
    if ((pr = find_proc(id)) && !pr->exited) kill(-pr->pid, SIGKILL);
    break;
  case 'M': case 'U': case 'K': start_op(id, type, f); break;
  default: break;
  }
}

static void read_requests(void) {
  int r = read_frames(&in, handle_frame);
  if (r == -2) _exit(2);
  if (r == -1) {
    /* The server is gone: so is everything we started (holders die with their bwrap). */
    for (uint32_t i = 0; i < procs.len; i++) {
      struct proc *p = procs.items[i];
      if (p && !p->exited) kill(-p->pid, SIGKILL);
    }
    for (uint32_t i = 0; i < sandboxes.len; i++) {
      struct sandbox *sb = sandboxes.items[i];
      if (sb && sb->bwrap > 0) kill(sb->bwrap, SIGKILL);
    }
    _exit(0);
  }
}

static void server_gone(void) {
  _exit(0);
}

static void own_event(int kind, uint32_t index) {
  struct sandbox *sb = index < sandboxes.len ? sandboxes.items[index] : NULL;
  if (sb) sandbox_event(sb, (enum kind)kind);
}

static void turn_end(void) {
  slots_flush(&sandboxes);
  slots_flush(&ops);
}

int main(int argc, char **argv) {
  if (argc > 1) linger_ms = atoll(argv[1]);
  self = getpid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setsid(); /* no controlling terminal for anything we start */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  loop_open();
  make_base_ns();
  reply('R', 0, S("0"), S("ready"), NULL);
  loop_run();
}

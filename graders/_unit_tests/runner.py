# Hidden-test runner for the unit_tests grader. Runs inside a fresh grading sandbox as
#   python3 -I -     (its program on stdin: this file, then `main(<the cases, base64 JSON>)`)
# and writes one JSON line, {"cases": [...]} or {"error": ...}, to the result channel: the
# descriptor named by $RFT_RESULT_FD, which the sandbox gives to this process alone.
#
# Trust model: this process never imports the agent's code. It makes itself non-dumpable before
# anything else runs (no process of the same uid can then trace it, read its memory or open its
# descriptors through /proc), holds the cases (with their expected values) only in memory, never on
# disk, and runs each case in a fresh child interpreter that sees only the case's code, never its
# expected value, and never the result channel. The child sends back the value it computed,
# JSON-encoded with exact types, on a private pipe; this process compares it with the expectation
# itself. So sys.exit(0) in a module, printed "PASS" lines, objects whose __eq__ always says yes,
# edited test files, writes to this process's stdout or invented case names all count for nothing.
# Nothing secret is in any command line or environment: there is nothing to steal but the channel.
#
# Time: a case's limit (timeout_s) is on its own time, never on the machine's load. It times out
# when its process's wall time minus the time it waited for a CPU (/proc/<pid>/schedstat, field 2)
# passes the limit, so sleeping or blocked code still times out and a correct solution on a loaded
# machine does not (a CI run at load 20 paid 0.8 for a full solution); or when the CPU its tree
# used (the case's process and every process under it, in any session) passes it. gVisor has no
# schedstat: there wall time counts, and a case that timed out while it wanted the CPU (its tree had
# a process in state "R" at half the looks or more: gVisor says "R" for a process that wants the CPU,
# whether the host gives it or not, and "S" for one that sleeps or blocks) is reported "unsure", with
# the CPU seconds the cases wanted (the time their trees had processes in "R", as many at once as the
# sandbox has CPUs); the grader asks the host what the sandbox really got (run.ts): less than half of
# that, and the machine starved it. Sleeping or blocked code never wants the CPU: it times out at its
# limit, loaded or not.
# A case that gets neither far in starve_factor x timeout_s of wall time was kept off the CPU: by
# other processes of this sandbox (the model's code: what cases left running, or started in
# bulk), when it got less than half its fair share of the CPU they all used, and then it timed out;
# else by the machine, and it is reported "starved" for the grader to decide (see starved.ts).
import base64
import concurrent.futures
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

CHILD = r'''
import json, os, sys
fd = int(sys.argv[1])
case = json.loads(sys.stdin.read())
sys.stdin.close()
for p in case.get("sys_path", ["."]):
    sys.path.append(os.path.abspath(p))   # appended: the workspace cannot shadow the stdlib

def enc(v, depth=0):
    if depth > 40:
        return {"$unencodable": "too deep"}
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return v
    if t is float:
        return v if v == v and v not in (float("inf"), float("-inf")) else {"$float": repr(v)}
    if t is list or t is tuple:
        return [enc(x, depth + 1) for x in v]
    if t is dict and all(type(k) is str for k in v):
        return {k: enc(x, depth + 1) for k, x in v.items()}
    if t is set or t is frozenset:
        items = [enc(x, depth + 1) for x in v]
        return {"$set": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    return {"$type": t.__name__}

def report(obj):
    data = (json.dumps(obj) + "\n").encode()
    os.write(fd, data)

ns = {"__name__": "__rft_case__"}
phase = "setup"
try:
    exec(compile(case.get("setup", ""), "<setup>", "exec"), ns)
    phase = "run"
    exec(compile(case.get("code", ""), "<case>", "exec"), ns)
    value = eval(compile(case.get("expr", "None"), "<expr>", "eval"), ns)
    report({"phase": "done", "value": enc(value)})
except BaseException as e:
    names = [c.__name__ for c in type(e).__mro__]
    report({"phase": phase, "raised": names, "message": str(e)[:300]})
'''

# The same child for JavaScript tasks (CommonJS; `require` resolves from the workspace root). The
# case is one async function body, so declarations in setup are visible to code and expr.
CHILD_JS = r'''
const fs = require("fs"), path = require("path"), { createRequire } = require("module");
const fd = Number(process.argv[1]);
const kase = JSON.parse(fs.readFileSync(0, "utf8"));
const report = (obj) => fs.writeSync(fd, JSON.stringify(obj) + "\n");
const plain = (v) => { const p = Object.getPrototypeOf(v); return p === Object.prototype || p === null; };
function enc(v, depth) {
  if (depth > 40) return { $unencodable: "too deep" };
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : { $float: String(v) };
  if (Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype) return v.map((x) => enc(x, depth + 1));
  if (typeof v === "object" && plain(v)) {
    const o = {};
    for (const k of Object.keys(v)) o[k] = enc(v[k], depth + 1);
    return o;
  }
  return { $type: v === undefined ? "undefined" : typeof v === "object" ? (v.constructor && v.constructor.name) || "object" : typeof v };
}
function names(e) {
  const out = [];
  if (e === null || typeof e !== "object") return ["(thrown " + typeof e + ")"];
  for (let p = Object.getPrototypeOf(e); p; p = Object.getPrototypeOf(p)) if (p.constructor) out.push(p.constructor.name);
  return out;
}
const phase = { v: "setup" };
const req = createRequire(path.join(process.cwd(), "__rft_case__.js"));
(async () => {
  let fn;
  try {
    const AsyncFunction = (async () => {}).constructor;
    fn = new AsyncFunction("require", "__rft_phase", kase.setup + "\n__rft_phase.v = \"run\";\n" + (kase.code || "") + "\nreturn (" + (kase.expr || "undefined") + ");");
  } catch (e) {
    report({ phase: "setup", raised: names(e), message: String(e && e.message).slice(0, 300) });
    return;
  }
  try {
    const value = await fn(req, phase);
    report({ phase: "done", value: enc(value, 0) });
  } catch (e) {
    report({ phase: phase.v, raised: names(e), message: String(e && e.message).slice(0, 300) });
  }
})();
'''

def child_argv(spec, w):
    if spec.get("language", "python") == "node":
        return ["node", "-e", CHILD_JS, str(w)]
    return [sys.executable, "-I", "-c", CHILD, str(w)]

def not_dumpable():
    # PR_SET_DUMPABLE = 0: processes of the same uid (the cases) can no longer ptrace this one, read
    # its memory or open its descriptors through /proc. Without it the verdict is not safe: refuse.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    # PR_SET_CHILD_SUBREAPER: what the cases leave running stays under this process when its parent
    # exits, so the CPU it uses is seen (and it is reaped here). Not fatal where refused.
    libc.prctl(36, 1, 0, 0, 0)

CLK = os.sysconf("SC_CLK_TCK")
POLL_S = 0.2

def read_stat(pid):
    """(ppid, session, own CPU s, reaped children's CPU s, wants the CPU) of a process, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return int(rest[1]), int(rest[3]), (int(rest[11]) + int(rest[12])) / CLK, (int(rest[13]) + int(rest[14])) / CLK, rest[0] == b"R"
    except (OSError, IndexError, ValueError):
        return None

def tree_of(procs, root):
    """A live process and everything under it."""
    kids = {}
    for pid, st in procs.items():
        kids.setdefault(st[0], []).append(pid)
    out = []
    todo = [root] if root in procs else []
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out

def waited_s(pid):
    """How long the process has waited for a CPU while runnable, or None where the kernel does not say."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None

def processes():
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out

def tree_cpu(procs, root):
    """CPU used by a live process and everything under it, with what they reaped."""
    kids = {}
    for pid, st in procs.items():
        kids.setdefault(st[0], []).append(pid)
    total = 0.0
    todo = [root] if root in procs else []
    while todo:
        pid = todo.pop()
        total += procs[pid][2] + procs[pid][3]
        todo.extend(kids.get(pid, []))
    return total

def descendants_cpu(procs):
    """CPU used by every process under this one: those alive (with what they reaped), and those reaped here."""
    me = procs.get(os.getpid())
    return tree_cpu(procs, os.getpid()) - (me[2] if me else 0.0)

def same(expect, got, tol):
    if isinstance(expect, bool) or isinstance(got, bool):
        return type(expect) is type(got) and expect == got
    if isinstance(expect, (int, float)) and isinstance(got, (int, float)):
        return abs(expect - got) <= max(tol, tol * abs(expect))
    if isinstance(expect, list) and isinstance(got, list):
        return len(expect) == len(got) and all(same(a, b, tol) for a, b in zip(expect, got))
    if isinstance(expect, dict) and isinstance(got, dict):
        return expect.keys() == got.keys() and all(same(expect[k], got[k], tol) for k in expect)
    return type(expect) is type(got) and expect == got

reap_lock = threading.Lock()
demand = [0.0]   # (no schedstat) CPU seconds the cases' trees wanted, as far as looked
CPUS = os.cpu_count() or 1
running = set()
before_cases = set()
isolated = True

def sweep_leftovers(procs):
    # What a case left running once out of its own tree (double-forked, setsid: it came to this
    # process, its subreaper, or to init where there is none, as under gVisor) belongs to no case:
    # a process of this uid that is neither from before the first case (the driver's, this one's
    # ancestors) nor under a case still running is killed. A case's own children are left to it.
    # Not isolated (the process driver: this uid may be the server's), only what came to this process.
    kids = {}
    for pid, st in procs.items():
        kids.setdefault(st[0], []).append(pid)
    keep = set(before_cases)
    todo = list(running)
    while todo:
        pid = todo.pop()
        keep.add(pid)
        todo.extend(kids.get(pid, []))
    for pid, st in procs.items():
        if pid in keep or not (isolated or st[0] == os.getpid()):
            continue
        try:
            if os.stat("/proc/%d" % pid).st_uid == os.getuid():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass

def reap_orphans():
    # As PID 1 of the sandbox (bwrap) this process inherits what a case left behind; reap those that
    # exited, but never a child a worker is still waiting for (peek first, WNOWAIT).
    with reap_lock:
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid in running:
                return
            try:
                os.waitpid(info.si_pid, 0)
            except ChildProcessError:
                return

def run_case(spec, case, timeout_s, starve_s, workers):
    r, w = os.pipe()
    payload = {k: v for k, v in case.items() if k in ("code", "expr")}
    payload["setup"] = spec.get("setup", "")
    payload["sys_path"] = spec.get("sys_path", ["."])
    sandbox_cpu_at_start = descendants_cpu(processes())
    started = time.monotonic()
    unsure = False   # timed out while it wanted the CPU, its waits for it unknown (no schedstat)
    looks = wanting = 0   # (no schedstat) looks at the case, and those that found its tree wanting the CPU
    looked = started
    try:
        with reap_lock:
            child = subprocess.Popen(
                child_argv(spec, w),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(w,), start_new_session=True,
            )
            running.add(child.pid)
    except OSError as e:   # e.g. what an earlier case left running exhausted the process limit
        os.close(r)
        os.close(w)
        return False, "could not start the case: %s" % e.strerror
    os.close(w)
    try:
        child.stdin.write(json.dumps(payload).encode())
        child.stdin.close()
    except BrokenPipeError:
        pass
    data = b""
    out = b""
    streams = [r, child.stdout.fileno()]
    ended = None   # why the case was stopped, if it was
    while streams:
        ready, _, _ = select.select(streams, [], [], POLL_S)
        for s in ready:
            chunk = os.read(s, 65536)
            if not chunk:
                streams.remove(s)
            elif s == r:
                data = (data + chunk)[:1_000_000]
            else:
                out = (out + chunk)[-2000:]
        if not streams:
            break
        now = time.monotonic()
        wall = now - started
        procs = processes()
        with reap_lock:
            sweep_leftovers(procs)
        waited = waited_s(child.pid)
        own = wall - (waited or 0.0)
        cpu = tree_cpu(procs, child.pid)
        if waited is None:
            # What of the case's tree wanted the CPU at this look, counted since the last one (at most
            # the CPUs the sandbox sees: more cannot run at once).
            looks += 1
            want = sum(1 for p in tree_of(procs, child.pid) if procs[p][4])
            wanting += want > 0
            with reap_lock:
                demand[0] += min(want, CPUS) * (now - looked)
            looked = now
        if own > timeout_s or cpu > timeout_s:
            ended = "timed out after %gs" % timeout_s
            unsure = waited is None and wanting * 2 >= looks > 0
        elif wall > starve_s:
            main = procs.get(child.pid)
            got = main[2] if main else 0.0
            used = descendants_cpu(procs) - sandbox_cpu_at_start
            if got * 2 * workers < used:
                ended = "timed out after %gs: other processes in its sandbox (left by the cases or started by them) kept it off the CPU" % timeout_s
            else:
                ended = "starved: %.1fs of CPU in %.0fs, the machine too loaded to run it" % (got, wall)
        if ended:
            break
    try:
        os.killpg(child.pid, signal.SIGKILL)   # also whatever the case left running
    except ProcessLookupError:
        pass
    child.wait()
    with reap_lock:
        running.discard(child.pid)
    os.close(r)
    reap_orphans()
    if ended:
        return False, ended + (UNSURE if unsure else "")
    lines = data.decode("utf-8", "replace").splitlines()
    if len(lines) != 1:
        return False, "no result (the process exited with %s)" % child.returncode
    try:
        res = json.loads(lines[0])
    except ValueError:
        return False, "unreadable result"
    want_raise = case.get("raises")
    if res.get("phase") == "setup":
        return False, "setup failed: %s: %s" % ((res.get("raised") or ["?"])[0], res.get("message", ""))
    if want_raise is not None:
        if res.get("phase") == "run" and want_raise in (res.get("raised") or []):
            return True, ""
        return False, "expected %s to be raised" % want_raise
    if res.get("phase") != "done":
        return False, "raised %s: %s" % ((res.get("raised") or ["?"])[0], res.get("message", ""))
    if same(case.get("expect"), res.get("value"), float(case.get("tol", 1e-9))):
        return True, ""
    return False, "expected %s, got %s" % (json.dumps(case.get("expect"))[:200], json.dumps(res.get("value"))[:200])

UNSURE = "\0unsure"   # never in a detail otherwise (a case's text never reaches one)

def send_verdict(obj):
    fd = int(os.environ["RFT_RESULT_FD"])
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]
    os.close(fd)

def main(encoded):
    try:
        not_dumpable()
        spec = json.loads(base64.b64decode(encoded))
    except Exception as e:
        send_verdict({"error": "runner setup: %s" % e})
        return
    global isolated
    isolated = spec.get("isolated", True) is True
    before_cases.update(processes())
    before_cases.add(os.getpid())
    timeout_s = float(spec.get("timeout_s", 10))
    starve_s = timeout_s * float(spec.get("starve_factor", 6))
    # Cases are independent processes, so a few run at once (interpreter start-up dominates).
    workers = max(1, min(int(spec.get("parallel", 4)), os.cpu_count() or 1, len(spec["cases"])))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(lambda c: run_case(spec, c, timeout_s, starve_s, workers), spec["cases"]))
    results = []
    for c, (ok, detail) in zip(spec["cases"], outcomes):
        flags = {"starved": True} if detail.startswith("starved:") else {"unsure": True} if detail.endswith(UNSURE) else {}
        results.append({"name": c["name"], "passed": ok, "detail": detail.replace(UNSURE, "")[:300], **flags})
    verdict = {"cases": results}
    if any(r.get("unsure") for r in results):
        # What this sandbox's processes were counted (this one's and every one it reaped) in the wall time of the run.
        verdict["wanted_cpu_s"] = demand[0]
    send_verdict(verdict)

# The grader appends the call: main("<base64 of the cases JSON>")

# Hidden-test runner for the unit_tests grader. Runs inside the grading sandbox as
#   python3 -I .rft-grader-<nonce>/runner.py   (stdin: {"nonce": ..., "dir": ...})
#
# Trust model: this parent process never imports the agent's code. It reads the cases into memory,
# deletes them from disk, then runs each case in a fresh child interpreter that sees only the case's
# code (never its expected value) and sends back the value it computed, JSON-encoded with exact types,
# on a private pipe. The parent compares that value with the expectation itself and prints one result
# line tagged with the nonce it got on stdin. So sys.exit(0) in a module, printed "PASS" lines,
# objects whose __eq__ always says yes, or edited test files all count for nothing.
import concurrent.futures
import json
import os
import select
import shutil
import signal
import subprocess
import sys
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

def no_ptrace():
    # PR_SET_DUMPABLE = 0: processes of the same uid (the children) cannot read this one's memory
    # or fds through /proc or ptrace.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass

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

def run_case(spec, case, timeout_s):
    r, w = os.pipe()
    payload = {k: v for k, v in case.items() if k in ("code", "expr")}
    payload["setup"] = spec.get("setup", "")
    payload["sys_path"] = spec.get("sys_path", ["."])
    started = time.monotonic()
    child = subprocess.Popen(
        child_argv(spec, w),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        pass_fds=(w,), start_new_session=True,
    )
    os.close(w)
    try:
        child.stdin.write(json.dumps(payload).encode())
        child.stdin.close()
    except BrokenPipeError:
        pass
    data = b""
    out = b""
    deadline = started + timeout_s
    streams = [r, child.stdout.fileno()]
    while streams:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(streams, [], [], left)
        for s in ready:
            chunk = os.read(s, 65536)
            if not chunk:
                streams.remove(s)
            elif s == r:
                data = (data + chunk)[:1_000_000]
            else:
                out = (out + chunk)[-2000:]
    timed_out = bool(streams)
    try:
        os.killpg(child.pid, signal.SIGKILL)   # also whatever the case left running
    except ProcessLookupError:
        pass
    child.wait()
    os.close(r)
    if timed_out:
        return False, "timed out after %ss" % timeout_s
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

def main():
    no_ptrace()
    req = json.loads(sys.stdin.read())
    sys.stdin.close()
    nonce, gdir = req["nonce"], req["dir"]
    with open(os.path.join(gdir, "cases.json"), encoding="utf-8") as f:
        spec = json.load(f)
    shutil.rmtree(gdir, ignore_errors=True)   # before any agent code runs
    timeout_s = float(spec.get("timeout_s", 10))
    # Cases are independent processes, so a few run at once (interpreter start-up dominates).
    workers = max(1, min(int(spec.get("parallel", 4)), os.cpu_count() or 1, len(spec["cases"])))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(lambda c: run_case(spec, c, timeout_s), spec["cases"]))
    results = [{"name": c["name"], "passed": ok, "detail": detail[:300]} for c, (ok, detail) in zip(spec["cases"], outcomes)]
    sys.stdout.write("RFT-RESULT %s %s\n" % (nonce, json.dumps({"cases": results})))
    sys.stdout.flush()

main()

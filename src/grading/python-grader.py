# Runner for OpenAI `python` grader configs. Runs inside a fresh sandbox (no network, the grading
# sandbox's limits) as `python3 -I -`, its input on stdin: one JSON object {source, sample, item}.
# The sample's output_json comes as its own JSON text (`output_json`), parsed apart: an answer nested
# deeper than Python's json can read (its recursion limit, about 1,000 levels) is the model's answer
# all the same, so it reaches grade() as None, as /graders cuts one past RFT_MAX_JSON_DEPTH, and is
# graded as its text instead of failing the grade.
# It writes one JSON line, {"reward": <float>} or {"error": ...}, to the result channel: the
# descriptor named by $RFT_RESULT_FD, which the sandbox gives to this process alone.
#
# Why the model's answer cannot forge the score: the sample arrives as data on stdin (never code),
# whatever the grader or the answer prints goes to stdout/stderr, which nobody reads for the score,
# and the channel is taken out of the environment before the grader's source runs. A grade() that
# raises, returns a non-number, NaN or an infinity is an error, never a score.
import json
import math
import os
import sys


def send(fd, obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def parsed_or_none(text):
    try:
        return json.loads(text)
    except RecursionError:
        return None


def main():
    given = int(os.environ.pop("RFT_RESULT_FD"))
    # A private copy of the channel (not inherited by programs the grader runs). Where the channel
    # is this process's stdout (the Docker driver), stdout is then pointed at stderr, so what the
    # grader prints (the answer, say) can never reach the channel.
    fd = os.dup(given)
    if given in (1, 2):
        os.dup2(2, given)
    else:
        os.close(given)
    try:
        spec = json.loads(sys.stdin.buffer.read())
        sys.stdin.close()
        if "output_json" in spec:
            spec["sample"]["output_json"] = parsed_or_none(spec["output_json"])
        ns = {"__name__": "__rft_grader__"}
        exec(compile(spec["source"], "<grader>", "exec"), ns)
        grade = ns.get("grade")
        if not callable(grade):
            send(fd, {"error": "the source defines no grade(sample, item) function"})
            return
        value = grade(spec["sample"], spec["item"])
    except BaseException as e:  # SystemExit and KeyboardInterrupt included: no score either way
        send(fd, {"error": "%s: %s" % (type(e).__name__, str(e)[:500])})
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        send(fd, {"error": "grade() returned %s, not a number" % type(value).__name__})
        return
    value = float(value)
    if not math.isfinite(value):
        send(fd, {"error": "grade() returned %r" % value})
        return
    send(fd, {"reward": value})


main()

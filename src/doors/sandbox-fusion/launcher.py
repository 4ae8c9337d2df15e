# The SandboxFusion door's launcher (run.ts): runs a /run_code program (argv[2:]) and reports its end
# as SandboxFusion does. Its stdout and stderr are passed on up to argv[1] bytes each, and the rest is
# read and dropped: the program never dies of a broken pipe, however much it prints. Once the program
# has exited (what it left running is not waited for), a last line on stderr,
# "\0rft-run-code <returncode> <stdout bytes> <stderr bytes>\n", gives Python's returncode, minus the
# signal's number for a program a signal ended (the sandbox's exit status, 128 + N, cannot tell that
# from an exit(128 + N)), and how much it printed. The launcher then exits with the program's status.
import os
import selectors
import signal
import sys

CHUNK = 65536
TRAILER = "\0rft-run-code"


def write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def main() -> None:
    limit = int(sys.argv[1])
    argv = sys.argv[2:]
    pipes = [os.pipe(), os.pipe()]
    # SIGCHLD wakes the loop below (installed before the fork: the program may end at once).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pid = os.fork()
    if pid == 0:
        try:
            # Python ignores these; the program gets the defaults, as SandboxFusion's subprocess gives it.
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            os.dup2(pipes[0][1], 1)
            os.dup2(pipes[1][1], 2)
            for fd in (*pipes[0], *pipes[1], wake_r, wake_w):
                os.close(fd)
            os.execvp(argv[0], argv)
        except BaseException as e:  # noqa: BLE001 (the program could not start: as a shell says it)
            write_all(2, f"{argv[0]}: {e}\n".encode())
        os._exit(127)
    os.close(pipes[0][1])
    os.close(pipes[1][1])
    # (a sandbox may start us with SIGCHLD blocked; the program keeps the mask it was given)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    counts = [0, 0]

    def pass_on(stream: int, chunk: bytes) -> None:
        room = limit - counts[stream]
        if room > 0:
            write_all(stream + 1, chunk[:room])
        counts[stream] += len(chunk)

    sel = selectors.DefaultSelector()
    for stream, (r, _) in enumerate(pipes):
        sel.register(r, selectors.EVENT_READ, stream)
    sel.register(wake_r, selectors.EVENT_READ, None)
    status = None
    while status is None:
        if len(sel.get_map()) == 1:
            # Both streams closed: nothing more can be printed, the program's end is all there is to wait for.
            status = os.waitpid(pid, 0)[1]
            break
        for key, _ in sel.select():
            if key.data is None:
                try:
                    os.read(wake_r, 512)
                except BlockingIOError:
                    pass
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                continue
            chunk = os.read(key.fd, CHUNK)
            if chunk:
                pass_on(key.data, chunk)
            else:
                sel.unregister(key.fd)
    # What the program wrote before it exited is in the pipes; something it left running may hold them open.
    for stream, (r, _) in enumerate(pipes):
        os.set_blocking(r, False)
        while True:
            try:
                chunk = os.read(r, CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                break
            pass_on(stream, chunk)
    code = os.waitstatus_to_exitcode(status)
    write_all(2, f"{TRAILER} {code} {counts[0]} {counts[1]}\n".encode())
    sys.exit(code if code >= 0 else 128 - code)


main()

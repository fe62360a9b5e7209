#!/usr/bin/python3
"""rusage.py OUT -- CMD [ARGS...]: runs CMD (stdio passed through) and writes the CPU the kernel
accounted to it (and to the children it waited for) and its peak resident memory as one JSON
object to OUT: {"user_s", "sys_s", "peak_rss_kib", "status"}. The same outside measure for every
client of `make bench`'s three-client table (tests/perf/anchors.sh), whatever each says of itself.
The peak is the process's own VmHWM (/proc/PID/status), read every 20 ms until it exits:
ru_maxrss would carry this Python's own ~10 MiB over the exec. Exits with CMD's status."""
import json
import os
import sys
import time


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        print("usage: rusage.py OUT -- CMD [ARGS...]", file=sys.stderr)
        return 2
    out, cmd = argv[1], argv[3:]
    # A close-on-exec pipe: its end at the exec says the child is CMD now (its VmHWM CMD's own).
    r, w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            print(f"rusage.py: {cmd[0]}: {e}", file=sys.stderr)
            os._exit(127)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    peak = None
    while True:
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            break
        hwm = vm_hwm_kib(pid)
        if hwm is not None:
            peak = hwm if peak is None else max(peak, hwm)
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        json.dump({"user_s": ru.ru_utime, "sys_s": ru.ru_stime, "peak_rss_kib": peak, "status": code}, f)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))

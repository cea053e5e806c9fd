#!/usr/bin/env python3
"""Runs a command in a new time namespace whose CLOCK_MONOTONIC is offset by
a number of nanoseconds (unshare(1) --monotonic takes whole seconds only).

    in_time_offset.py OFFSET_NS -- COMMAND [ARGS...]

The offsets of a new time namespace can be written only before a process
enters it: this process unshares (its children enter), writes the offset,
then forks the command and returns its exit code.
"""
import ctypes
import os
import sys

CLONE_NEWTIME = 0x80


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: in_time_offset.py OFFSET_NS -- COMMAND [ARGS...]")
    offset = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWTIME) != 0:
        sys.exit(f"in_time_offset.py: unshare(CLONE_NEWTIME): {os.strerror(ctypes.get_errno())}")
    secs, nsecs = divmod(offset, 1_000_000_000)  # the kernel wants 0 <= nsecs < 1e9, secs signed
    with open("/proc/self/timens_offsets", "w") as f:
        f.write(f"monotonic {secs} {nsecs}\n")
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(sys.argv[3], sys.argv[3:])
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()

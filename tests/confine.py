"""Confining a test's child process the way agent sandboxes confine the commands they run.

:func:`prelude` is Python source that sets no-new-privileges and installs a seccomp filter
answering ``sendto`` and ``sendmsg`` with EPERM, as the Codex CLI's Linux sandbox does for
every command it runs (its network policy). Put it first in a child's code: nothing takes
the filter off again.
"""

from __future__ import annotations

import platform
import sys

# The system call numbers filtered, by machine.
SYSCALLS = {"x86_64": {"sendto": 44, "sendmsg": 46},
            "aarch64": {"sendto": 206, "sendmsg": 211}}

SUPPORTED = sys.platform == "linux" and platform.machine() in SYSCALLS

PRELUDE = r'''
import ctypes, errno, platform, struct
def _deny_sockets_send(numbers):
    libc = ctypes.CDLL(None, use_errno=True)
    # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}; load the syscall number, then for
    # each filtered one: equal -> return ERRNO(EPERM); otherwise allow.
    ops = [struct.pack("HBBI", 0x20, 0, 0, 0)]  # BPF_LD|BPF_W|BPF_ABS, offset of nr
    for n in numbers:
        ops.append(struct.pack("HBBI", 0x15, 0, 1, n))  # BPF_JMP|BPF_JEQ|BPF_K
        ops.append(struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | errno.EPERM))  # RET ERRNO
    ops.append(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))  # RET ALLOW
    program = ctypes.create_string_buffer(b"".join(ops))
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fprog = Fprog(len(ops), ctypes.cast(program, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
'''


def prelude() -> str:
    """Python source that confines the process running it (call before anything else)."""
    numbers = sorted(SYSCALLS[platform.machine()].values())
    return PRELUDE + f"_deny_sockets_send({numbers!r})\n"


__all__ = ["SUPPORTED", "SYSCALLS", "prelude"]

"""Compiles the system-call filter every lab process runs under, with libseccomp's own
Python bindings (Debian's python3-seccomp), to the BPF program bubblewrap loads
(`--seccomp FD`) just before it starts the lab's command.

At least as strict as the default profile of the widely used container runtimes
(Docker's and Podman's): everything a program without privileges needs is allowed;
what could reach past the sandbox (debugging other processes, mounts, namespaces,
keyrings, BPF, performance counters, io_uring, kernel modules, the clock, reboots) fails
with EPERM, so the lab sees an ordinary error it can report. Two exceptions, as in those
profiles: clone3 fails with ENOSYS, because its flags sit in memory a filter cannot read
and the C library falls back to clone, whose flags it can; and system calls of another
architecture (a 32-bit entry into this kernel) kill the process.

Usage: python3 syscallFilter.py OUTPUT_FILE
"""
import errno
import sys

import seccomp

DENIED = [
    # other processes' memory and state
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # filesystems and namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "mount_setattr",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "open_by_handle_at", "name_to_handle_at", "quotactl", "quotactl_fd", "nfsservctl",
    "lookup_dcookie", "sysfs", "ustat", "uselib", "_sysctl",
    # the kernel's keyrings
    "keyctl", "add_key", "request_key",
    # BPF, performance counters, io_uring, user faults
    "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "userfaultfd", "fanotify_init",
    # kernel modules and the machine itself
    "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
    "acct", "syslog", "vhangup", "iopl", "ioperm", "sethostname", "setdomainname",
    # the clock
    "clock_settime", "clock_adjtime", "settimeofday", "adjtimex",
    # memory placement across the machine
    "mbind", "migrate_pages", "move_pages", "set_mempolicy",
]

# clone's flags that make namespaces (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET).
NAMESPACE_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]

# personality() flags that weaken the process's own protections: no address-space
# randomisation, executable data, a mapped page zero, the legacy layout.
WEAKENING_PERSONALITIES = [0x0040000, 0x0400000, 0x0100000, 0x0200000]


def build():
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    eperm = seccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            f.add_rule(eperm, name)
        except (RuntimeError, ValueError, OSError):
            pass  # not a system call on this architecture
    for flag in NAMESPACE_FLAGS:
        f.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in WEAKENING_PERSONALITIES:
        f.add_rule(eperm, "personality", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    return f


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as out:
        build().export_bpf(out)

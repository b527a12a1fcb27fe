// Package landlock is the kernel-facing half of agent-sandbox's built-in
// Linux sandbox: it starts one child process confined by Landlock, with
// no_new_privs set and, when network access is blocked, in a private
// network namespace.
//
// It owns exactly that step and nothing above it: deciding which paths
// a run grants, the environment, the egress proxy, signal forwarding and
// exit-status mapping belong to the caller.
//
// # How the child is confined without a second Go process
//
// Landlock domains and no_new_privs belong to a thread, not a process.
// [Start] runs a goroutine that locks itself to its OS thread and never
// unlocks it, so the Go runtime discards that thread when the goroutine
// ends. On that thread it sets no_new_privs, enforces the ruleset with
// landlock_restrict_self (single-thread form) and calls [os/exec.Cmd.Start],
// which forks from the current thread: the child inherits the domain and
// no_new_privs, and the parent's other threads stay unconfined. The same
// goroutine then waits for the child, so the thread (which the kernel
// treats as the child's parent for Pdeathsig and ptrace) outlives it.
//
// # Network namespace
//
// With [NetBlocked] and working unprivileged user namespaces, the child
// is cloned into a new user namespace and a new network namespace, which
// has only a loopback interface that is down. Its user namespace maps the
// caller's uid and gid to themselves. A confined thread cannot write
// /proc/PID/uid_map (Landlock denies it), so the child is started with
// PTRACE_TRACEME: it stops at the exec trap before running a single
// instruction of the new program, an unconfined thread writes the maps,
// and the confined thread detaches. The network namespace's loopback
// stays down. Without user namespaces, Landlock TCP port rules (ABI 4)
// are used instead and UDP stays open before ABI 10; [Plan] reports this
// as a warning for the caller to print.
//
// # Capabilities
//
// The child holds no capabilities after execve, even when the caller is
// root: the starting thread clears its ambient and inheritable sets and
// (with CAP_SETPCAP) its bounding set, and in a user namespace the ids
// are mapped only after execve. Its uid stays the caller's.
//
// Every right the running kernel's Landlock ABI knows is handled, so
// anything that is not granted by the [Policy] is denied.
//
// # Metadata
//
// Landlock does not govern chmod, chown, utimes or extended attributes.
// Where no mount namespace hides what is not granted, [StartProtected]
// sends those system calls to a seccomp
// listener that the starting process serves: it performs each one on
// the file it opened itself from the call's arguments, inside the
// policy's writable paths only (metadata_linux.go).
package landlock

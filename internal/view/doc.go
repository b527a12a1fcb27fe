// Package view builds the agent's view of the system with Linux namespaces,
// as bubblewrap does, and starts the agent in it under Landlock, seccomp and
// no_new_privs.
//
// The view is a fresh root made only of what a [Config] lists: read-only
// and read-write bind mounts of granted paths, a private /tmp, a minimal
// /dev, a private /proc and symlinks. What is not listed does not exist
// inside: no $XDG_RUNTIME_DIR, no Docker or D-Bus socket, no X11 socket, no
// rest of $HOME. The agent runs in new user, mount, PID, IPC and UTS
// namespaces, and in a new network namespace (loopback only, or loopback
// plus the egress proxy's socket) unless the network is open.
//
// The start sequence:
//
//  1. The parent ([Spawn], or [Start] for both steps) re-executes
//     agent-sandbox (/proc/self/exe) with the hidden first argument
//     [InitArg], cloned into the new namespaces with the capabilities it
//     needs to build the view (kept across exec as ambient capabilities
//     of the new user namespace only, and nothing more, for root too).
//     Once init has been exec'd, the parent maps the caller's uid and gid
//     to themselves in its user namespace. Init's runtime starts, and it
//     registers its signals and makes the mounts private, while the
//     parent still plans the run; then it waits. [Pending.Start] sends the
//     Config on a pipe (in the encoding of [Config.Encode]); init is not
//     dumpable from then on. A second pipe carries back how the agent
//     ended.
//  2. The sandbox init ([Init], PID 1 in the new PID namespace) builds the
//     new root, opening each source path once, when its bind is placed,
//     refusing symlinks on the way (openat2 RESOLVE_NO_SYMLINKS), and
//     adding the agent's Landlock rule of the bind on that descriptor
//     ([landlock.Ruleset]); read grants that are all of one directory's
//     entries become one bind of it. It pivots into the root, brings
//     loopback up, joins a fresh session keyring, sets resource limits
//     and marks every inherited descriptor above 2 close-on-exec.
//  3. On a locked thread it drops every capability, sets no_new_privs,
//     enforces the Landlock ruleset and the seccomp filter
//     ([landlock.Ruleset.ConfineThread]) and forks the agent from that
//     thread.
//  4. It forwards signals to the agent, reaps orphans, and when the agent
//     exits kills everything left in the namespace and reports the agent's
//     wait status to the parent ([Process.Ended] returns then; init's own
//     exit, which [Process.Wait] also waits for, may still be under way). When the parent dies, the kernel kills
//     init (parent-death signal) and with it every process of the sandbox.
//
// While the run lasts, the parent and init talk over a socketpair, the
// control socket, in one-letter requests that init serves (serveControl):
// exec'd commands of the session (exec_linux.go) and their signals,
// listeners on the sandbox's loopback, a guarded mount bound again after the
// host replaced what it covered, the end of a session (end_linux.go).
package view

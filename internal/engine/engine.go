// Package engine is the one description of each sandbox engine a run can
// end up in, and of the protections each gives and does not give. Every
// explanation of a run reads it (--dry-run, `why`, `doctor`, the start
// banner and the end-of-run line), and README.md's table of protections by
// engine is generated from it (Markdown; TestReadmeTable keeps the two
// equal), so that what is said of an engine cannot drift from one place to
// another.
//
// An engine is not a backend: the built-in backend runs in the namespace
// view where the host allows user namespaces and in the weaker sandbox
// where it does not (and the user accepted it), and a nono run is nono
// alone or nono inside the view.
package engine

import (
	"fmt"
	"strings"
)

// ID names an engine.
type ID string

// The engines.
const (
	// View is the built-in engine's namespace view: user, mount, PID,
	// IPC, UTS (and unless the network is open, network) namespaces, then
	// Landlock, seccomp and no_new_privs.
	View ID = "view"
	// NonoInView is nono run inside the namespace view: everything the
	// view gives, with nono's own Landlock and seccomp policy as a second
	// layer.
	NonoInView ID = "nono-in-view"
	// Nono is nono alone: nono's Landlock and seccomp policy, with
	// agent-sandbox's seccomp layer, and no namespaces.
	Nono ID = "nono"
	// Weaker is the built-in engine without a view (no user namespaces on
	// this host, accepted with AGENT_SANDBOX_WEAKER_SANDBOX=1): Landlock,
	// seccomp and no_new_privs only.
	Weaker ID = "weaker"
	// Sbx is a Docker Sandboxes microVM.
	Sbx ID = "sbx"
)

// Protection is one row of the table: something a sandbox may keep from
// the agent.
type Protection string

// The protections, in the table's order.
const (
	Files          Protection = "files outside the grants unreadable and unwritable"
	Names          Protection = "names and metadata of ungranted paths hidden"
	ProtectedFiles Protection = "protected project files (git config and hooks, editor tasks, agent settings) read-only"
	Processes      Protection = "host processes invisible; nothing the agent starts outlives the run"
	Offline        Protection = "offline: TCP, UDP and DNS blocked"
	Allowlist      Protection = "allow list: one door out, by host and port (agent-sandbox's egress broker)"
	Credentials    Protection = "no real API key inside (credential routes)"
	Caches         Protection = "private, host-seeded toolchain caches (Go, npm, cargo, pip)"
	Tmp            Protection = "private /tmp and /var/tmp (the host's never shown)"
	KernelSurface  Protection = "kernel surface refused (nested user namespaces, io_uring, AF_VSOCK, keyrings, TIOCSTI, host Unix sockets)"
	Capabilities   Protection = "no capabilities, even for a root caller"
	Limits         Protection = "process and open-file limits"
)

// Protections are the rows, in order.
func Protections() []Protection {
	return []Protection{Files, Names, ProtectedFiles, Processes, Offline, Allowlist, Credentials, Caches, Tmp, KernelSurface, Capabilities, Limits}
}

// Level is how far an engine gives a protection.
type Level int

// The levels.
const (
	No Level = iota
	Partly
	Yes
)

// Cell is one engine's answer for one protection: how far it gives it,
// and how or why not.
type Cell struct {
	Level Level
	Note  string
}

// Engine is one engine as every explanation describes it.
type Engine struct {
	ID ID
	// Name is what a person reads: "the namespace view".
	Name string
	// How is one clause on how it confines.
	How string
	// Gives is each protection's cell; every Protection has one.
	Gives map[Protection]Cell
}

var engines = []Engine{
	{ID: View, Name: "namespace view",
		How: "user, mount, PID, IPC, UTS and (unless the network is open) network namespaces, then Landlock, seccomp and no_new_privs",
		Gives: map[Protection]Cell{
			Files:          {Yes, "only granted paths are bound into the view; Landlock inside, where the kernel has it (Linux 5.13+; without it the binds alone: a read-only grant is then executable, and write-only grants are refused)"},
			Names:          {Yes, "an ungranted path does not exist in the view"},
			ProtectedFiles: {Yes, "bound read-only, bound again when the host replaces one"},
			Processes:      {Yes, "PID namespace; its end kills everything in it"},
			Offline:        {Yes, "a private network namespace with loopback only"},
			Allowlist:      {Yes, "the broker is the network namespace's only door"},
			Credentials:    {Yes, "the broker injects the key; the agent holds a phantom"},
			Caches:         {Yes, "a private writable layer over the host's cache, per project"},
			Tmp:            {Yes, "private tmpfs mounts, empty at each start"},
			KernelSurface:  {Yes, "seccomp"},
			Capabilities:   {Yes, "a root caller's agent is uid 0 without capabilities"},
			Limits:         {Yes, "8192 processes, 16384 open files; memory by a systemd user scope where there is one"},
		}},
	{ID: NonoInView, Name: "nono inside the namespace view",
		How: "the namespace view, with nono's own Landlock and seccomp policy as a second layer inside it",
		Gives: map[Protection]Cell{
			Files:          {Yes, "the view, and nono's Landlock policy inside it"},
			Names:          {Yes, "the view"},
			ProtectedFiles: {Yes, "the view"},
			Processes:      {Yes, "the view's PID namespace"},
			Offline:        {Yes, "the view's network namespace, and nono's rules"},
			Allowlist:      {Yes, "the view's broker"},
			Credentials:    {Yes, "the view's broker"},
			Caches:         {Yes, "the view's private layers"},
			Tmp:            {Yes, "the view's"},
			KernelSurface:  {Yes, "the view's seccomp, and nono's"},
			Capabilities:   {Yes, "the view"},
			Limits:         {Yes, "the view's"},
		}},
	{ID: Nono, Name: "nono alone",
		How: "nono's Landlock and seccomp policy and agent-sandbox's seccomp layer, without namespaces (only where the view cannot be built)",
		Gives: map[Protection]Cell{
			Files:          {Partly, "nono's Landlock policy, which does not govern metadata: the agent can still chmod, chown, touch and set extended attributes on any file its user owns, outside the grants too, even one it cannot read (`chmod 644` on a private key makes it readable by every local user)"},
			Names:          {No, "Landlock governs contents, not names: `stat` and listings of ungranted paths work"},
			ProtectedFiles: {No, "Landlock cannot deny inside a writable grant; agent-sandbox's guard undoes code-running changes and names the others"},
			Processes:      {No, "no PID namespace: `ps` lists host processes, a leftover survives a SIGKILL of agent-sandbox"},
			Offline:        {Yes, "nono's Landlock TCP rules and seccomp"},
			Allowlist:      {Partly, "nono's proxy, by host name only (an entry with a port is refused)"},
			Credentials:    {Partly, "nono has no route of agent-sandbox's: a key the folder routes is withheld (one line says why), so the agent holds no real key but has none to use: it logs in itself"},
			Caches:         {No, "not granted: a build needing the host's cache fails"},
			Tmp:            {Partly, "the run's own TMPDIR; /tmp and /var/tmp by nono's own rules"},
			KernelSurface:  {Yes, "agent-sandbox's seccomp layer"},
			Capabilities:   {No, "the agent keeps the caller's capabilities"},
			Limits:         {No, "the caller's limits; memory_max becomes nono's --memory"},
		}},
	{ID: Weaker, Name: "weaker sandbox",
		How: "Landlock, seccomp and no_new_privs only, without a namespace view (no user namespaces here; accepted with AGENT_SANDBOX_WEAKER_SANDBOX=1)",
		Gives: map[Protection]Cell{
			Files:          {Yes, "Landlock; chmod, chown, touch and extended attributes, which Landlock does not govern, agent-sandbox performs for the agent, on files inside its writable grants only"},
			Names:          {No, "Landlock governs contents, not names: the whole filesystem's names and metadata are visible (`stat`), while listing an ungranted directory, `/` included, is refused: Landlock's right to list `/` would cover every directory below it"},
			ProtectedFiles: {No, "Landlock only adds rights: agent-sandbox's guard undoes code-running changes (git's settings and hooks, an MCP server or hook in an agent's settings) while the agent runs and after it ends, and names the others for review; a `.git` replaced whole stays replaced"},
			Processes:      {No, "no PID namespace: host processes are listed; leftovers are swept, not contained"},
			Offline:        {Partly, "Landlock's TCP rules only: UDP and DNS are not confined"},
			Allowlist:      {Partly, "Landlock's TCP rules by port: the broker's port (and each open_port) reaches every host; UDP and DNS not confined"},
			Credentials:    {Yes, "the broker on the host's loopback injects the key; the agent holds a phantom"},
			Tmp:            {Partly, "the run's own TMPDIR; /tmp and /var/tmp themselves are refused: they are the host's, shared with your other programs, and without mounts there is no private one at that path"},
			Caches:         {Yes, "the run's own copies per project (reflinks where the filesystem can, never hard links), brought up to date before each run; Go's module cache filled from the host's download cache, read-only"},
			KernelSurface:  {Yes, "seccomp"},
			Capabilities:   {Yes, "dropped before the agent starts"},
			Limits:         {Yes, "8192 processes counted with the user's own, 16384 open files"},
		}},
	{ID: Sbx, Name: "sbx microVM",
		How: "a Docker Sandboxes microVM with its own kernel; the granted paths are mounted into it",
		Gives: map[Protection]Cell{
			Files:          {Yes, "only mounted paths exist in the guest"},
			Names:          {Yes, "the guest's own filesystem"},
			ProtectedFiles: {No, "mounted read-write; agent-sandbox's guard undoes code-running changes and names the others"},
			Processes:      {Yes, "the guest's own processes"},
			Offline:        {Yes, "sbx's network policy"},
			Allowlist:      {Partly, "sbx's proxy; a sandbox's rule only adds to the machine's global rules"},
			Credentials:    {Partly, "agent-sandbox passes no key into the guest: `sbx secret set`, or a login in the mounted config"},
			Caches:         {No, "the guest's own, empty caches"},
			Tmp:            {Yes, "the guest's own"},
			KernelSurface:  {Yes, "the guest's own kernel"},
			Capabilities:   {Partly, "root in the guest, whose kernel is its own"},
			Limits:         {Yes, "the microVM's size"},
		}},
}

// WithoutLandlock is what the namespace view says of itself on a kernel
// without Landlock (Linux before 5.13, or Landlock not enabled) where user
// namespaces exist: it runs there with seccomp and no_new_privs below its
// mounts, as bubblewrap does. The run's warning and doctor print it.
const WithoutLandlock = "the namespace view runs without Landlock, with seccomp and no_new_privs below its mounts (as bubblewrap does). " +
	"Landlock would add defence in depth below the mount view: rules on every path inside it, so that a way around a mount would still meet the grants, and a read-only grant would not be executable. " +
	"Of the protections by engine (README), the row \"" + string(Files) + "\" rests on the view's binds alone, and write-only grants (filesystem.write) are refused; " +
	"the other rows hold as with Landlock (the kernel matrix runs them on Linux 5.10)"

// All are the engines, in the table's order.
func All() []Engine {
	return append([]Engine(nil), engines...)
}

// Get is the engine id; false when there is none.
func Get(id ID) (Engine, bool) {
	for _, e := range engines {
		if e.ID == id {
			return e, true
		}
	}
	return Engine{}, false
}

// Must is Get for an id known to exist.
func Must(id ID) Engine {
	e, ok := Get(id)
	if !ok {
		panic("engine: no engine " + string(id))
	}
	return e
}

// Lacks are the protections e does not give in full, each as
// "protection (why)", in the table's order.
func (e Engine) Lacks() []string {
	var out []string
	for _, p := range Protections() {
		if c := e.Gives[p]; c.Level != Yes {
			out = append(out, fmt.Sprintf("%s (%s)", lacking(p, c.Level), c.Note))
		}
	}
	return out
}

// Missing are the protections e does not give in full, by name only,
// joined for one line: "a, b (partly) and c".
func (e Engine) Missing() string {
	var out []string
	for _, p := range Protections() {
		switch e.Gives[p].Level {
		case No:
			out = append(out, string(p))
		case Partly:
			out = append(out, string(p)+" (only partly)")
		}
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], "; ") + " and " + out[len(out)-1]
}

// lacking names protection p that an engine gives only partly or not.
func lacking(p Protection, l Level) string {
	if l == Partly {
		return "only partly: " + string(p)
	}
	return "NOT: " + string(p)
}

// Summary is one sentence on e: its name, how it confines, and what it
// does not give ("" after the how when it gives everything).
func (e Engine) Summary() string {
	s := fmt.Sprintf("engine: %s (%s)", e.Name, e.How)
	if lacks := e.Lacks(); len(lacks) > 0 {
		s += "; it gives " + strings.Join(lacks, "; ")
	}
	return s
}

// BannerLabel is what the start banner says in its parentheses: the
// engine's name, and for an engine weaker than the view, that it is and
// where to read what it lacks.
func (e Engine) BannerLabel() string {
	if e.ID == Weaker || e.ID == Nono {
		return fmt.Sprintf("%s: weaker than the namespace view, %d protections missing; --dry-run lists them", e.Name, len(e.Lacks()))
	}
	return e.Name
}

// Markdown is README.md's table of protections by engine.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| protection |")
	for _, e := range engines {
		fmt.Fprintf(&b, " %s (`%s`) |", e.Name, e.ID)
	}
	b.WriteString("\n|---|")
	for range engines {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range Protections() {
		fmt.Fprintf(&b, "| %s |", p)
		for _, e := range engines {
			c := e.Gives[p]
			word := map[Level]string{Yes: "yes", Partly: "**partly**", No: "**no**"}[c.Level]
			fmt.Fprintf(&b, " %s: %s |", word, strings.ReplaceAll(c.Note, "|", "\\|"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

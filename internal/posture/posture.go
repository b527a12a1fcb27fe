// Package posture decides whether a run is sandboxed, by which backend, with
// which network policy, and which warnings are printed.
//
// Resolve is a pure function of the command-line flags, the agent folder's
// two files and two facts about the host. It implements the seed's
// precedence lists ("Backend precedence", the network flag precedence and
// "Opting out"); README.md documents the readings chosen where the seed can
// be read two ways.
package posture

import (
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// Backend is a sandbox engine.
type Backend string

// The backends. None means the agent runs bare.
const (
	None     Backend = ""
	Nono     Backend = "nono"
	Sbx      Backend = "sbx"
	Landlock Backend = "landlock"
)

// Reason names the rule of the precedence list that decided the backend.
type Reason string

// The rules, in precedence order.
const (
	ByNoSandboxFlag      Reason = "--no-sandbox"
	BySandboxBackendFlag Reason = "--sandbox-backend"
	BySandboxFlag        Reason = "--sandbox"
	ByNetworkFlags       Reason = "network flags"
	ByFolderOptOut       Reason = "folder opt-out"
	ByFolderNono         Reason = "folder nono.json"
	ByFolderSbx          Reason = "folder sbx.json"
	ByFolderBoth         Reason = "folder nono.json and sbx.json"
	ByDefault            Reason = "default (no folder opt-in)"
)

// Flags are the run flags that bear on the posture.
type Flags struct {
	Sandbox    bool     // --sandbox
	NoSandbox  bool     // --no-sandbox
	Backend    Backend  // --sandbox-backend, None when not given
	Offline    bool     // --offline
	AllowHosts []string // --allow-host, repeatable
	// NetworkOpen is --network open: an unrestricted network for this run,
	// over the folder's allow list (the filesystem stays sandboxed).
	NetworkOpen bool
}

// Host holds the facts about the machine that the decision needs.
type Host struct {
	GOOS      string // runtime.GOOS
	NonoFound bool   // a nono binary is on PATH
}

// Input is everything Resolve looks at.
type Input struct {
	Agent string // the agent's id, for warning texts
	Flags Flags
	Nono  *sandboxfile.File // nil when the folder has no sandbox/nono.json
	Sbx   *sandboxfile.File // nil when the folder has no sandbox/sbx.json
	Host  Host
}

// NetMode is the kind of network policy.
type NetMode string

// Network modes.
const (
	NetOpen      NetMode = "open"
	NetBlocked   NetMode = "blocked"
	NetAllowlist NetMode = "allowlist"
)

// Network is the resolved network policy. In allow-list mode with neither
// AllowDomains nor Profile (an empty allow_domain list) no host is
// reachable: see NoHost.
type Network struct {
	Mode         NetMode
	AllowDomains []string
	OpenPorts    []int
	ListenPorts  []int
	// Profile is a nono network profile name; "" when none.
	Profile string
	// Source says what decided: "--offline", "--allow-host", a file path, or "default".
	Source string
}

// NoHost reports an allow-list network that lists no host and no network
// profile: every backend must then reach no host at all (or refuse).
func (n Network) NoHost() bool {
	return n.Mode == NetAllowlist && len(n.AllowDomains) == 0 && n.Profile == ""
}

// NoHostNote says that an allow list is empty; it ends the warning of such a
// run and the --dry-run network line.
const NoHostNote = "the allow list is empty, so no host is reachable"

// Posture is the decision.
type Posture struct {
	Sandboxed bool
	Backend   Backend
	Reason    Reason
	// Fallback is set when the backend differs from the one the rules chose
	// (nono missing, built-in landlock used instead); it is the notice line.
	Fallback string
	Network  Network
	// Policy is the folder file whose grants and network apply: the chosen
	// backend's own file, else its sibling; nil when the folder has neither.
	Policy *sandboxfile.File
	// Warnings are warning lines without the "agent-sandbox: warning: " prefix.
	Warnings []string
}

// Error is a posture that cannot be run; the caller exits 125.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Resolve applies the precedence rules, in named steps: the flags are
// checked, the backend chosen (a run that stays unsandboxed ends there),
// a missing nono falls back to the built-in engine, and the network is
// resolved from the policy file.
func Resolve(in Input) (Posture, error) {
	if err := checkFlags(in.Flags); err != nil {
		return Posture{}, err
	}
	p, sandboxed := chooseBackend(in)
	if !sandboxed {
		return p, nil
	}
	p.Sandboxed = true
	if err := hostBackend(in, &p); err != nil {
		return p, err
	}
	resolveNetwork(in, &p)
	return p, nil
}

// checkFlags refuses an unknown --sandbox-backend and --network open
// together with --offline or --allow-host.
func checkFlags(f Flags) error {
	if f.Backend != None && f.Backend != Nono && f.Backend != Sbx && f.Backend != Landlock {
		return &Error{fmt.Sprintf("--sandbox-backend %q: want nono, sbx or landlock", f.Backend)}
	}
	if f.NetworkOpen && (f.Offline || len(f.AllowHosts) > 0) {
		return &Error{"--network open contradicts --offline and --allow-host: give one of them"}
	}
	return nil
}

// netFlags reports whether any network flag was given.
func netFlags(f Flags) bool {
	return f.Offline || len(f.AllowHosts) > 0 || f.NetworkOpen
}

// chooseBackend applies the backend precedence: --no-sandbox >
// --sandbox-backend > --sandbox > folder posture > network flags >
// unsandboxed default. sandboxed is false for a run that stays bare (its
// posture then is complete, warnings included).
func chooseBackend(in Input) (p Posture, sandboxed bool) {
	f := in.Flags
	switch {
	case f.NoSandbox:
		return noSandbox(in), false
	case f.Backend != None:
		p.Backend, p.Reason = f.Backend, BySandboxBackendFlag
	case f.Sandbox:
		p.Backend, p.Reason = declared(in), BySandboxFlag
	case in.Nono.OptedOut() || in.Sbx.OptedOut():
		// Either file opting out makes the folder run bare, unless the
		// network flags force the sandbox on (they act as --sandbox).
		if netFlags(f) {
			p.Backend, p.Reason = declared(in), ByNetworkFlags
			break
		}
		return optedOut(in), false
	case in.Nono != nil && in.Sbx != nil:
		p.Backend, p.Reason = Nono, ByFolderBoth
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s declares both sandbox/nono.json and sandbox/sbx.json: using nono (pass --sandbox-backend sbx to use sbx)", in.Agent))
	case in.Nono != nil:
		p.Backend, p.Reason = Nono, ByFolderNono
	case in.Sbx != nil:
		p.Backend, p.Reason = Sbx, ByFolderSbx
	case netFlags(f):
		p.Backend, p.Reason = Nono, ByNetworkFlags
	default:
		p.Reason = ByDefault
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s declares neither sandbox/nono.json nor sandbox/sbx.json: it runs unsandboxed, with your full user rights (pass --sandbox to enforce the sandbox)", in.Agent))
		return p, false
	}
	return p, true
}

// noSandbox is the posture of --no-sandbox, with its warnings.
func noSandbox(in Input) Posture {
	f := in.Flags
	p := Posture{Reason: ByNoSandboxFlag}
	if netFlags(f) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("network policy has no effect without the sandbox — %s runs with no network isolation (--sandbox to enforce it)", in.Agent))
	}
	if f.Sandbox || f.Backend != None {
		p.Warnings = append(p.Warnings, "--no-sandbox overrides --sandbox and --sandbox-backend")
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("--no-sandbox: %s runs unsandboxed, with your full user rights", in.Agent))
	return p
}

// optedOut is the posture of a folder whose file says {"sandbox": false}.
func optedOut(in Input) Posture {
	p := Posture{Reason: ByFolderOptOut}
	for _, sf := range []*sandboxfile.File{in.Nono, in.Sbx} {
		if sf.OptedOut() {
			p.Warnings = append(p.Warnings, fmt.Sprintf("SANDBOX DISABLED: %s says {\"sandbox\": false}, so %s runs unsandboxed, with your full user rights (pass --sandbox to enforce the sandbox)", sf.Path, in.Agent))
		}
	}
	return p
}

// hostBackend fits the chosen backend to the host: nono is the default
// backend; without a nono binary the same policy runs under the built-in
// landlock engine on Linux, unless nono was named explicitly. The
// built-in engine needs Linux.
func hostBackend(in Input, p *Posture) error {
	if p.Backend == Nono && !in.Host.NonoFound {
		switch {
		case p.Reason == BySandboxBackendFlag:
			return &Error{"--sandbox-backend nono: nono is not installed (not found on PATH); install nono (https://nono.sh, or `nix run .#agent-sandbox`, which brings it), or use --sandbox-backend landlock"}
		case in.Host.GOOS != "linux":
			return &Error{fmt.Sprintf("nono is not installed (not found on PATH) and the built-in landlock engine needs Linux (this is %s); install nono", in.Host.GOOS)}
		}
		p.Backend = Landlock
		p.Fallback = "nono not found on PATH: enforcing the same policy with the built-in landlock engine"
	}
	if p.Backend == Landlock && in.Host.GOOS != "linux" {
		return &Error{fmt.Sprintf("the landlock backend needs Linux (this is %s); use --sandbox-backend nono or sbx", in.Host.GOOS)}
	}
	return nil
}

// resolveNetwork sets the policy file and the network, with the empty
// allow list's and --network open's warnings; lists are never nil.
func resolveNetwork(in Input, p *Posture) {
	p.Policy = policyFile(in, p.Backend)
	p.Network = network(in.Flags, p.Policy)
	if p.Network.NoHost() {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: network.allow_domain: %s (allow-list mode with no host; list the hosts %s needs, or set network.block to true to say so)", p.Network.Source, NoHostNote, in.Agent))
	}
	if in.Flags.NetworkOpen {
		p.Warnings = append(p.Warnings, fmt.Sprintf("NETWORK OPEN: --network open gives %s an unrestricted network (every host and port, the services on this machine's loopback included), over any allow list of its folder; the filesystem stays sandboxed", in.Agent))
	}
	if p.Network.AllowDomains == nil {
		p.Network.AllowDomains = []string{}
	}
	for _, s := range []*[]int{&p.Network.OpenPorts, &p.Network.ListenPorts} {
		if *s == nil {
			*s = []int{}
		}
	}
}

// declared is the folder's own backend for a bare --sandbox: nono when it
// has nono.json (opted out or not), sbx when it has only sbx.json, else nono.
func declared(in Input) Backend {
	if in.Nono == nil && in.Sbx != nil {
		return Sbx
	}
	return Nono
}

// policyFile picks the file whose grants apply: the backend's own file, else
// the sibling (so forcing another backend never drops the folder's network
// restrictions).
func policyFile(in Input, b Backend) *sandboxfile.File {
	own, sibling := in.Nono, in.Sbx
	if b == Sbx {
		own, sibling = in.Sbx, in.Nono
	}
	if own != nil {
		return own
	}
	return sibling
}

// network applies --offline > --allow-host > --network open > the folder
// file > open (--network open with either of the first two is refused by
// Resolve).
func network(f Flags, file *sandboxfile.File) Network {
	var n Network
	if f.NetworkOpen {
		return Network{Mode: NetOpen, Source: "--network open"}
	}
	if file != nil {
		n.OpenPorts = append([]int{}, file.Network.OpenPort...)
		n.ListenPorts = append([]int{}, file.Network.ListenPort...)
	}
	switch {
	case f.Offline:
		return Network{Mode: NetBlocked, Source: "--offline"}
	case len(f.AllowHosts) > 0:
		n.Mode, n.Source = NetAllowlist, "--allow-host"
		n.AllowDomains = uniq.Ordered(f.AllowHosts)
	case file != nil && file.Network.Block:
		// The file's own open_port and listen_port stay: loopback
		// services the folder names on purpose (--offline blocks
		// them too).
		n.Mode, n.Source = NetBlocked, file.Path
	case file != nil && (file.Network.AllowList || len(file.Network.AllowDomain) > 0 || file.Network.NetworkProfile != ""):
		// A present allow_domain key is allow-list mode even when empty:
		// an empty list allows no host (never "open").
		n.Mode, n.Source = NetAllowlist, file.Path
		n.AllowDomains = uniq.Ordered(file.Network.AllowDomain)
		n.Profile = file.Network.NetworkProfile
	default:
		n.Mode, n.Source = NetOpen, "default"
		if file != nil && (len(n.OpenPorts) > 0 || len(n.ListenPorts) > 0) {
			n.Source = file.Path
		}
	}
	return n
}

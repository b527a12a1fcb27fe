package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// entry is one parsed allow or deny entry.
type entry struct {
	raw  string
	name string // ASCII lower-case name or pattern; empty for an IP literal
	ip   netip.Addr
	port int // 0: any port
	// wildcard: name contains '*' labels; then labels holds them.
	wildcard bool
	labels   []string
}

// parseEntry parses one allow-list or deny-list entry (see the package
// comment for the grammar). The error does not repeat the entry; callers
// name it.
func parseEntry(raw string) (entry, error) {
	e := entry{raw: raw}
	s := strings.TrimSpace(raw)
	if s != raw {
		return e, errors.New("leading or trailing white space")
	}
	if s == "" {
		return e, errors.New("empty entry")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ \t") {
		return e, errors.New("not a host name: give HOST or HOST:PORT, without scheme, user or path")
	}
	host, port, err := splitEntryPort(s)
	if err != nil {
		return e, err
	}
	e.port = port
	if a, ok := parseIPLiteral(host); ok {
		e.ip = a
		if c := classify(a); c == classAlways {
			return e, errAlwaysRefused{fmt.Sprintf("%s is a cloud metadata, link-local or unusable address; the broker always refuses it, remove the entry", a)}
		}
		return e, nil
	}
	if strings.HasPrefix(host, "[") {
		return e, errors.New("brackets hold an IPv6 address, and this is not one")
	}
	if host == "*" {
		e.name, e.wildcard, e.labels = "*", true, []string{"*"}
		return e, nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if l == "*" {
			e.wildcard = true
			out = append(out, "*")
			continue
		}
		if strings.Contains(l, "*") {
			return e, fmt.Errorf("'*' must be a whole label (as in *.example.com), not part of %q", l)
		}
		a, err := toASCIIName(l)
		if err != nil {
			return e, err
		}
		out = append(out, strings.Split(a, ".")...)
	}
	name := strings.Join(out, ".")
	if len(name) > 253 {
		return e, errors.New("name longer than 253 bytes")
	}
	if out[len(out)-1] == "*" {
		return e, errors.New("'*' cannot be the last label (a wildcard must be followed by a domain)")
	}
	if out[0] == "*" && strings.Count(name, "*") > 1 {
		return e, errors.New("a leading '*.' cannot be combined with another '*'")
	}
	e.labels, e.name = out, name
	if isMetadataName(e.name) {
		return e, errAlwaysRefused{"a cloud metadata name; the broker always refuses it, remove the entry"}
	}
	return e, nil
}

// errAlwaysRefused marks an entry that is well formed but names something
// the broker always refuses: an error in an allow list, redundant in a deny
// list.
type errAlwaysRefused struct{ msg string }

func (e errAlwaysRefused) Error() string { return e.msg }

// splitEntryPort splits "host", "host:port", "[v6]", "[v6]:port" and a
// bare IPv6 literal (which has no port).
func splitEntryPort(s string) (string, int, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("missing ']'")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, errors.New("unexpected text after ']'")
		}
		p, err := parsePort(rest[1:])
		return host, p, err
	}
	if strings.Count(s, ":") > 1 {
		if _, err := netip.ParseAddr(s); err == nil {
			return s, 0, nil
		}
		return "", 0, errors.New("an IPv6 address with a port needs brackets: [ADDR]:PORT")
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		p, err := parsePort(s[i+1:])
		return s[:i], p, err
	}
	return s, 0, nil
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return p, nil
}

// parseIPLiteral accepts "1.2.3.4", "::1" and "[::1]" (zones refused).
func parseIPLiteral(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		a, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// matchName reports whether the (normalised) host name matches e.
func (e *entry) matchName(host string) bool {
	if e.name == "" {
		return false
	}
	if !e.wildcard {
		return e.name == host
	}
	if e.name == "*" {
		return host != ""
	}
	if e.labels[0] == "*" && !strings.Contains(e.name[2:], "*") {
		suffix := e.name[1:] // ".example.com"
		prefix, ok := strings.CutSuffix(host, suffix)
		return ok && prefix != "" && !strings.HasSuffix(prefix, ".")
	}
	hl := strings.Split(host, ".")
	if len(hl) != len(e.labels) {
		return false
	}
	for i, p := range e.labels {
		if p != "*" && p != hl[i] || hl[i] == "" {
			return false
		}
	}
	return true
}

// matches reports whether e admits the target (a normalised name, or an IP
// literal when ip is valid) on port.
func (e *entry) matches(name string, ip netip.Addr, port int) bool {
	if e.port != 0 && e.port != port {
		return false
	}
	if ip.IsValid() {
		return e.ip.IsValid() && e.ip == ip
	}
	return e.matchName(name)
}

// target is a parsed request target.
type target struct {
	host string     // as written by the client (for the audit log)
	name string     // normalised name; empty for an IP literal
	ip   netip.Addr // valid for an IP literal
	port int
}

// parseTarget parses the host part of a request (without port) and the
// port. Names are normalised; a host that is neither a valid name nor an IP
// literal is an error.
func parseTarget(host string, port int) (target, error) {
	t := target{host: host, port: port}
	if port < 1 || port > 65535 {
		return t, fmt.Errorf("port %d out of range", port)
	}
	if a, ok := parseIPLiteral(host); ok {
		t.ip = a
		return t, nil
	}
	if strings.ContainsAny(host, "[]:%*") {
		return t, errors.New("invalid host")
	}
	n, err := toASCIIName(host)
	if err != nil {
		return t, err
	}
	t.name = n
	return t, nil
}

// policy is a parsed allow list plus deny list.
type policy struct {
	allow []entry
	deny  []entry
	// ownLoopback: the agent's loopback is its own (Config.SandboxLoopback);
	// a loopback target is then admitted on the forwarded ports only.
	ownLoopback bool
	forwarded   map[int]bool
}

// sandboxLoopback makes p judge loopback targets as the run's own
// loopback does: only the forwarded ports reach the host's.
func (p *policy) sandboxLoopback(forwarded []int) {
	p.ownLoopback = true
	p.forwarded = map[int]bool{}
	for _, port := range forwarded {
		p.forwarded[port] = true
	}
}

// Direct reports whether NoProxy sends a client's connection to host past
// the proxy, onto the agent's own loopback: "localhost" and the names
// below it, 127.0.0.1 and ::1 (bracketed or not), case and a trailing dot
// ignored. Under the built-in engine such a connection reaches the host
// only on a forwarded port.
func Direct(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, ok := parseIPLiteral(h)
	return ok && (a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback())
}

// Loopback reports whether host names the loopback itself: localhost (and
// the names below it) or a loopback address (127.0.0.0/8, ::1). In a
// sandbox (Config.SandboxLoopback) such a target reaches the host's
// loopback on forwarded ports only, through the proxy as directly.
func Loopback(host string) bool {
	t, err := parseTarget(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), 1)
	return err == nil && loopbackTarget(t)
}

// loopbackTarget: a target that names the loopback itself: localhost (and
// the names below it) or a loopback address (127.0.0.0/8, ::1).
func loopbackTarget(t target) bool {
	if t.ip.IsValid() {
		return t.ip.IsLoopback()
	}
	return t.name == "localhost" || strings.HasSuffix(t.name, ".localhost")
}

func newPolicy(allow, deny []string) (*policy, error) {
	p := &policy{}
	for _, s := range allow {
		e, err := parseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("allow entry %q: %v", s, err)
		}
		p.allow = append(p.allow, e)
	}
	for _, s := range deny {
		e, err := parseEntry(s)
		var always errAlwaysRefused
		if err != nil && !errors.As(err, &always) {
			return nil, fmt.Errorf("deny entry %q: %v", s, err)
		}
		// A deny entry naming a metadata endpoint is redundant, not wrong.
		p.deny = append(p.deny, e)
	}
	return p, nil
}

// verdict of the name check, before resolution.
type verdict struct {
	ok     bool
	reason string
	// exact: the target is named by a non-wildcard entry (IP literal or
	// exact name), so loopback and private addresses are admissible.
	exact bool
	rule  string // the entry that decided
}

// check applies the name-level rules: metadata names, deny entries, allow
// entries. Deny is checked before allow.
func (p *policy) check(t target) verdict {
	if t.name != "" && isMetadataName(t.name) {
		return verdict{reason: "cloud metadata name, always refused"}
	}
	if t.ip.IsValid() && classify(t.ip) == classAlways {
		return verdict{reason: "cloud metadata or link-local address, always refused"}
	}
	for i := range p.deny {
		if p.deny[i].matches(t.name, t.ip, t.port) {
			return verdict{reason: fmt.Sprintf("denied by entry %q", p.deny[i].raw), rule: p.deny[i].raw}
		}
	}
	// Through the proxy a loopback target reaches what a direct
	// connection from the sandbox reaches: the host's loopback on the
	// forwarded ports, nothing else (a list naming 127.0.0.1 without a
	// port must not open every loopback service of the host to a client
	// that ignores NO_PROXY).
	if p.ownLoopback && loopbackTarget(t) {
		if p.forwarded[t.port] {
			return verdict{ok: true, exact: true, reason: fmt.Sprintf("port %d is forwarded to the host's loopback (open_port, or a loopback HOST:PORT of the allow list)", t.port)}
		}
		return verdict{reason: fmt.Sprintf("port %d of the loopback is not forwarded: inside the sandbox the loopback is its own, and the host's is reachable only on the forwarded ports (open_port, or an allow-list entry localhost:PORT)", t.port)}
	}
	var wild *entry
	for i := range p.allow {
		e := &p.allow[i]
		if !e.matches(t.name, t.ip, t.port) {
			continue
		}
		if !e.wildcard {
			return verdict{ok: true, exact: true, reason: fmt.Sprintf("allowed by entry %q", e.raw), rule: e.raw}
		}
		if wild == nil {
			wild = e
		}
	}
	if wild != nil {
		return verdict{ok: true, reason: fmt.Sprintf("allowed by entry %q", wild.raw), rule: wild.raw}
	}
	if t.ip.IsValid() {
		return verdict{reason: "IP address not in the allow list (an address is admitted only by an entry naming it)"}
	}
	for i := range p.allow {
		if p.allow[i].port != 0 && p.allow[i].matches(t.name, t.ip, p.allow[i].port) {
			return verdict{reason: fmt.Sprintf("port %d not allowed (entry %q names another port)", t.port, p.allow[i].raw)}
		}
	}
	return verdict{reason: "host not in the allow list"}
}

// checkAddr applies the address rules to one resolved (or literal) address.
// It returns "" when the address may be dialled.
func checkAddr(a netip.Addr, exact bool) string {
	switch classify(a) {
	case classAlways:
		return fmt.Sprintf("resolved address %s is cloud metadata, link-local or unusable, always refused", a)
	case classPrivate:
		if !exact {
			return fmt.Sprintf("resolved address %s is loopback or private, admitted only for a host the list names exactly (DNS rebinding protection)", a)
		}
	}
	return ""
}

type addrClass int

const (
	classPublic addrClass = iota
	classPrivate
	classAlways
)

var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, ...
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
		netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
		netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	}
	alwaysPrefixes = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"), // link-local
		netip.MustParsePrefix("fe80::/10"),      // link-local
		netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.0.0.0 reaches local services
		netip.MustParsePrefix("::/128"),         // unspecified
		netip.MustParsePrefix("224.0.0.0/4"),    // multicast
		netip.MustParsePrefix("ff00::/8"),       // multicast
		netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
	}
	privatePrefixes = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, Tailscale
		netip.MustParsePrefix("fc00::/7"),      // unique local
		netip.MustParsePrefix("fec0::/10"),     // deprecated site-local
	}
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// classify sorts an address into public, private (loopback and private
// ranges) and always-refused (metadata, link-local, unusable). IPv4-mapped
// and NAT64 addresses are judged by the IPv4 address they carry.
func classify(a netip.Addr) addrClass {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if c := classify(v4); c != classPublic {
			return c
		}
	}
	for _, m := range metadataAddrs {
		if a == m {
			return classAlways
		}
	}
	for _, p := range alwaysPrefixes {
		if p.Contains(a) {
			return classAlways
		}
	}
	for _, p := range privatePrefixes {
		if p.Contains(a) {
			return classPrivate
		}
	}
	return classPublic
}

// metadataNames are cloud metadata host names, refused before resolution.
var metadataNames = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata.azure.internal":    true,
	"instance-data":              true, // AWS
	"instance-data.ec2.internal": true,
}

func isMetadataName(n string) bool {
	return metadataNames[strings.TrimSuffix(n, ".")]
}

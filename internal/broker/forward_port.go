package broker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// The audit methods of the connections that are port forwards, not proxy
// requests.
const (
	// MethodForward is a connection the agent opened to a loopback port
	// of its own that the parent forwards to the host's loopback
	// (nono's open_port, or an allow-list entry naming a loopback host
	// with a port).
	MethodForward = "FORWARD"
	// MethodInbound is a connection a host program opened to a host
	// loopback port that the parent forwards into the sandbox, to a
	// server the agent runs there (nono's listen_port).
	MethodInbound = "INBOUND"
	// MethodDirect is a connection the agent attempted past the proxy and
	// the forwards, which its sandbox refused (RecordDirect).
	MethodDirect = "DIRECT"
)

// RecordDirect records a connection the agent attempted past the proxy
// (seen in its sandbox, whose network namespace refused it: a loopback
// port nothing is forwarded to, an address it has no route to), so that
// the audit log, `agent-sandbox log` and the end-of-run line name it with
// what to add, like a refusal of the broker's own.
func (p *Proxy) RecordDirect(addr netip.AddrPort) {
	host := addr.Addr().String()
	if addr.Addr().Is6() {
		host = "[" + host + "]"
	}
	a := &attempt{start: time.Now(), method: MethodDirect, host: addr.Addr().String(), port: int(addr.Port()),
		address: addr.String(), decision: DecisionRefused}
	if ip := addr.Addr(); ip.IsLoopback() || ip.IsUnspecified() {
		a.reason = fmt.Sprintf("the agent connected to its own loopback port %d, which nothing forwards: --allow-host localhost:%d (or open_port) forwards it to the host's", addr.Port(), addr.Port())
	} else {
		a.reason = "the agent connected directly, past the proxy (HTTPS_PROXY): the sandbox has no route but the broker's; a client that ignores the proxy variables reaches nothing"
		if addr.Port() == SSHPort {
			a.reason = SSHRefusal + " (" + a.reason + ")"
		}
	}
	a.refusedAs = fmt.Sprintf("%s:%d", host, addr.Port())
	p.record(a)
}

// UnrecordedDirect counts n connections the agent attempted past the proxy
// that its sandbox saw but did not report one by one (past the first
// thousand destinations): the end-of-run line and one audit line at Close
// say how many.
func (p *Proxy) UnrecordedDirect(n int64) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	p.sum.DirectUnrecorded += n
	p.sum.Refused += int(n)
	p.mu.Unlock()
}

// Forward describes one forwarded port for [Proxy.ServeForward].
type Forward struct {
	// Method is MethodForward or MethodInbound (the audit line's method).
	Method string
	// Host and Port name the destination in the audit line.
	Host string
	Port int
	// Reason names the rule that opened the port ("open_port 11434").
	Reason string
	// Dial connects to the destination.
	Dial func(ctx context.Context) (net.Conn, error)
}

// ServeForward accepts connections on l and relays each to a connection
// made by f.Dial, until Close (then it returns nil) or until Accept fails
// for good. Every connection is one audit line, with the bytes it moved;
// Config.MaxConns bounds them together with the proxy's.
// The policy and the token play no part: the port itself is the grant, so
// the caller only serves ports the policy names.
func (p *Proxy) ServeForward(l net.Listener, f Forward) error {
	return p.serve(l, func(c net.Conn) { p.forwardConn(c, f) })
}

func (p *Proxy) forwardConn(c net.Conn, f Forward) {
	a := &attempt{start: time.Now(), method: f.Method, host: f.Host, port: f.Port}
	defer p.leave()
	if p.enter() {
		a.decision, a.reason = DecisionRefused, fmt.Sprintf("too many concurrent connections (limit %d)", p.cfg.MaxConns)
		p.record(a)
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	up, err := f.Dial(ctx)
	cancel()
	if err != nil {
		a.decision, a.reason = DecisionFailed, fmt.Sprintf("%s: cannot connect: %v", f.Reason, err)
		p.record(a)
		return
	}
	if ra := up.RemoteAddr(); ra != nil {
		a.address = ra.String()
	}
	if !p.track(up) {
		up.Close()
		a.decision, a.reason = DecisionFailed, "proxy closing"
		p.record(a)
		return
	}
	defer p.untrack(up, true)
	a.decision, a.reason = DecisionAllowed, f.Reason
	a.up, a.down = p.tunnel(c, up)
	p.record(a)
}

// LoopbackPort reports whether an allow-list entry names a loopback host
// (localhost, 127.0.0.1, ::1; not the rest of 127/8) with a port, and that port. Under the
// built-in engine such an entry also makes the port reachable on the
// sandbox's own loopback: NO_PROXY sends clients there directly, so it is
// forwarded to the host's loopback like nono's open_port.
func LoopbackPort(raw string) (int, bool) {
	e, err := parseEntry(raw)
	if err != nil || e.port == 0 {
		return 0, false
	}
	if e.ip.IsValid() {
		return e.port, e.ip == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || e.ip == netip.IPv6Loopback()
	}
	return e.port, e.name == "localhost"
}

// EntryPort reports whether an allow-list entry names a port (HOST:PORT,
// [IPv6]:PORT), and that port; an entry that does not parse has none.
func EntryPort(raw string) (int, bool) {
	e, err := parseEntry(raw)
	if err != nil || e.port == 0 {
		return 0, false
	}
	return e.port, true
}

// CheckAllowList parses every entry of an allow list and returns the first
// error, naming the entry; nil when the proxy would accept the list.
func CheckAllowList(allow []string) error {
	_, err := newPolicy(allow, nil)
	return err
}

package broker

import (
	"fmt"
	"time"
)

// DecisionAdded is the audit decision of an entry added to a running
// proxy's allow list (AllowAdd): agent-sandbox allow.
const DecisionAdded = "added"

// checkPolicy applies the current policy (AllowAdd may change it while
// requests are decided).
func (p *Proxy) checkPolicy(t target) verdict {
	p.polMu.RLock()
	pol := p.policy
	p.polMu.RUnlock()
	return pol.check(t)
}

// CheckEntry checks raw as an allow list's entry is checked at New
// (grammar, no cloud metadata name or address) and returns its host and
// port (0: any).
func CheckEntry(raw string) (host string, port int, err error) {
	e, err := parseEntry(raw)
	if err != nil {
		return "", 0, fmt.Errorf("allow entry %q: %v", raw, err)
	}
	return hostOf(e), e.port, nil
}

// Forwarded reports whether the sandbox's loopback port is forwarded to
// the host's (at the start, or by AllowAdd).
func (p *Proxy) Forwarded(port int) bool {
	p.polMu.RLock()
	defer p.polMu.RUnlock()
	return p.policy.forwarded[port]
}

// AllowAdd adds raw to the running proxy's allow list, after the checks
// an allow list's entry gets at New (CheckEntry), and records it in the
// audit log. When the sandbox's loopback is its own, a loopback entry
// needs its port (forwarded set: the caller now forwards the sandbox's
// loopback port to the host's, as at the start); without it, it is
// refused. It returns the entry as the list now holds it.
func (p *Proxy) AllowAdd(raw string, forwarded bool) (string, error) {
	e, err := parseEntry(raw)
	if err != nil {
		return "", fmt.Errorf("allow entry %q: %v", raw, err)
	}
	p.polMu.Lock()
	defer p.polMu.Unlock()
	next := *p.policy
	if t, err := parseTarget(hostOf(e), max(e.port, 1)); err == nil && loopbackTarget(t) && p.policy.ownLoopback {
		if !forwarded || e.port == 0 {
			return "", fmt.Errorf("allow entry %q names the loopback: only a forwarded port (localhost:PORT) of it reaches the host's, and this sandbox cannot forward one while it runs; start the agent again with --allow-host %s", raw, raw)
		}
		next.forwarded = map[int]bool{e.port: true}
		for port := range p.policy.forwarded {
			next.forwarded[port] = true
		}
	}
	for _, x := range p.policy.allow {
		if x.raw == e.raw {
			return e.raw, nil
		}
	}
	// Copy on write: a decision under way keeps the list it read.
	next.allow = append(append([]entry(nil), p.policy.allow...), e)
	p.policy = &next
	if p.audit != nil {
		host := e.name
		if e.ip.IsValid() {
			host = e.ip.String()
		}
		_ = p.audit.write(&Entry{Time: time.Now().UTC(), Agent: p.cfg.AgentID, Host: host, Port: e.port, Decision: DecisionAdded,
			Reason: fmt.Sprintf("allow entry %q added to the running session by agent-sandbox allow", e.raw)})
	}
	return e.raw, nil
}

// hostOf is the host part of e, for parseTarget.
func hostOf(e entry) string {
	if e.ip.IsValid() {
		return e.ip.String()
	}
	return e.name
}

package broker

import "fmt"

// Allowed reports whether an allow list admits host:port by name, with the
// reason the proxy would log: the entry that allows it, or why not (deny
// before allow, metadata names and addresses always refused, wildcards
// never matching IP literals). It is the proxy's own name check; the
// address check after resolution (loopback and private addresses only for
// a host the list names exactly) happens at connection time and is not
// applied here. The error is a malformed list or target.
func Allowed(allow []string, host string, port int) (bool, string, error) {
	p, err := newPolicy(allow, nil)
	if err != nil {
		return false, "", err
	}
	t, err := parseTarget(host, port)
	if err != nil {
		return false, "", fmt.Errorf("%s:%d: %v", host, port, err)
	}
	v := p.check(t)
	return v.ok, v.reason, nil
}

// AllowedInSandbox is Allowed for the proxy of a sandboxed run
// (Config.SandboxLoopback): a loopback target is admitted on the
// forwarded ports only, whatever the list says.
func AllowedInSandbox(allow []string, forwarded []int, host string, port int) (bool, string, error) {
	p, err := newPolicy(allow, nil)
	if err != nil {
		return false, "", err
	}
	p.sandboxLoopback(forwarded)
	t, err := parseTarget(host, port)
	if err != nil {
		return false, "", fmt.Errorf("%s:%d: %v", host, port, err)
	}
	v := p.check(t)
	return v.ok, v.reason, nil
}

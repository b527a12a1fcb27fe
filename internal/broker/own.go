package broker

import (
	"net"
	"net/netip"
	"time"
)

// ownAddrsTTL bounds how stale the cached list of this machine's
// addresses may be (an interface gaining an address during a run).
const ownAddrsTTL = 5 * time.Second

// addrSet is a set of addresses (unmapped).
type addrSet map[netip.Addr]bool

func (s addrSet) has(a netip.Addr) bool { return s[a.Unmap()] }

// own returns this machine's addresses (Config.OwnAddrs), cached for
// ownAddrsTTL. When they cannot be read, the last list known is kept.
func (p *Proxy) own() addrSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ownSet != nil && time.Since(p.ownAt) < ownAddrsTTL {
		return p.ownSet
	}
	addrs, err := p.cfg.OwnAddrs()
	if err != nil && p.ownSet != nil {
		return p.ownSet
	}
	set := addrSet{}
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if ad, ok := netip.AddrFromSlice(ip); ok {
			set[ad.Unmap()] = true
		}
	}
	p.ownSet, p.ownAt = set, time.Now()
	return set
}

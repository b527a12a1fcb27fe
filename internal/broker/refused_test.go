package broker

import (
	"net/netip"
	"sync"
	"testing"
)

// TestRefusedCalledOnce: Config.Refused is told each refused destination
// once, the first time, with the reason (the announcement of issue 39
// item 8); a destination the policy admits is not reported.
func TestRefusedCalledOnce(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]string{}
	res := &fakeResolver{m: map[string][]string{"denied.test": {"93.184.216.34"}}}
	f := startProxy(t, Config{Allow: []string{"allowed.test"}, Resolver: res, Refused: func(dest, reason string) {
		mu.Lock()
		got[dest] = append(got[dest], reason)
		mu.Unlock()
	}})
	for range 3 {
		resp, _, _ := f.raw(t, "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n"+f.auth()+"\r\n")
		if resp.StatusCode != 403 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	f.p.RecordDirect(netip.MustParseAddrPort("192.0.2.7:22"))
	f.p.RecordDirect(netip.MustParseAddrPort("192.0.2.7:22"))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(got["denied.test"]) != 1 || got["denied.test"][0] != "host not in the allow list" {
		t.Errorf("Refused calls: %q", got)
	}
	if r := got["192.0.2.7:22"]; len(r) != 1 || r[0][:len(SSHRefusal)] != SSHRefusal {
		t.Errorf("direct attempt: %q", r)
	}
}

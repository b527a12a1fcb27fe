package broker

import (
	"net/netip"
	"strings"
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

// TestExpectedRefusals: a refusal the folder expects (Config.Expected) is
// still refused and logged, but neither announced (Refused) nor in the
// end-of-run line; it admits nothing, and an unexpected refusal of the
// same run is warned of as before.
func TestExpectedRefusals(t *testing.T) {
	var mu sync.Mutex
	var announced []string
	res := &fakeResolver{m: map[string][]string{"downloads.example": {"93.184.216.34"}, "other.example": {"93.184.216.35"}}}
	f := startProxy(t, Config{Allow: []string{"allowed.test"}, Expected: []string{"downloads.example"}, Resolver: res, Refused: func(dest, reason string) {
		mu.Lock()
		announced = append(announced, dest)
		mu.Unlock()
	}})
	for _, h := range []string{"downloads.example", "downloads.example", "other.example"} {
		resp, _, _ := f.raw(t, "CONNECT "+h+":443 HTTP/1.1\r\nHost: "+h+":443\r\n"+f.auth()+"\r\n")
		if resp.StatusCode != 403 {
			t.Fatalf("%s: status %d: an expected refusal must stay refused", h, resp.StatusCode)
		}
	}
	if d := f.dial.dialled(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
	s := f.p.Summary()
	if s.Expected != 2 || s.Refused != 1 || s.RefusedHosts["downloads.example"] != 0 {
		t.Errorf("summary %+v", s)
	}
	if msg := s.Message(); strings.Contains(msg, "downloads.example") || !strings.Contains(msg, "other.example ×1") {
		t.Errorf("end-of-run line %q", msg)
	}
	mu.Lock()
	if len(announced) != 1 || announced[0] != "other.example" {
		t.Errorf("announced %q", announced)
	}
	mu.Unlock()
	f.p.Close()
	es := f.audit(t)
	if len(es) != 3 || es[0].Decision != DecisionRefused || !strings.Contains(es[0].Reason, "expected by the agent folder") {
		t.Errorf("audit %+v", es)
	}
	if _, err := New(Config{Expected: []string{"bad host"}, Token: NewToken()}); err == nil || !strings.Contains(err.Error(), `expected refusal "bad host"`) {
		t.Errorf("a bad entry: %v", err)
	}
}

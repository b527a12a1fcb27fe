package broker

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestSSHRefusalSaysWhy: a CONNECT to port 22 (git over an ssh remote
// through a ProxyCommand) is refused with the reason in the status line,
// which is all a CONNECT client shows (OpenBSD nc prints it as `Proxy
// error: "HTTP/1.1 403 ..."`), and the fix that works today: the HTTPS
// remote with a credential route. The same reason goes to the body, the
// audit log and a direct attempt to port 22.
func TestSSHRefusalSaysWhy(t *testing.T) {
	res := &fakeResolver{m: map[string][]string{"github.com": {"140.82.112.3"}}}
	f := startProxy(t, Config{Allow: []string{"api.anthropic.com", "gitlab.com:443"}, Resolver: res})
	for _, host := range []string{"github.com", "gitlab.com"} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "CONNECT "+host+":22 HTTP/1.1\r\nHost: "+host+":22\r\n"+f.auth()+"\r\n"); err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(bufio.NewReader(c))
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		status, _, _ := strings.Cut(string(all), "\r\n")
		for _, want := range []string{"HTTP/1.1 403 Forbidden (agent-sandbox: ssh (port 22) does not work in the sandbox", "no ssh key", "git remote set-url origin https://", "credential route"} {
			if !strings.Contains(status, want) {
				t.Errorf("CONNECT %s:22: status line %q lacks %q", host, status, want)
			}
		}
		if !strings.Contains(string(all), "\r\n\r\nagent-sandbox egress broker: "+SSHRefusal) {
			t.Errorf("CONNECT %s:22: body lacks the reason: %q", host, all)
		}
	}
	// A refusal of another port says only the policy's reason.
	resp, _, _ := f.raw(t, "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n"+f.auth()+"\r\n")
	if resp.StatusCode != 403 || strings.Contains(resp.Status, "ssh") || !strings.Contains(resp.Status, "host not in the allow list") {
		t.Errorf("CONNECT github.com:443: %q", resp.Status)
	}
	f.p.RecordDirect(netip.MustParseAddrPort("140.82.112.3:22"))
	f.p.Close()
	es := f.audit(t)
	if len(es) != 4 {
		t.Fatalf("audit has %d lines, want 4: %+v", len(es), es)
	}
	for i, e := range []Entry{es[0], es[1], es[3]} {
		if !strings.HasPrefix(e.Reason, "ssh (port 22) does not work in the sandbox") {
			t.Errorf("audit line %d: reason %q", i, e.Reason)
		}
	}
	if !strings.Contains(es[1].Reason, `port 22 not allowed (entry "gitlab.com:443" names another port)`) {
		t.Errorf("the policy's reason is lost: %q", es[1].Reason)
	}
}

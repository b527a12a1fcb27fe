package e2e

import (
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWeakerCredentials (issue 37, item 2): the credential routes work
// through the weaker sandbox (a host without user namespaces): the broker
// listens on the host's loopback on a port Landlock lets the agent
// reach, the agent holds a phantom, the API sees the real key, and the
// real key is in no environment, /proc entry or file the agent can read;
// the real Claude Code and pi complete a turn through a stand-in API.
func TestWeakerCredentials(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	real := "sk-ant-REALKEYMARK-" + strings.Repeat("7", 24)
	api := newKeyStandIn(t, real)
	port := api.Listener.Addr().(*net.TCPAddr).Port
	r := newBrokerRun(t)
	r.prefix = noUserns(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "keyed")
	write(t, filepath.Join(folder, "agent.toml"), credentialsFolder)
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	env := []string{"ANTHROPIC_API_KEY=" + real, "ANTHROPIC_BASE_URL=" + api.URL, "SSL_CERT_FILE=" + api.ca, "AGENT_SANDBOX_WEAKER_SANDBOX=1"}
	allow := fmt.Sprintf("127.0.0.1:%d", port)
	// Control: unsandboxed (in the same simulated host) the agent holds
	// the real key.
	if _, out := r.run(60*time.Second, env, "--no-sandbox", folder, "-c", `echo "KEY=$ANTHROPIC_API_KEY"`); !strings.Contains(out, "KEY="+real) {
		t.Fatalf("control: unsandboxed the key is not in the environment: %s", out)
	}
	code, out := r.run(120*time.Second, append(env, "PROBE_TRY_HEX="+hex.EncodeToString([]byte(real))), "--allow-host", allow, folder, "-c", credentialsProbe)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "WEAKER sandbox") {
		t.Fatalf("not the weaker sandbox: %s", out)
	}
	checkCredentialsProbe(t, out)
	if seen := api.seen(); len(seen) != 1 || seen[0] != real {
		t.Errorf("the API saw keys %q, want the real one once", seen)
	}
	// The parent's environment holds the real key: the agent must not
	// read it through /proc (Landlock's ptrace restriction).
	code, out = r.run(60*time.Second, env, "--allow-host", allow, folder, "-c",
		`p=$PPID; while [ "$p" -gt 1 ]; do tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -c REALKEYMARK | sed "s/^/PARENT-$p=/"; p=$(awk '{print $4}' /proc/$p/stat 2>/dev/null || echo 1); done; echo DONE`)
	if !strings.Contains(out, "DONE") || regexp.MustCompile(`PARENT-\d+=[1-9]`).MatchString(out) {
		t.Errorf("an ancestor's environment with the real key is readable (exit %d):\n%s", code, out)
	}
	if !regexp.MustCompile(`PARENT-\d+=0`).MatchString(out) {
		t.Errorf("control: no ancestor was looked at:\n%s", out)
	}

	for _, a := range []struct{ name, pkg string }{{"claude", "@anthropic-ai/claude-code"}, {"pi", "@mariozechner/pi-coding-agent@0.73.1"}} {
		t.Run(a.name+" completes a turn with its key injected", func(t *testing.T) {
			realAgent(t, a.name, a.pkg)
			before := len(api.seen())
			r := newBrokerRun(t)
			r.prefix = noUserns(t)
			args := []string{"--allow-host", allow, a.name, "-p", "Say hello."}
			if a.name == "pi" {
				args = []string{"--allow-host", allow, "pi", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--no-session", "-p", "Say hello."}
			}
			code, out := r.run(120*time.Second, env, args...)
			if code != 0 || !strings.Contains(out, standInReply) {
				t.Fatalf("exit %d, want the stand-in's reply:\n%s", code, out)
			}
			onlyKey(t, api.seen()[before:], real)
		})
	}
}

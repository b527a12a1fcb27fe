package e2e

// The egress broker (issue 11) with real programs, all on loopback: curl
// and Node's fetch through the proxy (HTTP and HTTPS), the token, a name
// not on the list (refused and in the audit log), programs that ignore the
// proxy, DNS and UDP; then the real Claude Code and pi completing a turn
// against loopback stand-ins of their APIs, through the built-in engine
// with an allow list.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// standInReply is what the stand-in APIs answer; a turn completed when the
// agent prints it.
const standInReply = "STANDIN-REPLY-7f3a"

// apiStandIn is a loopback stand-in of the Anthropic Messages API and the
// OpenAI chat completions API, streaming as the real ones do (SSE). It
// records the requests it got.
type apiStandIn struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
}

func newAPIStandIn(t *testing.T) *apiStandIn {
	s := &apiStandIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *apiStandIn) port() int { return s.Listener.Addr().(*net.TCPAddr).Port }

func (s *apiStandIn) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.reqs...)
}

func (s *apiStandIn) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	var req struct {
		Stream bool   `json:"stream"`
		Model  string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens": 10}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		anthropicReply(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		openAIReply(w, req.Model, req.Stream)
	default:
		http.NotFound(w, r)
	}
}

func anthropicReply(w http.ResponseWriter, model string, stream bool) {
	if model == "" {
		model = "claude-standin"
	}
	usage := `{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}`
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": "msg_standin", "type": "message", "role": "assistant", "model": %q, "content": [{"type": "text", "text": %q}], "stop_reason": "end_turn", "stop_sequence": null, "usage": %s}`, model, standInReply, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	event := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if f != nil {
			f.Flush()
		}
	}
	event("message_start", fmt.Sprintf(`{"type": "message_start", "message": {"id": "msg_standin", "type": "message", "role": "assistant", "model": %q, "content": [], "stop_reason": null, "stop_sequence": null, "usage": %s}}`, model, usage))
	event("content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`)
	event("ping", `{"type": "ping"}`)
	for _, part := range []string{standInReply[:8], standInReply[8:]} {
		event("content_block_delta", fmt.Sprintf(`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": %q}}`, part))
	}
	event("content_block_stop", `{"type": "content_block_stop", "index": 0}`)
	event("message_delta", `{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}`)
	event("message_stop", `{"type": "message_stop"}`)
}

func openAIReply(w http.ResponseWriter, model string, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": "c1", "object": "chat.completion", "created": 0, "model": %q, "choices": [{"index": 0, "message": {"role": "assistant", "content": %q}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}`, model, standInReply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	chunk := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		if f != nil {
			f.Flush()
		}
	}
	chunk(fmt.Sprintf(`{"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": %q, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}`, model))
	for _, part := range []string{standInReply[:8], standInReply[8:]} {
		chunk(fmt.Sprintf(`{"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": %q, "choices": [{"index": 0, "delta": {"content": %q}, "finish_reason": null}]}`, model, part))
	}
	chunk(fmt.Sprintf(`{"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": %q, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}`, model))
	chunk("[DONE]")
}

// brokerRun is one `agent-sandbox --sandbox-backend landlock FLAGS AGENT
// ARGS...` in a fresh home and workdir, with extra environment.
type brokerRun struct {
	t    *testing.T
	bin  string
	home string
	work string
	// wrap is a command prefix for agent-sandbox (weaker_test.go's
	// noUserns: a host without user namespaces, where nono runs alone).
	wrap []string
}

func newBrokerRun(t *testing.T) *brokerRun {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &brokerRun{t: t, bin: buildAgentSandbox(t), home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, d := range []string{r.home, r.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An agent folder running /bin/sh with the shell agent's defaults but
	// a policy file, so the allow list comes from --allow-host.
	write(t, filepath.Join(root, "agents", "sh", "agent.toml"), "command = \"/bin/sh\"\n")
	write(t, filepath.Join(root, "agents", "sh", "sandbox", "nono.json"), "{}\n")
	return r
}

func (r *brokerRun) folder() string { return filepath.Join(filepath.Dir(r.home), "agents", "sh") }

func (r *brokerRun) run(timeout time.Duration, env []string, args ...string) (int, string) {
	r.t.Helper()
	return r.cli(timeout, env, append([]string{"--sandbox-backend", "landlock"}, args...)...)
}

// cli runs `agent-sandbox ARGS...` in the run's home and workdir.
func (r *brokerRun) cli(timeout time.Duration, env []string, args ...string) (int, string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(append([]string{}, r.wrap...), r.bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.work
	cmd.Env = withCover(append([]string{"HOME=" + r.home, "PATH=" + agentBinDir() + string(os.PathListSeparator) + pathFor(args), "LANG=C.UTF-8", "TERM=dumb"}, env...))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		r.t.Fatalf("agent-sandbox %s did not finish in %v (a hang): %s", strings.Join(args, " "), timeout, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("agent-sandbox: %v", err)
	}
	return code, out.String()
}

// audit returns the agent's audit log lines.
func (r *brokerRun) audit(agent string) string {
	b, _ := os.ReadFile(filepath.Join(r.home, ".local", "state", "agent-sandbox", "audit", agent+".jsonl"))
	return string(b)
}

func skipWithoutLandlock(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real programs in the sandbox; skipped with -short")
	}
	if why := landlockMissing(); why != "" {
		t.Skip(why)
	}
}

// TestBrokerRealPrograms: curl, Node and Python inside the built-in engine
// with an allow list; the host side is httptest servers on loopback.
func TestBrokerRealPrograms(t *testing.T) {
	skipWithoutLandlock(t)
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: apt-get install %s (.ci/run does)", tool, tool)
		}
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain-ok") }))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls-ok") }))
	defer tlsSrv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "CANARY-other-reached") }))
	defer other.Close()
	portOf := func(s *httptest.Server) string { return strconv.Itoa(s.Listener.Addr().(*net.TCPAddr).Port) }
	r := newBrokerRun(t)
	ca := filepath.Join(r.work, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	allow := []string{"--allow-host", "127.0.0.1:" + portOf(plain), "--allow-host", "127.0.0.1:" + portOf(tlsSrv)}

	t.Run("curl through the proxy, HTTP and HTTPS", func(t *testing.T) {
		// --noproxy '' makes curl use the proxy even for 127.0.0.1
		// (NO_PROXY sends loopback past it, to the forwarded port).
		script := fmt.Sprintf(`set -e
curl -sS --noproxy '' http://127.0.0.1:%s/ ; echo
curl -sS --noproxy '' --cacert %s https://127.0.0.1:%s/ ; echo
curl -sS http://127.0.0.1:%s/ | sed 's/^/direct-/'; echo`, portOf(plain), ca, portOf(tlsSrv), portOf(plain))
		code, out := r.run(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		for _, want := range []string{"plain-ok", "tls-ok", "direct-plain-ok"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
		log := r.audit("sh")
		if !strings.Contains(log, `"method":"CONNECT","host":"127.0.0.1","port":`+portOf(tlsSrv)) || !strings.Contains(log, `"method":"GET"`) ||
			!strings.Contains(log, `"method":"FORWARD"`) {
			t.Errorf("the audit log lacks the tunnel, the plain request or the forward:\n%s", log)
		}
	})

	t.Run("a host not on the list is refused and logged", func(t *testing.T) {
		script := fmt.Sprintf(`curl -sS --noproxy '' -o /dev/null -w '%%{http_code}\n' http://127.0.0.1:%s/; curl -sS -o /dev/null -w '%%{http_code}\n' https://www.example.com/ ; true`, portOf(other))
		code, out := r.run(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Contains(out, "CANARY-other-reached") || !strings.Contains(out, "403") {
			t.Errorf("exit %d; want a 403 and no answer from the other server:\n%s", code, out)
		}
		if !strings.Contains(out, "the egress broker refused 2 connections") || !strings.Contains(out, "www.example.com") {
			t.Errorf("no end-of-run line naming the refused hosts:\n%s", out)
		}
		log := r.audit("sh")
		if !strings.Contains(log, `"host":"www.example.com","port":443,"decision":"refused"`) {
			t.Errorf("the refusal is not in the audit log:\n%s", log)
		}
		code, out = r.cli(30*time.Second, nil, "log", "sh")
		if code != 0 || !strings.Contains(out, "refused CONNECT www.example.com:443") {
			t.Errorf("agent-sandbox log sh: exit %d\n%s", code, out)
		}
	})

	t.Run("the proxy without the token is refused", func(t *testing.T) {
		script := fmt.Sprintf(`curl -sS --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%%{http_code}\n' http://127.0.0.1:%s/; curl -sS --noproxy '' -x http://agent-sandbox:wrong-token-0123456789@127.0.0.1:3128 -o /dev/null -w '%%{http_code}\n' http://127.0.0.1:%s/`, portOf(plain), portOf(plain))
		_, out := r.run(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Count(out, "407") != 2 || strings.Contains(out, "plain-ok") {
			t.Errorf("want two 407 answers:\n%s", out)
		}
	})

	t.Run("programs that ignore the proxy reach nothing", func(t *testing.T) {
		script := fmt.Sprintf(`curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%s/ && echo LEAK-other
getent hosts example.com && echo LEAK-dns
python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b"x", ("127.0.0.53", 53)); print("LEAK-udp", s.recv(10))'
true`, portOf(other))
		_, out := r.run(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Contains(out, "LEAK") || strings.Contains(out, "CANARY") {
			t.Errorf("a direct connection got out:\n%s", out)
		}
		// The control: unsandboxed, curl reaches the other server.
		if out, err := exec.Command("curl", "-sS", "--noproxy", "*", "http://127.0.0.1:"+portOf(other)+"/").CombinedOutput(); err != nil || !strings.Contains(string(out), "CANARY") {
			t.Errorf("control: the other server is not reachable from the host: %v %s", err, out)
		}
	})

	t.Run("Node's fetch through the proxy", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatal("node is not installed: apt-get install nodejs (.ci/run does)")
		}
		undici := filepath.Join(filepath.Dir(agentBinDir()), "undici")
		if _, err := os.Stat(undici); err != nil {
			t.Fatalf("undici (installed with pi) not found at %s: .ci/run installs pi", undici)
		}
		// pi installs undici's EnvHttpProxyAgent as the global dispatcher;
		// so does this script. Then the same fetch without it: Node's own
		// fetch honours the variables only with NODE_USE_ENV_PROXY=1 on
		// Node 22.21+/24, and otherwise it must reach nothing.
		script := fmt.Sprintf(`%s -e '
const u = require(%q);
const url = "http://127.0.0.1:%s/";
(async () => {
  try { const r = await fetch(url); console.log("builtin:", r.status, await r.text()); } catch (e) { console.log("builtin-failed:", e.cause ? e.cause.code : e.message); }
  u.setGlobalDispatcher(new u.EnvHttpProxyAgent({noProxy: ""}));
  const r = await u.fetch(url); console.log("undici:", r.status, await r.text());
})()'`, node, undici, portOf(other))
		allowOther := append(append([]string{}, allow...), "--allow-host", "127.0.0.1:"+portOf(other))
		// The other server is on the list here but only through the
		// proxy: the forward would answer the built-in fetch too, so the
		// check below tells the two paths apart by the audit log.
		code, out := r.run(60*time.Second, nil, append(allowOther, r.folder(), "-c", script)...)
		if code != 0 || !strings.Contains(out, "undici: 200 CANARY-other-reached") {
			t.Errorf("exit %d, undici's fetch through the proxy failed:\n%s", code, out)
		}
		if !strings.Contains(r.audit("sh"), `"method":"GET","host":"127.0.0.1","port":`+portOf(other)) {
			t.Errorf("undici's request did not go through the broker:\n%s", r.audit("sh"))
		}
	})

	t.Run("1,000 tunnels open at once all hold", func(t *testing.T) {
		// Issue 27: a package manager or a parallel clone opens many
		// connections. Python opens 1,000 CONNECT tunnels one after the
		// other and keeps them all open, then sends a message down each
		// and reads it back. While they are open, a new pipe of the same
		// user must still get the kernel's default 64 KiB: the user's
		// pipes are accounted together (fs.pipe-user-pages-soft), and a
		// broker that held a 1 MiB pipe per idle tunnel direction (Go's
		// splice) left 8 KiB pipes to every other process of the user.
		// (The exemption needs CAP_SYS_RESOURCE in the initial user
		// namespace, which the agent has not even as root: this fails
		// for root's runs too.)
		echo, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var held []net.Conn
		go func() {
			for {
				c, err := echo.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				go func() {
					// A plain loop: io.Copy between sockets is Go's
					// splice, whose idle pipes are what this checks.
					buf := make([]byte, 256)
					for {
						n, err := c.Read(buf)
						if n > 0 {
							c.Write(buf[:n])
						}
						if err != nil {
							return
						}
					}
				}()
			}
		}()
		defer func() {
			echo.Close()
			mu.Lock()
			for _, c := range held {
				c.Close()
			}
			mu.Unlock()
		}()
		target := echo.Addr().String()
		script := `import base64, fcntl, os, socket, sys, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
auth = base64.b64encode((urllib.parse.unquote(u.username) + ":" + urllib.parse.unquote(u.password)).encode()).decode()
target = sys.argv[1]
conns = []
for i in range(1000):
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n" % (target, target, auth)).encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            sys.exit("tunnel %d: closed during CONNECT after %r" % (i, head))
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("tunnel %d: %r" % (i, head))
    conns.append(s)
r, w = os.pipe()
print("pipe-size", fcntl.fcntl(r, 1032))  # F_GETPIPE_SZ
for i, s in enumerate(conns):
    s.sendall(b"tunnel %04d" % i)
ok = 0
for i, s in enumerate(conns):
    want, got = b"tunnel %04d" % i, b""
    while len(got) < len(want):
        b = s.recv(len(want) - len(got))
        if not b:
            break
        got += b
    ok += got == want
print("echoed", ok)
`
		code, out := r.run(120*time.Second, nil, "--allow-host", target, r.folder(), "-c", `python3 -c "$1" "$2"`, "sh", script, target)
		if code != 0 || !strings.Contains(out, "echoed 1000") {
			t.Fatalf("exit %d; want all 1,000 tunnels to echo:\n%s", code, out)
		}
		var size int
		if m := regexp.MustCompile(`pipe-size (\d+)`).FindStringSubmatch(out); m != nil {
			size, _ = strconv.Atoi(m[1])
		}
		if size < 64<<10 {
			t.Errorf("a new pipe inside, with 1,000 tunnels open, has %d bytes, less than the default 64 KiB:\n%s", size, out)
		}
		mu.Lock()
		n := len(held)
		mu.Unlock()
		if n != 1000 {
			t.Errorf("the host's server accepted %d connections, want 1000", n)
		}
	})
}

// TestBrokerRealAgents: the real Claude Code and pi complete a turn against
// loopback stand-ins of their APIs through the built-in engine with an
// allow list, and Claude Code fails with its own connection error (no hang,
// no sandbox refusal) when the list does not name the stand-in.
func TestBrokerRealAgents(t *testing.T) {
	skipWithoutLandlock(t)
	api := newAPIStandIn(t)
	host := "localhost:" + strconv.Itoa(api.port())

	t.Run("claude completes a turn", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		r := newBrokerRun(t)
		env := []string{"ANTHROPIC_BASE_URL=http://" + host, "ANTHROPIC_API_KEY=sk-ant-standin-0000"}
		code, out := r.run(120*time.Second, env, "--allow-host", host, "claude", "-p", "Say hello.")
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want 0 and the stand-in's reply; requests %q:\n%s", code, api.requests(), out)
		}
		if sandboxDenial.MatchString(out) {
			t.Errorf("Claude Code hit a sandbox denial:\n%s", out)
		}
	})

	t.Run("claude fails on its own when the list lacks the API", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		r := newBrokerRun(t)
		before := len(api.requests())
		// One retry, not Claude Code's default ten with back-off (minutes).
		env := []string{"ANTHROPIC_BASE_URL=http://" + host, "ANTHROPIC_API_KEY=sk-ant-standin-0000", "CLAUDE_CODE_MAX_RETRIES=1"}
		code, out := r.run(90*time.Second, env, "--allow-host", "api.example.com", "claude", "-p", "Say hello.")
		if code == 0 || code == 125 || strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want Claude Code's own failure:\n%s", code, out)
		}
		if len(api.requests()) != before {
			t.Errorf("the stand-in was reached although the list does not name it: %q", api.requests()[before:])
		}
		lower := strings.ToLower(out)
		if !strings.Contains(lower, "connect") && !strings.Contains(lower, "network") && !strings.Contains(lower, "api error") {
			t.Errorf("no connection error from Claude Code:\n%s", out)
		}
	})

	t.Run("pi completes a turn", func(t *testing.T) {
		realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
		r := newBrokerRun(t)
		models := fmt.Sprintf(`{"providers": {"standin": {"baseUrl": "http://%s/v1", "api": "openai-completions", "apiKey": "standin-key", "models": [{"id": "standin-model"}]}}}`, host)
		write(t, filepath.Join(r.home, ".pi", "agent", "models.json"), models)
		code, out := r.run(120*time.Second, nil, "--allow-host", host, "pi", "--provider", "standin", "--model", "standin-model", "--no-session", "-p", "Say hello.")
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want 0 and the stand-in's reply; requests %q:\n%s", code, api.requests(), out)
		}
	})
}

// TestBrokerPorts: open_port and listen_port under the built-in engine,
// with nono's meaning. With open_port the agent's localhost:PORT reaches
// the host's loopback service on that port (in allow-list mode and with a
// file's block: true), and no other host port; with listen_port a server
// the agent starts on its own loopback is reachable from the host.
func TestBrokerPorts(t *testing.T) {
	skipWithoutLandlock(t)
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "local-model-ok") }))
	defer svc.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "CANARY-other") }))
	defer other.Close()
	sp, op := svc.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`curl -sS http://localhost:%d/; echo
curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%d/ && echo LEAK-other
true`, sp, op)
	for name, policy := range map[string]string{
		"allow list": fmt.Sprintf(`{"network": {"allow_domain": ["api.example.com"], "open_port": [%d]}}`, sp),
		"block":      fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, sp),
	} {
		t.Run("open_port with "+name, func(t *testing.T) {
			r := newBrokerRun(t)
			write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), policy)
			code, out := r.run(60*time.Second, nil, r.folder(), "-c", script)
			if code != 0 || !strings.Contains(out, "local-model-ok") {
				t.Errorf("exit %d, the open port did not reach the host's service:\n%s", code, out)
			}
			if strings.Contains(out, "LEAK") || strings.Contains(out, "CANARY") {
				t.Errorf("a port that is not open reached the host:\n%s", out)
			}
			if !strings.Contains(r.audit("sh"), fmt.Sprintf(`"method":"FORWARD","host":"localhost","port":%d`, sp)) {
				t.Errorf("the forwarded connection is not in the audit log:\n%s", r.audit("sh"))
			}
		})
	}
	t.Run("--offline blocks the open ports too", func(t *testing.T) {
		r := newBrokerRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, sp))
		_, out := r.run(60*time.Second, nil, "--offline", r.folder(), "-c", fmt.Sprintf(`curl -sS --max-time 5 http://localhost:%d/ && echo LEAK`, sp))
		if strings.Contains(out, "LEAK") || strings.Contains(out, "local-model-ok") {
			t.Errorf("--offline let the open port through:\n%s", out)
		}
	})

	t.Run("listen_port", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Fatal("python3 is not installed: apt-get install python3 (.ci/run does)")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lp := l.Addr().(*net.TCPAddr).Port
		l.Close()
		r := newBrokerRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"allow_domain": ["api.example.com"], "listen_port": [%d]}}`, lp))
		write(t, filepath.Join(r.work, "index.html"), "served-from-the-sandbox")
		done := filepath.Join(r.work, "done")
		got := make(chan string, 1)
		go func() {
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", lp))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						got <- string(b)
						os.WriteFile(done, nil, 0o644)
						return
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			got <- "the agent's server never answered on the host's 127.0.0.1"
			os.WriteFile(done, nil, 0o644)
		}()
		script := fmt.Sprintf(`python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 &
i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done`, lp, done)
		code, out := r.run(60*time.Second, nil, r.folder(), "-c", script)
		if g := <-got; g != "served-from-the-sandbox" {
			t.Errorf("exit %d: %s:\n%s", code, g, out)
		}
		if !strings.Contains(r.audit("sh"), fmt.Sprintf(`"method":"INBOUND","host":"localhost","port":%d`, lp)) {
			t.Errorf("the inbound connection is not in the audit log:\n%s", r.audit("sh"))
		}
		// After the run the port is closed again.
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", lp), time.Second); err == nil {
			c.Close()
			t.Errorf("the host's 127.0.0.1:%d is still listening after the run", lp)
		}
	})
}

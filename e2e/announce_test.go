package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusalAnnounced (issue 39 items 8 and 9): a destination the sandbox
// refuses is announced when it is refused, while the agent still runs, not
// minutes later when the run ends. The agent makes the refused connections
// and then blocks reading its stdin; the test answers only after it read
// the announcement, so an announcement made at the end of the run fails
// it. Rows: a CONNECT the broker refuses (curl through HTTPS_PROXY), a
// direct connection init's seccomp listener sees (bash's /dev/tcp to port
// 22, which names ssh's reason and the HTTPS fix), and a real `git push`
// over an ssh remote (ssh connects directly); each on the built-in engine,
// and the broker's refusal under the weaker sandbox too (which sees no
// direct connect: no network namespace). stdout is a pipe: one line on
// stderr per destination.
func TestRefusalAnnounced(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "curl", "bash", "git", "ssh")
	const sshWhy = "ssh (port 22) does not work in the sandbox: it has no ssh key (~/.ssh is not granted) and no agent socket"
	rows := []struct {
		name, script, want   string
		weaker, proxyCommand bool
	}{
		{name: "broker", script: `curl -s -o /dev/null https://refused.example/`,
			want: "the sandbox refused a connection to refused.example: host not in the allow list; `agent-sandbox allow refused.example` allows it in this session, --allow-host refused.example in the next run"},
		{name: "broker-weaker", weaker: true, script: `curl -s -o /dev/null https://refused.example/`,
			want: "the sandbox refused a connection to refused.example: host not in the allow list"},
		{name: "direct-ssh-port", script: `echo > /dev/tcp/192.0.2.1/22`,
			want: "the sandbox refused a connection to 192.0.2.1:22: " + sshWhy},
		// ssh through the proxy, as a ProxyCommand does it (OpenBSD nc's
		// -X connect, here in Python, which prints the status line the
		// way nc does): the client shows the reason and the fix.
		{name: "git-push-ssh-proxy", proxyCommand: true, script: `W=$PWD && cd "$TMPDIR" && git init -q r && cd r && git -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m x && GIT_SSH_COMMAND="ssh -o ProxyCommand='python3 $W/pc.py %h %p'" git push ssh://git@github.com/o/r.git HEAD`,
			want: `Proxy error: "HTTP/1.1 403 Forbidden (agent-sandbox: ssh (port 22) does not work in the sandbox: it has no ssh key (~/.ssh is not granted) and no agent socket`},
		{name: "git-push-ssh", script: `cd "$TMPDIR" && git init -q r && cd r && git -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m x && git push ssh://git@192.0.2.1/x.git HEAD`,
			want: "the sandbox refused a connection to 192.0.2.1:22: " + sshWhy},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := newBrokerRun(t)
			if row.proxyCommand {
				needs(t, "python3")
				write(t, r.work+"/pc.py", proxyCommand)
			}
			args := []string{r.bin}
			env := []string{"HOME=" + r.home, "PATH=" + agentPath(), "LANG=C.UTF-8", "TERM=dumb"}
			if row.weaker {
				args = append(noUserns(t), r.bin)
				env = append(env, "AGENT_SANDBOX_WEAKER_SANDBOX=1")
			}
			args = append(args, "--sandbox-backend", "landlock", "--allow-host", "allowed.example", "run", "--",
				"bash", "-c", row.script+"; echo agent-waits >&2; read line; echo agent-read-$line >&2")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir, cmd.Env = r.work, withCover(env)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Read stderr until the announcement; the agent is then
			// still blocked on its stdin. Once the agent says it waits,
			// the announcement has 20 seconds more (init reports a
			// direct attempt after the call returns).
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var before []string
			var late <-chan time.Time
			found := false
			for !found {
				select {
				case l, ok := <-lines:
					if !ok {
						late = nil
						break
					}
					before = append(before, l)
					found = strings.Contains(l, row.want)
					if l == "agent-waits" && late == nil {
						late = time.After(20 * time.Second)
					}
					continue
				case <-late:
				}
				break
			}
			if !found {
				stdin.Close()
				cmd.Wait()
				t.Fatalf("no announcement %q while the agent ran; stderr:\n%s", row.want, strings.Join(before, "\n"))
			}
			for _, l := range before {
				if strings.HasPrefix(l, "agent-read-") {
					t.Errorf("the agent went on before the announcement: %q", before)
				}
			}
			io.WriteString(stdin, "go\n")
			stdin.Close()
			var rest []string
			for l := range lines {
				rest = append(rest, l)
			}
			cmd.Wait()
			all := strings.Join(append(before, rest...), "\n")
			t.Logf("stderr:\n%s", all)
			if !strings.Contains(all, "agent-read-go") {
				t.Errorf("the agent did not go on after the announcement:\n%s", all)
			}
			if n := strings.Count(all, "the sandbox refused a connection to "); n != 1 {
				t.Errorf("%d announcements, want 1 (once per destination):\n%s", n, all)
			}
			if !strings.Contains(strings.Join(rest, "\n"), "the egress broker refused ") {
				t.Errorf("no end-of-run line after the announcement:\n%s", all)
			}
		})
	}
}

// proxyCommand is an ssh ProxyCommand that tunnels through HTTPS_PROXY
// with CONNECT and, on a refusal, prints the status line as OpenBSD nc's
// `-X connect` does.
const proxyCommand = `import base64, os, socket, sys, threading, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((u.hostname, u.port))
auth = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\nProxy-Authorization: Basic %s\r\n\r\n" % (sys.argv[1], sys.argv[2], sys.argv[1], sys.argv[2], auth)).encode())
f = s.makefile("rb")
status = f.readline().decode().rstrip("\r\n")
if not status.startswith("HTTP/1.1 200"):
    sys.stderr.write('Proxy error: "%s"\n' % status)
    sys.exit(1)
`

// TestRefusalAnnouncedFullScreen (issue 39 item 8): under a full-screen
// program (the terminal in non-canonical mode, as a TUI or an editor keeps
// it) no announcement line is written into its screen: the refusal goes
// to the terminal's title (pushed before, popped after), and the line at
// the end of the run lists it once the program gave the screen back.
// Control: the same agent with the terminal left canonical (a one-shot
// run) gets the line on stderr at once.
func TestRefusalAnnouncedFullScreen(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "curl", "bash", "stty")
	for _, fullScreen := range []bool{true, false} {
		t.Run(fmt.Sprintf("fullscreen=%v", fullScreen), func(t *testing.T) {
			r := newBrokerRun(t)
			mode := "-icanon -echo"
			if !fullScreen {
				mode = "icanon -echo"
			}
			script := "stty " + mode + "; curl -s -o /dev/null https://refused.example/; echo agent-waits; read -n 1 x; stty sane; echo agent-read-$x"
			master, slave := openPty(t)
			cmd := exec.Command(r.bin, "--sandbox-backend", "landlock", "--allow-host", "allowed.example", "run", "--", "bash", "-c", script)
			cmd.Dir = r.work
			cmd.Env = withCover([]string{"HOME=" + r.home, "PATH=" + agentPath(), "LANG=C.UTF-8", "TERM=xterm"})
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill()
				<-done
			}()
			out := &ptyReader{f: master, ch: make(chan []byte, 64)}
			go out.pump()
			title := "\x1b]0;agent-sandbox: refused refused.example (listed when run exits)\x07"
			want := title
			if !fullScreen {
				want = "the sandbox refused a connection to refused.example"
			}
			seen, ok := out.until(want, 60*time.Second)
			if !ok {
				t.Fatalf("no %q while the agent ran; the terminal got:\n%q", want, seen)
			}
			if fullScreen && strings.Contains(seen, "the sandbox refused a connection") {
				t.Errorf("a line was written into the full-screen program's screen:\n%q", seen)
			}
			if strings.Contains(seen, "agent-read-") {
				t.Errorf("the agent went on before the announcement:\n%q", seen)
			}
			master.Write([]byte("y"))
			rest, ok := out.until("the egress broker refused 1 connection (refused.example ×1)", 60*time.Second)
			if !ok {
				t.Fatalf("no end-of-run line; the terminal got:\n%q", seen+rest)
			}
			all := seen + rest
			if !strings.Contains(all, "agent-read-y") {
				t.Errorf("the agent did not go on:\n%q", all)
			}
			if fullScreen {
				if !strings.Contains(all, "\x1b[22;0t") || !strings.Contains(rest, "\x1b[23;0t") {
					t.Errorf("the title was not pushed before and popped after:\n%q", all)
				}
				if strings.Contains(all, "the sandbox refused a connection") {
					t.Errorf("an announcement line under a full-screen program:\n%q", all)
				}
			} else if strings.Contains(all, "\x1b]0;") {
				t.Errorf("the title was set although the terminal was canonical:\n%q", all)
			}
		})
	}
}

// ptyReader collects what a pty's master reads.
type ptyReader struct {
	f   *os.File
	ch  chan []byte
	buf string
	pos int
}

func (p *ptyReader) pump() {
	for {
		b := make([]byte, 4096)
		n, err := p.f.Read(b)
		if n > 0 {
			p.ch <- b[:n]
		}
		if err != nil {
			close(p.ch)
			return
		}
	}
}

// until reads until s was read (true) or the output ended or timed out
// (false); it returns what it read from where the last call stopped.
func (p *ptyReader) until(s string, timeout time.Duration) (string, bool) {
	deadline := time.After(timeout)
	for !strings.Contains(p.buf[p.pos:], s) {
		select {
		case b, ok := <-p.ch:
			if !ok {
				return p.buf[p.pos:], false
			}
			p.buf += string(b)
		case <-deadline:
			return p.buf[p.pos:], false
		}
	}
	end := p.pos + strings.Index(p.buf[p.pos:], s) + len(s)
	out := p.buf[p.pos:end]
	p.pos = end
	return out, true
}

// TestExpectedRefusalNotWarned (issue 39 item 12): a refusal the agent
// folder expects (agent.toml expected_refusals; the built-in claude folder
// names downloads.claude.ai) is still refused and logged, but neither
// announced nor in the end-of-run line; an unexpected refusal of the same
// run is warned of as before.
func TestExpectedRefusalNotWarned(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "curl")
	r := newBrokerRun(t)
	folder := r.folder()
	write(t, folder+"/agent.toml", "command = \"/bin/sh\"\nexpected_refusals = [\"expected.example\"]\n")
	code, out := r.run(60*time.Second, nil, "--allow-host", "allowed.example", folder, "-c",
		`curl -s -o /dev/null -w "expected:%{http_code}\n" https://expected.example/; curl -s -o /dev/null -w "other:%{http_code}\n" https://other.example/; true`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "expected:000") {
		t.Errorf("the expected refusal was not refused:\n%s", out)
	}
	if strings.Contains(out, "expected.example") {
		t.Errorf("an expected refusal was warned of:\n%s", out)
	}
	if !strings.Contains(out, "the sandbox refused a connection to other.example") || !strings.Contains(out, "refused 1 connection (other.example ×1)") {
		t.Errorf("the unexpected refusal was not warned of:\n%s", out)
	}
	if a := r.audit("sh"); !strings.Contains(a, `"host":"expected.example"`) || !strings.Contains(a, "expected by the agent folder") {
		t.Errorf("the expected refusal is not in the audit log:\n%s", a)
	}
}

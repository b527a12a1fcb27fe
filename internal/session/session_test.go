package session

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeListDial(t *testing.T) {
	root := t.TempDir()
	srv, err := Open(root, Info{Agent: "a", Workdir: "/w", Engine: "view"}, Handlers{
		Info:  func(i *Info) { i.Processes = 3 },
		Allow: func(h string) (string, error) { return "allowed " + h, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(Dir(root), srv.ID())
	for path, mode := range map[string]os.FileMode{Dir(root): 0o700, dir: 0o700, filepath.Join(dir, "token"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, fi, err, mode)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "control")); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("control: %v %v, want a 0600 socket", fi, err)
	}
	l := List(root)
	if len(l) != 1 || l[0].ID != srv.ID() || l[0].Processes != 3 || l[0].Pid != os.Getpid() {
		t.Fatalf("List = %+v", l)
	}
	if i, err := Find(root, "a"); err != nil || i.ID != srv.ID() {
		t.Errorf("Find by agent: %+v %v", i, err)
	}
	c, err := Dial(root, srv.ID())
	if err != nil {
		t.Fatal(err)
	}
	if note, err := c.Allow("x.example"); err != nil || note != "allowed x.example" {
		t.Errorf("Allow: %q %v", note, err)
	}
	c.Close()
	c, _ = Dial(root, srv.ID())
	var fs [3]*os.File
	for i := range fs {
		fs[i] = os.Stdin
	}
	if _, err := c.Exec([]string{"true"}, fs, nil); err == nil || !strings.Contains(err.Error(), "not supported by this engine yet") {
		t.Errorf("Exec without a handler: %v", err)
	}
	c.Close()
	if _, err := Dial(root, "../x"); err == nil {
		t.Error("Dial accepted a path as an id")
	}
	srv.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the session's directory outlived Close: %v", err)
	}
	if l := List(root); len(l) != 0 {
		t.Errorf("List after Close = %+v", l)
	}
}

// raw sends one frame and returns the answer's error.
func raw(t *testing.T, sock string, req any) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := json.Marshal(req)
	hdr := make([]byte, 4)
	binary.BigEndian.PutUint32(hdr, uint32(len(b)))
	_, _ = c.Write(append(hdr, b...))
	out, _ := io.ReadAll(c)
	return string(out)
}

func TestRefusals(t *testing.T) {
	root := t.TempDir()
	srv, err := Open(root, Info{Agent: "a"}, Handlers{Allow: func(string) (string, error) { t.Error("allow ran"); return "", nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := filepath.Join(Dir(root), srv.ID())
	tok, _ := os.ReadFile(filepath.Join(dir, "token"))
	sock := filepath.Join(dir, "control")
	if out := raw(t, sock, Request{V: Version, Token: "x", Op: "allow", Host: "h"}); !strings.Contains(out, "not this session's token") {
		t.Errorf("a wrong token: %q", out)
	}
	if out := raw(t, sock, Request{V: Version, Op: "allow", Host: "h"}); !strings.Contains(out, "not this session's token") {
		t.Errorf("no token: %q", out)
	}
	if out := raw(t, sock, Request{V: 99, Token: string(tok), Op: "allow", Host: "h"}); !strings.Contains(out, "protocol version 99") {
		t.Errorf("another version: %q", out)
	}
	if out := raw(t, sock, Request{V: Version, Token: string(tok), Op: "nope"}); !strings.Contains(out, "unknown request") {
		t.Errorf("an unknown op: %q", out)
	}
}

func TestStaleRemoved(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(Dir(root), "dead")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "token"), []byte("t"), 0o600)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "control"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the socket stays, nobody listens: a killed supervisor
	// Its supervisor's pid is alive (this process): kept.
	b, _ := json.Marshal(Info{ID: "dead", Pid: os.Getpid()})
	_ = os.WriteFile(filepath.Join(dir, "info.json"), b, 0o600)
	List(root)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("removed although its pid lives: %v", err)
	}
	b, _ = json.Marshal(Info{ID: "dead", Pid: 1 << 30})
	_ = os.WriteFile(filepath.Join(dir, "info.json"), b, 0o600)
	List(root)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a stale session's directory was kept: %v", err)
	}
}

// TestExecTTY: a terminal request carries no descriptor of the caller's
// and gets the pty's master back with the first answer; an engine without
// terminals refuses it with ErrNoTTY; a terminal request with descriptors
// is refused.
func TestExecTTY(t *testing.T) {
	root := t.TempDir()
	var got []string
	var rows, cols uint16
	srv, err := Open(root, Info{Agent: "a"}, Handlers{
		Exec: func([]string, []*os.File) (Proc, error) {
			t.Error("Exec ran for a terminal request")
			return doneProc{}, nil
		},
		ExecTTY: func(argv []string, r, c uint16) (Proc, *os.File, error) {
			got, rows, cols = argv, r, c
			pr, pw, err := os.Pipe()
			if err != nil {
				return nil, nil, err
			}
			_, _ = pw.WriteString("from the master")
			pw.Close()
			return doneProc{}, pr, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := Dial(root, srv.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.ExecTTY([]string{"sh", "-i"}, 33, 111)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(m)
	m.Close()
	if string(b) != "from the master" || strings.Join(got, " ") != "sh -i" || rows != 33 || cols != 111 {
		t.Errorf("ExecTTY: master %q, argv %q, size %dx%d", b, got, rows, cols)
	}
	if code, err := c.Wait(nil); err != nil || code != 0 {
		t.Errorf("Wait: %d %v", code, err)
	}

	dir := filepath.Join(Dir(root), srv.ID())
	tok, _ := os.ReadFile(filepath.Join(dir, "token"))
	uc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, "control"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	if err := writeFrame(uc, Request{V: Version, Token: string(tok), Op: "exec", Argv: []string{"x"}, TTY: true}, []int{0}); err != nil {
		t.Fatal(err)
	}
	if r, err := readResponse(uc); err != nil || !strings.Contains(r.Error, "a terminal request and none") {
		t.Errorf("a terminal request with a descriptor: %+v %v", r, err)
	}

	other, err := Open(root, Info{Agent: "b"}, Handlers{Exec: func([]string, []*os.File) (Proc, error) { return doneProc{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := Dial(root, other.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if _, err := oc.ExecTTY([]string{"x"}, 24, 80); err == nil || err.Error() != ErrNoTTY {
		t.Errorf("a terminal request to an engine without terminals: %v, want %q", err, ErrNoTTY)
	}
}

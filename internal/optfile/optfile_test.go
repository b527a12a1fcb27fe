package optfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadIn: only a name that does not exist is absent; every other name
// that cannot be read as a regular file is an *Error naming it and why.
func TestReadIn(t *testing.T) {
	root := t.TempDir()
	mk := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("ok/sandbox/nono.json", "{}")
	link("real.json", "linked/sandbox/nono.json")
	mk("linked/sandbox/real.json", "{\"x\":1}")
	link("missing.json", "dangling/sandbox/nono.json")
	link("nowhere", "danglingdir/sandbox")
	link("loop.json", "loop/sandbox/loop.json")
	link("loop.json", "loop/sandbox/nono.json")
	os.MkdirAll(filepath.Join(root, "dir/sandbox/nono.json"), 0o755)
	mk("filedir/sandbox", "not a dir")
	os.MkdirAll(filepath.Join(root, "fifo/sandbox"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo/sandbox/nono.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "absent"), 0o755)

	tests := []struct {
		folder string
		ok     bool
		body   string
		want   string // in the error; "" means no error
	}{
		{"ok", true, "{}", ""},
		{"linked", true, "{\"x\":1}", ""},
		{"absent", false, "", ""},
		{"nosuchfolder", false, "", ""},
		{"dangling", false, "", "sandbox/nono.json exists but is a dangling symlink to missing.json"},
		{"danglingdir", false, "", "danglingdir/sandbox exists but is a dangling symlink to nowhere"},
		{"loop", false, "", "is a symlink loop"},
		{"dir", false, "", "sandbox/nono.json exists but is a directory, not a regular file"},
		{"filedir", false, "", "filedir/sandbox exists but is a regular file, not a directory"},
		{"fifo", false, "", "is a named pipe, not a regular file"},
	}
	for _, tt := range tests {
		b, ok, err := ReadIn(filepath.Join(root, tt.folder), "sandbox/nono.json")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.folder, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.folder, err, tt.want)
		case ok != tt.ok || string(b) != tt.body:
			t.Errorf("%s: got %q, %v; want %q, %v", tt.folder, b, ok, tt.body, tt.ok)
		}
		var e *Error
		if tt.want != "" && !errors.As(err, &e) {
			t.Errorf("%s: error %T is not an *Error", tt.folder, err)
		}
		if tt.want != "" && !strings.Contains(err.Error(), "fix it or remove it") {
			t.Errorf("%s: the error does not say what to do: %v", tt.folder, err)
		}
	}
}

// TestReadPermissionDenied: a file (or a directory on the way) the user
// cannot read is an error, not absent. Root reads anything, so this needs
// an ordinary user.
func TestReadPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-000 file anyway: run as an ordinary user")
	}
	root := t.TempDir()
	p := filepath.Join(root, "sandbox", "nono.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("{}"), 0)
	if _, ok, err := ReadIn(root, "sandbox/nono.json"); ok || err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("mode-000 file: ok %v, err %v; want a permission denied error", ok, err)
	}
	os.Chmod(p, 0o644)
	os.Chmod(filepath.Dir(p), 0)
	defer os.Chmod(filepath.Dir(p), 0o755)
	if _, ok, err := ReadIn(root, "sandbox/nono.json"); ok || err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("mode-000 directory: ok %v, err %v; want a permission denied error", ok, err)
	}
}

func TestDir(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "d"), 0o755)
	os.Symlink("d", filepath.Join(root, "ld"))
	os.Symlink("gone", filepath.Join(root, "dangling"))
	os.WriteFile(filepath.Join(root, "f"), nil, 0o644)
	for name, want := range map[string]string{"d": "", "ld": "", "absent": "", "dangling": "dangling symlink to gone", "f": "is a regular file, not a directory"} {
		ok, err := Dir(filepath.Join(root, name))
		if want == "" {
			if err != nil || ok != (name != "absent") {
				t.Errorf("%s: %v, %v", name, ok, err)
			}
			continue
		}
		if ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, %v; want an error containing %q", name, ok, err, want)
		}
	}
}

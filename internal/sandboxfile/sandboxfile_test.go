package sandboxfile

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseNonoFull(t *testing.T) {
	src := `// the seed's browser example, with comments and trailing commas
{
  "filesystem": { "read": ["~/data"], "write": [], "allow": ["~/.agent-browser"], "unix_socket_dir_bind": ["~/.agent-browser"], },
  "network": { "block": false, "allow_domain": ["api.example.com", "localhost", "*.example.org", "10.0.0.1:8080"], "open_port": [11434], "listen_port": [8080] },
  "unsafe_macos_seatbelt_rules": ["(allow mach-register)", "(allow iokit-open)"],
}`
	f, err := Parse("/a/sandbox/nono.json", Nono, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Kind: Nono, Path: "/a/sandbox/nono.json", Sandbox: true,
		Filesystem:    Filesystem{Read: []string{"~/data"}, Write: []string{}, Allow: []string{"~/.agent-browser"}, UnixSocketDirBind: []string{"~/.agent-browser"}},
		Network:       Network{AllowList: true, AllowDomain: []string{"api.example.com", "localhost", "*.example.org", "10.0.0.1:8080"}, OpenPort: []int{11434}, ListenPort: []int{8080}},
		SeatbeltRules: []string{"(allow mach-register)", "(allow iokit-open)"},
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got  %+v\nwant %+v", f, want)
	}
}

func TestOptOut(t *testing.T) {
	for _, k := range []Kind{Nono, Sbx} {
		f, err := Parse("x", k, []byte(`{"sandbox": false}`))
		if err != nil || !f.OptedOut() {
			t.Fatalf("%s: OptedOut = %v, err %v", k, f.OptedOut(), err)
		}
	}
	var nilFile *File
	if nilFile.OptedOut() {
		t.Fatal("a missing file does not opt out")
	}
}

// TestErrors: every malformed input gives one error naming the file, the
// position, the key path and the value; both files fail the same way on
// known keys.
func TestErrors(t *testing.T) {
	tests := []struct {
		src  string
		want []string // substrings of the one error line
		sbx  bool     // also an error in sbx.json
	}{
		{`{"sandbox": "no"}`, []string{":1:13: sandbox: want true or false, got \"no\""}, true},
		{`[1]`, []string{"the file must hold a JSON object, got an array"}, true},
		{`{"filesystem": {"read": "~/x"}}`, []string{"filesystem.read: want an array, got a string \"~/x\""}, true},
		{`{"filesystem": {"allow": [1]}}`, []string{"filesystem.allow[0]: want a string, got a number 1"}, true},
		{`{"filesystem": {"write": ["data"]}}`, []string{`filesystem.write[0]: "data" is relative`}, true},
		{`{"filesystem": {"read": [""]}}`, []string{`filesystem.read[0]: empty path`}, true},
		{`{"filesystem": {"allow": ["~/projects/*"]}}`, []string{`:1:27: filesystem.allow[0]: "~/projects/*" contains the glob character "*"`, "list each path"}, true},
		{`{"filesystem": {"read": ["/data/**"]}}`, []string{`filesystem.read[0]: "/data/**" contains the glob character "*"`}, true},
		{`{"filesystem": {"write": ["/out/log?"]}}`, []string{`filesystem.write[0]: "/out/log?" contains the glob character "?"`}, true},
		{`{"filesystem": {"unix_socket_dir_bind": ["/run/[ab]"]}}`, []string{`filesystem.unix_socket_dir_bind[0]: "/run/[ab]" contains the glob character "["`}, false},
		{`{"filesystem": []}`, []string{"filesystem: this key must hold a JSON object"}, true},
		{`{"network": {"block": 1}}`, []string{"network.block: want true or false, got 1"}, true},
		{`{"network": {"allow_domain": ["http://x.com"]}}`, []string{`network.allow_domain[0]: want a host name`, `"http://x.com"`}, true},
		{`{"network": {"allow_domain": ["a b"]}}`, []string{`network.allow_domain[0]`}, true},
		{`{"network": {"allow_domain": ["x.com:99999"]}}`, []string{`port in "x.com:99999"`}, true},
		{`{"network": {"block": true, "allow_domain": ["x.com"]}}`, []string{"network: block is true and an allow list is also given"}, true},
		{`{"network": {"block": true, "allow_domain": []}}`, []string{"network: block is true and an allow list is also given"}, true},
		{`{"network": {"allow_domain": [""]}}`, []string{`network.allow_domain[0]: empty host name ""`, "an empty list allows no host"}, true},
		{`{"network": {"allow_domain": ["  "]}}`, []string{`network.allow_domain[0]: empty host name "  "`}, true},
		{`{"network": {"allow_domain": ["a.com", "\t"]}}`, []string{`network.allow_domain[1]: empty host name`}, true},
		{`{"network": {"allow_domain": [" a.com"]}}`, []string{`network.allow_domain[0]: want a host name`, `" a.com"`}, true},
		{`{"network": {"open_port": [70000]}}`, []string{"network.open_port[0]: want a whole port number from 0 to 65535, got 70000"}, false},
		{`{"network": {"open_port": [1.5]}}`, []string{"network.open_port[0]", "1.5"}, false},
		{`{"network": {"listen_port": [0]}}`, []string{"network.listen_port[0]: want a whole port number from 1"}, false},
		{`{"network": {"open_port": ["80"]}}`, []string{"network.open_port[0]: want a port number, got a string \"80\""}, false},
		{`{"network": {"network_profile": "a b"}}`, []string{"network.network_profile: want a network profile name"}, false},
		{`{"unsafe_macos_seatbelt_rules": ["(allow"]}`, []string{"unsafe_macos_seatbelt_rules[0]: unbalanced"}, false},
		{`{"unsafe_macos_seatbelt_rules": ["()"]}`, []string{"empty rule"}, false},
		{`{"unsafe_macos_seatbelt_rules": ["allow x"]}`, []string{"want a Seatbelt rule"}, false},
		{`{"unsafe_macos_seatbelt_rules": ["(allow a) (allow b)"]}`, []string{"one rule per string"}, false},
		{`{"sandbox": true, "sandbox": false}`, []string{"sandbox: duplicate key"}, true},
		{`{"network": {"block": true,}, "network": {}}`, []string{"network: duplicate key"}, true},
		{`{"network": `, []string{"not valid JSON (HuJSON)"}, true},
		{``, []string{"not valid JSON"}, true},
		{`{"sandbox": false} trailing`, []string{"not valid JSON"}, true},
	}
	for _, tt := range tests {
		kinds := []Kind{Nono}
		if tt.sbx {
			kinds = append(kinds, Sbx)
		}
		for _, k := range kinds {
			path := "/agents/x/" + k.RelPath()
			_, err := Parse(path, k, []byte(tt.src))
			if err == nil {
				t.Errorf("%s %s: no error", k, tt.src)
				continue
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path) || strings.Contains(msg, "\n") {
				t.Errorf("%s %s: error %q must be one line starting with the file", k, tt.src, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s %s: error %q lacks %q", k, tt.src, msg, w)
				}
			}
		}
	}
}

// TestAllowListPresence: a present allow_domain key is allow-list mode even
// when the list is empty (issue 15 item 2); an absent key is not.
func TestAllowListPresence(t *testing.T) {
	for _, k := range []Kind{Nono, Sbx} {
		for src, want := range map[string]bool{
			`{"network": {"allow_domain": []}}`:        true,
			`{"network": {"allow_domain": ["a.com"]}}`: true,
			`{"network": {}}`:                          false,
			`{}`:                                       false,
			`{"network": {"block": false}}`:            false,
		} {
			f, err := Parse("/a/"+k.RelPath(), k, []byte(src))
			if err != nil {
				t.Fatalf("%s %s: %v", k, src, err)
			}
			if f.Network.AllowList != want {
				t.Errorf("%s %s: AllowList = %v, want %v", k, src, f.Network.AllowList, want)
			}
		}
	}
}

func TestNonoUnknownKeysAreErrors(t *testing.T) {
	for _, src := range []string{`{"sandbx": false}`, `{"filesystem": {"deny": []}}`, `{"network": {"proxy": 1}}`} {
		_, err := Parse("/a/sandbox/nono.json", Nono, []byte(src))
		if err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s: err = %v, want unknown key", src, err)
		}
	}
}

func TestSbxWarnings(t *testing.T) {
	src := `{
	  "filesystem": {"read": ["~/data"], "unix_socket_dir_bind": ["~/.s"], "deny": ["~/x"]},
	  "network": {"allow_domain": ["a.com"], "open_port": [1], "listen_port": [2], "network_profile": "developer", "proxy": true},
	  "unsafe_macos_seatbelt_rules": ["(allow x)"],
	  "extra": 1
	}`
	f, err := Parse("/a/sandbox/sbx.json", Sbx, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	wantNonoOnly := []string{"filesystem.unix_socket_dir_bind", "network.open_port", "network.listen_port", "network.network_profile", "unsafe_macos_seatbelt_rules"}
	wantGeneric := []string{`"filesystem.deny"`, `"network.proxy"`, `"extra"`}
	all := strings.Join(f.Warnings, "\n")
	for _, k := range wantNonoOnly {
		if !strings.Contains(all, k+" is nono-only") {
			t.Errorf("no nono-only warning for %s in\n%s", k, all)
		}
	}
	for _, k := range wantGeneric {
		if !strings.Contains(all, "unsupported key "+k+" ignored") {
			t.Errorf("no generic warning for %s in\n%s", k, all)
		}
	}
	if len(f.Warnings) != len(wantNonoOnly)+len(wantGeneric) {
		t.Errorf("got %d warnings, want %d:\n%s", len(f.Warnings), len(wantNonoOnly)+len(wantGeneric), all)
	}
	if len(f.Network.OpenPort) != 0 || f.Network.NetworkProfile != "" || len(f.SeatbeltRules) != 0 || len(f.Filesystem.UnixSocketDirBind) != 0 {
		t.Errorf("nono-only values were kept: %+v", f)
	}
	if !reflect.DeepEqual(f.Network.AllowDomain, []string{"a.com"}) || !reflect.DeepEqual(f.Filesystem.Read, []string{"~/data"}) {
		t.Errorf("supported values lost: %+v", f)
	}
}

func TestCheckHost(t *testing.T) {
	for _, ok := range []string{"a.com", "*.a.com", "localhost", "127.0.0.1", "api.example.com:443", "x-y.z"} {
		if err := CheckHost(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a..b", "-a.com", "a.com/x", "https://a.com", "*", "*.", "a.com:0", "a.*.com", "a com"} {
		if CheckHost(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestClosestKey: a mistyped key path is matched in its own object first,
// then by name in the object it belongs to; nothing near, no suggestion.
func TestClosestKey(t *testing.T) {
	for in, want := range map[string]string{
		"network.allow_domains":   "network.allow_domain",
		"allow_domain":            "network.allow_domain",
		"filesystem.wirte":        "filesystem.write",
		"netwrok":                 "network",
		"network.read":            "filesystem.read",
		"colour":                  "",
		"filesystem.unix_sockets": "",
	} {
		if got := Closest(in); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}

package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	plat := runtime.GOOS + "/" + runtime.GOARCH
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: vcs}, "agent-sandbox v1.2.3 (" + plat + ", go1.26.0, revision 0123456789abcdef)"},
		{"", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: dirty}, "agent-sandbox devel (" + plat + ", go1.26.0, revision 0123456789abcdef+modified)"},
		{"0.9-nix", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "agent-sandbox 0.9-nix (" + plat + ", go1.26.0)"},
		{"", nil, "agent-sandbox devel (" + plat + ", " + runtime.Version() + ")"},
	} {
		if got := versionLine(c.linked, c.bi); got != c.want {
			t.Errorf("versionLine(%q, %+v) = %q, want %q", c.linked, c.bi, got, c.want)
		}
	}
}

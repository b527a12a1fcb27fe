package sbx

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// npm package names of pi: renamed between 0.73.1 and 0.74.0.
const (
	PiPackageOld = "@mariozechner/pi-coding-agent"   // up to 0.73.1
	PiPackageNew = "@earendil-works/pi-coding-agent" // from 0.74.0
)

// installFor derives the provisioning step from agent.toml's [sbx] table;
// nil when the agent declares no install. Without a version_command the
// version is read with `<command> --version`.
func installFor(s spec.Spec, o Options) *Install {
	pkg, ok := strings.CutPrefix(o.Install, "npm:")
	if !ok || pkg == "" {
		return nil
	}
	host := append([]string{}, o.VersionCommand...)
	if len(host) == 0 {
		host = []string{filepath.Base(s.Argv[0]), "--version"}
	}
	guest := append([]string{filepath.Base(host[0])}, host[1:]...)
	return &Install{Package: pkg, HostVersion: host, GuestVersion: guest}
}

var semverRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$`)
})

// VersionToken returns the first version-looking token (major.minor.patch
// with an optional pre-release or build suffix; a leading "v" and
// surrounding brackets or punctuation are dropped) in the given outputs, in
// order, or "". Agents print their version differently: claude
// "2.1.197 (Claude Code)" and codex "codex-cli 0.171.0" on stdout, pi a bare
// "0.73.1" on stderr, so callers pass stdout then stderr.
func VersionToken(outputs ...string) string {
	for _, out := range outputs {
		for _, f := range strings.Fields(out) {
			f = strings.Trim(f, "()[]{}<>,;:'\"")
			if m := semverRe().FindStringSubmatch(f); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// IsPiPackage reports whether an npm package is pi's (either name).
func IsPiPackage(pkg string) bool {
	return pkg == PiPackageOld || pkg == PiPackageNew
}

// IsPi reports whether the run is pi's: the agent id is "pi" or its install
// spec names pi-coding-agent.
func IsPi(s spec.Spec, o Options) bool {
	pkg := strings.TrimPrefix(o.Install, "npm:")
	return s.AgentID == "pi" || pkg == "pi-coding-agent" || strings.HasSuffix(pkg, "/pi-coding-agent")
}

// PiPackage is the npm name pi's version was published under: 0.73.1 and
// earlier as @mariozechner/pi-coding-agent, anything later as
// @earendil-works/pi-coding-agent.
func PiPackage(version string) string {
	if compareVersions(version, "0.73.1") <= 0 {
		return PiPackageOld
	}
	return PiPackageNew
}

// PinnedPackage is the npm install argument for the declared package at
// the host's version: pkg@version, with pi's name chosen by version; the
// declared package unpinned when the version is unknown.
func PinnedPackage(pkg, version string) string {
	if version == "" {
		return pkg
	}
	if IsPiPackage(pkg) {
		pkg = PiPackage(version)
	}
	return pkg + "@" + version
}

// compareVersions compares the numeric major.minor.patch of two versions.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionParts(v string) [3]int {
	var out [3]int
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	for i, f := range strings.SplitN(v, ".", 3) {
		n, _ := strconv.Atoi(f)
		out[i] = n
	}
	return out
}

package plan

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// userCaches are the caches of the toolchains on PATH (Go's build and
// module caches, npm's, pip's, uv's, cargo's registry): where each tool
// looks for it, from the host's environment and Go's env file as the tool
// reads them. The built-in engine gives the agent each as a private,
// writable layer over the host's (read-only), so that builds work inside
// from what the host downloaded, and nothing the agent writes reaches the
// host's cache (a poisoned build cache would run in the user's own
// builds). A cache the agent can write already (inside a writable grant)
// or that no grant may name (a credential path) is left out.
func userCaches(h grant.Home, getenv func(string) string, path string, c grant.Checker, writable []string) []spec.Cache {
	home := h.Dir
	on := func(names ...string) bool {
		for _, n := range names {
			for _, d := range filepath.SplitList(path) {
				if !filepath.IsAbs(d) {
					continue
				}
				if st, err := os.Stat(filepath.Join(d, n)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return true
				}
			}
		}
		return false
	}
	xdgCache := getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(xdgCache) {
		xdgCache = filepath.Join(home, ".cache")
	}
	env := func(name, def string) string {
		if v := getenv(name); filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return def
	}
	var out []spec.Cache
	add := func(name, p, variable string) {
		canon := grant.Canonical(p)
		for _, w := range writable {
			if grant.Within(canon, w) {
				return
			}
		}
		if c.Check(canon, false) != nil {
			return
		}
		out = append(out, spec.Cache{Name: name, Path: canon, Env: variable})
	}
	if on("go") {
		goenv := goEnvFile(filepath.Join(h.XDGConfig, "go", "env"))
		get := func(name string) string {
			if v := getenv(name); v != "" {
				return v
			}
			return goenv[name]
		}
		cache := get("GOCACHE")
		if !filepath.IsAbs(cache) {
			cache = filepath.Join(xdgCache, "go-build")
		}
		mod := get("GOMODCACHE")
		if !filepath.IsAbs(mod) {
			gopath := filepath.SplitList(get("GOPATH"))
			if len(gopath) > 0 && filepath.IsAbs(gopath[0]) {
				mod = filepath.Join(gopath[0], "pkg", "mod")
			} else {
				mod = filepath.Join(home, "go", "pkg", "mod")
			}
		}
		add("go-build", cache, "GOCACHE")
		add("go-mod", mod, "GOMODCACHE")
	}
	if on("npm") {
		add("npm", env("npm_config_cache", filepath.Join(home, ".npm")), "npm_config_cache")
	}
	if on("pip", "pip3") {
		add("pip", env("PIP_CACHE_DIR", filepath.Join(xdgCache, "pip")), "PIP_CACHE_DIR")
	}
	if on("uv") {
		add("uv", env("UV_CACHE_DIR", filepath.Join(xdgCache, "uv")), "UV_CACHE_DIR")
	}
	if on("cargo") {
		cargo := env("CARGO_HOME", filepath.Join(home, ".cargo"))
		add("cargo-registry", filepath.Join(cargo, "registry"), "")
		add("cargo-git", filepath.Join(cargo, "git"), "")
	}
	return out
}

// goEnvFile reads Go's env file (`go env -w`): KEY=VALUE lines.
func goEnvFile(p string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(p)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && !strings.HasPrefix(k, "#") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

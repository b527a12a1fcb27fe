package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/backends"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/scope"
)

// NonoVersionRange is the range of nono releases agent-sandbox's generated
// profiles are written for (schema read at 0.74, nixpkgs ships 0.78).
const NonoVersionRange = "0.74-0.78"

var (
	nonoMin = [3]int{0, 74, 0} // inclusive
	nonoEnd = [3]int{0, 79, 0} // exclusive
)

// host runs the host checks.
func (r *run) host() {
	abi, abiErr := landlock.ABI()
	userns := r.goos == "linux" && landlock.UserNamespacesAvailable()
	r.results = append(r.results,
		landlockResult(r.goos, abi, abiErr, r.nonoPath != "", userns),
		kernelResult(r.goos, kernelRelease()))
	if r.goos == "linux" {
		r.results = append(r.results, usernsResult(userns, readSysctls(), os.Geteuid()))
		m, err := scope.Find()
		r.results = append(r.results, memoryResult(err, err == nil && m.Tasks()))
	} else {
		r.add("user namespaces", OK, "not Linux ("+r.goos+"): not used", "")
	}
	r.results = append(r.results, r.nonoResults()...)
	r.results = append(r.results, r.sbxResults()...)
}

// landlockEnables splits the levels into those ABI abi has and those it
// lacks, each phrased "<what> (ABI n)".
func landlockEnables(abi int) (have, lack []string) {
	for _, l := range landlock.Features {
		s := fmt.Sprintf("%s (ABI %d)", l.What, l.ABI)
		if abi >= l.ABI {
			have = append(have, s)
		} else {
			lack = append(lack, s)
		}
	}
	return have, lack
}

// landlockResult judges the Landlock ABI. abi is 0 when Landlock is
// unavailable, abiErr then says why. Without Landlock, the built-in
// engine runs its namespace view where user namespaces are available
// (userns), without Landlock (a warning that says what Landlock would
// add); without both and without nono no kernel backend works (fail);
// otherwise a missing Landlock is a warning, and so is an ABI below 6 (no
// signal and abstract-socket scoping).
func landlockResult(goos string, abi int, abiErr error, nonoFound, userns bool) Result {
	res := Result{Check: "landlock"}
	if goos != "linux" {
		if nonoFound {
			res.Status, res.Detail = OK, fmt.Sprintf("not Linux (%s): Landlock does not apply; nono sandboxes with the system's own mechanism (Seatbelt on macOS)", goos)
			return res
		}
		res.Status, res.Detail = Fail, fmt.Sprintf("not Linux (%s): the built-in landlock engine cannot run here and nono is not installed, so no kernel backend works: sandboxed runs are refused", goos)
		res.Fix = "install nono " + NonoVersionRange + " (https://nono.sh, or `nix run .#agent-sandbox`, which brings it)"
		return res
	}
	if abi < 1 {
		why := "Landlock is not available"
		if abiErr != nil {
			why = abiErr.Error()
		}
		res.Fix = "enable Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter)"
		if userns {
			res.Status = Warn
			res.Detail = why + "; user namespaces are available: " + engine.WithoutLandlock
			if nonoFound {
				res.Detail += "; nono needs Landlock on Linux, so expect it to refuse to start"
			}
			return res
		}
		if nonoFound {
			res.Status = Warn
			res.Detail = why + "; nono is installed, but on Linux it needs Landlock as well, so expect it to refuse to start (only --sandbox-backend sbx works without Landlock)"
			return res
		}
		res.Status = Fail
		res.Detail = why + "; nono is not installed either, so no kernel backend works: sandboxed runs are refused"
		res.Fix += ", or install nono " + NonoVersionRange
		return res
	}
	have, lack := landlockEnables(abi)
	res.Detail = fmt.Sprintf("ABI %d: %s", abi, strings.Join(have, ", "))
	if len(lack) > 0 {
		res.Detail += "; not on this kernel: " + strings.Join(lack, ", ")
	}
	switch {
	case abi < landlock.ABITCP:
		res.Status = Warn
		res.Detail += "; a blocked network needs a private network namespace here, and abstract sockets and signals are not scoped"
		res.Fix = "boot Linux 6.12 or later (Landlock ABI 6); 6.7 (ABI 4) at least for TCP rules"
	case abi < landlock.ABIScope:
		res.Status = Warn
		res.Detail += "; sandboxed agents can signal your other processes and reach abstract Unix sockets (X11, D-Bus) unless a network namespace isolates them"
		res.Fix = "boot Linux 6.12 or later (Landlock ABI 6)"
	default:
		res.Status = OK
	}
	return res
}

// parseKernelRelease reads "6.18.44-foo" as major 6, minor 18.
func parseKernelRelease(rel string) (major, minor int, ok bool) {
	m := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(rel)
	if m == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, true
}

// kernelResult reports the kernel release; on Linux a release before 5.13
// (no Landlock at all) or one that cannot be read is a warning.
func kernelResult(goos, release string) Result {
	res := Result{Check: "kernel", Status: OK}
	if goos != "linux" {
		res.Detail = goos + " " + release
		return res
	}
	major, minor, ok := parseKernelRelease(release)
	switch {
	case !ok:
		res.Status, res.Detail = Warn, fmt.Sprintf("Linux, release %q not understood", release)
		res.Fix = "check `uname -r`; the landlock check above says what the kernel supports"
	case major < 5 || major == 5 && minor < 13:
		res.Status, res.Detail = Warn, fmt.Sprintf("Linux %s: Landlock needs 5.13 or later", release)
		res.Fix = "boot Linux 6.12 or later (Landlock ABI 6)"
	default:
		res.Detail = "Linux " + release
	}
	return res
}

// sysctls are the kernel settings that decide whether unprivileged user
// namespaces can be created; "" when the file does not exist.
type sysctls struct {
	apparmorRestrict string // kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+)
	maxUserNS        string // user.max_user_namespaces
	unprivClone      string // kernel.unprivileged_userns_clone (Debian, older Ubuntu)
}

func readSysctls() sysctls {
	read := func(name string) string {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return sysctls{
		apparmorRestrict: read("kernel/apparmor_restrict_unprivileged_userns"),
		maxUserNS:        read("user/max_user_namespaces"),
		unprivClone:      read("kernel/unprivileged_userns_clone"),
	}
}

// memoryResult judges the memory bound of the built-in engine's runs
// (Linux): err is scope.Find's, tasks whether the pids controller is
// delegated too. Without a user manager that can apply it runs go
// unbounded (a warning), and a folder's memory_max refuses them.
func memoryResult(err error, tasks bool) Result {
	res := Result{Check: "memory bound"}
	if err == nil {
		res.Status, res.Detail = OK, "a run of the built-in engine is bounded as a whole by a systemd user scope: three quarters of the machine's memory unless agent.toml's memory_max says otherwise"
		if tasks {
			res.Detail += ", and 8192 tasks"
		} else {
			res.Detail += "; no task bound (the pids controller is not delegated to your user manager)"
		}
		return res
	}
	res.Status = Warn
	res.Detail = "no memory bound for the built-in engine's runs (an agent may use all of this machine's memory; a folder that sets memory_max is refused): " + err.Error()
	res.Fix = "run agent-sandbox where a systemd user manager runs for you (a desktop or logind login, or `loginctl enable-linger $USER`) with cgroup v2 (systemd.unified_cgroup_hierarchy=1), or accept running without a bound"
	return res
}

// usernsResult judges user namespaces (Linux): available is the result of
// really creating one. Without them a blocked network is enforced with
// Landlock TCP rules only, so UDP (DNS included) is not confined: a warning.
// Available only because doctor runs as root, while AppArmor restricts
// them for everybody else, is a warning too.
func usernsResult(available bool, s sysctls, euid int) Result {
	res := Result{Check: "user namespaces"}
	degraded := "the built-in engine cannot build its namespace view, so it refuses to run unless AGENT_SANDBOX_WEAKER_SANDBOX=1 accepts the weaker sandbox (Landlock and seccomp alone; listen_port refused), which does not give: " + engine.Must(engine.Weaker).Missing() +
		"; its allow list: " + engine.Must(engine.Weaker).Gives[engine.Allowlist].Note
	aaFix := "let agent-sandbox create user namespaces: install this AppArmor profile and load it with `sudo apparmor_parser -r /etc/apparmor.d/agent-sandbox`:\n" + AppArmorProfile(selfPath()) +
		"\nor allow them for every program: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`"
	if available {
		if s.apparmorRestrict == "1" && euid == 0 {
			res.Status = Warn
			res.Detail = "available to root, but kernel.apparmor_restrict_unprivileged_userns is 1, so for other users " + degraded
			res.Fix = aaFix
			return res
		}
		res.Status = OK
		res.Detail = "available: the built-in engine builds the agent's namespace view (a private network namespace for a blocked or allow-listed network, UDP and DNS included)"
		if s.apparmorRestrict != "" {
			res.Detail += "; kernel.apparmor_restrict_unprivileged_userns is " + s.apparmorRestrict
		}
		return res
	}
	res.Status = Warn
	switch {
	case s.maxUserNS == "0":
		res.Detail = "unavailable (user.max_user_namespaces is 0): " + degraded
		res.Fix = "`sysctl user.max_user_namespaces=10000` (and persist it in /etc/sysctl.d)"
	case s.unprivClone == "0" && euid != 0:
		res.Detail = "unavailable (kernel.unprivileged_userns_clone is 0): " + degraded
		res.Fix = "`sysctl kernel.unprivileged_userns_clone=1` (and persist it in /etc/sysctl.d)"
	case s.apparmorRestrict == "1" && euid != 0:
		res.Detail = "unavailable (AppArmor restricts them: kernel.apparmor_restrict_unprivileged_userns is 1): " + degraded
		res.Fix = aaFix
	default:
		res.Detail = "unavailable (creating one failed; a container runtime's seccomp filter or a hardened kernel may forbid them): " + degraded
		res.Fix = "allow unprivileged user namespaces on this host (for a container: run it with a seccomp profile that permits clone(CLONE_NEWUSER))"
	}
	return res
}

// AppArmorProfile is the AppArmor profile that lets the agent-sandbox at
// path create user namespaces on a host that restricts them (Ubuntu 23.10
// and later), as profiles shipped for bwrap and browsers do.
func AppArmorProfile(path string) string {
	return "# /etc/apparmor.d/agent-sandbox\n" +
		"abi <abi/4.0>,\n" +
		"include <tunables/global>\n" +
		"profile agent-sandbox " + path + " flags=(unconfined) {\n" +
		"  userns,\n" +
		"}\n"
}

// selfPath is this executable's path, for the AppArmor profile.
func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return "/usr/local/bin/agent-sandbox"
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

var versionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`) })

// parseVersion finds the first "x.y[.z]" in s.
func parseVersion(s string) ([3]int, bool) {
	m := versionRe().FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := range 3 {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

func versionLess(a, b [3]int) bool {
	for i := range 3 {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// nonoVersionResult judges the output of `nono --version`.
func nonoVersionResult(path string, p probeResult) Result {
	res := Result{Check: "nono"}
	if p.err != nil || p.code != 0 {
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s found, but `nono --version` %s%s: every nono run would fail", path, p.describe(), p.quote())
		res.Fix = "reinstall nono " + NonoVersionRange + ", or remove the broken nono from PATH (runs then use the built-in landlock engine)"
		return res
	}
	out := strings.TrimSpace(p.out)
	v, ok := parseVersion(out)
	if !ok {
		res.Status = Warn
		res.Detail = fmt.Sprintf("%s: `nono --version` printed %q, which names no version; the profiles are written for nono %s", path, firstLine(out), NonoVersionRange)
		res.Fix = "install nono " + NonoVersionRange
		return res
	}
	vs := fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	if versionLess(v, nonoMin) || !versionLess(v, nonoEnd) {
		res.Status = Warn
		res.Detail = fmt.Sprintf("%s is nono %s, outside %s, the range agent-sandbox's profiles are written for (nono renames and removes profile keys between minor releases)", path, vs, NonoVersionRange)
		res.Fix = "install nono " + NonoVersionRange + " (nixpkgs ships 0.78), or check a generated profile with `nono profile validate`"
		return res
	}
	res.Status = OK
	res.Detail = fmt.Sprintf("%s is nono %s (profiles are written for %s)", path, vs, NonoVersionRange)
	return res
}

// nonoResults are the nono checks: installed, its version, and (when it
// answers) its profile schema. nono is only probed when it is on PATH and
// outside every path a sandbox can write.
func (r *run) nonoResults() []Result {
	if r.nonoPath == "" {
		res := Result{Check: "nono", Status: Warn, Fix: "install nono " + NonoVersionRange + " (nixpkgs `nono`, or `nix run .#agent-sandbox`, which brings it)"}
		if r.goos == "linux" {
			res.Detail = "not installed (not on PATH): folders that opt into nono run under the built-in landlock engine, with the same grants and network (an allow list through its egress broker, open_port and listen_port forwarded); only network_profile, which nono alone knows, is refused there"
		} else {
			res.Detail = "not installed (not on PATH): there is no kernel sandbox on " + r.goos + " without it"
		}
		return []Result{res}
	}
	if bad := r.guard.insideWritable("nono", r.nonoPath); len(bad) > 0 {
		return []Result{unprobed("nono", bad)}
	}
	v := nonoVersionResult(r.nonoPath, r.probe(r.nonoPath, "--version"))
	if v.Status == Fail {
		return []Result{v}
	}
	return []Result{v, nonoSchemaResult(r.nonoPath, r.probe(r.nonoPath, "profile", "schema"))}
}

// nonoSchemaResult judges the output of `nono profile schema`: the schema
// of the installed nono must declare every key of the profiles
// agent-sandbox writes (backends.NonoSchemaMissing), or nono refuses every run
// with a load error.
func nonoSchemaResult(path string, p probeResult) Result {
	res := Result{Check: "nono schema"}
	if p.err != nil || p.code != 0 {
		res.Status = Warn
		res.Detail = fmt.Sprintf("`%s profile schema` %s%s: the profile keys agent-sandbox writes were not checked against this nono", path, p.describe(), p.quote())
		res.Fix = "install nono " + NonoVersionRange + ", or check a generated profile with `nono profile validate`"
		return res
	}
	missing, err := backends.NonoSchemaMissing([]byte(p.out))
	switch {
	case err != nil:
		res.Status = Warn
		res.Detail = fmt.Sprintf("`%s profile schema` printed no usable schema (%v): the profile keys agent-sandbox writes were not checked against this nono", path, err)
		res.Fix = "install nono " + NonoVersionRange + ", or check a generated profile with `nono profile validate`"
	case len(missing) > 0:
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s does not know the profile keys %s that agent-sandbox writes: every nono run would fail to load its profile", path, strings.Join(missing, ", "))
		res.Fix = "install nono " + NonoVersionRange + " (nixpkgs ships 0.78), or use --sandbox-backend landlock"
	default:
		res.Status = OK
		res.Detail = fmt.Sprintf("%s's profile schema (`nono profile schema`) declares every key agent-sandbox writes", path)
	}
	return res
}

// sbxResults are the sbx checks: installed, signed in, policy initialised.
// sbx is only probed when it is on PATH.
func (r *run) sbxResults() []Result {
	if r.sbxPath == "" {
		return []Result{{Check: "sbx", Status: OK, Detail: "not installed (only needed for --sandbox-backend sbx)"}}
	}
	if bad := r.guard.insideWritable("sbx", r.sbxPath); len(bad) > 0 {
		return []Result{unprobed("sbx", bad)}
	}
	return sbxStatus(r.sbxPath, r.probe(r.sbxPath, "ls", "-q"), r.probe(r.sbxPath, "policy", "ls"))
}

// sbxStatus judges the two sbx probes: `sbx ls -q` answers only when signed
// in; `sbx policy ls` must succeed and not ask for the one-time policy
// choice. A failure fails: every sbx run would be refused.
func sbxStatus(path string, ls, policy probeResult) []Result {
	out := []Result{{Check: "sbx", Status: OK, Detail: "installed: " + path}}
	if ls.err != nil || ls.code != 0 {
		out = append(out, Result{Check: "sbx login", Status: Fail,
			Detail: fmt.Sprintf("`sbx ls -q` %s%s: sbx runs are refused until this works", ls.describe(), ls.quote()),
			Fix:    "run `sbx login` (`sbx diagnose` checks the installation)"})
	} else {
		out = append(out, Result{Check: "sbx login", Status: OK, Detail: "signed in (`sbx ls -q` works)"})
	}
	if policy.err != nil || policy.code != 0 || policyUninitialised(policy.out) {
		out = append(out, Result{Check: "sbx policy", Status: Fail,
			Detail: fmt.Sprintf("the global network policy is not initialised or not readable (`sbx policy ls` %s%s): sbx runs are refused until it is", policy.describe(), policy.quote()),
			Fix:    "run `sbx policy init deny-all` once on this machine (or allow-all / balanced)"})
	} else {
		out = append(out, Result{Check: "sbx policy", Status: OK, Detail: "global network policy initialised (`sbx policy ls` works)"})
	}
	return out
}

// policyUninitialised spots a `sbx policy ls` that succeeded but says the
// global policy still has to be chosen (the same markers as internal/backend/sbx).
func policyUninitialised(out string) bool {
	out = strings.ToLower(out)
	for _, s := range []string{"not initialized", "not initialised", "no default policy", "policy init", "set-default"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

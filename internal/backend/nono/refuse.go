package nono

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// NetworkProfiles are the network_profile names nono knows: the keys of
// "profiles" in nono 0.74's crates/nono-cli/data/network-policy.json
// (reference/nono-0.74/network-policy.json; a test cross-checks the list).
// nono has no user override file for them, so any other name fails at start.
var NetworkProfiles = []string{"claude-code", "codex", "developer", "enterprise", "minimal", "opencode"}

// DangerousCommands are the basenames nono refuses to start as the launched
// command, by platform ("" applies everywhere): groups dangerous_commands,
// dangerous_commands_linux and dangerous_commands_macos of nono 0.74's
// policy.json (reference/nono-0.74/policy.json; a test cross-checks them).
// nono checks only the command it starts (config::check_blocked_command
// compares the basename of argv[0]); children are not affected.
var DangerousCommands = map[string][]string{
	"": {"rm", "rmdir", "dd", "chmod", "chown", "chgrp", "mv", "cp", "truncate", "scp", "rsync",
		"sftp", "ftp", "xargs", "sudo", "su", "doas", "pip", "npm", "kill", "killall", "pkill",
		"shutdown", "reboot", "halt", "poweroff"},
	"linux": {"shred", "mkfs", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "mkswap", "fdisk", "parted",
		"gdisk", "wipefs", "chattr", "init", "systemctl", "apt", "apt-get", "dpkg", "yum", "dnf",
		"pacman", "pkexec"},
	"darwin": {"srm", "brew", "launchctl"},
}

// check is the defensive re-check of one path that the profile grants (or
// the workdir). The grant package already judged the folder's grants, but
// the workdir, the state dir, the agent folder and the program closure reach
// the profile by other roads, so every final path goes through the same
// rules once more: not the filesystem root, not your home or a parent of
// it, nothing in or above nono's protected state roots, nothing containing
// or inside a path of nono's required deny groups (nono refuses to start on
// each of these; on Linux a deny inside a granted directory cannot be
// enforced). The error is a phrase that follows the path.
func (b *builder) check(p string) error {
	return grant.Checker{Home: b.home}.Check(p, false)
}

// checkCommand refuses a command nono would refuse to start.
func checkCommand(s spec.Spec) error {
	if len(s.Argv) == 0 {
		return errors.New("internal error: the run has no command")
	}
	base := filepath.Base(s.Argv[0])
	for _, plat := range []string{"", s.GOOS} {
		for _, c := range DangerousCommands[plat] {
			if c == base {
				return fmt.Errorf("%s: command %q: nono refuses to start a command named %q (its dangerous_commands list in policy.json); start it from a wrapper script with another name, or use --sandbox-backend landlock", agentToml(s), s.Argv[0], base)
			}
		}
	}
	return nil
}

// checkEnv refuses NONO_* variables: they configure nono itself (many are
// twins of policy flags such as NONO_ALLOW), so agent-sandbox clears every
// inherited one and lets none be set or passed.
func checkEnv(s spec.Spec) error {
	for _, n := range s.EnvPass {
		if strings.HasPrefix(n, "NONO_") {
			return fmt.Errorf("%s: env: %q cannot be passed: NONO_* variables configure nono itself, and agent-sandbox clears them; remove it", agentToml(s), n)
		}
	}
	keys := make([]string, 0, len(s.EnvSet))
	for k := range s.EnvSet {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "NONO_") {
			return fmt.Errorf("%s: set_env.%s: NONO_* variables are reserved for nono (they configure nono itself); remove it", agentToml(s), k)
		}
	}
	return nil
}

// checkNetworkProfile refuses a network_profile name nono does not define.
func checkNetworkProfile(name, source string) error {
	for _, n := range NetworkProfiles {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("%s: network.network_profile %q is not a nono network profile; use one of %s (nono's network-policy.json), or list hosts in network.allow_domain", source, name, strings.Join(NetworkProfiles, ", "))
}

#!/usr/bin/env python3
"""Reads `go test -json` streams (the files named after the mode).

  testreport.py results FILE...  prints each package's result line and the
                                 output of every failed test; exits 1 on a
                                 failure.
  testreport.py both ROOT USER   fails when an e2e test ran as root but
                                 not as the ordinary user.
  testreport.py skips FILE...    prints every skipped test with its reason;
                                 exits 1 when a test that must run on the CI
                                 machine skipped (MUST_RUN), or any test
                                 skipped that ALLOWED does not name (each
                                 entry says why it cannot run here; an entry
                                 more specific than the MUST_RUN pattern
                                 covering a test wins).

A name matches a pattern when it equals it or lies under it (a subtest)."""

import json
import sys

# Tests that must run on the CI machine (Debian, Linux with Landlock, the
# real agents and nono installed by .ci/run). A skip here fails CI, whatever
# the reason.
MUST_RUN = [
    "e2e TestWorktreeView",
    "e2e-user TestWorktreeView",
    "e2e TestWorktreeConcurrentAttack",
    "e2e-user TestWorktreeConcurrentAttack",
    "e2e TestWorktreeBadName",
    "e2e-user TestWorktreeBadName",
    "e2e TestWorktreeWeaker",
    "e2e-user TestWorktreeWeaker",
    "e2e TestWorktreeNono",
    "e2e-user TestWorktreeNono",
    "e2e TestWorktreeLiveReplace",
    "e2e-user TestWorktreeLiveReplace",
    "e2e TestCheckpointUndo",
    "e2e-user TestCheckpointUndo",
    "e2e TestCheckpointUndoRefusesLiveRun",
    "e2e-user TestCheckpointUndoRefusesLiveRun",
    "e2e TestCheckpointAttackIgnoreRules",
    "e2e-user TestCheckpointAttackIgnoreRules",
    "e2e TestCheckpointAttackChmodStore",
    "e2e-user TestCheckpointAttackChmodStore",
    "e2e TestCheckpointAttackSparse",
    "e2e-user TestCheckpointAttackSparse",
    "e2e TestWorktreeAttackTmpStore",
    "e2e-user TestWorktreeAttackTmpStore",
    "e2e TestCheckpointAttackUnreadable",
    "e2e-user TestCheckpointAttackUnreadable",
    "e2e TestWorktreeAttackChmod",
    "e2e-user TestWorktreeAttackChmod",
    "e2e TestCheckpointAttackDeep",
    "e2e-user TestCheckpointAttackDeep",
    "e2e TestCheckpointAttackHardlink",
    "e2e-user TestCheckpointAttackHardlink",
    "e2e TestCheckpointAttackChmodWorkdir",
    "e2e-user TestCheckpointAttackChmodWorkdir",
    "e2e TestGuardAttackChmodWorkdir",
    "e2e-user TestGuardAttackChmodWorkdir",
    "e2e TestSessionExec",
    "e2e-user TestSessionExec",
    "e2e TestSessionLastProcess",
    "e2e-user TestSessionLastProcess",
    "e2e TestSessionWeakerExec",
    "e2e-user TestSessionWeakerExec",
    "e2e TestSessionNono",
    "e2e-user TestSessionNono",
    "e2e TestSessionAllow",
    "e2e TestSessionSignalAfterAgent",
    "e2e-user TestSessionSignalAfterAgent",
    "e2e TestSessionExecOpenNetwork",
    "e2e-user TestSessionExecOpenNetwork",
    "e2e TestSessionExecTTY",
    "e2e-user TestSessionExecTTY",
    "e2e TestSessionExecSocket",
    "e2e-user TestSessionExecSocket",
    "e2e TestSessionAllowSave",
    "e2e-user TestSessionAllowSave",
    "e2e-user TestSessionAllow",
    "e2e TestStartStop",
    "e2e-user TestStartStop",
    "e2e TestStartIdle",
    "e2e-user TestStartIdle",
    "e2e TestStopAgentSession",
    "e2e-user TestStopAgentSession",
    "e2e TestStartRefused",
    "e2e-user TestStartRefused",
    "e2e TestEscapes/landlock",
    "e2e TestEscapeView/landlock",
    "e2e-user TestEscapeView/landlock",
    "e2e TestRealAgentsStartSandboxed",
    "e2e-user TestRealAgentsStartSandboxed",
    "e2e TestBrokerRealPrograms",
    "e2e TestBrokerRealAgents",
    "e2e TestBrokerPorts",
    "e2e-user TestBrokerRealPrograms",
    "e2e-user TestBrokerRealAgents",
    "e2e-user TestBrokerPorts",
    "e2e TestNoUserNamespaces",
    "e2e TestWeakerExplains",
    "e2e-user TestWeakerExplains",
    "e2e TestWeakerToolchainCaches",
    "e2e-user TestWeakerToolchainCaches",
    "e2e TestWeakerMetadata",
    "e2e-user TestWeakerMetadata",
    "e2e TestCachePoisoningAcrossProjects",
    "e2e-user TestCachePoisoningAcrossProjects",
    "e2e TestWeakerCredentials",
    "e2e-user TestWeakerCredentials",
    "e2e-user TestNoUserNamespaces/weaker-link-across-directories",
    "e2e TestProtectPlantedCommondir",
    "e2e-user TestProtectPlantedCommondir",
    "e2e TestProtectExcludeThroughSymlink",
    "e2e TestViewWithoutLandlock",
    "e2e-user TestViewWithoutLandlock",
    "e2e TestSessionAttackNoLandlockStdio",
    "e2e-user TestSessionAttackNoLandlockStdio",
    "e2e TestSessionAttackPtySnoop",
    "e2e-user TestSessionAttackPtySnoop",
    "e2e TestProtectLiveReplace",
    "e2e-user TestProtectLiveReplace",
    "e2e TestProtectRace",
    "e2e-user TestProtectRace",
    "e2e TestGuardQuiesceReplanter",
    "e2e-user TestGuardQuiesceReplanter",
    "e2e TestGuardKilledSupervisor",
    "e2e-user TestGuardKilledSupervisor",
    "e2e TestGuardHeldDescriptor",
    "e2e-user TestGuardHeldDescriptor",
    "e2e TestGuardCommondirLoop/view",
    "e2e-user TestGuardCommondirLoop/view",
    "e2e TestGuardCommondirLoop/weaker",
    "e2e-user TestGuardCommondirLoop/weaker",
    "e2e TestGuardRenamedWatchedDir/view",
    "e2e-user TestGuardRenamedWatchedDir/view",
    "e2e TestGuardRenamedWatchedDir/weaker",
    "e2e-user TestGuardRenamedWatchedDir/weaker",
    "e2e TestGuardCommondirLoop/nono-alone",
    "e2e-user TestGuardCommondirLoop/nono-alone",
    "e2e TestGuardRenamedWatchedDir/nono-alone",
    "e2e-user TestGuardRenamedWatchedDir/nono-alone",
    "e2e TestProtectSharedGitDir",
    "e2e-user TestProtectSharedGitDir",
    "e2e TestGuardConfigByPath",
    "e2e-user TestGuardConfigByPath",
    "e2e TestGuardRestoreGaps",
    "e2e-user TestGuardRestoreGaps",
    "e2e TestGuardConcurrentRuns",
    "e2e-user TestGuardConcurrentRuns",
    "e2e TestProtectCredentialMidRun",
    "e2e-user TestProtectCredentialMidRun",
    "e2e TestAgentConfigPlanted",
    "e2e-user TestAgentConfigPlanted",
    "e2e TestScanNotBlinded",
    "e2e-user TestScanNotBlinded",
    "e2e TestScanWatchedTree",
    "e2e-user TestScanWatchedTree",
    "e2e TestScanWatchedChmod",
    "e2e-user TestScanWatchedChmod",
    "e2e TestScanAcrossRuns",
    "e2e-user TestScanAcrossRuns",
    "e2e TestWorkdirPrivate",
    "e2e-user TestWorkdirPrivate",
    "e2e TestOrdinarySystem",
    "e2e-user TestOrdinarySystem",
    "e2e TestManyGrants",
    "e2e-user TestManyGrants",
    "e2e TestJobControl",
    "e2e-user TestJobControl",
    "e2e TestJobControlCycles",
    "e2e-user TestJobControlCycles",
    "e2e TestSignalDispositions",
    "e2e-user TestSignalDispositions",
    "e2e TestSignalsReachAgent",
    "e2e-user TestSignalsReachAgent",
    "e2e TestToolchainCaches",
    "e2e-user TestToolchainCaches",
    "e2e TestGitSubdirectory",
    "e2e-user TestGitSubdirectory",
    "e2e TestReadmeClaims",
    "e2e TestWhyHostAgrees",
    "e2e-user TestWhyHostAgrees",
    "e2e TestWriteGrantExec",
    "e2e-user TestWriteGrantExec",
    "e2e TestNestedUsernsOptIn",
    "e2e-user TestNestedUsernsOptIn",
    "e2e TestTmpSize",
    "e2e-user TestTmpSize",
    "e2e TestOpenNetworkUnixPaths",
    "e2e-user TestOpenNetworkUnixPaths",
    "e2e TestDirectAttemptsRecorded",
    "e2e-user TestDirectAttemptsRecorded",
    "e2e TestRefusalAnnounced",
    "e2e-user TestRefusalAnnounced",
    "e2e TestRefusalAnnouncedFullScreen",
    "e2e-user TestRefusalAnnouncedFullScreen",
    "e2e TestExpectedRefusalNotWarned",
    "e2e-user TestExpectedRefusalNotWarned",
    "e2e TestDirectAttemptsCounted",
    "e2e-user TestDirectAttemptsCounted",
    "e2e TestInotifyBounded",
    "e2e-user TestInotifyBounded",
    "e2e TestInotifyHogGuard",
    "e2e-user TestInotifyHogGuard",
    "e2e TestCredentialInjection",
    "e2e-user TestCredentialInjection",
    "e2e TestCredentialInjectionGit",
    "e2e-user TestCredentialInjectionGit",
    "e2e TestCredentialInjectionGH",
    "e2e-user TestCredentialInjectionGH",
    "e2e TestCredentialReflection",
    "e2e-user TestCredentialReflection",
    "e2e TestCredentialDefaults",
    "e2e-user TestCredentialDefaults",
    "e2e TestViewNodev",
    "e2e TestMemoryBound/without_a_user_manager",
    "e2e-user TestMemoryBound/without_a_user_manager",
    "scope TestAttachRealBusctl",
    "scope TestFind",
    "e2e TestRootCallerEtc",
    "e2e TestResolveRealPrograms",
    "e2e TestSbxPiExtensionRealPi",
    # nono, built by .ci/run with cargo (issue 25): every nono test runs,
    # as root and as an ordinary user.
    "e2e TestEscapes/landlock-weaker",
    "e2e-user TestEscapes/landlock-weaker",
    "e2e TestEscapes/nono",
    "e2e-user TestEscapes/nono",
    "e2e TestEscapes/nono-alone",
    "e2e-user TestEscapes/nono-alone",
    "e2e TestNonoInView",
    "e2e-user TestNonoInView",
    "e2e TestNonoInViewToolchainCaches",
    "e2e-user TestNonoInViewToolchainCaches",
    "e2e TestNonoAloneCredentials",
    "e2e-user TestNonoAloneCredentials",
    "e2e TestEscapeView/nono",
    "e2e-user TestEscapeView/nono",
    "e2e TestEscapeView/nono-alone",
    "e2e-user TestEscapeView/nono-alone",
    "e2e TestEscapeView/landlock-weaker",
    "e2e-user TestEscapeView/landlock-weaker",
    "e2e TestNonoConfinesShell",
    "e2e-user TestNonoConfinesShell",
    "e2e TestNonoProxyPrograms",
    "e2e-user TestNonoProxyPrograms",
    "e2e TestNonoPorts",
    "e2e-user TestNonoPorts",
    "e2e TestNonoRealAgents",
    "e2e-user TestNonoRealAgents",
    "e2e TestNonoELFResolution",
    "e2e-user TestNonoELFResolution",
    "e2e TestNonoProfilesLoad",
    "e2e TestNonoDoctor",
    "e2e-user TestNonoDoctor",
    "e2e TestNonoUnixSocketDirBind",
    "e2e-user TestNonoUnixSocketDirBind",
    "e2e TestNonoNestedUsernsOptIn",
    "e2e-user TestNonoNestedUsernsOptIn",
    # issue 39: the standard streams by their /dev names (view, weaker
    # sandbox, nono), the refusal of a protected file named, symlinked
    # protected names, /var/lock, NETLINK_ROUTE's decision.
    "e2e TestStdioReopen",
    "e2e-user TestStdioReopen",
    "e2e TestGitConfigRefusalNamed",
    "e2e-user TestGitConfigRefusalNamed",
    "e2e TestProtectSymlinkedNames",
    "e2e-user TestProtectSymlinkedNames",
    "e2e TestVarLockPrivate",
    "e2e-user TestVarLockPrivate",
    "e2e TestNetlinkRoute",
    "e2e-user TestNetlinkRoute",
]

# Tests that may skip on the CI machine, and why.
ALLOWED = {
    "checkpoint TestUnreadableLeftOut": "root reads a mode-0 directory anyway; an unreadable directory in a checkpoint walk runs as agentsb in e2e-user TestCheckpointAttackUnreadable",
    "guard TestAuditUnreadablePlanted": "root reads a mode-000 file anyway; the case runs as agentsb in e2e-user TestGuardRestoreGaps/*/unreadable",
    "workscan TestScanReportsUnreadable": "root reads a mode-0111 directory anyway; the case runs as agentsb in e2e-user TestScanNotBlinded",
    "e2e TestSbxRealRun": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    "e2e TestSbxRealOffline": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    "e2e TestSbxRealStalePrune": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    "e2e-user TestSbxRealRun": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    "e2e-user TestSbxRealOffline": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    "e2e-user TestSbxRealStalePrune": "sbx (Docker Sandboxes) needs KVM and `sbx login`",
    # Every e2e test runs as agentsb too (.ci/run); these two are a root
    # caller's cases by their nature.
    "e2e-user TestViewNodev": "mknod of a device node needs root on the host (the row runs as root)",
    "e2e-user TestRootCallerEtc": "the case is a root caller's (what only root reads in /etc): the row runs as root",
    # The second run of the escape suite, as an ordinary user: writing /etc
    # fails for that user even unsandboxed, so the row proves nothing there
    # (it runs, and must pass, in the run as root).
    "e2e-user TestEscapes/landlock/write_/etc": "an ordinary user cannot write /etc even with --no-sandbox (the row runs as root)",
    "e2e-user TestEscapes/nono/write_/etc": "an ordinary user cannot write /etc even with --no-sandbox (the row runs as root)",
    "e2e-user TestEscapes/landlock-weaker/write_/etc": "an ordinary user cannot write /etc even with --no-sandbox (the row runs as root)",
    "e2e-user TestEscapes/nono-alone/write_/etc": "an ordinary user cannot write /etc even with --no-sandbox (the row runs as root)",
    # The weaker sandbox runs on a simulated host without user namespaces:
    # agent-sandbox runs in a user namespace of its own there, whose root
    # cannot read a host process's environment even unsandboxed.
    "e2e TestEscapes/landlock-weaker/read_a_host_process's_environ": "the simulated host (a user namespace) cannot read a host process's environment even with --no-sandbox",
    "e2e-user TestEscapes/landlock-weaker/read_a_host_process's_environ": "the simulated host (a user namespace) cannot read a host process's environment even with --no-sandbox",
    "e2e TestEscapes/nono-alone/read_a_host_process's_environ": "the simulated host (a user namespace) cannot read a host process's environment even with --no-sandbox",
    "e2e-user TestEscapes/nono-alone/read_a_host_process's_environ": "the simulated host (a user namespace) cannot read a host process's environment even with --no-sandbox",
    # A mode-000 policy file is readable by root: these rows prove their
    # point in the ordinary user's run (e2e-user), where they must pass.
    "e2e TestEscapeView/default-backend/policy-file-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    "e2e TestEscapeView/default-backend/policy-file-sbx-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    "e2e TestEscapeView/landlock/policy-file-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    "e2e TestEscapeView/landlock/policy-file-sbx-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    "e2e TestEscapeView/nono/policy-file-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    "e2e TestEscapeView/nono/policy-file-sbx-unreadable": "root reads a mode-000 file anyway (the row runs as agentsb)",
    # No systemd runs on the CI machines (cgroup v1 in a hybrid layout):
    # the memory bound's real kill runs in the NixOS VM test vm-scope.
    "e2e TestMemoryBound/killed_past_the_bound": "no systemd user manager with the memory controller here (cgroup v1 hybrid); nix flake check's vm-scope runs it",
    "e2e-user TestMemoryBound/killed_past_the_bound": "no systemd user manager with the memory controller here (cgroup v1 hybrid); nix flake check's vm-scope runs it",
    "optfile TestReadPermissionDenied": "root reads a mode-000 file anyway (the e2e policy-file-unreadable rows run as agentsb)",
}


def under(name, pattern):
    return name == pattern or name.startswith(pattern + "/")


def read(paths):
    """Returns (output lines per (pkg, test), package-level output lines,
    [(action, pkg, test)] of the pass/fail/skip events)."""
    out = {}
    pkg_out = []
    events = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                test = ev.get("Test")
                pkg = ev.get("Package", "")
                action = ev.get("Action")
                if not test:
                    if action == "output":
                        pkg_out.append(ev.get("Output", ""))
                    continue
                if action == "output":
                    out.setdefault((pkg, test), []).append(ev.get("Output", ""))
                elif action in ("pass", "fail", "skip"):
                    events.append((action, pkg, test))
    return out, pkg_out, events


def results(paths):
    out, pkg_out, events = read(paths)
    for l in pkg_out:
        if l.startswith(("ok ", "FAIL", "---", "panic", "#")) or "[build failed]" in l or "[no test files]" in l:
            sys.stdout.write(l)
    failed = [(p, t) for a, p, t in events if a == "fail"]
    # A parent fails with its subtest: print only the innermost failures.
    names = {(p, t) for p, t in failed}
    inner = [(p, t) for p, t in failed if not any(q == p and u.startswith(t + "/") for q, u in names)]
    for key in inner:
        print("\n--- FAIL %s %s" % key)
        sys.stdout.write("".join(out.get(key, [])))
    if failed or any(l.startswith("FAIL") for l in pkg_out):
        print("\n%d test(s) failed" % len(inner))
        return 1
    passed = sum(1 for a, _, _ in events if a == "pass")
    skipped = sum(1 for a, _, _ in events if a == "skip")
    print("%d passed, %d skipped (listed at the end)" % (passed, skipped))
    return 0


def skips_report(paths):
    out, _, events = read(paths)
    skips = [(p, t) for a, p, t in events if a == "skip"]

    def short(pkg):
        p = pkg.rsplit("/", 1)[-1]
        return p

    def reason(key):
        lines = []
        for l in out.get(key, []):
            s = l.strip()
            if not s or s.startswith("=== ") or s.startswith("--- SKIP"):
                continue
            lines.append(s)
        return " ".join(lines) or "(no reason given)"

    bad = []
    print("skipped tests (%d):" % len(skips))
    for pkg, test in sorted(set(skips)):
        name = short(pkg) + " " + test
        why = reason((pkg, test))
        verdict = "allowed"
        # An ALLOWED entry more specific than every MUST_RUN pattern that
        # covers the test wins (a row inside a must-run suite that cannot
        # prove anything for this user, with its reason).
        must = max((len(m) for m in MUST_RUN if under(name, m)), default=-1)
        allowed = max((len(a) for a in ALLOWED if under(name, a)), default=-1)
        if must >= 0 and allowed <= must:
            verdict = "MUST RUN HERE"
            bad.append(name)
        elif allowed < 0:
            verdict = "NOT ALLOWED (add it to ALLOWED in .ci/testreport.py with the reason, or make it run)"
            bad.append(name)
        print("  %-60s %s\n      %s" % (name, verdict, why))
    if bad:
        print("\nFAIL: %d test(s) skipped that must run on this machine (MUST_RUN), or that ALLOWED does not name:" % len(bad))
        for b in bad:
            print("  " + b)
        return 1
    return 0


def both_report(paths):
    """Fails when a top-level e2e test ran as root (package e2e) but has no
    result in the ordinary user's run (package e2e-user): every e2e test
    runs as both, and a confinement test run only as root proves nothing
    for the user."""
    _, _, events = read(paths)
    ran = {}
    for _, pkg, test in events:
        if "/" in test:
            continue
        ran.setdefault(pkg.rsplit("/", 1)[-1], set()).add(test)
    root, user = ran.get("e2e", set()), ran.get("e2e-user", set())
    missing = sorted(root - user)
    print("e2e tests run as root: %d, as the ordinary user: %d" % (len(root), len(user)))
    if missing:
        print("FAIL: %d e2e test(s) ran as root only (they must run as agentsb too):" % len(missing))
        for m in missing:
            print("  " + m)
        return 1
    return 0


if __name__ == "__main__":
    modes = {"results": results, "skips": skips_report, "both": both_report}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit("usage: testreport.py results|skips|both FILE...")
    sys.exit(modes[sys.argv[1]](sys.argv[2:]))

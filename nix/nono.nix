# nixpkgs' nono, checked for the upstream fix of its ELF dependency
# resolution on NixOS (nolabs-ai/nono#1649 and #1724, fixed by PR #1650,
# commit 4d688bfd: an RPATH-less library such as libgcc_s.so.1 needing
# libc.so.6 is looked up in the directory of the binary's own ELF
# interpreter, as ld.so does), and patched only where it lacks the fix.
#
# Which releases have the fix was read from the published sources of
# nono-cli on crates.io (README, "nono versions"): 0.74.0 to 0.77.0 lack
# `fn interpreter_dir_of(` in src/tool-sandbox/platform/linux.rs, 0.78.0 to
# 0.81.0 have it, with the shebang, `env` and wrapper-script handling of the
# outer exec gate beside it. e2e/nono_elf_test.go reproduces the bug with
# nono-cli 0.77.0 and shows 0.78.0 without it; .ci/run builds both.
#
#   - nono older than `fixedIn`: the fix is fetched from upstream
#     (fetchpatch2; no third-party source is committed here) and applied;
#     when it does not apply the build fails, saying so. The
#     compiled-binary command_policies test nixpkgs skips for this bug is
#     re-enabled; the script test stays skipped (4d688bfd is the ELF
#     resolution; whether it also carries the shebang handling that test
#     needs was not checked here).
#   - nono `fixedIn` or newer: nothing is fetched or applied; the build only
#     checks that the source has the fix (and fails, naming this file, when
#     it has not), and both tests nixpkgs skips are re-enabled.
#
# Called with an explicit `nono` (the unpatched one): from an overlay that is
# `prev.nono`. Through callPackage without it, `nono` would be this very
# result and evaluation would recurse forever. A nono already handled here
# is returned as is, so applying this twice is harmless.
{
  lib,
  fetchpatch2,
  nono,
}:
let
  # The nono the locked nixpkgs ships (flake.lock). .ci/run builds this
  # version of nono-cli with cargo and runs every nono test against it.
  lockedVersion = "0.78.0";
  # The first release whose source has the fix (see above).
  fixedIn = "0.78.0";
  needsPatch = lib.versionOlder nono.version fixedIn;

  rev = "4d688bfdf45b5d2efcf80e8c4e13990fcb76ef73";
  # Only fetched for a nono older than fixedIn (never for lockedVersion).
  fix = fetchpatch2 {
    name = "nono-elf-interpreter-dir-fallback.patch";
    url = "https://github.com/nolabs-ai/nono/commit/${rev}.patch?full_index=1";
    # Not computed yet: the machines this was written on cannot reach GitHub.
    # The first build of a nono older than ${fixedIn} fails with "hash
    # mismatch ... got: sha256-..."; put that value here (README, "Nix").
    hash = lib.fakeHash;
  };
  # The function the fix adds; its presence means the source has the fix.
  marker = "fn interpreter_dir_of(";
  file = "crates/nono-cli/src/tool-sandbox/platform/linux.rs";
  # Skipped in nixpkgs "because nono's ELF dependency resolution cannot find
  # libc.so.6 for libgcc_s.so.1": re-enabled where they pass, that is where
  # the fix is in the source (both), or was applied here (the ELF one).
  elfTest = "command_policies_allows_compiled_binary_exec_in_writable_grant_dir";
  scriptTest = "command_policies_allows_script_exec_in_writable_grant_dir";
  reenabled = if needsPatch then [ elfTest ] else [ elfTest scriptTest ];
  skipFlags = map (t: "--skip=${t}") reenabled;
in
if nono.passthru.agentSandboxElfFix or false then
  nono
else
  nono.overrideAttrs (old: {
    postPatch =
      (old.postPatch or "")
      + (
        if needsPatch then
          ''
            if grep -qF ${lib.escapeShellArg marker} ${file}; then
              echo "agent-sandbox: error: nono ${old.version} already has the ELF interpreter-directory fallback (nolabs-ai/nono#1650), but nix/nono.nix says it first came in ${fixedIn}: update fixedIn there" >&2
              exit 1
            elif patch -p1 --forward --dry-run < ${fix} > /dev/null; then
              echo "agent-sandbox: applying nolabs-ai/nono@${rev} (ELF resolution on NixOS) to nono ${old.version}"
              patch -p1 --forward < ${fix}
            else
              echo "agent-sandbox: error: nono ${old.version} lacks the ELF resolution fix (nolabs-ai/nono#1650) and commit ${rev} does not apply to it; update nix/nono.nix" >&2
              exit 1
            fi
          ''
        else
          ''
            echo "agent-sandbox: nono ${old.version} has the ELF interpreter-directory fallback (nolabs-ai/nono#1650, in nono ${fixedIn} and later); nothing applied"
          ''
      )
      + ''
        if ! grep -qF ${lib.escapeShellArg marker} ${file}; then
          echo "agent-sandbox: error: ${file} of nono ${old.version} has no ${marker}: nix/nono.nix (fixedIn = ${fixedIn}) is wrong about this version" >&2
          exit 1
        fi
      '';
    checkFlags = builtins.filter (f: !(builtins.elem f skipFlags)) (old.checkFlags or [ ]);
    passthru = (old.passthru or { }) // {
      agentSandboxElfFix = true;
      agentSandboxElfPatched = needsPatch;
      agentSandboxReenabledTests = reenabled;
      agentSandboxLockedVersion = lockedVersion;
    };
  })

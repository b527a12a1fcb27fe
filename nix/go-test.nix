# checks.go-test: the unit and testscript tests of every package, in the Nix
# build sandbox, with `-short` (the e2e suites skip themselves under -short,
# each saying why; they run in the VM tests, nix/tests/vm.nix, against the
# installed binary). gcc builds pathresolve's ELF fixtures; python3 is used by
# some probes.
{
  agent-sandbox,
  python3,
  gcc,
  bash,
  coreutils,
}:

agent-sandbox.overrideAttrs (old: {
  pname = "agent-sandbox-go-test";
  doCheck = true;
  nativeCheckInputs = [
    python3
    gcc
    bash
    coreutils
  ];
  checkPhase = ''
    runHook preCheck
    export HOME=$(mktemp -d)
    go test -short -count=1 ./...
    runHook postCheck
  '';
  installPhase = ''
    touch $out
  '';
  postInstall = "";
})

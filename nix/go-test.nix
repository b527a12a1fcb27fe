# checks.go-test: the whole Go test suite in the Nix build sandbox, with the
# flake's nono on PATH, so that the nono e2e tests (e2e/nono_test.go and the
# nono column of e2e/escape_test.go) run against the real nono. Written for
# `nix flake check`; the machines this project is developed on cannot build
# nixpkgs, so this check runs only on a real Nix host.
{
  agent-sandbox,
  go,
  nono,
  python3,
  gcc,
  bash,
  coreutils,
}:

agent-sandbox.overrideAttrs (old: {
  pname = "agent-sandbox-go-test";
  doCheck = true;
  nativeCheckInputs = [
    nono
    python3
    gcc
    bash
    coreutils
  ];
  checkPhase = ''
    runHook preCheck
    export HOME=$(mktemp -d)
    export GOFLAGS=-mod=vendor
    go test -count=1 ./...
    runHook postCheck
  '';
  installPhase = ''
    touch $out
  '';
  postInstall = "";
})

# agent-sandbox, built from a filtered source so that the store path (outside
# every workdir) holds only what the build needs. `nono` (the flake passes its
# patched nono, nix/nono.nix) is put on the binary's PATH, so
# `nix run .#agent-sandbox -- claude` uses it; `nono = null` builds a launcher
# with the built-in landlock engine only.
{
  lib,
  go,
  buildGoModule,
  buildGo126Module ? null,
  makeWrapper,
  nono ? null,
  version ? "dev",
}:

let
  # The Go go.mod asks for. nixpkgs' default `go` is used when it is at least
  # that; otherwise buildGo126Module; otherwise evaluation stops here, saying
  # so (nixpkgs' Go must not try to download a toolchain in the sandbox).
  goMin = builtins.head (builtins.match ".*\ngo ([0-9.]+)\n.*" (builtins.readFile ../go.mod));
  builder =
    if lib.versionAtLeast go.version goMin then
      buildGoModule
    else if buildGo126Module != null && lib.versionAtLeast buildGo126Module.go.version or "1.26.0" goMin then
      buildGo126Module
    else
      throw "agent-sandbox: go.mod asks for Go ${goMin}; this nixpkgs' go is ${go.version} and has no buildGo126Module: update the nixpkgs input";
in
builder {
  pname = "agent-sandbox";
  inherit version;

  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../go.mod
      ../go.sum
      ../cmd
      ../internal
      ../pathresolve
      ../doctor
      ../e2e
    ];
  };

  # `nix/update-vendor-hash.sh` recomputes it after go.mod or go.sum change.
  # Not yet confirmed by a build on a Nix host (README, "Nix").
  vendorHash = lib.fileContents ./vendor-hash;

  subPackages = [ "cmd/agent-sandbox" ];
  env.CGO_ENABLED = 0;
  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  nativeBuildInputs = lib.optional (nono != null) makeWrapper;
  # Unit tests only in the package build; checks.go-test runs the -short suite
  # of every package, the VM tests run the e2e suites.
  checkFlags = [ "-short" ];

  # The AppArmor profile that lets the binary create user namespaces on
  # hosts that restrict them (Ubuntu 23.10 and later), which the built-in
  # engine's namespace view needs: copy it to /etc/apparmor.d and load it
  # with `apparmor_parser -r` (README, "Without user namespaces"). It names
  # the program that creates the namespaces: the wrapped binary when the
  # package wraps it with nono on PATH.
  postInstall = lib.optionalString (nono != null) ''
    wrapProgram $out/bin/agent-sandbox --prefix PATH : ${lib.makeBinPath [ nono ]}
  '' + ''
    mkdir -p $out/share/apparmor.d
    bin=$out/bin/agent-sandbox
    if [ -e $out/bin/.agent-sandbox-wrapped ]; then bin=$out/bin/.agent-sandbox-wrapped; fi
    printf '%s\n' '# /etc/apparmor.d/agent-sandbox' 'abi <abi/4.0>,' 'include <tunables/global>' \
      "profile agent-sandbox $bin flags=(unconfined) {" '  userns,' '}' > $out/share/apparmor.d/agent-sandbox
  '';

  passthru = { inherit nono; };

  meta = {
    description = "Run AI coding agents inside a sandbox (nono, Docker Sandboxes, or built-in Landlock)";
    homepage = "https://github.com/agent-sandbox/agent-sandbox";
    license = lib.licenses.asl20;
    mainProgram = "agent-sandbox";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}

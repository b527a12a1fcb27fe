{
  description = "agent-sandbox: run AI coding agents inside a sandbox";

  # One public input. Locked in flake.lock to a nixos-unstable revision.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      # x86_64-darwin is gone: nixpkgs 26.11 throws for it.
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "aarch64-darwin"
      ];
      forAll = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      version = self.shortRev or self.dirtyShortRev or "dev";

      # The one nono of the flake: nixpkgs' nono with the ELF-resolution fix.
      # nono.nix takes nono explicitly (see there).
      nonoFor =
        pkgs:
        import ./nix/nono.nix {
          inherit (pkgs) lib fetchpatch2;
          inherit (pkgs) nono;
        };

      # claude-code is unfree: allowed by predicate for that one package, and
      # only in the nixpkgs the profiles are rendered against.
      profilePkgsFor =
        system:
        import nixpkgs {
          inherit system;
          config.allowUnfreePredicate = pkg: lib.getName pkg == "claude-code";
        };
    in
    {
      overlays.default = final: prev: {
        nono = import ./nix/nono.nix {
          inherit (final) lib fetchpatch2;
          nono = prev.nono;
        };
        agent-sandbox = final.callPackage ./nix/package.nix { inherit version; };
      };

      # The module, with the flake's package (and so its nono) as default.
      nixosModules.default =
        { pkgs, ... }:
        {
          imports = [ ./nix/module.nix ];
          programs.agent-sandbox.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.agent-sandbox;
          programs.agent-sandbox.nonoPackage = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.nono;
        };

      packages = forAll (
        pkgs:
        let
          nono = nonoFor pkgs;
        in
        rec {
          agent-sandbox = pkgs.callPackage ./nix/package.nix { inherit version nono; };
          default = agent-sandbox;
          inherit nono;
        }
        # The profiles name Linux builds of claude-code, pi-coding-agent and
        # codex (their sandbox grants are Linux paths too).
        // lib.optionalAttrs pkgs.stdenv.hostPlatform.isLinux {
          agent-profiles = import ./nix/profiles {
            inherit lib;
            pkgs = profilePkgsFor pkgs.stdenv.hostPlatform.system;
          };
        }
      );

      apps = forAll (pkgs: rec {
        agent-sandbox = {
          type = "app";
          program = "${self.packages.${pkgs.stdenv.hostPlatform.system}.agent-sandbox}/bin/agent-sandbox";
          meta.description = "Run an AI coding agent inside a sandbox (agent-sandbox claude, pi, codex, ...)";
        };
        default = agent-sandbox;
      });

      checks = forAll (
        pkgs:
        let
          system = pkgs.stdenv.hostPlatform.system;
          pkg = self.packages.${system}.agent-sandbox;
          nono = self.packages.${system}.nono;
          profiles = self.packages.${system}.agent-profiles or null;
          render = pkgs.callPackage ./nix/render.nix { };
        in
        {
          package = pkg;
          go-test = pkgs.callPackage ./nix/go-test.nix { agent-sandbox = pkg; };
          # nix/tests/eval.nix against the locked nixpkgs' own lib (the same
          # tests .ci/nix-check evaluates with nix-instantiate).
          lib-eval = pkgs.runCommand "agent-sandbox-lib-eval" {
            result = import ./nix/tests/eval.nix { inherit lib; };
          } ''echo "$result" | tee $out'';
          # The module evaluated with lib.evalModules and stand-in pkgs.
          module-eval = pkgs.runCommand "agent-sandbox-module-eval" {
            result = import ./nix/tests/module-eval.nix { inherit lib; };
          } ''echo "$result" | tee $out'';
        }
        // lib.optionalAttrs pkgs.stdenv.hostPlatform.isLinux {
          # doctor on the rendered profile folders: a missing or stale store
          # path, an unknown key or an illegal grant fails the build.
          profiles = render.doctorCheck {
            drvName = "agent-sandbox-profiles-doctor";
            agent-sandbox = pkg;
            folders = profiles;
            inherit (profiles) names;
          };
          nono-schema = pkgs.callPackage ./nix/nono-schema.nix {
            agent-sandbox = pkg;
            inherit nono profiles;
          };
        }
        // lib.optionalAttrs pkgs.stdenv.hostPlatform.isLinux (
          lib.mapAttrs' (n: v: lib.nameValuePair "vm-${n}" v) (
            import ./nix/tests/vm.nix {
              inherit lib pkgs nono;
              agent-sandbox = pkg;
              e2e-tests = pkgs.callPackage ./nix/e2e-tests.nix { agent-sandbox = pkg; };
            }
          )
        )
      );

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages =
            [
              pkgs.go
              pkgs.gopls
              (nonoFor pkgs)
              pkgs.nixfmt
              pkgs.python3
              pkgs.gcc
              pkgs.jq
              # ad hoc timing; e2e/bench/launch.sh compares against bubblewrap.
              pkgs.hyperfine
            ]
            ++ lib.optional pkgs.stdenv.hostPlatform.isLinux pkgs.bubblewrap;
          shellHook = ''
            export CGO_ENABLED=0
          '';
        };
      });

      formatter = forAll (pkgs: pkgs.nixfmt);
    };
}

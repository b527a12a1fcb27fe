# Evaluation tests of nix/module.nix itself: lib.evalModules over the module
# plus declarations of the few NixOS options it sets or reads, with STAND-IN
# pkgs (below, named as such: attrsets that record what the real builders
# would have been given; nothing is built). Needs nixpkgs' real lib (the
# module system); the stand-in lib of lib-stub.nix cannot run it.
#
#   nix-instantiate --eval --strict nix/tests/module-eval.nix --arg lib 'import <nixpkgs-lib>/lib'
#
# The flake runs it against the locked nixpkgs' lib as checks.module-eval.
{ lib }:
let
  drv = name: extra: {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  } // extra;

  pkg =
    name: main:
    drv name {
      pname = (builtins.parseDrvName name).name;
      meta.mainProgram = main;
    };

  # STAND-IN pkgs: each builder returns a fake derivation carrying its inputs.
  fakePkgs = rec {
    inherit lib;
    hello = pkg "hello-2.12.2" "hello";
    git = pkg "git-2.51.0" "git";
    ripgrep = pkg "ripgrep-15.0.0" "rg";
    nono = drv "nono-0.78.0" {
      version = "0.78.0";
      passthru = { };
      overrideAttrs = f: drv "nono-0.78.0-patched" ((f { version = "0.78.0"; checkFlags = [ ]; }) // { patchedStandIn = true; });
    };
    agent-sandbox = drv "agent-sandbox-dev" {
      meta.mainProgram = "agent-sandbox";
      override = args: drv "agent-sandbox-dev-overridden" { overriddenWith = args; };
    };
    fetchpatch2 = args: drv "fetched.patch" { inherit args; };
    formats = {
      toml = _: {
        type = lib.types.attrsOf lib.types.anything;
        generate = name: value: drv name {
          format = "toml";
          inherit value;
        };
      };
      json = _: {
        type = lib.types.attrsOf lib.types.anything;
        generate = name: value: drv name {
          format = "json";
          inherit value;
        };
      };
    };
    replaceVarsWith = args: drv args.name { inherit (args) src replacements; };
    linkFarm = name: entries: drv name { inherit entries; };
    runCommand = name: env: script: drv name { inherit env script; };
    writeShellScriptBin = name: text: drv name { inherit text; };
    callPackage =
      fn: extra:
      let
        f = if builtins.isFunction fn then fn else import fn;
      in
      f (builtins.intersectAttrs (builtins.functionArgs f) fakePkgs // extra);
  };

  # The NixOS options the module touches, declared loosely.
  nixosStubs =
    { ... }:
    {
      options = {
        assertions = lib.mkOption {
          type = lib.types.listOf lib.types.unspecified;
          default = [ ];
        };
        warnings = lib.mkOption {
          type = lib.types.listOf lib.types.str;
          default = [ ];
        };
        environment.systemPackages = lib.mkOption {
          type = lib.types.listOf lib.types.unspecified;
          default = [ ];
        };
        environment.etc = lib.mkOption {
          type = lib.types.attrsOf lib.types.unspecified;
          default = { };
        };
        system.checks = lib.mkOption {
          type = lib.types.listOf lib.types.unspecified;
          default = [ ];
        };
        boot.kernelParams = lib.mkOption {
          type = lib.types.listOf lib.types.str;
          default = [ ];
        };
        boot.kernel.sysctl = lib.mkOption {
          type = lib.types.attrsOf lib.types.unspecified;
          default = { };
        };
        security.lsm = lib.mkOption {
          type = lib.types.listOf lib.types.str;
          default = [
            "landlock"
            "yama"
            "bpf"
          ];
        };
        security.allowUserNamespaces = lib.mkOption {
          type = lib.types.bool;
          default = true;
        };
      };
    };

  eval =
    config:
    (lib.evalModules {
      modules = [
        nixosStubs
        ../module.nix
        { _module.args.pkgs = fakePkgs; }
        config
      ];
    }).config;

  failing = c: map (a: a.message) (builtins.filter (a: !a.assertion) c.assertions);
  ok = v: (builtins.tryEval (builtins.deepSeq v v)).success;

  disabled = eval { programs.agent-sandbox.agents.hello.package = fakePkgs.hello; };
  enabled = eval {
    programs.agent-sandbox = {
      enable = true;
      agents.hello = {
        package = fakePkgs.hello;
        execPackages = [ fakePkgs.git ];
        settings.config_paths = [ "~/.hello" ];
        sandbox.nono.network.block = true;
        wrapper = "hello-sandboxed";
      };
      agents.rg = {
        profile = ./fixtures/rg;
        package = fakePkgs.ripgrep;
      };
      agents.off = {
        enable = false;
        package = fakePkgs.hello;
      };
    };
  };
  farm = enabled.environment.etc."agent-sandbox/agents".source;
  entry = n: (builtins.head (builtins.filter (e: e.name == n) farm.entries)).path;

  cases = {
    disabled-adds-nothing = {
      expr = {
        inherit (disabled) assertions warnings;
        etc = disabled.environment.etc;
        pkgs = disabled.environment.systemPackages;
        checks = disabled.system.checks;
      };
      expected = {
        assertions = [ ];
        warnings = [ ];
        etc = { };
        pkgs = [ ];
        checks = [ ];
      };
    };
    enabled-assertions-hold = {
      expr = failing enabled;
      expected = [ ];
    };
    enabled-no-warnings = {
      expr = enabled.warnings;
      expected = [ ];
    };
    farm-entries = {
      expr = map (e: e.name) farm.entries;
      expected = [
        "hello/agent.toml"
        "hello/sandbox/nono.json"
        "rg/agent.toml"
        "rg/sandbox/nono.json"
      ];
    };
    hello-toml = {
      expr = (entry "hello/agent.toml").value;
      expected = {
        command = "/nix/store/00000000000000000000000000000000-hello-2.12.2/bin/hello";
        config_paths = [ "~/.hello" ];
        exec_paths = [ "/nix/store/00000000000000000000000000000000-git-2.51.0/bin/git" ];
      };
    };
    hello-nono = {
      expr = (entry "hello/sandbox/nono.json").value;
      expected = {
        network.block = true;
      };
    };
    rg-rendered-from-template = {
      expr = {
        inherit (entry "rg/agent.toml") replacements;
        nono = (entry "rg/sandbox/nono.json").replacements;
      };
      expected = {
        replacements.rg = "/nix/store/00000000000000000000000000000000-ripgrep-15.0.0/bin/rg";
        nono = { };
      };
    };
    doctor-check-names-the-farm = {
      expr =
        let
          c = builtins.head enabled.system.checks;
        in
        [
          (builtins.length enabled.system.checks)
          (lib.hasInfix "doctor --folders-only --json" c.script)
          (lib.hasInfix "${farm}/hello" c.script)
          (lib.hasInfix "${farm}/rg" c.script)
          (lib.hasInfix "${farm}/off" c.script)
        ];
      expected = [
        1
        true
        true
        true
        false
      ];
    };
    wrapper-installed = {
      expr = map (p: p.name) enabled.environment.systemPackages;
      expected = [
        "agent-sandbox-dev-overridden"
        "hello-sandboxed"
      ];
    };
    wrapper-runs-agent-by-name = {
      expr = lib.hasInfix "/bin/agent-sandbox hello \"$@\"" (
        builtins.elemAt enabled.environment.systemPackages 1
      ).text;
      expected = true;
    };
    # nix/nono.nix patches exactly the nono releases that lack the ELF
    # resolution fix (0.77.0 and older; 0.78.0 and newer have it) and
    # re-enables only the tests that pass there.
    nono-guard-by-version = {
      expr =
        let
          standIn =
            v:
            drv "nono-${v}" {
              version = v;
              passthru = { };
              overrideAttrs =
                f:
                drv "nono-${v}-overridden" (f {
                  version = v;
                  checkFlags = [ ];
                });
            };
          facts =
            v:
            let
              n = import ../nono.nix {
                inherit lib;
                inherit (fakePkgs) fetchpatch2;
                nono = standIn v;
              };
            in
            {
              patched = n.passthru.agentSandboxElfPatched;
              tests = n.passthru.agentSandboxReenabledTests;
            };
        in
        lib.genAttrs [ "0.74.0" "0.77.0" "0.78.0" "0.81.0" ] facts;
      expected =
        let
          old = {
            patched = true;
            tests = [ "command_policies_allows_compiled_binary_exec_in_writable_grant_dir" ];
          };
          fixed = {
            patched = false;
            tests = [
              "command_policies_allows_compiled_binary_exec_in_writable_grant_dir"
              "command_policies_allows_script_exec_in_writable_grant_dir"
            ];
          };
        in
        {
          "0.74.0" = old;
          "0.77.0" = old;
          "0.78.0" = fixed;
          "0.81.0" = fixed;
        };
    };
    default-nono-is-patched = {
      expr = (builtins.head enabled.environment.systemPackages).overriddenWith.nono.patchedStandIn or false;
      expected = true;
    };
    nono-null = {
      expr =
        (builtins.head
          (eval {
            programs.agent-sandbox = {
              enable = true;
              nonoPackage = null;
            };
          }).environment.systemPackages
        ).overriddenWith;
      expected = {
        nono = null;
      };
    };
    no-agents-no-etc-no-check = {
      expr =
        let
          c = eval { programs.agent-sandbox.enable = true; };
        in
        [
          c.environment.etc
          c.system.checks
        ];
      expected = [
        { }
        [ ]
      ];
    };
    checkAgents-off = {
      expr =
        (eval {
          programs.agent-sandbox = {
            enable = true;
            checkAgents = false;
            agents.hello.package = fakePkgs.hello;
          };
        }).system.checks;
      expected = [ ];
    };
    bad-config-assertions = {
      expr = builtins.length (failing (eval {
        programs.agent-sandbox = {
          enable = true;
          agents."Bad" = {
            package = fakePkgs.hello;
            wrapper = "w";
          };
          agents.x = {
            package = fakePkgs.hello;
            wrapper = "w";
            settings.exec_paths = [ "git" ];
          };
        };
      }));
      # Bad: id; x: exec_paths; both: duplicate wrapper.
      expected = 3;
    };
    lsm-warning = {
      expr = builtins.length (eval {
        programs.agent-sandbox.enable = true;
        security.lsm = lib.mkForce [ "yama" ];
      }).warnings;
      expected = 1;
    };
    typed-settings-reject-wrong-type = {
      expr = ok (eval {
        programs.agent-sandbox = {
          enable = true;
          agents.x = {
            package = fakePkgs.hello;
            settings.args = "not-a-list";
          };
        };
      }).environment.etc;
      expected = false;
    };
    typed-nono-rejects-bad-port = {
      expr = ok (eval {
        programs.agent-sandbox = {
          enable = true;
          agents.x = {
            package = fakePkgs.hello;
            sandbox.nono.network.open_port = [ 70000 ];
          };
        };
      }).environment.etc;
      expected = false;
    };
    settings-options-are-exactly-agent-toml-keys = {
      expr =
        let
          opts =
            (lib.evalModules {
              modules = [
                nixosStubs
                ../module.nix
                { _module.args.pkgs = fakePkgs; }
              ];
            }).options.programs.agent-sandbox.agents.type.getSubOptions
              [ ];
          settings = opts.settings.type.getSubOptions [ ];
          names = builtins.filter (n: !(lib.hasPrefix "_" n)) (builtins.attrNames settings);
        in
        {
          top = lib.sort (a: b: a < b) names;
          sbx = lib.sort (a: b: a < b) (
            builtins.filter (n: !(lib.hasPrefix "_" n)) (builtins.attrNames (settings.sbx.type.getSubOptions [ ]))
          );
        };
      expected = {
        top = lib.sort (a: b: a < b) (import ../lib.nix { inherit lib; }).agentTomlKeys;
        sbx = lib.sort (a: b: a < b) (import ../lib.nix { inherit lib; }).agentTomlSbxKeys;
      };
    };
  };

  results = builtins.mapAttrs (
    _: c:
    let
      got = builtins.tryEval (builtins.deepSeq c.expr c.expr);
    in
    {
      ok = got.success && got.value == c.expected;
      got = if got.success then got.value else "<error>";
      inherit (c) expected;
    }
  ) cases;
  failed = builtins.filter (n: !results.${n}.ok) (builtins.attrNames results);
  total = builtins.length (builtins.attrNames results);
  show = n: "${n}: got ${builtins.toJSON results.${n}.got}, want ${builtins.toJSON results.${n}.expected}";
in
if failed == [ ] then
  "nix/tests/module-eval.nix (lib: nixpkgs lib ${lib.version}; pkgs: stand-in): ${toString total} passed, 0 failed"
else
  throw "nix/tests/module-eval.nix: ${toString (total - builtins.length failed)} passed, ${toString (builtins.length failed)} failed\n${builtins.concatStringsSep "\n" (map show failed)}"

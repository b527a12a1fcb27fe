# Evaluation tests of nix/lib.nix (the option-to-file logic) and of the
# profile templates. Plain Nix, no pkgs: stand-in packages are attrsets with
# an outPath. Evaluates to "N passed, 0 failed", or throws listing each
# failed case with what it got and what it wanted.
#
#   nix-instantiate --eval --strict nix/tests/eval.nix                  # lib: the stand-in
#   nix-instantiate --eval --strict nix/tests/eval.nix \
#     --arg lib 'import /path/to/nixpkgs/lib'                           # lib: nixpkgs'
#
# The flake runs it against the locked nixpkgs' lib as checks.lib-eval.
{
  lib ? import ./lib-stub.nix,
}:
let
  L = import ../lib.nix { inherit lib; };

  # Stand-in packages: what a derivation looks like to the functions under
  # test (an outPath, a name, meta).
  fakePkg =
    {
      name,
      main ? null,
      hash ? "00000000000000000000000000000000",
    }:
    {
      type = "derivation";
      inherit name;
      pname = (builtins.parseDrvName name).name;
      outPath = "/nix/store/${hash}-${name}";
      meta = if main == null then { } else { mainProgram = main; };
    };
  claude = fakePkg {
    name = "claude-code-2.1.0";
    main = "claude";
    hash = "11111111111111111111111111111111";
  };
  git = fakePkg {
    name = "git-2.51.0";
    main = "git";
    hash = "22222222222222222222222222222222";
  };
  rg = fakePkg {
    name = "ripgrep-15.0.0";
    main = "rg";
    hash = "33333333333333333333333333333333";
  };
  hello = fakePkg {
    name = "hello-2.12.2";
    hash = "44444444444444444444444444444444";
  };

  # An agent as the module's option defaults make it.
  agent =
    over:
    {
      enable = true;
      package = null;
      execPackages = [ ];
      profile = null;
      replacements = { };
      wrapper = null;
      sandbox = {
        nono = null;
        sbx = null;
      };
      settings = {
        command = null;
        args = [ ];
        description = null;
        config_paths = [ ];
        read_paths = [ ];
        code_paths = [ ];
        code_keys = [ ];
        env = [ ];
        set_env = { };
        exec_paths = [ ];
        allow_edit = [ ];
        loopback_env = [ ];
        sbx = {
          install = null;
          version_command = [ ];
          home = null;
        };
      };
    }
    // over;

  failing = asserts: map (a: a.message) (builtins.filter (a: !a.assertion) asserts);
  throws = v: !(builtins.tryEval (builtins.deepSeq v v)).success;

  templates = [
    "claude"
    "pi"
    "codex"
  ];
  templateFile = name: rel: builtins.readFile (../profiles + "/${name}/${rel}");
  profilePackages = import ../profiles/packages.nix;

  cases = {
    id-simple = {
      expr = map L.validAgentId [
        "claude"
        "a.b_c-d"
        "0pi"
      ];
      expected = [
        true
        true
        true
      ];
    };
    id-rejects = {
      expr = map L.validAgentId [
        "Claude"
        ".hidden"
        "-x"
        "a/b"
        ""
        "a b"
        (builtins.concatStringsSep "" (builtins.genList (_: "a") 65))
      ];
      expected = [
        false
        false
        false
        false
        false
        false
        false
      ];
    };
    id-64-is-fine = {
      expr = L.validAgentId (builtins.concatStringsSep "" (builtins.genList (_: "a") 64));
      expected = true;
    };

    exe-mainProgram = {
      expr = L.exe claude;
      expected = "/nix/store/11111111111111111111111111111111-claude-code-2.1.0/bin/claude";
    };
    exe-falls-back-to-pname = {
      expr = L.exe hello;
      expected = "/nix/store/44444444444444444444444444444444-hello-2.12.2/bin/hello";
    };
    placeholder-name = {
      expr = map L.placeholderName [
        claude
        rg
        hello
      ];
      expected = [
        "claude"
        "rg"
        "hello"
      ];
    };

    clean-drops-unset = {
      expr = L.clean {
        a = null;
        b = [ ];
        c = { };
        d = {
          e = null;
        };
        f = false;
        g = [ "x" ];
        h = 0;
        i.j.k = "v";
      };
      expected = {
        f = false;
        g = [ "x" ];
        h = 0;
        i.j.k = "v";
      };
    };
    clean-keeps-empty-top = {
      expr = L.clean { network.allow_domain = [ ]; };
      expected = { };
    };

    toml-from-packages = {
      expr = L.agentToml (agent {
        package = claude;
        execPackages = [
          git
          rg
        ];
        settings = (agent { }).settings // {
          config_paths = [ "~/.claude" ];
          exec_paths = [ "/run/current-system/sw/bin/jq" ];
          sbx = (agent { }).settings.sbx // {
            install = "npm:@anthropic-ai/claude-code";
          };
        };
      });
      expected = {
        command = "/nix/store/11111111111111111111111111111111-claude-code-2.1.0/bin/claude";
        config_paths = [ "~/.claude" ];
        exec_paths = [
          "/nix/store/22222222222222222222222222222222-git-2.51.0/bin/git"
          "/nix/store/33333333333333333333333333333333-ripgrep-15.0.0/bin/rg"
          "/run/current-system/sw/bin/jq"
        ];
        sbx.install = "npm:@anthropic-ai/claude-code";
      };
    };
    toml-package-wins-over-command = {
      expr =
        (L.agentToml (agent {
          package = hello;
          settings = (agent { }).settings // {
            command = "hello";
          };
        })).command;
      expected = "/nix/store/44444444444444444444444444444444-hello-2.12.2/bin/hello";
    };
    toml-only-settings = {
      expr = L.agentToml (agent {
        settings = (agent { }).settings // {
          command = "$SHELL";
          set_env.FOO = "1";
        };
      });
      expected = {
        command = "$SHELL";
        set_env.FOO = "1";
      };
    };

    files-none-without-sandbox = {
      expr = builtins.attrNames (L.agentFiles (agent { package = hello; }));
      expected = [ "agent.toml" ];
    };
    files-nono-and-sbx = {
      expr = L.agentFiles (agent {
        package = hello;
        sandbox = {
          nono = {
            sandbox = null;
            filesystem = {
              read = [ ];
              write = [ ];
              allow = [ "~/.hello" ];
              unix_socket_dir_bind = [ ];
            };
            network = {
              block = true;
              allow_domain = [ ];
              open_port = [ ];
              listen_port = [ ];
              network_profile = null;
            };
            unsafe_macos_seatbelt_rules = [ ];
          };
          sbx = {
            sandbox = false;
            filesystem = { };
            network = { };
          };
        };
      });
      expected = {
        "agent.toml" = {
          format = "toml";
          value.command = "/nix/store/44444444444444444444444444444444-hello-2.12.2/bin/hello";
        };
        "sandbox/nono.json" = {
          format = "json";
          value = {
            filesystem.allow = [ "~/.hello" ];
            network.block = true;
          };
        };
        "sandbox/sbx.json" = {
          format = "json";
          value.sandbox = false;
        };
      };
    };
    files-empty-nono-opts-in = {
      expr =
        (L.agentFiles (agent {
          package = hello;
          sandbox = {
            nono = {
              network.allow_domain = [ ];
            };
            sbx = null;
          };
        }))."sandbox/nono.json".value;
      expected = { };
    };

    placeholders-found = {
      expr = L.placeholdersIn ''
        command = "@claude@"
        exec_paths = ["@git@", "@rg@", "@git@"]
        install = "npm:@anthropic-ai/claude-code"
        mail = "a@b.c"
      '';
      expected = [
        "claude"
        "git"
        "rg"
      ];
    };
    replacements-only-present-names = {
      expr = L.replacementsFor "t/agent.toml" "command = \"@claude@\"" {
        claude = claude;
        git = git;
        note = "x";
      };
      expected = {
        claude = "/nix/store/11111111111111111111111111111111-claude-code-2.1.0/bin/claude";
      };
    };
    replacements-strings-as-is = {
      expr = L.replacementsFor "t/agent.toml" "x = \"@dir@\"" { dir = "/srv/agents"; };
      expected = {
        dir = "/srv/agents";
      };
    };
    replacements-missing-throws = {
      expr = throws (L.replacementsFor "t/agent.toml" "command = \"@claude@\" x = \"@nope@\"" { claude = claude; });
      expected = true;
    };
    package-replacements = {
      expr = builtins.attrNames (
        L.packageReplacements (agent {
          package = claude;
          execPackages = [
            git
            rg
          ];
        })
      );
      expected = [
        "claude"
        "git"
        "rg"
      ];
    };

    # Every placeholder of every shipped template has a package.
    templates-covered = {
      expr = builtins.concatMap (
        name:
        builtins.filter (p: !(profilePackages ? ${p})) (
          L.placeholdersIn (templateFile name "agent.toml")
          ++ L.placeholdersIn (templateFile name "sandbox/nono.json")
        )
      ) templates;
      expected = [ ];
    };
    templates-command-is-a-placeholder = {
      expr = map (
        name: builtins.match ".*\ncommand = \"@[a-z]+@\"\n.*" (templateFile name "agent.toml") != null
      ) templates;
      expected = [
        true
        true
        true
      ];
    };
    template-claude-placeholders = {
      expr = L.placeholdersIn (templateFile "claude" "agent.toml");
      expected = [
        "claude"
        "git"
        "rg"
        "bash"
      ];
    };

    assert-ok = {
      expr = failing (
        L.agentAssertions {
          claude = agent {
            package = claude;
            execPackages = [ git ];
            wrapper = "claude-sandboxed";
          };
          pi = agent {
            profile = ../profiles/pi;
            wrapper = "pi-sandboxed";
          };
        }
      );
      expected = [ ];
    };
    assert-bad-name = {
      expr = builtins.length (failing (L.agentAssertions { "Bad Name" = agent { package = hello; }; }));
      expected = 1;
    };
    assert-relative-exec-path = {
      expr = failing (
        L.agentAssertions {
          x = agent {
            package = hello;
            settings = (agent { }).settings // {
              exec_paths = [
                "git"
                "/bin/sh"
              ];
            };
          };
        }
      );
      expected = [
        "programs.agent-sandbox.agents.x.settings.exec_paths: every entry must be an absolute path (got git); name packages in execPackages instead"
      ];
    };
    assert-no-command = {
      expr = builtins.length (failing (L.agentAssertions { x = agent { }; }));
      expected = 1;
    };
    assert-relative-command = {
      expr = builtins.length (
        failing (
          L.agentAssertions {
            x = agent {
              settings = (agent { }).settings // {
                command = "bin/x";
              };
            };
          }
        )
      );
      expected = 1;
    };
    assert-duplicate-wrappers = {
      expr = failing (
        L.agentAssertions {
          a = agent {
            package = hello;
            wrapper = "same";
          };
          b = agent {
            package = hello;
            wrapper = "same";
          };
        }
      );
      expected = [ "programs.agent-sandbox.agents: wrapper names must be unique; used more than once: same" ];
    };
    assert-wrapper-shadows-launcher = {
      expr = builtins.length (
        failing (
          L.agentAssertions {
            a = agent {
              package = hello;
              wrapper = "agent-sandbox";
            };
          }
        )
      );
      expected = 1;
    };

    warn-none-by-default = {
      expr = L.kernelWarnings {
        lsm = [
          "landlock"
          "yama"
          "bpf"
        ];
        kernelParams = [ "lsm=landlock,yama,bpf" ];
        allowUserNamespaces = true;
      };
      expected = [ ];
    };
    warn-no-landlock-in-security-lsm = {
      expr = builtins.length (
        L.kernelWarnings {
          lsm = [
            "yama"
            "bpf"
          ];
          kernelParams = [ ];
          allowUserNamespaces = true;
        }
      );
      expected = 1;
    };
    warn-last-lsm-param-wins = {
      expr = map builtins.length [
        (L.kernelWarnings {
          lsm = [ ];
          kernelParams = [
            "lsm=landlock,yama"
            "quiet"
            "lsm=yama,bpf"
          ];
          allowUserNamespaces = true;
        })
        (L.kernelWarnings {
          lsm = [ ];
          kernelParams = [
            "lsm=yama"
            "lsm=yama,landlock"
          ];
          allowUserNamespaces = true;
        })
      ];
      expected = [
        1
        0
      ];
    };
    warn-unknown-lsm-list-is-silent = {
      expr = L.kernelWarnings {
        lsm = [ ];
        kernelParams = [ ];
        allowUserNamespaces = true;
      };
      expected = [ ];
    };
    warn-userns = {
      expr = map builtins.length [
        (L.kernelWarnings {
          lsm = [ ];
          kernelParams = [ ];
          allowUserNamespaces = false;
        })
        (L.kernelWarnings {
          lsm = [ ];
          kernelParams = [ ];
          allowUserNamespaces = true;
          maxUserNamespaces = 0;
        })
      ];
      expected = [
        1
        1
      ];
    };

    toml-keys-match-config-go = {
      expr = L.agentTomlKeys;
      expected = [
        "command"
        "args"
        "description"
        "config_paths"
        "read_paths"
        "code_paths"
        "code_keys"
        "env"
        "set_env"
        "exec_paths"
        "allow_edit"
        "loopback_env"
        "nested_userns"
        "tmp_size"
        "memory_max"
        "credentials"
        "expected_refusals"
        "checkpoint"
        "sbx"
      ];
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
  show =
    n:
    "${n}: got ${builtins.toJSON results.${n}.got}, want ${builtins.toJSON results.${n}.expected}";
  libName = if lib.isStandIn or false then "the stand-in nix/tests/lib-stub.nix" else "nixpkgs lib ${lib.version or "?"}";
in
if failed == [ ] then
  "nix/tests/eval.nix (lib: ${libName}): ${toString total} passed, 0 failed"
else
  throw "nix/tests/eval.nix (lib: ${libName}): ${toString (total - builtins.length failed)} passed, ${toString (builtins.length failed)} failed\n${builtins.concatStringsSep "\n" (map show failed)}"

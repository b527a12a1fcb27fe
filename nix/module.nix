# programs.agent-sandbox: installs agent-sandbox and renders agent folders to
# /etc/agent-sandbox/agents/<name>/ (the "system config" step of the agent
# lookup). Every store path in a folder (`command`, `exec_paths`) is rendered
# from packages, so it follows each nixpkgs bump, and `system.checks` runs
# `agent-sandbox doctor --folders-only` on the rendered folders, so a stale or
# missing path fails the system build instead of the user's next run.
#
# No setuid wrappers: agent-sandbox needs no privilege (Landlock and user
# namespaces are unprivileged; nono likewise).
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.programs.agent-sandbox;
  asLib = import ./lib.nix { inherit lib; };
  render = pkgs.callPackage ./render.nix { };
  tomlFormat = pkgs.formats.toml { };
  jsonFormat = pkgs.formats.json { };
  inherit (lib) mkOption types literalExpression;

  strList =
    description:
    mkOption {
      type = types.listOf types.str;
      default = [ ];
      inherit description;
    };
  nullStr =
    description:
    mkOption {
      type = types.nullOr types.str;
      default = null;
      inherit description;
    };

  # agent.toml: typed options for exactly the keys internal/agent/config.go
  # accepts; anything else passes through the freeform type and is then
  # rejected by doctor in system.checks (agent.toml allows no unknown keys).
  settingsModule = {
    freeformType = tomlFormat.type;
    options = {
      command = nullStr "Program to run: a name looked up on PATH, an absolute path, or \"$SHELL\". Set `package` instead to render `<store path>/bin/<mainProgram>` (package wins when both are set).";
      args = strList "Default arguments, placed before the user's.";
      description = nullStr "One line for `agent-sandbox agents`.";
      config_paths = strList "Paths granted read-write: the agent's own state (absolute or starting with ~/).";
      read_paths = strList "Paths granted read-only (absolute or starting with ~/).";
      code_paths = strList "Files and directories the agent's next start loads code from (extensions, hooks, plugins): kept read-only by the built-in engine, audited by every engine.";
      code_keys = mkOption {
        default = [ ];
        description = "Settings files the agent rewrites whose keys make its next start run commands: after the run a change to those keys is undone.";
        type = types.listOf (
          types.submodule {
            options = {
              file = mkOption {
                type = types.str;
                description = "The file (absolute or starting with ~/; .json, .jsonc or .toml).";
              };
              keys = strList "Dotted key paths; \"*\" matches any key or array index.";
              commands = nullStr "The prefix that marks a value of those keys as a command (pi's \"!\"); only such values count.";
            };
          }
        );
      };
      env = strList "Names of host variables passed into the sandbox beyond the base set.";
      set_env = mkOption {
        type = types.attrsOf types.str;
        default = { };
        description = "Variables set for the agent.";
      };
      exec_paths = strList "Absolute paths of further programs the agent runs; their closures are granted read and execute. Prefer `execPackages`, which renders these from packages.";
      allow_edit = strList "Protected project paths the agent may edit (`.git/hooks`, `.vscode`, ...; see `agent-sandbox --help`); by default the built-in engine keeps them read-only.";
      loopback_env = strList "Variables whose loopback URLs are rewritten to host.docker.internal under sbx.";
      nested_userns = mkOption {
        type = types.nullOr types.bool;
        default = null;
        description = "Let the agent create user namespaces of its own (containers, bubblewrap inside), which the built-in engine refuses by default; every run that allows them warns.";
      };
      tmp_size = nullStr "Bound of each of the built-in engine's private /tmp, /var/tmp and /dev/shm (\"8G\"; binary units K, M, G, T); unset: a quarter of the machine's memory each.";
      memory_max = nullStr "Bound of the run's memory as a whole (\"12G\", or \"none\"): a systemd user scope under the built-in engine, nono's --memory under nono; unset: three quarters of the machine's memory where the user's systemd manager can apply it (built-in engine). A value that cannot be applied refuses the run.";
      checkpoint = mkOption {
        type = types.nullOr (types.enum [ "on" "off" "required" ]);
        default = null;
        description = "The checkpoint of the workdir before each run (agent-sandbox runs/diff/undo): on (the default for agents), off, or required (a checkpoint that fails stops the run).";
      };
      expected_refusals = strList "Destinations the agent is known to try that its sandbox refuses (allow_domain's grammar, e.g. downloads.claude.ai): still refused and logged, not warned of; they never widen egress.";
      credentials = mkOption {
        default = [ ];
        description = "API keys the built-in engine's egress broker injects, so that the agent holds only a per-run phantom (README, \"Credentials the agent never holds\").";
        type = types.listOf (
          types.submodule {
            freeformType = tomlFormat.type;
            options = {
              env = mkOption {
                type = types.str;
                description = "The variable the agent reads its key from (it gets a phantom).";
              };
              base_url_env = nullStr "The variable that points the agent at its API (set to the broker's route).";
              upstream = nullStr "The API's base URL the route forwards to; its host must be on the allow list.";
              header = nullStr "How the key goes upstream: \"authorization\" (Bearer), \"basic\", or a header holding the key alone (x-api-key).";
              source = nullStr "Where the real value comes from: env:NAME (default env:<env>), file:PATH or command:CMD.";
              base_url_args = strList "Arguments added after the command for an agent that takes its base URL from a flag; {base_url} is replaced.";
              intercept = mkOption {
                type = types.nullOr types.bool;
                default = null;
                description = "Serve a client that takes no base URL (gh) by intercepting its TLS with a CA made for the run.";
              };
              git = mkOption {
                type = types.nullOr types.bool;
                default = null;
                description = "Point the agent's git at the route for upstream, with a credential helper giving the phantom.";
              };
            };
          }
        );
      };
      sbx = mkOption {
        default = { };
        description = "The [sbx] table: the agent inside a Docker sandbox.";
        type = types.submodule {
          freeformType = tomlFormat.type;
          options = {
            install = nullStr "In-guest install spec, e.g. npm:@anthropic-ai/claude-code.";
            version_command = strList "Command printing the host version the guest install is pinned to.";
            home = nullStr "HOME inside the guest (\"~\" is the host's home path).";
          };
        };
      };
    };
  };

  fsOptions = keys: lib.genAttrs keys (k: strList "filesystem.${k}");

  # sandbox/nono.json: typed options for the keys internal/sandboxfile reads.
  nonoModule = {
    freeformType = jsonFormat.type;
    options = {
      sandbox = mkOption {
        type = types.nullOr types.bool;
        default = null;
        description = "false: opt out of the sandbox (loud warning on every run).";
      };
      filesystem = mkOption {
        default = { };
        description = "Grants: read (read-only), write (write-only), allow (read-write), unix_socket_dir_bind.";
        type = types.submodule {
          freeformType = jsonFormat.type;
          options = fsOptions asLib.nonoJsonKeys.filesystem;
        };
      };
      network = mkOption {
        default = { };
        description = "Network posture.";
        type = types.submodule {
          freeformType = jsonFormat.type;
          options = {
            block = mkOption {
              type = types.nullOr types.bool;
              default = null;
              description = "Block all network.";
            };
            allow_domain = strList "Hosts the agent may reach (exact or *.example.com).";
            open_port = mkOption {
              type = types.listOf types.port;
              default = [ ];
              description = "Localhost ports the agent may connect to.";
            };
            listen_port = mkOption {
              type = types.listOf types.port;
              default = [ ];
              description = "Ports the agent may listen on.";
            };
            network_profile = nullStr "A nono network profile name (nono only).";
          };
        };
      };
      unsafe_macos_seatbelt_rules = strList "Raw Seatbelt rules (macOS, nono only).";
    };
  };

  # sandbox/sbx.json: the subset sbx understands.
  sbxModule = {
    freeformType = jsonFormat.type;
    options = {
      sandbox = mkOption {
        type = types.nullOr types.bool;
        default = null;
        description = "false: opt out of the sandbox.";
      };
      filesystem = mkOption {
        default = { };
        description = "Grants: read, write, allow.";
        type = types.submodule {
          freeformType = jsonFormat.type;
          options = fsOptions asLib.sbxJsonKeys.filesystem;
        };
      };
      network = mkOption {
        default = { };
        description = "Network posture.";
        type = types.submodule {
          freeformType = jsonFormat.type;
          options = {
            block = mkOption {
              type = types.nullOr types.bool;
              default = null;
              description = "Block all network.";
            };
            allow_domain = strList "Hosts the agent may reach.";
          };
        };
      };
    };
  };

  agentModule =
    { name, ... }:
    {
      options = {
        enable = mkOption {
          type = types.bool;
          default = true;
          description = "Whether to render this agent's folder to /etc/agent-sandbox/agents/${name}/.";
        };
        package = mkOption {
          type = types.nullOr types.package;
          default = null;
          example = literalExpression "pkgs.claude-code";
          description = "The agent's package; agent.toml's `command` becomes `<store path>/bin/<meta.mainProgram>`. In a `profile` template it replaces `@<mainProgram>@`.";
        };
        execPackages = mkOption {
          type = types.listOf types.package;
          default = [ ];
          example = literalExpression "[ pkgs.git pkgs.ripgrep ]";
          description = "Programs the agent runs; each becomes an `exec_paths` entry `<store path>/bin/<mainProgram>` (and, in a `profile` template, the replacement of `@<mainProgram>@`).";
        };
        profile = mkOption {
          type = types.nullOr types.path;
          default = null;
          example = literalExpression "./profiles/claude";
          description = "A template agent folder (agent.toml, sandbox/*.json) with @placeholders@, rendered with replaceVarsWith. When set, `settings` and `sandbox` are not used.";
        };
        replacements = mkOption {
          type = types.attrsOf (types.either types.str types.package);
          default = { };
          description = "Extra placeholder values for `profile`: a string as is, a package as `<store path>/bin/<mainProgram>`.";
        };
        settings = mkOption {
          type = types.submodule settingsModule;
          default = { };
          description = "agent.toml (TOML). Unknown keys fail the system build (doctor).";
        };
        sandbox.nono = mkOption {
          type = types.nullOr (types.submodule nonoModule);
          default = null;
          description = "sandbox/nono.json (opt-in to nono, and the posture); null: no file.";
        };
        sandbox.sbx = mkOption {
          type = types.nullOr (types.submodule sbxModule);
          default = null;
          description = "sandbox/sbx.json (opt-in to Docker Sandboxes); null: no file.";
        };
        wrapper = mkOption {
          type = types.nullOr types.str;
          default = null;
          example = "claude-sandboxed";
          description = "A command of this name that runs `agent-sandbox ${name}`.";
        };
      };
    };

  agents = lib.filterAttrs (_: a: a.enable) cfg.agents;
  names = builtins.attrNames agents;

  finalPackage =
    if cfg.package ? override then cfg.package.override { nono = cfg.nonoPackage; } else cfg.package;

  folders = render.farm "agent-sandbox-agents" (
    builtins.concatLists (lib.mapAttrsToList render.agentEntries agents)
  );

  doctor = render.doctorCheck {
    drvName = "agent-sandbox-agents-doctor";
    agent-sandbox = finalPackage;
    inherit folders names;
  };

  wrappers = lib.mapAttrsToList (
    name: a:
    pkgs.writeShellScriptBin a.wrapper ''
      exec ${finalPackage}/bin/agent-sandbox ${lib.escapeShellArg name} "$@"
    ''
  ) (lib.filterAttrs (_: a: a.wrapper != null) agents);
in
{
  options.programs.agent-sandbox = {
    enable = lib.mkEnableOption "agent-sandbox, a launcher that runs AI coding agents inside a sandbox";

    nonoPackage = mkOption {
      type = types.nullOr types.package;
      default = import ./nono.nix {
        inherit lib;
        inherit (pkgs) fetchpatch2;
        inherit (pkgs) nono;
      };
      defaultText = literalExpression "import ./nono.nix { inherit lib; inherit (pkgs) fetchpatch2 nono; } # nixpkgs' nono with the ELF-resolution fix";
      description = "The nono put on agent-sandbox's PATH. null: no nono, the built-in landlock engine only.";
    };

    package = mkOption {
      type = types.package;
      default = pkgs.agent-sandbox or (pkgs.callPackage ./package.nix { nono = null; });
      defaultText = literalExpression "pkgs.agent-sandbox or (pkgs.callPackage ./package.nix { })";
      description = "The agent-sandbox package. Built with `nonoPackage` on its PATH (through `.override { nono = ...; }`).";
    };

    checkAgents = mkOption {
      type = types.bool;
      default = true;
      description = "Run `agent-sandbox doctor --folders-only` on the rendered folders as part of the system build (system.checks).";
    };

    agents = mkOption {
      type = types.attrsOf (types.submodule agentModule);
      default = { };
      description = "Agent folders rendered to /etc/agent-sandbox/agents/<name>/.";
    };
  };

  config = lib.mkIf cfg.enable {
    assertions =
      asLib.agentAssertions agents
      ++ [
        {
          assertion = cfg.package ? override || cfg.nonoPackage != null;
          message = "programs.agent-sandbox.nonoPackage = null needs a package with .override { nono = null; } (such as the flake's); the given package cannot be rebuilt without nono";
        }
      ];

    warnings =
      asLib.kernelWarnings {
        lsm = lib.attrByPath [ "security" "lsm" ] [ ] config;
        kernelParams = config.boot.kernelParams;
        allowUserNamespaces = lib.attrByPath [ "security" "allowUserNamespaces" ] true config;
        maxUserNamespaces = config.boot.kernel.sysctl."user.max_user_namespaces" or null;
      }
      ++ lib.concatMap (
        n:
        lib.optional (
          agents.${n}.profile != null
          && (
            agents.${n}.settings.command != null || agents.${n}.sandbox.nono != null || agents.${n}.sandbox.sbx != null
          )
        ) "programs.agent-sandbox.agents.${n}: `profile` is set, so `settings` and `sandbox` are not used"
      ) names;

    environment.systemPackages = [ finalPackage ] ++ wrappers;

    environment.etc = lib.mkIf (names != [ ]) { "agent-sandbox/agents".source = folders; };

    system.checks = lib.mkIf (cfg.checkAgents && names != [ ]) [ doctor ];
  };
}

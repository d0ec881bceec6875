"""How to point each real agent CLI at a `ModelServer`, offline, with call-home switches off.

Each `env_for_<cli>(srv, home)` writes the config files the CLI needs under `home` and returns a
`Launch`: the environment (built from scratch: PATH, HOME, a private TMPDIR, no inherited keys)
and the argv prefix of a headless run that may edit files; the prompt is appended last. The
settings follow the shared notes agents-claude-codex.md and agents-opencode-gemini-pi.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .server import ModelServer

REPO = Path(__file__).resolve().parents[3]
AGENTS = ("claude", "codex", "opencode", "gemini", "pi")
LOCAL_HOSTS = "127.0.0.1,localhost"
DUMMY_KEY = "dummy"


def agents_dir() -> Path:
    """Where `scripts/install-agents` puts the CLIs (`$BATON_AGENTS_DIR` or `.cache/agents`)."""
    return Path(os.environ.get("BATON_AGENTS_DIR") or REPO / ".cache" / "agents")


def agent_bin(name: str) -> Path:
    """The installed binary of CLI `name` (it may not exist: check before use)."""
    return agents_dir() / "node_modules" / ".bin" / name


@dataclass
class Launch:
    """Everything needed to start one CLI headless: argv prefix (prompt goes last) and env."""

    name: str
    argv: list[str]
    env: dict[str, str]
    files: list[Path] = field(default_factory=list)  # config files written for this launch

    def command(self, prompt: str) -> list[str]:
        return [*self.argv, prompt]

    def run(self, prompt: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run to completion with stdin closed; on timeout kill the whole process group.

        A timed-out run comes back with returncode -9 and whatever it printed so far.
        """
        proc = subprocess.Popen(
            self.command(prompt),
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return subprocess.CompletedProcess(proc.args, -9, out, err)
        finally:
            try:  # helpers the CLI left behind in its session
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def base_env(home: Path, proxy: str | None = None) -> dict[str, str]:
    """A clean environment: PATH, HOME and TMPDIR under `home`; proxies to `proxy` if given."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
    }
    if proxy:
        for key in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env[key] = env[key.lower()] = proxy
        env["NO_PROXY"] = env["no_proxy"] = LOCAL_HOSTS
    return env


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def env_for_claude(
    srv: ModelServer,
    home: Path,
    *,
    proxy: str | None = None,
    max_retries: int = 1,
    model: str = "claude-sonnet-4-5",
) -> Launch:
    """Claude Code: `claude --output-format stream-json --verbose … -p <prompt>`."""
    env = base_env(home, proxy)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": srv.url,
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
        }
    )
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    argv = [
        str(agent_bin("claude")),
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
        "--model",
        model,
        "-p",
    ]
    return Launch("claude", argv, env)


def env_for_codex(
    srv: ModelServer,
    home: Path,
    *,
    proxy: str | None = None,
    retries: int = 1,
    model: str = "gpt-5.5",
) -> Launch:
    """Codex: `codex exec --json -m gpt-5.5 …` with a `mock` provider in `$CODEX_HOME/config.toml`.

    The run needs stdin closed (`Launch.run` does that): Codex otherwise waits on stdin.
    """
    env = base_env(home, proxy)
    codex_home = home / ".codex"
    env.update({"CODEX_HOME": str(codex_home), "MOCK_API_KEY": DUMMY_KEY})
    config = _write(
        codex_home / "config.toml",
        "\n".join(
            [
                'model_provider = "mock"',
                'approval_policy = "never"',
                'sandbox_mode = "workspace-write"',
                "check_for_update_on_startup = false",
                "",
                "[analytics]",
                "enabled = false",
                "",
                "[model_providers.mock]",
                'name = "mock"',
                f'base_url = "{srv.url}/v1"',
                'wire_api = "responses"',
                'env_key = "MOCK_API_KEY"',
                f"request_max_retries = {retries}",
                f"stream_max_retries = {retries}",
                "stream_idle_timeout_ms = 15000",
                "",
            ]
        ),
    )
    argv = [
        str(agent_bin("codex")),
        "exec",
        "--json",
        "-m",
        model,
        "-c",
        "analytics.enabled=false",
        "--disable",
        "plugins",
        "--skip-git-repo-check",
    ]
    return Launch("codex", argv, env, [config])


def env_for_opencode(
    srv: ModelServer,
    home: Path,
    *,
    proxy: str | None = None,
) -> Launch:
    """OpenCode: `opencode run --format json` with a `mock` openai-compatible provider."""
    env = base_env(home, proxy)
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    for switch in (
        "AUTOUPDATE",
        "MODELS_FETCH",
        "LSP_DOWNLOAD",
        "SHARE",
        "DEFAULT_PLUGINS",
        "CLAUDE_CODE",
    ):
        env[f"OPENCODE_DISABLE_{switch}"] = "1"
    config = {
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": f"{srv.url}/v1", "apiKey": DUMMY_KEY},
                "models": {
                    "mock-model": {
                        "name": "Mock Model",
                        "tool_call": True,
                        "limit": {"context": 128000, "output": 8192},
                    }
                },
            }
        },
    }
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    # OpenCode 1.18 npm-installs @opencode-ai/plugin into its config dir in the background unless
    # node_modules exists and package-lock.json already lists every package.json dependency.
    # Seeding both stops that call home (not in the notes: they ran without network).
    config_dir = home / ".config" / "opencode"
    (config_dir / "node_modules").mkdir(parents=True, exist_ok=True)
    deps = {"dependencies": {"@opencode-ai/plugin": "*"}}
    files = [
        _write(config_dir / "package.json", json.dumps(deps)),
        _write(config_dir / "package-lock.json", json.dumps({"packages": {"": deps}})),
    ]
    argv = [str(agent_bin("opencode")), "run", "--format", "json"]
    return Launch("opencode", argv, env, files)


def env_for_gemini(
    srv: ModelServer,
    home: Path,
    *,
    proxy: str | None = None,
    max_attempts: int = 2,
    model: str = "gemini-2.5-flash",
) -> Launch:
    """Gemini CLI: `gemini --output-format stream-json --yolo -m gemini-2.5-flash -p <prompt>`."""
    env = base_env(home, proxy)
    env.update(
        {
            "GEMINI_API_KEY": DUMMY_KEY,
            "GOOGLE_GEMINI_BASE_URL": srv.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_TELEMETRY_ENABLED": "false",
        }
    )
    settings = {
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "checkpointing": {"enabled": False},
            "maxAttempts": max_attempts,
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "security": {
            "auth": {"selectedType": "gemini-api-key"},
            "folderTrust": {"enabled": False},
        },
        "model": {"skipNextSpeakerCheck": True},
    }
    path = _write(home / ".gemini" / "settings.json", json.dumps(settings, indent=2))
    argv = [
        str(agent_bin("gemini")),
        "--output-format",
        "stream-json",
        "--yolo",
        "-m",
        model,
        "-p",
    ]
    return Launch("gemini", argv, env, [path])


def env_for_pi(
    srv: ModelServer,
    home: Path,
    *,
    proxy: str | None = None,
    max_retries: int = 1,
) -> Launch:
    """Pi: `pi --offline --provider mock --model mock-model --mode json -p <prompt>`."""
    env = base_env(home, proxy)
    agent = home / ".pi" / "agent"
    env.update(
        {
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
    )
    models = {
        "providers": {
            "mock": {
                "baseUrl": f"{srv.url}/v1",
                "api": "openai-completions",
                "apiKey": DUMMY_KEY,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    {
                        "id": "mock-model",
                        "name": "Mock Model",
                        "contextWindow": 128000,
                        "maxTokens": 8192,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    }
                ],
            }
        }
    }
    settings = {
        "enableInstallTelemetry": False,
        "retry": {
            "enabled": max_retries > 0,
            "maxRetries": max_retries,
            "baseDelayMs": 500,
            "provider": {"maxRetries": 0},
        },
    }
    files = [
        _write(agent / "models.json", json.dumps(models, indent=2)),
        _write(agent / "settings.json", json.dumps(settings, indent=2)),
    ]
    argv = [
        str(agent_bin("pi")),
        "--offline",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "-p",
    ]
    return Launch("pi", argv, env, files)

"""`baton` commands and `baton lsp` start fast: the heavy ACP SDK is imported only by the
ACP runner process, never by the command line or the broker until a runner is needed."""

import subprocess
import sys


def test_the_cli_does_not_import_the_acp_sdk() -> None:
    code = "import sys, baton.cli, baton.surfaces.lsp; print('acp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

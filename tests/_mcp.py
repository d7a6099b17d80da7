"The venv that holds the four reference MCP servers from PyPI (two of them import mcp 1.x APIs)."
import subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / '.venv-mcp-servers'
CONSTRAINTS = Path(__file__).with_name('mcp_servers_constraints.txt')
SERVERS = ['mcp-server-time', 'mcp-server-git', 'mcp-server-sqlite', 'mcp-server-calculator']

def ensure_mcp_servers() -> Path:
    "Create `.venv-mcp-servers/` (about 20 s) unless it exists with the same pins; returns its bin folder."
    python, stamp = VENV / 'bin' / 'python', VENV / '.installed'
    pins = CONSTRAINTS.read_text()
    if not stamp.exists() or stamp.read_text() != pins:
        subprocess.run([sys.executable, '-m', 'venv', '--clear', str(VENV)], check=True)
        subprocess.run([str(python), '-m', 'pip', 'install', '--quiet', '-c', str(CONSTRAINTS), 'mcp<2', *SERVERS], check=True, timeout=600)
        stamp.write_text(pins)
    return VENV / 'bin'

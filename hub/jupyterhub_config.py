"""JupyterHub for the local course (`make hub-demo`; tests/hub/ drives it in Chromium).

On 127.0.0.1 only: JupyterHub 5.5.0 (.venv-hub), configurable-http-proxy from npm (hub/node_modules), PAM login of
the real local users that `hub/course_hub.py setup` created, each user's JupyterLab started as that user by
the LocalProcessSpawner in the course's environment (hub/course_hub.py: environment). Environment variables:
QKV_HUB_STATE (the folder `setup` made; required), QKV_HUB_PORT (default 8000), QKV_HUB_INTERNAL_PORT (8081),
QKV_HUB_PROXY_API_PORT (8001), QKV_HUB_API_TOKEN (optional: a service token with admin rights over users and
servers, for the tests).
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_hub

c = get_config()  # noqa: F821 (provided by JupyterHub)
COURSE_ID = "course101"  # = course_hub.COURSE_ID; hub/k8s/config.yaml and its test use the same
STATE = Path(os.environ["QKV_HUB_STATE"]).resolve()
USERS = json.loads((STATE / "users.json").read_text(encoding="utf-8"))
env = os.environ.get

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(env("QKV_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env("QKV_HUB_INTERNAL_PORT", "8081"))
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server and the proxy
c.JupyterHub.cleanup_proxy = True
c.ConfigurableHTTPProxy.command = [str(course_hub.REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(env('QKV_HUB_PROXY_API_PORT', '8001'))}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")

# Real users, real passwords: PAM (the "login" service) against /etc/shadow, which the hub can read as root.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False  # no systemd-logind session for a notebook server
c.Authenticator.allowed_users = set(USERS)

c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(STATE / "python" / "bin" / "python"), "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 300  # two busy cores: a JupyterLab can take a minute to answer
c.Spawner.http_timeout = 300
# A server stopping on a busy machine gets time to shut its kernels down before SIGTERM, then SIGKILL.
c.LocalProcessSpawner.interrupt_timeout = 60
c.LocalProcessSpawner.term_timeout = 30


def course_environment(spawner):
    """Each user's server gets the course's environment of the user's role (a new dict: never the shared one)."""
    spawner.environment = {**spawner.environment, **course_hub.environment(STATE, spawner.user.name)}


c.Spawner.pre_spawn_hook = course_environment

if env("QKV_HUB_API_TOKEN"):
    c.JupyterHub.services = [{"name": "qkv-tests", "api_token": env("QKV_HUB_API_TOKEN")}]
    c.JupyterHub.load_roles = [
        {"name": "qkv-tests", "scopes": ["admin:users", "admin:servers"], "services": ["qkv-tests"]}
    ]

"""`ryu-manager` for syncbed: the eventlet workaround, syncbed's options, then Ryu's main.

eventlet >= 0.30.3 dropped `eventlet.wsgi.ALREADY_HANDLED`, which `ryu.app.wsgi`
imports at load (docs/ENVIRONMENT.md); restoring the name lets Ryu 4.34 start on Python
3.11. The options are registered here, before Ryu parses the command line, because
ryu-manager parses it before it imports the apps.
"""
import sys

import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
    eventlet.wsgi.ALREADY_HANDLED = object()

from ryu import cfg  # noqa: E402

cfg.CONF.register_cli_opts([
    cfg.StrOpt("syncbed-topology", help="topology.json written by syncbed"),
    cfg.StrOpt("syncbed-status", help="where the app writes which switches are ready"),
])

from ryu.cmd.manager import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
